"""labsupport.kind: the `kind` backend (a kind cluster on this machine) and the `kube` backend (any cluster).

config.py (the kind cluster as data), preflight.py (what stops it here; clean and delete), runner.py (the one
door docker/kind/kubectl commands go through), parse.py (real tools' output), client.py (KubeBackend),
podconn.py (a keep-alive connection from inside a pod: nc under `kubectl exec -i`), meter.py (watch traffic
metered on real watches),
cluster.py (KindCluster, KindBackend), progress.py, backend.py (make_backend, which Lab calls), images.py (the
images `make kind-images` builds, by name), engine.py (the Docker engine started where none answers, leaving the
host's firewall alone) and runc_wrapper.py (runc without CAP_SYS_RESOURCE, for hosts whose root lacks it).
"""
