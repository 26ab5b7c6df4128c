"""`make_backend`: the backend object behind `Lab(backend="kind")` and `Lab(backend="kube")`."""
from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from labsupport.errors import BadRequest

if TYPE_CHECKING:
    from labsupport.kind.client import KubeBackend

KUBE_OPTIONS = {"context", "runner", "request_timeout"}
KIND_OPTIONS = {"name", "workers", "image", "load_images", "runner", "progress", "node_ports", "request_timeout",
                "create", "preflight", "load_balancer", "pod_subnet", "ready_timeout"}


def make_backend(backend: str, *, proxy_mode: str = "iptables", kubeconfig: str | None = None,
                 namespace: str | None = None, **options: Any) -> "KubeBackend":
    """The backend for "kind" (a kind cluster this machine creates or reuses) or "kube" (any existing cluster).

    For kind, LABSUPPORT_KIND_CLUSTER, LABSUPPORT_KIND_WORKERS and LABSUPPORT_KIND_NAMESPACE stand in for the
    name, workers and namespace options a notebook's `Lab()` does not pass."""
    if backend == "kube":
        unknown = set(options) - KUBE_OPTIONS
        if unknown:
            raise BadRequest(f"unknown Lab option(s) for the kube backend: {', '.join(sorted(unknown))} "
                             f"(it takes {', '.join(sorted(KUBE_OPTIONS))})")
        from labsupport.kind.client import KubeBackend
        return KubeBackend(kubeconfig, namespace, proxy_mode=proxy_mode, **options)
    if backend == "kind":
        unknown = set(options) - KIND_OPTIONS
        if unknown:
            raise BadRequest(f"unknown Lab option(s) for the kind backend: {', '.join(sorted(unknown))} "
                             f"(it takes {', '.join(sorted(KIND_OPTIONS))})")
        from labsupport.kind.cluster import KindBackend
        if "name" not in options and os.environ.get("LABSUPPORT_KIND_CLUSTER"):
            options["name"] = os.environ["LABSUPPORT_KIND_CLUSTER"]
        if "workers" not in options and os.environ.get("LABSUPPORT_KIND_WORKERS"):
            options["workers"] = int(os.environ["LABSUPPORT_KIND_WORKERS"])
        namespace = namespace or os.environ.get("LABSUPPORT_KIND_NAMESPACE") or None
        return KindBackend(proxy_mode=proxy_mode, namespace=namespace, **options)
    raise BadRequest(f"make_backend builds the kind and kube backends, not {backend!r}")
