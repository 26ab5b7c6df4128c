"""kube-proxy's nftables mode: the `nft -f` transaction for table `ip kube-proxy`, full and incremental."""
from __future__ import annotations

import base64
import hashlib
import ipaddress
from dataclasses import dataclass, field
from typing import Iterable

from labsupport.proxy.release import RELEASE, dnat_maps
from labsupport.proxy.topology import (Endpoint, NodeInfo, ProxyConfig, ServicePort, categorize, group_slices,
                                       node_port_ips, paused_gc, service_ports, slice_endpoints,
                                       slice_service_key, sort_key)

TABLE = "ip kube-proxy"
NAME_MAX = 256 - 16

MAP_TYPES = {
    "firewall-ips": ("ipv4_addr . inet_proto . inet_service : verdict",
                     "destinations that are subject to LoadBalancerSourceRanges"),
    "no-endpoint-nodeports": ("inet_proto . inet_service : verdict",
                              "vmap to drop or reject packets to service nodeports with no endpoints"),
    "no-endpoint-services": ("ipv4_addr . inet_proto . inet_service : verdict",
                             "vmap to drop or reject packets to services with no endpoints"),
    "service-ips": ("ipv4_addr . inet_proto . inet_service : verdict",
                    "ClusterIP, ExternalIP and LoadBalancer IP traffic"),
    "service-nodeports": ("inet_proto . inet_service : verdict", "NodePort traffic"),
}
ELEMENT_ORDER = ("cluster-ips", "nodeport-ips", "firewall-ips", "no-endpoint-nodeports", "no-endpoint-services",
                 "service-ips", "service-nodeports", "hairpin-connections")
HAIRPIN_SET = ('add set {table} hairpin-connections {{ type ipv4_addr . ipv4_addr . inet_proto . inet_service ; '
               'comment "service hairpin connections" ; }}')


def _base_name(name: str) -> str:
    digest = base64.b32encode(hashlib.sha256(name.encode()).digest()[:5]).decode()
    full = f"{digest}-{name}"
    return full if len(full) <= NAME_MAX else full[:NAME_MAX - 3] + "..."


def port_chain_base(port: ServicePort) -> str:
    """`HASH-ns/svc/proto/portname`, the base of a Service port's chain names."""
    return _base_name(f"{port.namespace}/{port.name}/{port.protocol}/{port.port_name}")


def endpoint_chain_base(port: ServicePort, ep: Endpoint) -> str:
    """`HASH-ns/svc/proto/portname__ip/port`, the base of an endpoint's chain and affinity set names."""
    ip = ep.ip.replace(":", ".")
    return _base_name(f"{port.namespace}/{port.name}/{port.protocol}/{port.port_name}__{ip}/{ep.port}")


@dataclass
class ServiceRules:
    """What one Service contributes to the table: its chains, affinity sets and map/set elements."""

    chains: dict[str, list[str]] = field(default_factory=dict)      # chain -> rule bodies
    sets: dict[str, int] = field(default_factory=dict)              # affinity set -> timeout seconds
    elements: dict[tuple[str, str], str] = field(default_factory=dict)   # (map, key) -> element text


def _elem(key: str, value: str | None = None, comment: str | None = None) -> str:
    text = key
    if comment:
        text += f' comment "{comment}"'
    if value is not None:
        text += f" : {value}"
    return text


