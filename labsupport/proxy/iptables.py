"""kube-proxy's iptables mode: the `iptables-save` dump (filter and nat tables) a node's kube-proxy writes."""
from __future__ import annotations

import base64
import hashlib
import ipaddress
from typing import Iterable

from labsupport.proxy.release import RELEASE, masquerade_random_fully
from labsupport.proxy.topology import (Endpoint, NodeInfo, ProxyConfig, ServicePort, categorize, group_slices,
                                       node_port_ips, paused_gc, service_ports, slice_endpoints, sort_key)

LARGE_CLUSTER_THRESHOLD = 1000

NAT_CHAINS_FIXED = ("KUBE-NODEPORTS", "KUBE-SERVICES", "KUBE-MARK-MASQ", "KUBE-POSTROUTING")
FILTER_CHAINS_FIXED = ("KUBE-NODEPORTS", "KUBE-SERVICES", "KUBE-EXTERNAL-SERVICES", "KUBE-FIREWALL",
                       "KUBE-FORWARD", "KUBE-PROXY-FIREWALL")

# The jump rules kube-proxy installs in the built-in chains (outside the restored KUBE-* chains), in the order
# `iptables-save` lists them: kube-proxy inserts each at the top of its chain, so the last it ensures comes first.
_NEW = "-m conntrack --ctstate NEW -m comment --comment"
JUMP_RULES = {
    "filter": (
        ("INPUT", "-j KUBE-FIREWALL"),
        ("INPUT", f'{_NEW} "kubernetes load balancer firewall" -j KUBE-PROXY-FIREWALL'),
        ("INPUT", '-m comment --comment "kubernetes health check service ports" -j KUBE-NODEPORTS'),
        ("INPUT", f'{_NEW} "kubernetes externally-visible service portals" -j KUBE-EXTERNAL-SERVICES'),
        ("FORWARD", f'{_NEW} "kubernetes load balancer firewall" -j KUBE-PROXY-FIREWALL'),
        ("FORWARD", '-m comment --comment "kubernetes forwarding rules" -j KUBE-FORWARD'),
        ("FORWARD", f'{_NEW} "kubernetes service portals" -j KUBE-SERVICES'),
        ("FORWARD", f'{_NEW} "kubernetes externally-visible service portals" -j KUBE-EXTERNAL-SERVICES'),
        ("OUTPUT", "-j KUBE-FIREWALL"),
        ("OUTPUT", f'{_NEW} "kubernetes load balancer firewall" -j KUBE-PROXY-FIREWALL'),
        ("OUTPUT", f'{_NEW} "kubernetes service portals" -j KUBE-SERVICES'),
    ),
    "nat": (
        ("PREROUTING", '-m comment --comment "kubernetes service portals" -j KUBE-SERVICES'),
        ("OUTPUT", '-m comment --comment "kubernetes service portals" -j KUBE-SERVICES'),
        ("POSTROUTING", '-m comment --comment "kubernetes postrouting rules" -j KUBE-POSTROUTING'),
    ),
}


def _hash(text: str) -> str:
    # base32 of the first 10 digest bytes is exactly the first 16 characters of the full encoding.
    return base64.b32encode(hashlib.sha256(text.encode()).digest()[:10]).decode()


def chain_name(prefix: str, port: ServicePort) -> str:
    """`KUBE-SVC-…`, `KUBE-SVL-…`, `KUBE-EXT-…` or `KUBE-FW-…` for a Service port (prefix without the dash)."""
    return f"{prefix}-{_hash(port.port_name_string + port.protocol)[:16]}"


def endpoint_chain_name(port: ServicePort, endpoint: str) -> str:
    """`KUBE-SEP-…` for an endpoint `ip:port` of a Service port."""
    return "KUBE-SEP-" + _hash(port.port_name_string + port.protocol + endpoint)[:16]


def probability(n: int) -> str:
    """The `--probability` text for picking 1 of n remaining endpoints, printed as upstream does."""
    return "%0.10f" % (1.0 / n)


