# agnhost built from the k8s.io/kubernetes module (test/images/agnhost): netexec, serve-hostname, pause …
# It runs as nobody (uid 65534): a student namespace admits only pods that run as non-root.
FROM labsupport/debian:bookworm
COPY agnhost /agnhost
USER 65534:65534
ENTRYPOINT ["/agnhost"]
CMD ["pause"]