def service_rules(ports: list[tuple[ServicePort, tuple[Endpoint, ...]]], node: NodeInfo,
                  cfg: ProxyConfig, maps: bool = True) -> ServiceRules:
    """The chains, sets and elements of one Service's ports on this node (`maps`: the DNAT-map layout of
    `dnat_maps`, else the older chain-per-endpoint one)."""
    out = ServiceRules()
    masq = f"mark set mark or {cfg.mark}" if maps else "jump mark-for-masquerade"
    chains = out.chains
    elements = out.elements
    for port, endpoints in ports:
        proto = port.protocol
        name = port.port_name_string
        base = port_chain_base(port)
        svc_chain = "service-" + base
        local_chain = "local-" + base
        ext_chain = "external-" + base
        fw_chain = "firewall-" + base
        sel = categorize(port, endpoints, node.name, node.zone)
        has_eps = sel.has_endpoints
        uses_cluster = bool(sel.cluster) and port.uses_cluster_endpoints
        uses_local = bool(sel.local) and port.uses_local_endpoints
        internal_chain, has_internal = svc_chain, has_eps
        if port.internal_local:
            internal_chain, has_internal = local_chain, has_eps and bool(sel.local)
        external_policy_chain, has_external = svc_chain, has_eps
        if port.external_local:
            external_policy_chain, has_external = local_chain, has_eps and bool(sel.local)
        uses_ext = has_eps and port.externally_accessible
        int_verdict = ext_verdict = ""
        if not has_eps:
            int_verdict = ext_verdict = "goto reject-chain"
        else:
            if not has_internal:
                int_verdict = "drop"
            if not has_external:
                ext_verdict = "drop"
        affinity = port.affinity_timeout > 0
        ep_chains = {ep.key: "endpoint-" + endpoint_chain_base(port, ep) for ep in sel.reachable}
        if affinity or not maps:
            for chain in ep_chains.values():
                chains[chain] = []
        if maps:
            for ep in sel.reachable:
                if ep.node_name and ep.node_name == node.name:
                    key = f"{ep.ip} . {ep.ip} . {proto} . {ep.port}"
                    elements[("hairpin-connections", key)] = key
        if uses_cluster:
            chains[svc_chain] = []
        if uses_local:
            chains[local_chain] = []
        if uses_ext:
            chains[ext_chain] = []

        elements[("cluster-ips", port.cluster_ip)] = port.cluster_ip
        vip_key = f"{port.cluster_ip} . {proto} . {port.port}"
        if has_internal:
            elements[("service-ips", vip_key)] = _elem(vip_key, f"goto {internal_chain}")
        else:
            elements[("no-endpoint-services", vip_key)] = _elem(vip_key, int_verdict, name)
        for ip in port.external_ips:
            key = f"{ip} . {proto} . {port.port}"
            if has_eps:
                elements[("service-ips", key)] = _elem(key, f"goto {ext_chain}")
            if not has_external:
                elements[("no-endpoint-services", key)] = _elem(key, ext_verdict, name)
        uses_fw = bool(port.load_balancer_ips) and bool(port.source_ranges)
        if uses_fw:
            sources = list(port.source_ranges)
            node_ip = ipaddress.ip_address(node.primary_ip) if node.primary_ip else None
            if node_ip is not None and any(node_ip in ipaddress.ip_network(c) for c in port.source_ranges):
                sources += list(port.load_balancer_ips)
            chains[fw_chain] = [f"ip saddr != {{ {', '.join(sources)} }} drop"]
        for ip in port.load_balancer_ips:
            key = f"{ip} . {proto} . {port.port}"
            if has_eps:
                elements[("service-ips", key)] = _elem(key, f"goto {ext_chain}")
            if uses_fw:
                elements[("firewall-ips", key)] = _elem(key, f"goto {fw_chain}")
        if not has_external:
            for ip in port.load_balancer_ips:
                key = f"{ip} . {proto} . {port.port}"
                elements[("no-endpoint-services", key)] = _elem(key, ext_verdict, name)
        if port.node_port:
            key = f"{proto} . {port.node_port}"
            if has_eps:
                elements[("service-nodeports", key)] = _elem(key, f"goto {ext_chain}")
            if not has_external:
                elements[("no-endpoint-nodeports", key)] = _elem(key, ext_verdict, name)

        if has_internal and not maps:
            if cfg.masquerade_all:
                chains[internal_chain].append(f"ip daddr {port.cluster_ip} jump mark-for-masquerade")
            elif cfg.cluster_cidr:
                chains[internal_chain].append(
                    f"ip daddr {port.cluster_ip} ip saddr != {cfg.cluster_cidr} jump mark-for-masquerade")
        if uses_ext:
            rules = chains[ext_chain]
            if not port.external_local:
                rules.append(f'{masq} comment "masquerade"' if maps else masq)
            else:
                if cfg.cluster_cidr:
                    rules.append(f'ip saddr {cfg.cluster_cidr} goto {svc_chain} comment "short-circuit pod traffic"')
                rules.append(f'fib saddr type local {masq} comment "masquerade local traffic"')
                rules.append(f'fib saddr type local goto {svc_chain} comment "short-circuit local traffic"')
            if has_external:
                rules.append(f"goto {external_policy_chain}")
        if affinity:
            for ep in sel.reachable:
                out.sets["affinity-" + endpoint_chain_base(port, ep)] = port.affinity_timeout
        balance = _jump_to_endpoints if affinity or not maps else _dnat_to_endpoints
        if uses_cluster:
            balance(chains[svc_chain], port, sel.cluster, ep_chains)
        if uses_local:
            balance(chains[local_chain], port, sel.local, ep_chains)
        if affinity or not maps:
            for ep in sel.reachable:
                rules = chains[ep_chains[ep.key]]
                if not maps:
                    rules.append(f"ip saddr {ep.ip} {masq}")
                if affinity:
                    rules.append(f"update @affinity-{endpoint_chain_base(port, ep)} {{ ip saddr }}")
                rules.append(f"meta l4proto {proto} dnat to {ep.key}")
    return out


