# agnhost built from the k8s.io/kubernetes module (test/images/agnhost): netexec, serve-hostname, pause …
FROM labsupport/debian:bookworm
COPY agnhost /agnhost
ENTRYPOINT ["/agnhost"]
CMD ["pause"]
