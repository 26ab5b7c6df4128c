"""kube-proxy's IPVS mode: virtual servers (as `ipvsadm -Ln` shows them), ipsets and the iptables rules it keeps."""
from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field
from typing import Iterable

from labsupport.proxy.iptables import dump
from labsupport.proxy.release import RELEASE, masquerade_random_fully
from labsupport.proxy.topology import (NodeInfo, ProxyConfig, categorize, group_slices, paused_gc, service_ports,
                                       slice_endpoints, sort_key)

IPVS_HEADER = ("IP Virtual Server version 1.2.1 (size=4096)",
               "Prot LocalAddress:Port Scheduler Flags",
               "  -> RemoteAddress:Port           Forward Weight ActiveConn InActConn")

IPSET_TYPES = {
    "KUBE-CLUSTER-IP": ("hash:ip,port", "Kubernetes service cluster ip + port for masquerade purpose"),
    "KUBE-EXTERNAL-IP": ("hash:ip,port", "Kubernetes service external ip + port for masquerade and filter purpose"),
    "KUBE-EXTERNAL-IP-LOCAL": ("hash:ip,port",
                               "Kubernetes service external ip + port with externalTrafficPolicy=local"),
    "KUBE-HEALTH-CHECK-NODE-PORT": ("bitmap:port", "Kubernetes health check node port"),
    "KUBE-IPVS-IPS": ("hash:ip", "Kubernetes service IPs (the addresses on kube-ipvs0)"),
    "KUBE-LOAD-BALANCER": ("hash:ip,port", "Kubernetes service lb portal"),
    "KUBE-LOAD-BALANCER-FW": ("hash:ip,port", "Kubernetes service load balancer ip + port for load balancer with "
                                              "sourceRange"),
    "KUBE-LOAD-BALANCER-LOCAL": ("hash:ip,port", "Kubernetes service load balancer ip + port with "
                                                 "externalTrafficPolicy=local"),
    "KUBE-LOAD-BALANCER-SOURCE-CIDR": ("hash:ip,port,net", "Kubernetes service load balancer ip + port + source "
                                                           "cidr for packet filter purpose"),
    "KUBE-LOAD-BALANCER-SOURCE-IP": ("hash:ip,port,ip", "Kubernetes service load balancer ip + port + source IP "
                                                        "for packet filter purpose"),
    "KUBE-LOOP-BACK": ("hash:ip,port,ip", "Kubernetes endpoints dst ip:port, source ip for solving hairpin purpose"),
    "KUBE-NODE-PORT-LOCAL-TCP": ("bitmap:port", "Kubernetes nodeport TCP port with externalTrafficPolicy=local"),
    "KUBE-NODE-PORT-LOCAL-UDP": ("bitmap:port", "Kubernetes nodeport UDP port with externalTrafficPolicy=local"),
    "KUBE-NODE-PORT-TCP": ("bitmap:port", "Kubernetes nodeport TCP port for masquerade purpose"),
    "KUBE-NODE-PORT-UDP": ("bitmap:port", "Kubernetes nodeport UDP port for masquerade purpose"),
}


@dataclass(frozen=True)
class RealServer:
    """One IPVS destination: a Service endpoint."""

    ip: str
    port: int
    weight: int = 1
    forward: str = "Masq"

    @property
    def address(self) -> str:
        """`ip:port`."""
        return f"{self.ip}:{self.port}"


@dataclass(frozen=True)
class VirtualServer:
    """One IPVS virtual service: an address:port kube-proxy balances over real servers."""

    protocol: str                       # "TCP", "UDP", "SCTP"
    ip: str
    port: int
    scheduler: str
    persistent: int                     # seconds of ClientIP affinity; 0 when none
    real_servers: tuple[RealServer, ...]
    service: str                        # "ns/name:port"
    kind: str                           # "cluster-ip" | "node-port" | "external-ip" | "load-balancer"

    @property
    def address(self) -> str:
        """`ip:port`."""
        return f"{self.ip}:{self.port}"


