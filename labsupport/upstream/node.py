"""One node's real kube-proxy against the embedded cluster, and what labsupport renders for the same objects.

A node runs in a namespace of its own (made here, with the node's InternalIP on `eth0`) or in one the netns backend
already made; the API server's loopback port is relayed into it, so the kubeconfig the server wrote works there.
"""
from __future__ import annotations

from typing import Any

from labsupport.netns import namespaces as kernel_ns
from labsupport.proxy import render
from labsupport.proxy.iptables import render_iptables
from labsupport.proxy.topology import ZONE_LABEL
from labsupport.upstream.compare import canonical_iptables, canonical_nft
from labsupport.upstream.forwarder import LoopbackForwarder
from labsupport.upstream.nfacct import create_counters
from labsupport.upstream.kube_proxy import (START_TIMEOUT, SYNC_TIMEOUT, LostAtStart, UpstreamKubeProxy, clean_up,
                                            configuration, ensure_service_cidr, remove_kubelet_jumps)

#: How many starts that lose a piece of the node's state (LostAtStart) make an error, in a namespace made here.
START_ATTEMPTS = 3


def service_cidrs(cluster: Any) -> tuple[str, ...]:
    """The Service CIDRs the cluster's ServiceCIDR objects declare (what kube-proxy learns from them)."""
    out: list[str] = []
    for obj in cluster.store.list("ServiceCIDR"):
        out.extend(c for c in obj.get("spec", {}).get("cidrs", []) if c not in out)
    return tuple(out) or ("10.96.0.0/12",)