def _jump_to_endpoints(rules: list[str], port: ServicePort, endpoints: tuple[Endpoint, ...],
                       ep_chains: dict[str, str]) -> None:
    """Affinity hits first, then a random endpoint chain: `numgen … vmap { i : goto endpoint-… }`."""
    if port.affinity_timeout > 0:
        for ep in endpoints:
            rules.append(f"ip saddr @affinity-{endpoint_chain_base(port, ep)} goto {ep_chains[ep.key]}")
    vmap = " , ".join(f"{i} : goto {ep_chains[ep.key]}" for i, ep in enumerate(endpoints))
    rules.append(f"numgen random mod {len(endpoints)} vmap {{ {vmap} }}")


def _dnat_to_endpoints(rules: list[str], port: ServicePort, endpoints: tuple[Endpoint, ...],
                       ep_chains: dict[str, str]) -> None:
    """One DNAT straight from the Service chain: to the one endpoint, or to a random one through a map."""
    proto = port.protocol
    if len(endpoints) == 1:
        rules.append(f"meta l4proto {proto} dnat to {endpoints[0].key}")
        return
    targets = " , ".join(f"{i} : {ep.ip} . {ep.port}" for i, ep in enumerate(endpoints))
    rules.append(f"meta l4proto {proto} dnat ip addr . port to numgen random mod {len(endpoints)} map {{ {targets} }}")


def base_statements(node: NodeInfo, cfg: ProxyConfig, service_cidrs: Iterable[str], maps: bool = True) -> list[str]:
    """The table, sets, maps, base chains and fixed rules (the part that does not depend on Services); `maps` as
    in `service_rules`."""
    t = TABLE
    out = [f'add table {t} {{ comment "rules for kube-proxy" ; }}',
           f'add set {t} cluster-ips {{ type ipv4_addr ; comment "Active ClusterIPs" ; }}',
           f'add set {t} nodeport-ips {{ type ipv4_addr ; comment "IPs that accept NodePort traffic" ; }}']
    if maps:
        out.append(HAIRPIN_SET.format(table=t))
    for name, (kind, comment) in MAP_TYPES.items():
        out.append(f'add map {t} {name} {{ type {kind} ; comment "{comment}" ; }}')
    chains = [
        ("cluster-ips-check", ""),
        ("filter-prerouting-pre-dnat", "type filter hook prerouting priority -110 ;"),
        ("filter-output-pre-dnat", "type filter hook output priority -110 ;"),
        ("filter-forward", "type filter hook forward priority 0 ;"),
        ("filter-input", "type filter hook input priority 0 ;"),
        ("filter-output", "type filter hook output priority 0 ;"),
        ("firewall-check", ""), *([] if maps else [("mark-for-masquerade", "")]), ("masquerading", ""),
        ("nat-output", "type nat hook output priority -100 ;"),
        ("nat-postrouting", "type nat hook postrouting priority 100 ;"),
        ("nat-prerouting", "type nat hook prerouting priority -100 ;"),
        ("nodeport-endpoints-check", ""),
        ("reject-chain", 'comment "helper for @no-endpoint-services / @no-endpoint-nodeports" ;'),
        ("services", ""), ("service-endpoints-check", ""),
    ]
    for name, spec in chains:
        out.append(f"add chain {t} {name} {{ {spec} }}" if spec else f"add chain {t} {name}")
    cidrs = ", ".join(service_cidrs)
    addresses = node_port_ips(node, cfg, default_primary=True)
    if addresses is None:
        np_match = "fib daddr type local ip daddr != 127.0.0.0/8"     # nftables never serves localhost NodePorts
    else:
        np_match = "ip daddr @nodeport-ips"
    mark = cfg.mark
    rules = [
        ("cluster-ips-check", 'ip daddr @cluster-ips reject comment "Reject traffic to invalid ports of ClusterIPs"'),
        ("cluster-ips-check", f'ip daddr {{ {cidrs} }} drop comment "Drop traffic to unallocated ClusterIPs"'),
        ("filter-prerouting-pre-dnat", "ct state new jump firewall-check"),
        ("filter-forward", "ct state new jump service-endpoints-check"),
        ("filter-forward", "ct state new jump cluster-ips-check"),
        ("filter-input", "ct state new jump nodeport-endpoints-check"),
        ("filter-input", "ct state new jump service-endpoints-check"),
        ("filter-output", "ct state new jump service-endpoints-check"),
        ("filter-output-pre-dnat", "ct state new jump firewall-check"),
        ("filter-output", "ct state new jump cluster-ips-check"),
        ("firewall-check", "ip daddr . meta l4proto . th dport vmap @firewall-ips"),
        *(_masquerading_maps(mark) if maps else _masquerading_chains(mark)),
        ("nat-output", "jump services"),
        ("nat-postrouting", "jump masquerading"),
        ("nat-prerouting", "jump services"),
        ("nodeport-endpoints-check", f"{np_match} meta l4proto . th dport vmap @no-endpoint-nodeports"),
        ("reject-chain", "reject"),
        *(_outside_traffic_masquerade(cfg) if maps else []),
        ("services", "ip daddr . meta l4proto . th dport vmap @service-ips"),
        ("services", f"{np_match} meta l4proto . th dport vmap @service-nodeports"),
        ("service-endpoints-check", "ip daddr . meta l4proto . th dport vmap @no-endpoint-services"),
    ]
    out.extend(f"add rule {t} {chain} {body}" for chain, body in rules)
    for ip in addresses or ():
        if not ip.startswith("127."):
            out.append(f"add element {t} nodeport-ips {{ {ip} }}")
    return out