@dataclass
class IpvsState:
    """Everything IPVS mode programs on a node: virtual servers, kube-ipvs0 addresses, ipsets and iptables."""

    virtual_servers: list[VirtualServer] = field(default_factory=list)
    dummy_addresses: list[str] = field(default_factory=list)
    ipsets: dict[str, list[str]] = field(default_factory=dict)
    filter_chains: dict[str, list[str]] = field(default_factory=dict)
    nat_chains: dict[str, list[str]] = field(default_factory=dict)

    def find(self, ip: str, port: int, protocol: str = "TCP") -> VirtualServer | None:
        """The virtual server for ip:port, if any."""
        for vs in self.virtual_servers:
            if vs.ip == ip and vs.port == port and vs.protocol == protocol.upper():
                return vs
        return None

    def ipvsadm(self) -> str:
        """The text `ipvsadm -Ln` prints."""
        lines = list(IPVS_HEADER)
        for vs in self.virtual_servers:
            flags = f" persistent {vs.persistent}" if vs.persistent else ""
            lines.append(f"{vs.protocol}  {vs.address} {vs.scheduler}{flags}")
            for rs in vs.real_servers:
                lines.append(f"  -> {rs.address:<28} {rs.forward:<7} {rs.weight:<6} {0:<10} {0:<10}".rstrip())
        return "\n".join(lines) + "\n"

    def ipset_list(self) -> str:
        """The sets as `ipset list` prints them (headers abridged to Name, Type and Members)."""
        out = []
        for name in sorted(self.ipsets):
            kind, comment = IPSET_TYPES[name]
            out += [f"Name: {name}", f"Type: {kind}", f'Header: comment "{comment}"', "Members:"]
            out += self.ipsets[name]
            out.append("")
        return "\n".join(out)

    def iptables(self) -> str:
        """The iptables-save dump of the rules IPVS mode still installs."""
        return dump(self.filter_chains, self.nat_chains)

    def text(self) -> str:
        """All of it, sectioned by the command that would show each part."""
        return ("# ipvsadm -Ln\n" + self.ipvsadm()
                + "\n# ip -brief addr show kube-ipvs0\n"
                + f"kube-ipvs0  DOWN  {' '.join(a + '/32' for a in self.dummy_addresses)}".rstrip() + "\n"
                + "\n# ipset list\n" + self.ipset_list()
                + "\n# iptables-save\n" + self.iptables())


def _ip_key(ip: str) -> int:
    return int(ipaddress.ip_address(ip))


def _entry_key(entry: str) -> tuple:
    head = entry.split(",")[0]
    return (0, int(head), entry) if head.isdigit() else (1, _ip_key(head), entry)


def ipvs_state(services: Iterable[dict], endpointslices: Iterable[dict], node: dict, config: dict | None = None,
               *, nfacct: bool = False, random_fully: bool | None = None, release: str = RELEASE) -> IpvsState:
    """The IPVS programming kube-proxy on `node` would do for these Services."""
    info = NodeInfo.from_node(node)
    cfg = ProxyConfig.from_dict(config)
    groups = group_slices(endpointslices)
    state = IpvsState()
    sets: dict[str, set[str]] = {name: set() for name in IPSET_TYPES}
    dummy: set[str] = set()
    items = []
    for svc in services:
        ports = service_ports(svc)
        if ports:
            eps = slice_endpoints(groups.get(ports[0].service_key, ()))
            items += [(p, eps.get((p.port_name, p.protocol), ())) for p in ports]
    items.sort(key=lambda i: sort_key(i[0]))
    vss: list[VirtualServer] = []
    for port, endpoints in items:
        sel = categorize(port, endpoints, info.name, info.zone)
        proto = port.protocol.upper()
        internal = sel.local if port.internal_local else sel.cluster
        external = sel.local if port.external_local else sel.cluster

        def servers(eps) -> tuple[RealServer, ...]:
            return tuple(RealServer(e.ip, e.port) for e in eps)

        def add(ip: str, number: int, eps, kind: str) -> None:
            vss.append(VirtualServer(proto, ip, number, cfg.ipvs_scheduler, port.affinity_timeout, servers(eps),
                                     port.port_name_string, kind))

        entry = f"{port.cluster_ip},{port.protocol}:{port.port}"
        add(port.cluster_ip, port.port, internal, "cluster-ip")
        dummy.add(port.cluster_ip)
        sets["KUBE-CLUSTER-IP"].add(entry)
        for ep in sel.reachable:
            if ep.node_name and ep.node_name == info.name:
                sets["KUBE-LOOP-BACK"].add(f"{ep.ip},{port.protocol}:{ep.port},{ep.ip}")
        for ip in port.external_ips:
            add(ip, port.port, external, "external-ip")
            dummy.add(ip)
            e = f"{ip},{port.protocol}:{port.port}"
            sets["KUBE-EXTERNAL-IP"].add(e)
            if port.external_local:
                sets["KUBE-EXTERNAL-IP-LOCAL"].add(e)
        for ip in port.load_balancer_ips:
            add(ip, port.port, external, "load-balancer")
            dummy.add(ip)
            e = f"{ip},{port.protocol}:{port.port}"
            sets["KUBE-LOAD-BALANCER"].add(e)
            if port.external_local:
                sets["KUBE-LOAD-BALANCER-LOCAL"].add(e)
            if port.source_ranges:
                sets["KUBE-LOAD-BALANCER-FW"].add(e)
                for cidr in port.source_ranges:
                    sets["KUBE-LOAD-BALANCER-SOURCE-CIDR"].add(f"{e},{cidr}")
        if port.node_port:
            for ip in info.ips:
                add(ip, port.node_port, external, "node-port")
            suffix = proto if proto in ("TCP", "UDP") else "TCP"
            sets[f"KUBE-NODE-PORT-{suffix}"].add(str(port.node_port))
            if port.external_local:
                sets[f"KUBE-NODE-PORT-LOCAL-{suffix}"].add(str(port.node_port))
        if port.health_check_node_port:
            sets["KUBE-HEALTH-CHECK-NODE-PORT"].add(str(port.health_check_node_port))
    vss.sort(key=lambda v: (v.protocol, _ip_key(v.ip), v.port))
    state.virtual_servers = vss
    state.dummy_addresses = sorted(dummy, key=_ip_key)
    sets["KUBE-IPVS-IPS"] = dummy
    state.ipsets = {name: sorted(entries, key=_entry_key) for name, entries in sets.items() if entries}
    state.filter_chains, state.nat_chains = _iptables_rules(cfg, nfacct,
                                                            masquerade_random_fully(release, random_fully))
    return state