class _Tables:
    """Chains and rules of the filter and nat tables while they are being built."""

    def __init__(self) -> None:
        self.filter: dict[str, list[str]] = {c: [] for c in FILTER_CHAINS_FIXED}
        self.nat: dict[str, list[str]] = {c: [] for c in NAT_CHAINS_FIXED}


def _write_port(t: _Tables, port: ServicePort, endpoints: tuple[Endpoint, ...], node: NodeInfo,
                cfg: ProxyConfig, large: bool, localhost_accounting: bool = False) -> None:
    nat = t.nat
    filt = t.filter
    proto = port.protocol
    name = port.port_name_string
    sel = categorize(port, endpoints, node.name, node.zone)
    svc_chain = chain_name("KUBE-SVC", port)
    svl_chain = chain_name("KUBE-SVL", port)
    ext_chain = chain_name("KUBE-EXT", port)
    fw_chain = chain_name("KUBE-FW", port)
    has_eps = sel.has_endpoints
    uses_cluster = bool(sel.cluster) and port.uses_cluster_endpoints
    uses_local = bool(sel.local) and port.uses_local_endpoints

    internal_chain = svc_chain
    has_internal = has_eps
    if port.internal_local:
        internal_chain = svl_chain
        has_internal = has_eps and bool(sel.local)
    external_policy_chain = svc_chain
    has_external = has_eps
    if port.external_local:
        external_policy_chain = svl_chain
        has_external = has_eps and bool(sel.local)
    uses_fw = has_eps and bool(port.load_balancer_ips) and bool(port.source_ranges)
    lb_chain = fw_chain if uses_fw else ext_chain

    if not has_eps:
        int_target = ext_target = "REJECT"
        int_comment = ext_comment = f'"{name} has no endpoints"'
    else:
        int_target = ext_target = ""
        int_comment = ext_comment = ""
        if not has_internal:
            int_target, int_comment = "DROP", f'"{name} has no local endpoints"'
        if not has_external:
            ext_target, ext_comment = "DROP", f'"{name} has no local endpoints"'

    match = f"-m {proto} -p {proto}"
    cluster_args = f'-m comment --comment "{name} cluster IP" {match} -d {port.cluster_ip} --dport {port.port}'
    if has_internal:
        nat["KUBE-SERVICES"].append(f"-A KUBE-SERVICES {cluster_args} -j {internal_chain}")
    else:
        filt["KUBE-SERVICES"].append(f"-A KUBE-SERVICES -m comment --comment {int_comment} {match} "
                                     f"-d {port.cluster_ip} --dport {port.port} -j {int_target}")

    for ip in port.external_ips:
        if has_eps:
            nat["KUBE-SERVICES"].append(f'-A KUBE-SERVICES -m comment --comment "{name} external IP" {match} '
                                        f"-d {ip} --dport {port.port} -j {ext_chain}")
        if not has_external:
            filt["KUBE-EXTERNAL-SERVICES"].append(
                f"-A KUBE-EXTERNAL-SERVICES -m comment --comment {ext_comment} {match} -d {ip} "
                f"--dport {port.port} -j {ext_target}")

    for ip in port.load_balancer_ips:
        if has_eps:
            nat["KUBE-SERVICES"].append(f'-A KUBE-SERVICES -m comment --comment "{name} loadbalancer IP" {match} '
                                        f"-d {ip} --dport {port.port} -j {lb_chain}")
        if uses_fw:
            filt["KUBE-PROXY-FIREWALL"].append(
                f'-A KUBE-PROXY-FIREWALL -m comment --comment "{name} traffic not accepted by {fw_chain}" '
                f"{match} -d {ip} --dport {port.port} -j DROP")
    if not has_external:
        for ip in port.load_balancer_ips:
            filt["KUBE-EXTERNAL-SERVICES"].append(
                f"-A KUBE-EXTERNAL-SERVICES -m comment --comment {ext_comment} {match} -d {ip} "
                f"--dport {port.port} -j {ext_target}")

    if port.node_port:
        if has_eps and localhost_accounting:
            nat["KUBE-NODEPORTS"].append(f"-A KUBE-NODEPORTS -m comment --comment {name} {match} -d 127.0.0.0/8 "
                                         f"--dport {port.node_port} -m nfacct --nfacct-name "
                                         f"localhost_nps_accepted_pkts -j {ext_chain}")
        if has_eps:
            nat["KUBE-NODEPORTS"].append(f"-A KUBE-NODEPORTS -m comment --comment {name} {match} "
                                         f"--dport {port.node_port} -j {ext_chain}")
        if not has_external:
            filt["KUBE-EXTERNAL-SERVICES"].append(
                f"-A KUBE-EXTERNAL-SERVICES -m comment --comment {ext_comment} -m addrtype --dst-type LOCAL "
                f"{match} --dport {port.node_port} -j {ext_target}")

    if port.health_check_node_port:
        filt["KUBE-NODEPORTS"].append(
            f'-A KUBE-NODEPORTS -m comment --comment "{name} health check node port" -m tcp -p tcp '
            f"--dport {port.health_check_node_port} -j ACCEPT")

    if has_internal:
        rules = nat.setdefault(internal_chain, [])
        if cfg.masquerade_all:
            rules.append(f"-A {internal_chain} {cluster_args} -j KUBE-MARK-MASQ")
        elif cfg.cluster_cidr:
            rules.append(f"-A {internal_chain} {cluster_args} ! -s {cfg.cluster_cidr} -j KUBE-MARK-MASQ")

    if has_eps and port.externally_accessible:
        rules = nat.setdefault(ext_chain, [])
        if not port.external_local:
            rules.append(f'-A {ext_chain} -m comment --comment "masquerade traffic for {name} external destinations" '
                         "-j KUBE-MARK-MASQ")
        else:
            if cfg.cluster_cidr:
                rules.append(f'-A {ext_chain} -m comment --comment "pod traffic for {name} external destinations" '
                             f"-s {cfg.cluster_cidr} -j {svc_chain}")
            rules.append(f'-A {ext_chain} -m comment --comment "masquerade LOCAL traffic for {name} external '
                         'destinations" -m addrtype --src-type LOCAL -j KUBE-MARK-MASQ')
            rules.append(f'-A {ext_chain} -m comment --comment "route LOCAL traffic for {name} external '
                         f'destinations" -m addrtype --src-type LOCAL -j {svc_chain}')
        if has_external:
            rules.append(f"-A {ext_chain} -j {external_policy_chain}")

    if uses_fw:
        rules = nat.setdefault(fw_chain, [])
        head = f'-A {fw_chain} -m comment --comment "{name} loadbalancer IP"'
        allow_node = False
        node_ip = ipaddress.ip_address(node.primary_ip) if node.primary_ip else None
        for cidr in port.source_ranges:
            rules.append(f"{head} -s {cidr} -j {ext_chain}")
            if node_ip is not None and node_ip in ipaddress.ip_network(cidr, strict=False):
                allow_node = True
        if allow_node:
            for ip in port.load_balancer_ips:
                rules.append(f"{head} -s {ip} -j {ext_chain}")
        # what falls through is not DNATed, so KUBE-PROXY-FIREWALL drops it; upstream says so in the chain
        rules.append(f'-A {fw_chain} -m comment --comment "other traffic to {name} will be dropped by '
                     'KUBE-PROXY-FIREWALL"')

    prefix = port.port_name_string + proto
    sep_names = {ep.key: "KUBE-SEP-" + _hash(prefix + ep.key) for ep in sel.reachable}
    if uses_cluster:
        _write_balancing(nat.setdefault(svc_chain, []), port, svc_chain, sel.cluster, large, sep_names)
    if uses_local:
        _write_balancing(nat.setdefault(svl_chain, []), port, svl_chain, sel.local, large, sep_names)

    comment = "" if large else f" -m comment --comment {name}"
    affinity = port.affinity_timeout > 0
    for ep in sel.reachable:
        sep = sep_names[ep.key]
        nat[sep] = [
            f"-A {sep}{comment} -s {ep.ip} -j KUBE-MARK-MASQ",
            f"-A {sep}{comment}{f' -m recent --name {sep} --set' if affinity else ''} {match} "
            f"-j DNAT --to-destination {ep.key}",
        ]