class KubeProxyNode:
    """The real kube-proxy of node `node` of `cluster`, served by `api` (an APIServer), in namespace `ns` (made
    here when None, and then removed by close)."""

    def __init__(self, cluster: Any, api: Any, node: str, mode: str = "iptables", *, ns: str | None = None,
                 start_timeout: float = START_TIMEOUT):
        self.cluster = cluster
        self.api = api
        self.node = node
        self.mode = mode
        self.ns = ns
        self._own_ns = ns is None
        self.start_timeout = start_timeout
        self._run: str | None = None
        self.forwarder: LoopbackForwarder | None = None
        self.kube_proxy: UpstreamKubeProxy | None = None
        self.restarts: list[str] = []     # why a start was made again

    def start(self) -> "KubeProxyNode":
        """Make the namespace (if ours), relay the API server into it and start kube-proxy; returns after its
        first sync with its Node's zone and the Service CIDRs. A kube-proxy that lost either at start is started
        again: in a new namespace when the namespace is made here, else after `kube-proxy --cleanup` in the given
        one, with the jumps kube-proxy made for the kubelet, which --cleanup leaves (a restart would otherwise find
        the lost start's chains, which nftables mode deletes only a sync or more later, and iptables mode's jumps
        would come back in another order, which only a rules comparison sees)."""
        for attempt in range(1, START_ATTEMPTS + 1):
            try:
                return self._start()
            except LostAtStart as lost:
                if attempt == START_ATTEMPTS:
                    raise
                self.restarts.append(str(lost))
                if not self._own_ns:
                    clean_up(self.ns)
                    remove_kubelet_jumps(self.ns)

    def _start(self) -> "KubeProxyNode":
        try:
            if self._own_ns:
                self._run = kernel_ns.new_run_id()
                self.ns = kernel_ns.ns_name(self._run, f"kp-{self.node}")
                kernel_ns.create_namespace(self.ns)
                kernel_ns.add_bridge(self.ns, "eth0", self.cluster.node_ip(self.node), 16)
            ensure_service_cidr(self.cluster)
            self.forwarder = LoopbackForwarder(self.ns, self.api.port).start()
            self.kube_proxy = UpstreamKubeProxy(self.ns, self.node, self.config_map(), self.api.kubeconfig_path,
                                                mode=self.mode)
            with self.cluster.lock:
                has_cidrs = bool(self.cluster.store.list("ServiceCIDR"))
            self.kube_proxy.start(self.start_timeout, zone=self.zone(), service_cidrs=has_cidrs)
        except BaseException:
            self.close()
            raise
        return self

    def close(self) -> None:
        """Stop kube-proxy and the relay; remove the namespace if it is ours."""
        if self.kube_proxy is not None:
            self.kube_proxy.remove()
            self.kube_proxy = None
        if self.forwarder is not None:
            self.forwarder.stop()
            self.forwarder = None
        if self._own_ns and self.ns:
            kernel_ns.remove_namespace(self.ns)
            if self._run:
                kernel_ns.release_run_id(self._run)
            self.ns = None

    def __enter__(self) -> "KubeProxyNode":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def config_map(self) -> dict:
        """The cluster's kube-proxy ConfigMap."""
        with self.cluster.lock:
            return self.cluster.get("ConfigMap", "kube-system", "kube-proxy")

    def zone(self) -> str:
        """The zone label of this node's Node as the API server has it now ("" without one)."""
        with self.cluster.lock:
            node = self.cluster.store.find("Node", None, self.node)
        return ((node or {}).get("metadata", {}).get("labels") or {}).get(ZONE_LABEL, "")

    # --- the two sides ---------------------------------------------------------------------------------------
    def actual(self) -> str:
        """What the real kube-proxy wrote, as comparable text."""
        text = self.kube_proxy.rules()
        return canonical_nft(text) if self.mode == "nftables" else canonical_iptables(text)

    def rendered(self) -> str:
        """labsupport's render for the same objects and configuration, as the tool would show it."""
        with self.cluster.lock:
            services = self.cluster.store.list("Service")
            slices = self.cluster.store.list("EndpointSlice")
            node = self.cluster.get("Node", None, self.node)
            cidrs = service_cidrs(self.cluster)
        config = configuration(self.config_map(), self.node, self.mode, self.api.kubeconfig_path)
        nfacct = "Failed to create nfacct counter" not in self.kube_proxy.log()
        if self.mode == "iptables":
            return render_iptables(services, slices, node, config, nfacct=nfacct, with_jumps=True)
        return render(self.mode, services, slices, node, config, service_cidrs=cidrs, nfacct=nfacct)

    def expected(self) -> str:
        """labsupport's render as comparable text (nftables: loaded into a scratch namespace and listed back)."""
        text = self.rendered()
        if self.mode != "nftables":
            return canonical_iptables(load_and_save_iptables(text))
        return canonical_nft(load_and_list_nft(text))

    def sync(self, since: float | None = None, timeout: float = SYNC_TIMEOUT) -> float:
        """Wait for kube-proxy to write rules for every change made since `since` (Unix seconds), with the zone its
        Node has now: the render reads that Node too."""
        return self.kube_proxy.wait_synced(since, timeout, zone=self.zone())


def load_and_save_iptables(dump: str) -> str:
    """An iptables-restore input as the kernel shows it back (`iptables-save` of nat and filter), in a scratch
    namespace of our own: both sides then print through the same tool."""
    run = kernel_ns.new_run_id()
    ns = kernel_ns.ns_name(run, "ipt-scratch")
    kernel_ns.create_namespace(ns)
    try:
        if "-m nfacct" in dump:
            create_counters(ns)
        kernel_ns.run_in(ns, ["iptables-restore", "-w"], input=dump, check=True)
        return "".join(kernel_ns.run_in(ns, ["iptables-save", "-t", t], check=True).stdout for t in ("filter", "nat"))
    finally:
        kernel_ns.remove_namespace(ns)
        kernel_ns.release_run_id(run)


def load_and_list_nft(transaction: str) -> str:
    """An `nft -f` transaction as the kernel lists it back (`nft list table ip kube-proxy`), in a scratch
    namespace of our own."""
    run = kernel_ns.new_run_id()
    ns = kernel_ns.ns_name(run, "nft-scratch")
    kernel_ns.create_namespace(ns)
    try:
        kernel_ns.run_in(ns, ["nft", "-f", "-"], input=transaction, check=True)
        return kernel_ns.run_in(ns, ["nft", "list", "table", "ip", "kube-proxy"], check=True).stdout
    finally:
        kernel_ns.remove_namespace(ns)
        kernel_ns.release_run_id(run)