def _iptables_rules(cfg: ProxyConfig, nfacct: bool,
                    random_fully: bool) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    mark = cfg.mark
    acct = " -m nfacct --nfacct-name ct_state_invalid_dropped_pkts" if nfacct else ""
    masq_src = "" if cfg.masquerade_all or not cfg.cluster_cidr else f" ! -s {cfg.cluster_cidr}"
    nat = {
        "KUBE-SERVICES": [
            '-A KUBE-SERVICES -m comment --comment "Kubernetes service lb portal" -m set --match-set '
            "KUBE-LOAD-BALANCER dst,dst -j KUBE-LOAD-BALANCER",
            f'-A KUBE-SERVICES{masq_src} -m comment --comment "Kubernetes service cluster ip + port for masquerade '
            'purpose" -m set --match-set KUBE-CLUSTER-IP dst,dst -j KUBE-MARK-MASQ',
            '-A KUBE-SERVICES -m comment --comment "Kubernetes service external ip + port for masquerade and filter '
            'purpose" -m set --match-set KUBE-EXTERNAL-IP dst,dst -j KUBE-EXTERNAL-SERVICES',
            "-A KUBE-SERVICES -m addrtype --dst-type LOCAL -j KUBE-NODE-PORT",
        ],
        "KUBE-EXTERNAL-SERVICES": [
            '-A KUBE-EXTERNAL-SERVICES -m comment --comment "Kubernetes service external ip + port with '
            'externalTrafficPolicy=local" -m set --match-set KUBE-EXTERNAL-IP-LOCAL dst,dst -j RETURN',
            "-A KUBE-EXTERNAL-SERVICES -j KUBE-MARK-MASQ",
        ],
        "KUBE-LOAD-BALANCER": [
            '-A KUBE-LOAD-BALANCER -m comment --comment "Kubernetes service load balancer ip + port with '
            'externalTrafficPolicy=local" -m set --match-set KUBE-LOAD-BALANCER-LOCAL dst,dst -j RETURN',
            "-A KUBE-LOAD-BALANCER -j KUBE-MARK-MASQ",
        ],
        "KUBE-MARK-MASQ": [f"-A KUBE-MARK-MASQ -j MARK --or-mark {mark}"],
        "KUBE-NODE-PORT": [
            '-A KUBE-NODE-PORT -p tcp -m comment --comment "Kubernetes nodeport TCP port with '
            'externalTrafficPolicy=local" -m set --match-set KUBE-NODE-PORT-LOCAL-TCP dst -j RETURN',
            '-A KUBE-NODE-PORT -p tcp -m comment --comment "Kubernetes nodeport TCP port for masquerade purpose" '
            "-m set --match-set KUBE-NODE-PORT-TCP dst -j KUBE-MARK-MASQ",
        ],
        "KUBE-POSTROUTING": [
            '-A KUBE-POSTROUTING -m comment --comment "Kubernetes endpoints dst ip:port, source ip for solving '
            'hairpin purpose" -m set --match-set KUBE-LOOP-BACK dst,dst,src -j MASQUERADE',
            f"-A KUBE-POSTROUTING -m mark ! --mark {mark}/{mark} -j RETURN",
            f"-A KUBE-POSTROUTING -j MARK --xor-mark {mark}",
            '-A KUBE-POSTROUTING -m comment --comment "kubernetes service traffic requiring SNAT" -j MASQUERADE'
            + (" --random-fully" if random_fully else ""),
        ],
    }
    filt = {
        "KUBE-FORWARD": [
            f"-A KUBE-FORWARD -m conntrack --ctstate INVALID{acct} -j DROP",
            f'-A KUBE-FORWARD -m comment --comment "kubernetes forwarding rules" -m mark --mark {mark}/{mark} '
            "-j ACCEPT",
            '-A KUBE-FORWARD -m comment --comment "kubernetes forwarding conntrack rule" -m conntrack '
            "--ctstate RELATED,ESTABLISHED -j ACCEPT",
        ],
        "KUBE-IPVS-FILTER": [
            "-A KUBE-IPVS-FILTER -m set --match-set KUBE-LOAD-BALANCER dst,dst -j RETURN",
            "-A KUBE-IPVS-FILTER -m set --match-set KUBE-CLUSTER-IP dst,dst -j RETURN",
            "-A KUBE-IPVS-FILTER -m set --match-set KUBE-EXTERNAL-IP dst,dst -j RETURN",
            "-A KUBE-IPVS-FILTER -m set --match-set KUBE-HEALTH-CHECK-NODE-PORT dst -j RETURN",
            "-A KUBE-IPVS-FILTER -m conntrack --ctstate NEW -m set --match-set KUBE-IPVS-IPS dst -j REJECT",
        ],
        "KUBE-NODE-PORT": [
            '-A KUBE-NODE-PORT -m comment --comment "Kubernetes health check node port" -m set --match-set '
            "KUBE-HEALTH-CHECK-NODE-PORT dst -j ACCEPT",
        ],
        "KUBE-PROXY-FIREWALL": [
            '-A KUBE-PROXY-FIREWALL -m comment --comment "Kubernetes service load balancer firewall" -m set '
            "--match-set KUBE-LOAD-BALANCER-FW dst,dst -j KUBE-SOURCE-RANGES-FIREWALL",
        ],
        "KUBE-SOURCE-RANGES-FIREWALL": [
            "-A KUBE-SOURCE-RANGES-FIREWALL -m set --match-set KUBE-LOAD-BALANCER-SOURCE-CIDR dst,dst,src -j RETURN",
            "-A KUBE-SOURCE-RANGES-FIREWALL -j DROP",
        ],
    }
    return filt, nat


