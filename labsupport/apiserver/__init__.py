"""A Kubernetes REST API over the embedded control plane, so the real kubectl and official clients work on it.

`APIServer(cluster).start()` serves a Cluster on 127.0.0.1 and writes a kubeconfig (`.kubeconfig_path`).
"""
from labsupport.apiserver.server import APIServer

__all__ = ["APIServer"]