def _masquerading_chains(mark: str) -> list[tuple[str, str]]:
    """Masquerading before the DNAT-map layout: a mark chain, and a postrouting chain that clears and acts on it."""
    return [("mark-for-masquerade", f"mark set mark or {mark}"),
            ("masquerading", f"mark and {mark} == 0 return"),
            ("masquerading", f"mark set mark xor {mark}"),
            ("masquerading", "masquerade fully-random")]


def _masquerading_maps(mark: str) -> list[tuple[str, str]]:
    """Masquerading in the DNAT-map layout: marked traffic, and a pod's connection DNATed back to itself."""
    return [("masquerading", f"mark and {mark} != 0 mark set mark xor {mark} masquerade fully-random"),
            ("masquerading", "ct status dnat ip saddr . ip daddr . meta l4proto . th dport @hairpin-connections "
                             "masquerade fully-random")]


def _outside_traffic_masquerade(cfg: ProxyConfig) -> list[tuple[str, str]]:
    """In the DNAT-map layout one rule of `services` marks ClusterIP traffic from outside the cluster (or all of
    it with masqueradeAll), instead of a rule in every Service chain."""
    if cfg.masquerade_all:
        return [("services", f'ip daddr @cluster-ips mark set mark or {cfg.mark} '
                             f'comment "masquerade all clusterIP traffic"')]
    if cfg.cluster_cidr:
        return [("services", f'ip daddr @cluster-ips ip saddr != {cfg.cluster_cidr} mark set mark or {cfg.mark} '
                             f'comment "masquerade clusterIP traffic from outside cluster"')]
    return []


def _set_statement(name: str, timeout: int) -> str:
    return f"add set {TABLE} {name} {{ type ipv4_addr ; flags dynamic,timeout ; timeout {timeout}s ; }}"


def _element_sort_key(item: tuple[tuple[str, str], str]) -> tuple[int, str]:
    (map_name, key), _ = item
    return (ELEMENT_ORDER.index(map_name), key)


def transaction(base: list[str], services: Iterable[ServiceRules]) -> str:
    """A complete `nft -f` transaction: base, then sets, chains, rules and elements (each defined before use)."""
    chains: dict[str, list[str]] = {}
    sets: dict[str, int] = {}
    elements: dict[tuple[str, str], str] = {}
    for rules in services:
        chains.update(rules.chains)
        sets.update(rules.sets)
        elements.update(rules.elements)
    out = list(base)
    out.extend(_set_statement(name, sets[name]) for name in sorted(sets))
    order = sorted(chains)
    out.extend(f"add chain {TABLE} {c}" for c in order)
    for c in order:
        out.extend(f"add rule {TABLE} {c} {body}" for body in chains[c])
    for (map_name, _key), text in sorted(elements.items(), key=_element_sort_key):
        out.append(f"add element {TABLE} {map_name} {{ {text} }}")
    return "\n".join(out) + "\n"


