"""A Kubernetes REST API over the embedded control plane, so the real kubectl and official clients work on it."""
from labsupport.apiserver.server import APIServer

__all__ = ["APIServer"]