def _write_balancing(rules: list[str], port: ServicePort, chain: str, endpoints: tuple[Endpoint, ...],
                     large: bool, sep_names: dict[str, str]) -> None:
    name = port.port_name_string
    seps = [(ep, sep_names[ep.key]) for ep in endpoints]
    if port.affinity_timeout > 0:
        for ep, sep in seps:
            comment = "" if large else f' -m comment --comment "{name} -> {ep.key}"'
            rules.append(f"-A {chain}{comment} -m recent --name {sep} --rcheck --seconds {port.affinity_timeout} "
                         f"--reap -j {sep}")
    n = len(seps)
    for i, (ep, sep) in enumerate(seps):
        comment = "" if large else f' -m comment --comment "{name} -> {ep.key}"'
        stat = f" -m statistic --mode random --probability {probability(n - i)}" if i < n - 1 else ""
        rules.append(f"-A {chain}{comment}{stat} -j {sep}")


def build_tables(services: Iterable[dict], endpointslices: Iterable[dict], node: NodeInfo, cfg: ProxyConfig,
                 nfacct: bool = False, random_fully: bool = False) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """The filter and nat chains (name -> `-A` lines) kube-proxy would restore (random_fully: the node's iptables
    offers `MASQUERADE --random-fully`, which kube-proxy then always uses)."""
    by_service = group_slices(endpointslices)
    ports: list[tuple[ServicePort, tuple[Endpoint, ...]]] = []
    total = 0
    for svc in services:
        svc_ports = service_ports(svc)
        if not svc_ports:
            continue
        eps_map = slice_endpoints(by_service.get(svc_ports[0].service_key, ()))
        for p in svc_ports:
            eps = eps_map.get((p.port_name, p.protocol), ())
            total += len(eps)
            ports.append((p, eps))
    ports.sort(key=lambda item: sort_key(item[0]))
    large = total > LARGE_CLUSTER_THRESHOLD
    t = _Tables()
    nat, filt = t.nat, t.filter

    if cfg.localhost_node_ports and _nodeports_include_loopback(node, cfg):
        filt["KUBE-FIREWALL"].append(
            '-A KUBE-FIREWALL -m comment --comment "block incoming localnet connections" -d 127.0.0.0/8 '
            "! -s 127.0.0.0/8 -m conntrack ! --ctstate RELATED,ESTABLISHED,DNAT -j DROP")
    acct = " -m nfacct --nfacct-name ct_state_invalid_dropped_pkts" if nfacct else ""
    filt["KUBE-FORWARD"] += [
        f"-A KUBE-FORWARD -m conntrack --ctstate INVALID{acct} -j DROP",
        f'-A KUBE-FORWARD -m comment --comment "kubernetes forwarding rules" -m mark --mark {cfg.mark}/{cfg.mark} '
        "-j ACCEPT",
        '-A KUBE-FORWARD -m comment --comment "kubernetes forwarding conntrack rule" -m conntrack '
        "--ctstate RELATED,ESTABLISHED -j ACCEPT",
    ]
    nat["KUBE-MARK-MASQ"].append(f"-A KUBE-MARK-MASQ -j MARK --or-mark {cfg.mark}")
    nat["KUBE-POSTROUTING"] += [
        f"-A KUBE-POSTROUTING -m mark ! --mark {cfg.mark}/{cfg.mark} -j RETURN",
        f"-A KUBE-POSTROUTING -j MARK --xor-mark {cfg.mark}",
        '-A KUBE-POSTROUTING -m comment --comment "kubernetes service traffic requiring SNAT" -j MASQUERADE'
        + (" --random-fully" if random_fully else ""),
    ]
    # With nfacct, NodePort traffic arriving on 127.0.0.0/8 is counted by a rule of its own.
    localhost_accounting = nfacct and cfg.localhost_node_ports and _nodeports_include_loopback(node, cfg)
    for port, eps in ports:
        _write_port(t, port, eps, node, cfg, large, localhost_accounting)

    last = '-A KUBE-SERVICES -m comment --comment "kubernetes service nodeports; NOTE: this must be the last rule ' \
           'in this chain"'
    addresses = node_port_ips(node, cfg, default_primary=False)
    if addresses is None:
        extra = "" if cfg.localhost_node_ports else " ! -d 127.0.0.0/8"
        nat["KUBE-SERVICES"].append(f"{last} -m addrtype --dst-type LOCAL{extra} -j KUBE-NODEPORTS")
    else:
        for ip in addresses:
            if ip.startswith("127.") and not cfg.localhost_node_ports:
                continue
            nat["KUBE-SERVICES"].append(f"{last} -d {ip} -j KUBE-NODEPORTS")
    return filt, nat


