"""The `netns` backend: the embedded control plane over a real Linux data plane of network namespaces."""
from __future__ import annotations

from typing import Any

from labsupport.netns.machine import preflight
from labsupport.netns.network import KernelNetwork
from labsupport.sim.backend import EmbeddedBackend


class NetnsBackend(EmbeddedBackend):
    """The same control plane as `sim`; packets, DNS, probes and curl go through the kernel."""

    name = "netns"

    def preflight(self, proxy_mode: str) -> None:
        """Refuse, saying why, where this machine cannot build namespaces or load this mode's rules."""
        preflight(proxy_mode)

    def make_network(self, seed: int) -> KernelNetwork:
        """Namespaces per node and pod, kube-proxy's rules loaded into them, real servers and tools."""
        return KernelNetwork(self.cluster, self.proxies, seed=seed)

    def prober(self) -> Any:
        """The kernel network probes pods from their node's namespace."""
        return self.network.prober


__all__ = ["NetnsBackend"]
