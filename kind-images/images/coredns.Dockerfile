# CoreDNS built from the project's pinned module (upstream/go.mod), under the tag kubeadm asks for.
FROM labsupport/debian:bookworm
COPY coredns /coredns
EXPOSE 53 53/udp
ENTRYPOINT ["/coredns"]
