# The pod sandbox's pause program (kind-images/go/programs/pause), under kubeadm's pause tag.
FROM labsupport/debian:bookworm
COPY pause /pause
ENTRYPOINT ["/pause"]
