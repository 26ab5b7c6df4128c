"""Which endpoints a node's kube-proxy uses for each Service port, decided the way upstream decides it.

The inputs are Kubernetes API dicts; the outputs are small frozen records that every renderer shares.
"""
from __future__ import annotations

import gc
import ipaddress
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Iterable, Iterator, NamedTuple

SERVICE_NAME_LABEL = "kubernetes.io/service-name"
ZONE_LABEL = "topology.kubernetes.io/zone"
DEFAULT_AFFINITY_TIMEOUT = 10800
_EMPTY: frozenset = frozenset()


@dataclass(frozen=True)
class ServicePort:
    """One port of one Service, as kube-proxy sees it (upstream's servicePortInfo)."""

    namespace: str
    name: str
    port_name: str
    protocol: str                   # lower case: tcp, udp, sctp
    port: int
    cluster_ip: str
    node_port: int = 0
    external_ips: tuple[str, ...] = ()
    load_balancer_ips: tuple[str, ...] = ()
    source_ranges: tuple[str, ...] = ()
    affinity_timeout: int = 0       # 0 = no ClientIP session affinity
    external_local: bool = False
    internal_local: bool = False
    health_check_node_port: int = 0

    @property
    def port_name_string(self) -> str:
        """`ns/name:portname`, or `ns/name` for an unnamed port (upstream's svcPortName.String())."""
        base = f"{self.namespace}/{self.name}"
        return f"{base}:{self.port_name}" if self.port_name else base

    @property
    def externally_accessible(self) -> bool:
        """True when the port takes traffic for a NodePort, external IP or load-balancer IP."""
        return bool(self.node_port or self.load_balancer_ips or self.external_ips)

    @property
    def uses_cluster_endpoints(self) -> bool:
        """Cluster endpoints are needed unless every path is Local-only."""
        return not self.internal_local or self.externally_accessible

    @property
    def uses_local_endpoints(self) -> bool:
        """Local endpoints are needed when either traffic policy is Local."""
        return self.internal_local or (self.external_local and self.externally_accessible)

    @property
    def service_key(self) -> tuple[str, str]:
        """(namespace, name) of the Service this port belongs to."""
        return (self.namespace, self.name)


class Endpoint(NamedTuple):
    """One endpoint address:port of a Service port, with its conditions and topology."""

    ip: str
    port: int
    key: str                        # "ip:port", the string endpoints are sorted and named by
    node_name: str = ""
    zone: str = ""
    ready: bool = True
    serving: bool = True
    terminating: bool = False
    zone_hints: frozenset = frozenset()
    node_hints: frozenset = frozenset()

    @classmethod
    def make(cls, ip: str, port: int, **kw) -> "Endpoint":
        """An Endpoint with its key filled in."""
        return cls(ip, port, f"{ip}:{port}", **kw)


@dataclass(frozen=True)
class Selection:
    """The endpoints one node uses for one Service port (upstream's CategorizeEndpoints result)."""

    cluster: tuple[Endpoint, ...]
    local: tuple[Endpoint, ...]
    reachable: tuple[Endpoint, ...]
    has_endpoints: bool


def _is_ipv4(text: str) -> bool:
    try:
        return isinstance(ipaddress.ip_address(text), ipaddress.IPv4Address)
    except ValueError:
        return False


def is_proxied(service: dict) -> bool:
    """False for Services kube-proxy ignores: headless (clusterIP None or empty) and ExternalName."""
    spec = service.get("spec") or {}
    if spec.get("type") == "ExternalName":
        return False
    cluster_ip = spec.get("clusterIP") or ""
    return cluster_ip not in ("", "None")


def service_ports(service: dict) -> list[ServicePort]:
    """The ServicePort records of one Service (an empty list for a Service kube-proxy ignores)."""
    if not is_proxied(service):
        return []
    meta = service.get("metadata") or {}
    spec = service.get("spec") or {}
    namespace = meta.get("namespace") or "default"
    name = meta.get("name") or ""
    svc_type = spec.get("type") or "ClusterIP"
    cluster_ip = spec["clusterIP"]
    if not _is_ipv4(cluster_ip):
        return []
    external_ips = tuple(ip for ip in spec.get("externalIPs") or () if _is_ipv4(ip))
    lb_ips: tuple[str, ...] = ()
    ranges: tuple[str, ...] = ()
    if svc_type == "LoadBalancer":
        ingress = ((service.get("status") or {}).get("loadBalancer") or {}).get("ingress") or ()
        lb_ips = tuple(i["ip"] for i in ingress
                       if i.get("ip") and _is_ipv4(i["ip"]) and i.get("ipMode", "VIP") != "Proxy")
        ranges = tuple(str(ipaddress.ip_network(r.strip(), strict=False))
                       for r in spec.get("loadBalancerSourceRanges") or () if r.strip())
    reachable_from_outside = svc_type in ("NodePort", "LoadBalancer") or (svc_type == "ClusterIP" and external_ips)
    external_local = bool(reachable_from_outside) and spec.get("externalTrafficPolicy") == "Local"
    internal_local = spec.get("internalTrafficPolicy") == "Local"
    timeout = 0
    if spec.get("sessionAffinity") == "ClientIP":
        cfg = ((spec.get("sessionAffinityConfig") or {}).get("clientIP") or {})
        timeout = int(cfg.get("timeoutSeconds") or DEFAULT_AFFINITY_TIMEOUT)
    health = 0
    if svc_type == "LoadBalancer" and external_local:
        health = int(spec.get("healthCheckNodePort") or 0)
    ports = []
    for port in spec.get("ports") or ():
        node_port = int(port.get("nodePort") or 0) if svc_type in ("NodePort", "LoadBalancer") else 0
        ports.append(ServicePort(
            namespace=namespace, name=name, port_name=port.get("name") or "",
            protocol=(port.get("protocol") or "TCP").lower(), port=int(port["port"]), cluster_ip=cluster_ip,
            node_port=node_port, external_ips=external_ips, load_balancer_ips=lb_ips, source_ranges=ranges,
            affinity_timeout=timeout, external_local=external_local, internal_local=internal_local,
            health_check_node_port=health))
    return ports


