"""labsupport.kind: the `kind` backend (a kind cluster on this machine) and the `kube` backend (any cluster).

config.py (the kind cluster as data), preflight.py (what stops it here; clean and delete), runner.py (the one
door docker/kind/kubectl commands go through), parse.py (real tools' output), client.py (KubeBackend),
cluster.py (KindCluster, KindBackend), progress.py, backend.py (make_backend, which Lab calls).
"""
