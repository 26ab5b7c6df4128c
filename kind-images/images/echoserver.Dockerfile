# The echo server of kind-images/go/programs: every request answered with what the server saw, on port 8080.
# It runs as nobody (uid 65534): a student namespace admits only pods that run as non-root.
FROM labsupport/debian:bookworm
COPY echoserver /usr/local/bin/echoserver
USER 65534:65534
EXPOSE 8080
CMD ["/usr/local/bin/echoserver", "--port=8080"]