def slice_service_key(endpointslice: dict) -> tuple[str, str] | None:
    """(namespace, service name) an EndpointSlice belongs to, from its service-name label."""
    meta = endpointslice.get("metadata") or {}
    name = (meta.get("labels") or {}).get(SERVICE_NAME_LABEL)
    if not name:
        return None
    return (meta.get("namespace") or "default", name)


def slice_endpoints(endpointslices: Iterable[dict]) -> dict[tuple[str, str], tuple[Endpoint, ...]]:
    """Endpoints of one Service's slices, keyed by (port name, protocol), sorted by `ip:port`, de-duplicated."""
    merged: dict[tuple[str, str], dict[str, Endpoint]] = {}
    for eps in endpointslices:
        if eps.get("addressType", "IPv4") != "IPv4":
            continue
        for port in eps.get("ports") or ():
            if port.get("port") is None:
                continue
            key = (port.get("name") or "", (port.get("protocol") or "TCP").lower())
            bucket = merged.setdefault(key, {})
            number = int(port["port"])
            for ep in eps.get("endpoints") or ():
                addresses = ep.get("addresses") or ()
                if not addresses:
                    continue
                cond = ep.get("conditions") or {}
                ready = cond.get("ready")
                serving = cond.get("serving")
                hints = ep.get("hints") or {}
                ip = addresses[0]
                key = f"{ip}:{number}"
                if key in bucket:
                    continue
                bucket[key] = Endpoint(
                    ip, number, key, ep.get("nodeName") or "", ep.get("zone") or "",
                    ready is None or bool(ready), serving is None or bool(serving), bool(cond.get("terminating")),
                    frozenset(h.get("name", "") for h in hints["forZones"]) if hints.get("forZones") else _EMPTY,
                    frozenset(h.get("name", "") for h in hints["forNodes"]) if hints.get("forNodes") else _EMPTY)
    return {key: tuple(bucket[k] for k in sorted(bucket)) for key, bucket in merged.items()}


def group_slices(endpointslices: Iterable[dict]) -> dict[tuple[str, str], list[dict]]:
    """EndpointSlices grouped by the (namespace, name) of their Service."""
    groups: dict[tuple[str, str], list[dict]] = {}
    for eps in endpointslices:
        key = slice_service_key(eps)
        if key is not None:
            groups.setdefault(key, []).append(eps)
    return groups


def topology_mode(endpoints: Iterable[Endpoint], node_name: str, zone: str) -> str:
    """"PreferSameNode", "PreferSameZone" or "" from the hints on the ready endpoints."""
    any_ready = False
    all_node_hints = all_zone_hints = True
    for_node = for_zone = False
    for ep in endpoints:
        if not ep.ready:
            continue
        any_ready = True
        if not ep.node_hints:
            all_node_hints = False
        elif node_name in ep.node_hints:
            for_node = True
        if not ep.zone_hints:
            all_zone_hints = False
        elif zone in ep.zone_hints:
            for_zone = True
    if not any_ready:
        return ""
    if all_node_hints and for_node:
        return "PreferSameNode"
    if all_zone_hints and for_zone:
        return "PreferSameZone"
    return ""


def _topology_allows(ep: Endpoint, mode: str, node_name: str, zone: str) -> bool:
    if mode == "PreferSameNode":
        return node_name in ep.node_hints
    if mode == "PreferSameZone":
        return zone in ep.zone_hints
    return True


