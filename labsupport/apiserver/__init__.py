"""A Kubernetes REST API over the embedded control plane, so the real kubectl and official clients work on it.

`APIServer(cluster).start()` serves a Cluster on 127.0.0.1 and writes a kubeconfig (`.kubeconfig_path`).

The server (TLS, sockets, threads) is imported when it is first asked for, not with the package: the sim's decoding
and field validation (`labsupport.apiserver.schema`) live here too and need none of it, so `import labsupport` and
`Lab()` work where there is no `ssl` or `cryptography` (a browser kernel).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from labsupport.apiserver.server import APIServer


def __getattr__(name: str) -> Any:
    if name == "APIServer":
        from labsupport.apiserver.server import APIServer
        return APIServer
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["APIServer"]
