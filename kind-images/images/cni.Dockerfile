# The lab's CNI daemon: kubectl (from the Kubernetes build) and a shell loop writing the bridge config and routes.
FROM labsupport/debian:bookworm
COPY kubectl /usr/local/bin/kubectl
COPY labsupport-cni /usr/local/bin/labsupport-cni
CMD ["/usr/local/bin/labsupport-cni"]
