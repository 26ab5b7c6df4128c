"""A Kubernetes REST API over the embedded control plane, so the real kubectl and official clients work on it.

`APIServer(cluster).start()` serves a Cluster on 127.0.0.1 and writes a kubeconfig (`.kubeconfig_path`);
`running_kubeconfig()` finds the kubeconfig of a standalone cluster started with `labsupport up`.
"""
from labsupport.apiserver.cli import read_state, running_kubeconfig
from labsupport.apiserver.server import APIServer

__all__ = ["APIServer", "read_state", "running_kubeconfig"]