def _ports_by_service(services: Iterable[dict], endpointslices: Iterable[dict]):
    groups = group_slices(endpointslices)
    result = []
    for svc in services:
        ports = service_ports(svc)
        if not ports:
            continue
        eps = slice_endpoints(groups.get(ports[0].service_key, ()))
        result.append(sorted(((p, eps.get((p.port_name, p.protocol), ())) for p in ports),
                             key=lambda item: sort_key(item[0])))
    return result


def render_nftables(services: Iterable[dict], endpointslices: Iterable[dict], node: dict, config: dict | None = None,
                    *, service_cidrs: Iterable[str] = ("10.96.0.0/12",), release: str = RELEASE) -> str:
    """The full `nft -f` transaction kube-proxy of `release` on `node` writes for these Services."""
    info = NodeInfo.from_node(node)
    cfg = ProxyConfig.from_dict(config, "nftables")
    maps = dnat_maps(release)
    with paused_gc():
        per_service = [service_rules(ports, info, cfg, maps) for ports in _ports_by_service(services, endpointslices)]
        return transaction(base_statements(info, cfg, service_cidrs, maps), per_service)


def cleanup_commands() -> str:
    """What kube-proxy runs to remove its nftables rules (mode switch / cleanup)."""
    return f"delete table {TABLE}\n"


def _fingerprint(obj: dict) -> object:
    meta = obj.get("metadata") or {}
    rv = meta.get("resourceVersion")
    if rv:
        return (meta.get("uid"), rv)
    return repr(obj)


class NftablesSyncer:
    """Remembers what it last wrote to the kernel and produces only the delta for the next change.

    `sync(services, endpointslices)` takes the whole current state; `update(...)` takes only what changed
    (O(changes), the way kube-proxy's change trackers feed its sync loop). Both return the `nft -f` text to run.
    """

    def __init__(self, node: dict, config: dict | None = None, *,
                 service_cidrs: Iterable[str] = ("10.96.0.0/12",), release: str = RELEASE) -> None:
        self.node = NodeInfo.from_node(node)
        self.config = ProxyConfig.from_dict(config, "nftables")
        self.maps = dnat_maps(release)
        self.base = base_statements(self.node, self.config, tuple(service_cidrs), self.maps)
        self.services: dict[tuple[str, str], dict] = {}
        self.slices: dict[tuple[str, str], dict[str, dict]] = {}
        self.slice_owner: dict[tuple[str, str], tuple[str, str]] = {}
        self.rendered: dict[tuple[str, str], ServiceRules] = {}
        self.fingerprints: dict[tuple[str, str], object] = {}
        self.written = False
        self._text: str | None = None

    @property
    def rules(self) -> str:
        """The complete transaction equivalent to what the table now holds."""
        if self._text is None:
            with paused_gc():
                self._text = transaction(self.base, [self.rendered[k] for k in sorted(self.rendered)])
        return self._text

    def _fingerprint_of(self, key: tuple[str, str]) -> object:
        svc = self.services.get(key)
        slices = self.slices.get(key, {})
        return (_fingerprint(svc) if svc else None,
                tuple(sorted((name, _fingerprint(s)) for name, s in slices.items())))

    def _render_one(self, key: tuple[str, str]) -> ServiceRules:
        svc = self.services.get(key)
        if svc is None:
            return ServiceRules()
        ports = service_ports(svc)
        eps = slice_endpoints(self.slices.get(key, {}).values())
        items = sorted(((p, eps.get((p.port_name, p.protocol), ())) for p in ports), key=lambda i: sort_key(i[0]))
        return service_rules(items, self.node, self.config, self.maps)

    def sync(self, services: Iterable[dict], endpointslices: Iterable[dict]) -> str:
        """Bring the table to this complete state; return the transaction that does it (full text the first time)."""
        new_services = {}
        for svc in services:
            meta = svc.get("metadata") or {}
            new_services[(meta.get("namespace") or "default", meta.get("name") or "")] = svc
        new_slices: dict[tuple[str, str], dict[str, dict]] = {}
        for eps in endpointslices:
            key = slice_service_key(eps)
            if key is not None:
                new_slices.setdefault(key, {})[(eps.get("metadata") or {}).get("name", "")] = eps
        self.services = new_services
        self.slices = new_slices
        self.slice_owner = {(key[0], name): key for key, group in new_slices.items() for name in group}
        keys = set(new_services) | set(self.rendered)
        changed = []
        for key in keys:
            fp = self._fingerprint_of(key)
            if self.fingerprints.get(key) != fp:
                self.fingerprints[key] = fp
                changed.append(key)
        with paused_gc():
            return self._apply(changed)

    def update(self, services: Iterable[dict] = (), endpointslices: Iterable[dict] = (),
               deleted_services: Iterable[tuple[str, str]] = (),
               deleted_slices: Iterable[tuple[str, str]] = ()) -> str:
        """Apply only these changes (upserts, and deletions by (namespace, name)); return the delta."""
        changed = set()
        for svc in services:
            meta = svc.get("metadata") or {}
            key = (meta.get("namespace") or "default", meta.get("name") or "")
            self.services[key] = svc
            changed.add(key)
        for key in deleted_services:
            self.services.pop(tuple(key), None)
            changed.add(tuple(key))
        for eps in endpointslices:
            key = slice_service_key(eps)
            if key is not None:
                name = (eps.get("metadata") or {}).get("name", "")
                self.slices.setdefault(key, {})[name] = eps
                self.slice_owner[(key[0], name)] = key
                changed.add(key)
        for ns, name in deleted_slices:
            key = self.slice_owner.pop((ns, name), None)
            if key is not None and name in self.slices.get(key, {}):
                del self.slices[key][name]
                changed.add(key)
        for key in changed:
            self.fingerprints[key] = self._fingerprint_of(key)
        with paused_gc():
            return self._apply(sorted(changed))

    def _apply(self, changed: Iterable[tuple[str, str]]) -> str:
        changed = list(changed)
        if changed:
            self._text = None
        old_parts: list[ServiceRules] = []
        new_parts: list[ServiceRules] = []
        for key in changed:
            old = self.rendered.get(key, ServiceRules())
            new = self._render_one(key)
            if key in self.services:
                self.rendered[key] = new
            else:
                self.rendered.pop(key, None)
                self.fingerprints.pop(key, None)
            old_parts.append(old)
            new_parts.append(new)
        if not self.written:
            self.written = True
            return self.rules
        return delta(old_parts, new_parts)