def _nodeports_include_loopback(node: NodeInfo, cfg: ProxyConfig) -> bool:
    addresses = node_port_ips(node, cfg, default_primary=False)
    return addresses is None or any(ip.startswith("127.") for ip in addresses)


def _ordered(chains: dict[str, list[str]]) -> list[str]:
    head = [c for c in ("KUBE-NODEPORTS", "KUBE-SERVICES") if c in chains]
    return head + sorted(c for c in chains if c not in ("KUBE-NODEPORTS", "KUBE-SERVICES"))


def dump(filter_chains: dict[str, list[str]], nat_chains: dict[str, list[str]], with_jumps: bool = False) -> str:
    """Format chains as `iptables-save` prints them (with_jumps adds the built-in chains and their jump rules)."""
    out: list[str] = []
    for table, chains in (("filter", filter_chains), ("nat", nat_chains)):
        out.append(f"*{table}")
        if with_jumps:
            builtins = ("INPUT", "FORWARD", "OUTPUT") if table == "filter" else \
                ("PREROUTING", "INPUT", "OUTPUT", "POSTROUTING")
            out.extend(f":{b} ACCEPT [0:0]" for b in builtins)
        order = _ordered(chains)
        out.extend(f":{c} - [0:0]" for c in order)
        if with_jumps:
            out.extend(f"-A {chain} {rule}" for chain, rule in JUMP_RULES[table])
        for c in order:
            out.extend(chains[c])
        out.append("COMMIT")
    return "\n".join(out) + "\n"


