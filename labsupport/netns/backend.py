"""The `netns` backend: the embedded control plane over a real Linux data plane of network namespaces.

Optionally the real programs take over from labsupport's models: `kube_proxy="upstream"` runs the real kube-proxy
in every node's namespace (its rules, not the renderer's, are in the kernel), `dns="upstream"` the real CoreDNS in
the CoreDNS pods' namespaces (also `LABSUPPORT_KUBE_PROXY=upstream`, `LABSUPPORT_DNS=upstream`).
"""
from __future__ import annotations

import os
from typing import Any

from labsupport.errors import BadRequest
from labsupport.netns.machine import preflight
from labsupport.netns.network import KernelNetwork
from labsupport.sim.backend import EmbeddedBackend

IMPLEMENTATIONS = ("labsupport", "upstream")


class NetnsBackend(EmbeddedBackend):
    """The same control plane as `sim`; packets, DNS, probes and curl go through the kernel."""

    name = "netns"
    options_allowed = EmbeddedBackend.options_allowed | {"kube_proxy", "dns"}

    def preflight(self, proxy_mode: str) -> None:
        """Refuse, saying why, where this machine cannot build namespaces or load this mode's rules."""
        self.upstream = self.upstream_dns = None
        self.real_kube_proxy = self._implementation("kube_proxy", "LABSUPPORT_KUBE_PROXY") == "upstream"
        self.real_dns = self._implementation("dns", "LABSUPPORT_DNS") == "upstream"
        preflight(proxy_mode)

    def _implementation(self, option: str, variable: str) -> str:
        value = self.options.get(option) or os.environ.get(variable) or "labsupport"
        if value not in IMPLEMENTATIONS:
            where = f"Lab({option}=…)" if self.options.get(option) else variable
            raise BadRequest(f"unknown {option} {value!r} (from {where}): choose one of {', '.join(IMPLEMENTATIONS)}")
        return value

    def make_network(self, seed: int) -> KernelNetwork:
        """Namespaces per node and pod, kube-proxy's rules loaded into them, real servers and tools."""
        return KernelNetwork(self.cluster, self.proxies, seed=seed, load_rules=not self.real_kube_proxy,
                             serve_dns=not self.real_dns)

    def prober(self) -> Any:
        """The kernel network probes pods from their node's namespace."""
        return self.network.prober

    def start_data_plane(self, proxy_mode: str) -> None:
        """Start the real kube-proxy and CoreDNS where they were asked for."""
        try:
            if self.real_kube_proxy:
                from labsupport.upstream.netns import start_on
                self.upstream = start_on(self, proxy_mode)
            if self.real_dns:
                from labsupport.upstream.netns import start_dns_on
                self.upstream_dns = start_dns_on(self)
        except BaseException:
            self.close()
            raise

    def before_traffic(self) -> None:
        """Wait until the real programs have acted on the last change (labsupport's own are always current)."""
        if self.upstream_dns is not None:
            self.upstream_dns.reconcile()
        if self.upstream is not None:
            self.upstream.settle()

    def proxy_rules(self, node: str | None) -> str:
        """The node's rules; with the real kube-proxy, what it wrote."""
        if self.upstream is not None:
            return self.upstream.rules(self._node_name(node))
        return super().proxy_rules(node)

    def close(self) -> None:
        """Stop the real programs, then the servers and namespaces."""
        for runner in (self.upstream, self.upstream_dns):
            if runner is not None:
                runner.close()
        self.upstream = self.upstream_dns = None
        super().close()


__all__ = ["NetnsBackend"]