def categorize(port: ServicePort, endpoints: Iterable[Endpoint], node_name: str, zone: str = "") -> Selection:
    """Split a port's endpoints into cluster, local and reachable sets for the node `node_name`."""
    endpoints = tuple(endpoints)

    def local(ep: Endpoint) -> bool:
        return bool(ep.node_name) and ep.node_name == node_name

    cluster: tuple[Endpoint, ...] = ()
    has_any = False
    mode = ""
    if port.uses_cluster_endpoints:
        mode = topology_mode(endpoints, node_name, zone)
        cluster = tuple(ep for ep in endpoints if ep.ready and _topology_allows(ep, mode, node_name, zone))
        if not cluster:
            cluster = tuple(ep for ep in endpoints if ep.serving and ep.terminating)
        has_any = bool(cluster)
    if not port.uses_local_endpoints:
        return Selection(cluster, (), cluster, has_any)
    local_ready = local_terminating = False
    for ep in endpoints:
        if ep.ready:
            has_any = True
            local_ready = local_ready or local(ep)
        elif ep.serving and ep.terminating:
            has_any = True
            local_terminating = local_terminating or local(ep)
    local_eps: tuple[Endpoint, ...] = ()
    if local_ready:
        local_eps = tuple(ep for ep in endpoints if local(ep) and ep.ready)
    elif local_terminating:
        local_eps = tuple(ep for ep in endpoints if local(ep) and ep.serving and ep.terminating)
    if not port.uses_cluster_endpoints:
        return Selection((), local_eps, local_eps, has_any)
    merged = {ep.key: ep for ep in cluster}
    merged.update((ep.key, ep) for ep in local_eps)
    reachable = tuple(merged[k] for k in sorted(merged))
    return Selection(cluster, local_eps, reachable, has_any)


@dataclass(frozen=True)
class NodeInfo:
    """What kube-proxy needs from its Node object: name, zone and InternalIP addresses (primary first)."""

    name: str
    zone: str = ""
    ips: tuple[str, ...] = ()

    @property
    def primary_ip(self) -> str:
        """The first InternalIP, or an empty string."""
        return self.ips[0] if self.ips else ""

    @classmethod
    def from_node(cls, node: dict) -> "NodeInfo":
        """Read a Node dict."""
        meta = node.get("metadata") or {}
        addresses = ((node.get("status") or {}).get("addresses")) or ()
        ips = tuple(a["address"] for a in addresses
                    if a.get("type") == "InternalIP" and _is_ipv4(a.get("address", "")))
        return cls(meta.get("name") or "", (meta.get("labels") or {}).get(ZONE_LABEL, ""), ips)


@dataclass(frozen=True)
class ProxyConfig:
    """The KubeProxyConfiguration fields the renderers use, with upstream defaults."""

    cluster_cidr: str = ""
    masquerade_bit: int = 14
    masquerade_all: bool = False
    localhost_node_ports: bool = True
    node_port_addresses: tuple[str, ...] = ()
    ipvs_scheduler: str = "rr"
    ipvs_strict_arp: bool = False

    @property
    def mark(self) -> str:
        """The masquerade mark in hex, `0x4000` for bit 14."""
        return hex(1 << self.masquerade_bit)

    @classmethod
    def from_dict(cls, config: dict | None, section: str = "iptables") -> "ProxyConfig":
        """Read a KubeProxyConfiguration dict (missing fields take upstream defaults). `section` is the mode whose
        block holds the masquerade bit and masqueradeAll: `iptables` (iptables and IPVS) or `nftables`."""
        config = config or {}
        ipt = config.get("iptables") or {}
        ipvs = config.get("ipvs") or {}
        masq = config.get(section) or {}
        cidr = config.get("clusterCIDR") or ""
        cidr = cidr.split(",")[0].strip()
        bit = masq.get("masqueradeBit")
        return cls(
            cluster_cidr=cidr,
            masquerade_bit=14 if bit is None else int(bit),
            masquerade_all=bool(_given(masq.get("masqueradeAll"), config.get("masqueradeAll"), False)),
            localhost_node_ports=bool(_given(ipt.get("localhostNodePorts"), True)),
            node_port_addresses=tuple(config.get("nodePortAddresses") or ()),
            ipvs_scheduler=ipvs.get("scheduler") or "rr",
            ipvs_strict_arp=bool(_given(ipvs.get("strictARP"), False)))


def _given(*values):
    """The first value that is set: a null field of a KubeProxyConfiguration takes its default, as upstream."""
    return next(v for v in values if v is not None)


def node_port_ips(node: NodeInfo, config: ProxyConfig, default_primary: bool) -> tuple[str, ...] | None:
    """The node IPs NodePorts answer on; None means every local address."""
    wanted = config.node_port_addresses
    if not wanted:
        return (node.primary_ip,) if default_primary and node.primary_ip else None
    result = []
    for entry in wanted:
        if entry == "primary":
            if node.primary_ip:
                result.append(node.primary_ip)
            continue
        net = ipaddress.ip_network(entry, strict=False)
        if net.prefixlen == 0 and net.version == 4:
            return None
        for ip in node.ips:
            if ipaddress.ip_address(ip) in net and ip not in result:
                result.append(ip)
        if net.version == 4 and ipaddress.ip_address("127.0.0.1") in net and "127.0.0.1" not in result:
            result.append("127.0.0.1")
    return tuple(result)


def sort_key(port: ServicePort) -> tuple[str, str]:
    """Stable order for Service ports: by `ns/name:port` then protocol."""
    return (port.port_name_string, port.protocol)


@contextmanager
def paused_gc() -> Iterator[None]:
    """Pause the cyclic garbage collector while building large rule sets (they create no cycles)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
