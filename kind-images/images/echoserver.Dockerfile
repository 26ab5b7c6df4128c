# The echo server of kind-images/go/programs: every request answered with what the server saw, on port 8080.
FROM labsupport/debian:bookworm
COPY echoserver /usr/local/bin/echoserver
EXPOSE 8080
CMD ["/usr/local/bin/echoserver", "--port=8080"]
