"""The one interface every backend implements: `sim`, `netns`, `kind`, `kube`, and a client of a lab server.

`Lab` and the widgets speak only this Protocol; nothing above a backend reaches into its internals. The verbs take
and return Kubernetes objects as plain dicts and the result types of `labsupport.results`.
"""
from __future__ import annotations

from typing import Any, Callable, Protocol, runtime_checkable

from labsupport.results import ClusterSnapshot, CurlResult, NslookupAnswer, Trace


@runtime_checkable
class Backend(Protocol):
    """What `Lab` needs of a cluster: object verbs, time, the network, kube-proxy, pods, tools, the picture."""

    #: "sim", "netns", "kind", "kube" or "remote".
    name: str

    # --- objects -------------------------------------------------------------------------------------------
    def apply(self, obj: dict, field_validation: str = "Strict") -> dict:
        """Create the object, or update it as `kubectl apply` would; returns it as stored.

        field_validation, as the API server's parameter: "Strict" refuses fields the kind does not declare,
        "Warn" drops them with a warning, "Ignore" drops them silently."""

    def create(self, obj: dict, field_validation: str = "Strict") -> dict:
        """Create one object; an existing one is AlreadyExists (fields validated as `apply` does)."""

    def get(self, kind: str, name: str, namespace: str | None) -> dict:
        """One object, or NotFound."""

    def list(self, kind: str, namespace: str | None, selector: Any) -> list[dict]:
        """Objects of a kind (namespace None: all namespaces), filtered by a label selector."""

    def delete(self, kind: str, name: str, namespace: str | None, grace_period: int | None = None) -> dict:
        """Delete one object; returns once the deletion is accepted."""

    def scale(self, name: str, replicas: int, namespace: str) -> dict:
        """Set the replicas of a Deployment, StatefulSet or ReplicaSet."""

    # --- time ----------------------------------------------------------------------------------------------
    def advance(self, seconds: float) -> None:
        """Move the cluster's clock (real clusters sleep)."""

    def now(self) -> float:
        """The cluster's clock, seconds since the Unix epoch."""

    def wait(self, condition: Callable[[], bool], timeout: float) -> float:
        """Move the clock until `condition()` holds; returns the seconds it took, or raises TimeoutError."""

    def follow_wall_time(self) -> None:
        """Let the clock follow real time (live demos)."""

    # --- the network ---------------------------------------------------------------------------------------
    def nslookup(self, name: str, pod: str | None) -> NslookupAnswer:
        """Resolve a name as nslookup in a pod would."""

    def curl(self, url: str, source: str, **options: Any) -> CurlResult:
        """One HTTP request from a source; refused and timed out are results."""

    def curl_batch(self, url: str, source: str, count: int, **options: Any) -> list[CurlResult]:
        """`count` requests one after another, each a new connection: what `count` calls of `curl` return."""

    def connect(self, url: str, source: str) -> Any:
        """A keep-alive connection whose requests stay on one pod."""

    def trace(self, url: str, source: str) -> Trace:
        """The path one new connection takes."""

    def proxy_rules(self, node: str | None) -> str:
        """A node's kube-proxy rules as the node prints them."""

    def conntrack(self, node: str | None) -> list[str]:
        """A node's conntrack entries as `conntrack -L` prints them."""

    # --- kube-proxy ----------------------------------------------------------------------------------------
    def proxy_mode(self) -> str:
        """The mode kube-proxy runs in on the first worker."""

    def set_proxy_mode(self, mode: str) -> None:
        """Change the kube-proxy ConfigMap's mode and restart kube-proxy everywhere."""

    def stop_kube_proxy(self, node: str | None) -> None:
        """Stop kube-proxy on a node (all when None); its rules stay."""

    def start_kube_proxy(self, node: str | None) -> None:
        """Start kube-proxy again on a node (all when None)."""

    # --- pods ----------------------------------------------------------------------------------------------
    def exec(self, pod: str, argv: list[str], namespace: str, container: str | None) -> Any:
        """Run a command in a container; the result has the exit code and output."""

    def logs(self, pod: str, namespace: str, container: str | None) -> str:
        """What a container has printed."""

    # --- tools ---------------------------------------------------------------------------------------------
    def kubeconfig(self) -> str:
        """Path of a kubeconfig for this cluster."""

    def kubectl(self, command: str | list[str], *, show: bool = True, input: str | None = None,
                timeout: float | None = None, events: int | None = None) -> Any:
        """The real kubectl against this cluster (a watch stops after `events` rows or `timeout` seconds)."""

    def meter(self, kinds: tuple[str, ...], watchers: int | None) -> Any:
        """A meter of the watch traffic that a fan-out to `watchers` ships."""

    def summary_html(self) -> str:
        """A short HTML card for the Lab's repr."""

    def client_ip(self) -> str:
        """The address that requests with source="client" come from."""

    # --- the picture ---------------------------------------------------------------------------------------
    def snapshot(self, *, rule_counts: bool = True) -> ClusterSnapshot:
        """A read-only copy of what the picture draws: objects and each node's kube-proxy status."""

    def subscribe(self, callback: Callable[[str], None]) -> Callable[[], None]:
        """Call `callback(kind)` after each change of the cluster's objects; returns the unsubscribe function.

        A backend that cannot watch cheaply may never call back (the picture then redraws after each cell)."""

    def sync_proxies(self) -> None:
        """Let every running kube-proxy catch up with the cluster, as a real one does within its sync period."""

    def close(self) -> None:
        """Stop servers and remove what the backend created."""


__all__ = ["Backend"]
