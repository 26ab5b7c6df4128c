# curl, for requests from outside the cluster (the client container on the kind network).
FROM labsupport/debian:bookworm
ENTRYPOINT ["curl"]