def render_ipvs(services: Iterable[dict], endpointslices: Iterable[dict], node: dict, config: dict | None = None,
                *, nfacct: bool = False, random_fully: bool | None = None, release: str = RELEASE) -> str:
    """IPVS mode as text: `ipvsadm -Ln`, kube-ipvs0 addresses, `ipset list` and `iptables-save` sections."""
    with paused_gc():
        return ipvs_state(services, endpointslices, node, config, nfacct=nfacct, random_fully=random_fully,
                          release=release).text()


def ipvs_delta(old: IpvsState | None, new: IpvsState) -> str:
    """`ipvsadm-restore` commands turning the old virtual servers into the new ones (real servers diffed)."""
    def flag(protocol: str) -> str:
        return {"TCP": "-t", "UDP": "-u", "SCTP": "--sctp-service"}.get(protocol, "-t")

    def service_line(op: str, vs: VirtualServer) -> str:
        extra = f" -p {vs.persistent}" if vs.persistent and op != "-D" else ""
        sched = f" -s {vs.scheduler}" if op != "-D" else ""
        return f"{op} {flag(vs.protocol)} {vs.address}{sched}{extra}"

    before = {(v.protocol, v.address): v for v in (old.virtual_servers if old else ())}
    after = {(v.protocol, v.address): v for v in new.virtual_servers}
    out: list[str] = []
    for key, vs in before.items():
        if key not in after:
            out.append(service_line("-D", vs))
    for key, vs in after.items():
        prev = before.get(key)
        if prev is None:
            out.append(service_line("-A", vs))
        elif (prev.scheduler, prev.persistent) != (vs.scheduler, vs.persistent):
            out.append(service_line("-E", vs))
        old_rs = {rs.address for rs in prev.real_servers} if prev else set()
        new_rs = {rs.address for rs in vs.real_servers}
        out.extend(f"-d {flag(vs.protocol)} {vs.address} -r {a}" for a in sorted(old_rs - new_rs))
        out.extend(f"-a {flag(vs.protocol)} {vs.address} -r {a} -m -w 1" for a in sorted(new_rs - old_rs))
    return "\n".join(out) + ("\n" if out else "")