def delta(old_parts: Iterable[ServiceRules], new_parts: Iterable[ServiceRules]) -> str:
    """The `nft -f` text that turns the old services' contributions into the new ones."""
    old_chains: dict[str, list[str]] = {}
    new_chains: dict[str, list[str]] = {}
    old_sets: dict[str, int] = {}
    new_sets: dict[str, int] = {}
    old_elems: dict[tuple[str, str], str] = {}
    new_elems: dict[tuple[str, str], str] = {}
    for part in old_parts:
        old_chains.update(part.chains)
        old_sets.update(part.sets)
        old_elems.update(part.elements)
    for part in new_parts:
        new_chains.update(part.chains)
        new_sets.update(part.sets)
        new_elems.update(part.elements)
    t = TABLE
    out: list[str] = []
    rewritten = sorted(c for c in new_chains if c in old_chains and old_chains[c] != new_chains[c])
    stale = sorted(c for c in old_chains if c not in new_chains)
    out.extend(f"flush chain {t} {c}" for c in rewritten + stale)
    for key in sorted(old_elems, key=lambda k: (ELEMENT_ORDER.index(k[0]), k[1])):
        if new_elems.get(key) != old_elems[key]:
            out.append(f"delete element {t} {key[0]} {{ {key[1]} }}")
    out.extend(f"delete chain {t} {c}" for c in stale)
    out.extend(f"delete set {t} {name}" for name in sorted(old_sets) if old_sets[name] != new_sets.get(name))
    out.extend(_set_statement(name, new_sets[name]) for name in sorted(new_sets)
               if old_sets.get(name) != new_sets[name])
    out.extend(f"add chain {t} {c}" for c in sorted(c for c in new_chains if c not in old_chains))
    for c in sorted(new_chains):
        if old_chains.get(c) != new_chains[c]:
            out.extend(f"add rule {t} {c} {body}" for body in new_chains[c])
    for key in sorted(new_elems, key=lambda k: (ELEMENT_ORDER.index(k[0]), k[1])):
        if old_elems.get(key) != new_elems[key]:
            out.append(f"add element {t} {key[0]} {{ {new_elems[key]} }}")
    return "\n".join(out) + ("\n" if out else "")
