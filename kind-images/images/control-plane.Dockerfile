# kube-apiserver, kube-controller-manager, kube-scheduler, etcd, CoreDNS, pause: one program each, under the
# names and tags kubeadm asks for. BINARY is the program copied from the build context; ENTRY its path in the image.
FROM labsupport/debian:bookworm
ARG BINARY
ARG ENTRY
COPY ${BINARY} ${ENTRY}
