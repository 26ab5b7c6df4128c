"""What a controller may use of the cluster it runs in: `ControllerContext`, passed in explicitly.

A real controller holds an informer cache, a client and an event recorder; ours hold the same three things — the
store, the API verbs it writes through, and the event recorder — plus the clock, and, for the kubelet, the pod-facing
network and the prober of the data plane the backend wires in. Controllers never see the `Cluster` itself.
"""
from __future__ import annotations

import random
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Protocol

from labsupport.control.clock import VirtualClock
from labsupport.control.store import Store
from labsupport.shape import ClusterConfig

if TYPE_CHECKING:
    from labsupport.results import CurlResult, NslookupAnswer


class PodNetwork(Protocol):
    """The network verbs a pod's processes use (curl, wget, nslookup inside the pod)."""

    def nslookup(self, name: str, pod: str | None = None) -> "NslookupAnswer":
        """Resolve a name as nslookup in the pod would."""

    def curl(self, url: str, source: str = "client", **options: Any) -> "CurlResult":
        """One HTTP request from a source."""


class Prober(Protocol):
    """A data plane that probes pods for real; None from `probe` means: let the model answer."""

    def probe(self, pod: dict, runtime: Any, app: Any, probe: dict) -> tuple[bool, str] | None:
        """Run one httpGet/tcpSocket probe: (passed, the kubelet's message), or None."""


@dataclass
class ControllerContext:
    """The cluster as a controller sees it: its cache and clock, the verbs it writes through, its event recorder."""

    config: ClusterConfig
    store: Store
    clock: VirtualClock
    rng: random.Random
    create: Callable[..., dict]
    delete: Callable[..., dict]
    bind: Callable[[dict, str], None]
    create_pod_from_template: Callable[..., dict]
    finalize_pod: Callable[[dict], None]
    record_event: Callable[..., None]
    node_ip: Callable[[Any], str]
    pod_env: Callable[[dict], Any]
    #: The pod-facing network and the prober, wired by the backend once its data plane exists.
    network: PodNetwork | None = None
    prober: Prober | None = None

    def timestamp(self) -> str:
        """The current virtual time as an RFC 3339 timestamp."""
        from labsupport.control.clock import rfc3339
        return rfc3339(self.clock.now)


__all__ = ["ControllerContext", "PodNetwork", "Prober"]