def render_iptables(services: Iterable[dict], endpointslices: Iterable[dict], node: dict, config: dict | None = None,
                    *, nfacct: bool = False, with_jumps: bool = False, random_fully: bool | None = None,
                    release: str = RELEASE) -> str:
    """The `iptables-save` dump of kube-proxy's chains on `node` (filter then nat, chains sorted like upstream);
    `random_fully`: whether the node's iptables offers `--random-fully`, for releases that ask (see `release`)."""
    with paused_gc():
        filt, nat = build_tables(services, endpointslices, NodeInfo.from_node(node), ProxyConfig.from_dict(config),
                                 nfacct, masquerade_random_fully(release, random_fully))
        return dump(filt, nat, with_jumps)


def count_rules(text: str) -> dict[str, int]:
    """Number of `-A` rules per table in an `iptables-save` dump."""
    counts: dict[str, int] = {}
    table = ""
    for line in text.splitlines():
        if line.startswith("*"):
            table = line[1:]
            counts.setdefault(table, 0)
        elif line.startswith("-A "):
            counts[table] = counts.get(table, 0) + 1
    return counts


def cleanup_commands(tables: tuple[dict[str, list[str]], dict[str, list[str]]] | None = None) -> str:
    """iptables-restore --noflush input removing the jump rules, then flushing and deleting every KUBE-* chain."""
    filt, nat = tables if tables is not None else ({c: [] for c in FILTER_CHAINS_FIXED},
                                                   {c: [] for c in NAT_CHAINS_FIXED})
    out = []
    for table, chains in (("filter", filt), ("nat", nat)):
        out.append(f"*{table}")
        out.extend(f"-D {chain} {rule}" for chain, rule in JUMP_RULES[table])
        out.extend(f"-F {c}" for c in chains)
        out.extend(f"-X {c}" for c in chains)
        out.append("COMMIT")
    return "\n".join(out) + "\n"
