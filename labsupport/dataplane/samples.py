"""Kube-proxy-shaped rule sets of any size, for demos, tests and benchmarks of the data-plane model.

They follow the shapes of upstream's goldens and, for nftables, of the release asked for (chain names hashed the
same way); they are not a replacement for `labsupport.proxy.render`, which works from real Service and EndpointSlice
objects.
"""
from __future__ import annotations

import base64
import hashlib

from labsupport.dataplane.netfilter import int_to_ip, ip_to_int
from labsupport.proxy.release import RELEASE, dnat_maps

POD_CIDR = "10.0.0.0/8"
SERVICE_CIDR = "172.30.0.0/16"
NODE_IP = "192.168.0.2"


def _hash(text: str) -> str:
    return base64.b32encode(hashlib.sha256(text.encode()).digest()).decode()


def service_ip(i: int) -> str:
    """The ClusterIP of sample service i (172.30.0.1 upward)."""
    return int_to_ip(ip_to_int("172.30.0.0") + i + 1)


def endpoint_ip(i: int, j: int) -> str:
    """The address of endpoint j of sample service i (inside 10.0.0.0/8)."""
    return int_to_ip(ip_to_int("10.1.0.0") + i * 16 + j + 1)


def _services(count: int, endpoints: int):
    for i in range(count):
        name = f"ns{i % 7}/svc{i}:p80"
        eps = [f"{endpoint_ip(i, j)}:8080" for j in range(endpoints)]
        yield i, name, service_ip(i), 80, sorted(eps)


def iptables_rules(count: int, endpoints: int = 3, *, affinity: bool = False, no_endpoints: int = 0,
                   masquerade_mark: str = "0x4000") -> str:
    """An iptables-save dump for `count` ClusterIP services with `endpoints` endpoints each.

    The last `no_endpoints` services get no endpoints (a REJECT rule in filter KUBE-SERVICES instead).
    """
    flt = ["*filter", ":KUBE-NODEPORTS - [0:0]", ":KUBE-SERVICES - [0:0]", ":KUBE-EXTERNAL-SERVICES - [0:0]",
           ":KUBE-FIREWALL - [0:0]", ":KUBE-FORWARD - [0:0]", ":KUBE-PROXY-FIREWALL - [0:0]"]
    nat_chains = [":KUBE-NODEPORTS - [0:0]", ":KUBE-SERVICES - [0:0]", ":KUBE-MARK-MASQ - [0:0]",
                  ":KUBE-POSTROUTING - [0:0]"]
    services, rest = [], []
    for i, name, vip, port, eps in _services(count, endpoints):
        if i >= count - no_endpoints:
            flt.append(f'-A KUBE-SERVICES -m comment --comment "{name} has no endpoints" -m tcp -p tcp '
                       f"-d {vip} --dport {port} -j REJECT --reject-with icmp-port-unreachable")
            continue
        svc = "KUBE-SVC-" + _hash(name + "tcp")[:16]
        nat_chains.append(f":{svc} - [0:0]")
        services.append(f'-A KUBE-SERVICES -m comment --comment "{name} cluster IP" -m tcp -p tcp -d {vip} '
                        f"--dport {port} -j {svc}")
        rest.append(f'-A {svc} -m comment --comment "{name} cluster IP" -m tcp -p tcp -d {vip} --dport {port} '
                    f"! -s {POD_CIDR} -j KUBE-MARK-MASQ")
        seps = ["KUBE-SEP-" + _hash(name + "tcp" + ep)[:16] for ep in eps]
        if affinity:
            for ep, sep in zip(eps, seps):
                rest.append(f'-A {svc} -m comment --comment "{name} -> {ep}" -m recent --name {sep} --rcheck '
                            f"--seconds 10800 --reap -j {sep}")
        for k, (ep, sep) in enumerate(zip(eps, seps)):
            left = len(eps) - k
            prob = f" -m statistic --mode random --probability {1.0 / left:0.10f}" if left > 1 else ""
            rest.append(f'-A {svc} -m comment --comment "{name} -> {ep}"{prob} -j {sep}')
        for ep, sep in zip(eps, seps):
            nat_chains.append(f":{sep} - [0:0]")
            ip = ep.split(":")[0]
            rest.append(f"-A {sep} -m comment --comment {name} -s {ip} -j KUBE-MARK-MASQ")
            recent = f" -m recent --set --name {sep} --mask 255.255.255.255 --rsource" if affinity else ""
            rest.append(f"-A {sep} -m comment --comment {name}{recent} -m tcp -p tcp -j DNAT --to-destination {ep}")
    flt += [
        '-A KUBE-FIREWALL -m comment --comment "block incoming localnet connections" -d 127.0.0.0/8 '
        "! -s 127.0.0.0/8 -m conntrack ! --ctstate RELATED,ESTABLISHED,DNAT -j DROP",
        "-A KUBE-FORWARD -m conntrack --ctstate INVALID -j DROP",
        f'-A KUBE-FORWARD -m comment --comment "kubernetes forwarding rules" -m mark --mark '
        f"{masquerade_mark}/{masquerade_mark} -j ACCEPT",
        '-A KUBE-FORWARD -m comment --comment "kubernetes forwarding conntrack rule" -m conntrack --ctstate '
        "RELATED,ESTABLISHED -j ACCEPT",
        "COMMIT"]
    nat = ["*nat"] + nat_chains + services + [
        '-A KUBE-SERVICES -m comment --comment "kubernetes service nodeports; NOTE: this must be the last rule '
        'in this chain" -m addrtype --dst-type LOCAL -j KUBE-NODEPORTS',
        f"-A KUBE-MARK-MASQ -j MARK --or-mark {masquerade_mark}",
        f"-A KUBE-POSTROUTING -m mark ! --mark {masquerade_mark}/{masquerade_mark} -j RETURN",
        f"-A KUBE-POSTROUTING -j MARK --xor-mark {masquerade_mark}",
        '-A KUBE-POSTROUTING -m comment --comment "kubernetes service traffic requiring SNAT" -j MASQUERADE '
        "--random-fully"] + rest + ["COMMIT"]
    return "\n".join(flt + nat) + "\n"


NFT_BASE_COMMON = """add table ip kube-proxy { comment "rules for kube-proxy" ; }
add set ip kube-proxy cluster-ips { type ipv4_addr ; comment "Active ClusterIPs" ; }
add set ip kube-proxy nodeport-ips { type ipv4_addr ; comment "IPs that accept NodePort traffic" ; }
add map ip kube-proxy firewall-ips { type ipv4_addr . inet_proto . inet_service : verdict ; comment "destinations that are subject to LoadBalancerSourceRanges" ; }
add map ip kube-proxy no-endpoint-nodeports { type inet_proto . inet_service : verdict ; comment "vmap to drop or reject packets to service nodeports with no endpoints" ; }
add map ip kube-proxy no-endpoint-services { type ipv4_addr . inet_proto . inet_service : verdict ; comment "vmap to drop or reject packets to services with no endpoints" ; }
add map ip kube-proxy service-ips { type ipv4_addr . inet_proto . inet_service : verdict ; comment "ClusterIP, ExternalIP and LoadBalancer IP traffic" ; }
add map ip kube-proxy service-nodeports { type inet_proto . inet_service : verdict ; comment "NodePort traffic" ; }
add chain ip kube-proxy cluster-ips-check
add chain ip kube-proxy filter-prerouting-pre-dnat { type filter hook prerouting priority -110 ; }
add chain ip kube-proxy filter-output-pre-dnat { type filter hook output priority -110 ; }
add chain ip kube-proxy filter-forward { type filter hook forward priority 0 ; }
add chain ip kube-proxy filter-input { type filter hook input priority 0 ; }
add chain ip kube-proxy filter-output { type filter hook output priority 0 ; }
add chain ip kube-proxy firewall-check
add chain ip kube-proxy mark-for-masquerade
add chain ip kube-proxy masquerading
add chain ip kube-proxy nat-output { type nat hook output priority -100 ; }
add chain ip kube-proxy nat-postrouting { type nat hook postrouting priority 100 ; }
add chain ip kube-proxy nat-prerouting { type nat hook prerouting priority -100 ; }
add chain ip kube-proxy nodeport-endpoints-check
add chain ip kube-proxy reject-chain { comment "helper for @no-endpoint-services / @no-endpoint-nodeports" ; }
add chain ip kube-proxy services
add chain ip kube-proxy service-endpoints-check
add rule ip kube-proxy cluster-ips-check ip daddr @cluster-ips reject comment "Reject traffic to invalid ports of ClusterIPs"
add rule ip kube-proxy cluster-ips-check ip daddr { 172.30.0.0/16 } drop comment "Drop traffic to unallocated ClusterIPs"
add rule ip kube-proxy filter-prerouting-pre-dnat ct state new jump firewall-check
add rule ip kube-proxy filter-forward ct state new jump service-endpoints-check
add rule ip kube-proxy filter-forward ct state new jump cluster-ips-check
add rule ip kube-proxy filter-input ct state new jump nodeport-endpoints-check
add rule ip kube-proxy filter-input ct state new jump service-endpoints-check
add rule ip kube-proxy filter-output ct state new jump service-endpoints-check
add rule ip kube-proxy filter-output-pre-dnat ct state new jump firewall-check
add rule ip kube-proxy filter-output ct state new jump cluster-ips-check
add rule ip kube-proxy firewall-check ip daddr . meta l4proto . th dport vmap @firewall-ips
add rule ip kube-proxy nat-output jump services
add rule ip kube-proxy nat-postrouting jump masquerading
add rule ip kube-proxy nat-prerouting jump services
add rule ip kube-proxy nodeport-endpoints-check ip daddr @nodeport-ips meta l4proto . th dport vmap @no-endpoint-nodeports
add rule ip kube-proxy reject-chain reject
add rule ip kube-proxy services ip daddr . meta l4proto . th dport vmap @service-ips
add rule ip kube-proxy services ip daddr @nodeport-ips meta l4proto . th dport vmap @service-nodeports
add rule ip kube-proxy service-endpoints-check ip daddr . meta l4proto . th dport vmap @no-endpoint-services
add element ip kube-proxy nodeport-ips { 192.168.0.2 }
"""


def _nft_base(maps: bool) -> str:
    """The table, its sets and maps, the base chains and the fixed rules; `maps`: the v1.36+ layout (no
    mark-for-masquerade chain, a hairpin set, outside ClusterIP traffic marked once in `services`)."""
    lines = [line for line in NFT_BASE_COMMON.splitlines()
             if not (maps and "mark-for-masquerade" in line)]
    if maps:
        at = lines.index("add chain ip kube-proxy cluster-ips-check")
        lines.insert(at, 'add set ip kube-proxy hairpin-connections { type ipv4_addr . ipv4_addr . inet_proto . '
                         'inet_service ; comment "service hairpin connections" ; }')
        masquerading = ["add rule ip kube-proxy masquerading mark and 0x4000 != 0 mark set mark xor 0x4000 "
                        "masquerade fully-random",
                        "add rule ip kube-proxy masquerading ct status dnat ip saddr . ip daddr . meta l4proto . "
                        "th dport @hairpin-connections masquerade fully-random"]
        outside = [f"add rule ip kube-proxy services ip daddr @cluster-ips ip saddr != {POD_CIDR} mark set mark or "
                   f'0x4000 comment "masquerade clusterIP traffic from outside cluster"']
    else:
        masquerading = ["add rule ip kube-proxy mark-for-masquerade mark set mark or 0x4000",
                        "add rule ip kube-proxy masquerading mark and 0x4000 == 0 return",
                        "add rule ip kube-proxy masquerading mark set mark xor 0x4000",
                        "add rule ip kube-proxy masquerading masquerade fully-random"]
        outside = []
    at = lines.index("add rule ip kube-proxy nat-output jump services")
    lines[at:at] = masquerading
    at = lines.index("add rule ip kube-proxy services ip daddr . meta l4proto . th dport vmap @service-ips")
    lines[at:at] = outside
    return "\n".join(lines) + "\n"


def _nft_name(prefix: str, name: str) -> str:
    return f"{prefix}-{_hash(name)[:8]}-{name}"


def nftables_rules(count: int, endpoints: int = 3, *, affinity: bool = False, no_endpoints: int = 0,
                   release: str = RELEASE) -> str:
    """An `nft -f` transaction for `count` ClusterIP services (chains added before they are referenced), in the
    layout `release` writes: from v1.36 a Service chain DNATs through a numgen map and endpoint chains exist only
    for session affinity; before, a chain per endpoint behind a numgen vmap."""
    maps = dnat_maps(release)
    out = [_nft_base(maps)]
    for i, name, vip, port, eps in _services(count, endpoints):
        ns, rest = name.split("/")
        svc_name = f"{ns}/{rest.split(':')[0]}/tcp/p80"
        out.append(f"add element ip kube-proxy cluster-ips {{ {vip} }}")
        if i >= count - no_endpoints:
            out.append(f"add element ip kube-proxy no-endpoint-services {{ {vip} . tcp . {port} : goto reject-chain }}")
            continue
        chain = _nft_name("service", svc_name)
        ep_chains = []
        for ep in eps if affinity or not maps else ():
            ip, ep_port = ep.split(":")
            ep_chain = _nft_name("endpoint", f"{svc_name}__{ip}/{ep_port}")
            ep_chains.append((ep_chain, ip, ep_port))
            affinity_set = _nft_name("affinity", f"{svc_name}__{ip}/{ep_port}")
            if affinity:
                out.append(f"add set ip kube-proxy {affinity_set} {{ type ipv4_addr ; flags dynamic,timeout ; "
                           f"timeout 10800s ; }}")
            out.append(f"add chain ip kube-proxy {ep_chain}")
            if not maps:
                out.append(f"add rule ip kube-proxy {ep_chain} ip saddr {ip} jump mark-for-masquerade")
            if affinity:
                out.append(f"add rule ip kube-proxy {ep_chain} update @{affinity_set} {{ ip saddr }}")
            out.append(f"add rule ip kube-proxy {ep_chain} meta l4proto tcp dnat to {ip}:{ep_port}")
        out.append(f"add chain ip kube-proxy {chain}")
        if not maps:
            out.append(f"add rule ip kube-proxy {chain} ip daddr {vip} ip saddr != {POD_CIDR} jump mark-for-masquerade")
        if ep_chains:
            for ep_chain, ip, ep_port in ep_chains if affinity else ():
                affinity_set = _nft_name("affinity", f"{svc_name}__{ip}/{ep_port}")
                out.append(f"add rule ip kube-proxy {chain} ip saddr @{affinity_set} goto {ep_chain}")
            vmap = ", ".join(f"{k} : goto {c}" for k, (c, _, _) in enumerate(ep_chains))
            out.append(f"add rule ip kube-proxy {chain} numgen random mod {len(ep_chains)} vmap {{ {vmap} }}")
        elif len(eps) == 1:
            out.append(f"add rule ip kube-proxy {chain} meta l4proto tcp dnat to {eps[0]}")
        else:
            targets = " , ".join(f"{k} : {ep.replace(':', ' . ')}" for k, ep in enumerate(eps))
            out.append(f"add rule ip kube-proxy {chain} meta l4proto tcp dnat ip addr . port to numgen random mod "
                       f"{len(eps)} map {{ {targets} }}")
        out.append(f"add element ip kube-proxy service-ips {{ {vip} . tcp . {port} : goto {chain} }}")
    return "\n".join(out) + "\n"


def ipvs_rules(count: int, endpoints: int = 3, *, scheduler: str = "rr", persistent: int = 0,
               weights: tuple = ()) -> str:
    """IPVS-mode text: `# ipvsadm -Ln`, `# ipset list` and `# iptables-save` sections."""
    vs_lines = ["# ipvsadm -Ln", "IP Virtual Server version 1.2.1 (size=4096)",
                "Prot LocalAddress:Port Scheduler Flags",
                "  -> RemoteAddress:Port           Forward Weight ActiveConn InActConn"]
    cluster, loop = [], []
    for i, name, vip, port, eps in _services(count, endpoints):
        flags = f" persistent {persistent}" if persistent else ""
        vs_lines.append(f"TCP  {vip}:{port} {scheduler}{flags}")
        for k, ep in enumerate(eps):
            weight = weights[k] if k < len(weights) else 1
            vs_lines.append(f"  -> {ep:<28}Masq    {weight:<6} 0          0")
            ip, ep_port = ep.split(":")
            loop.append(f"{ip},tcp:{ep_port},{ip}")
        cluster.append(f"{vip},tcp:{port}")

    def ipset(name: str, kind: str, members: list) -> list:
        return [f"Name: {name}", f"Type: {kind}", "Revision: 6",
                "Header: family inet hashsize 1024 maxelem 65536 bucketsize 12 initval 0x3b4b1d5f",
                "Size in memory: 1000", "References: 2", f"Number of entries: {len(members)}", "Members:"] + members
    sets = ["# ipset list"] + ipset("KUBE-CLUSTER-IP", "hash:ip,port", cluster) + [""] + \
        ipset("KUBE-LOOP-BACK", "hash:ip,port,ip", loop)
    ipt = ["# iptables-save", "*nat", ":KUBE-SERVICES - [0:0]", ":KUBE-POSTROUTING - [0:0]", ":KUBE-MARK-MASQ - [0:0]",
           ":KUBE-NODE-PORT - [0:0]",
           '-A KUBE-SERVICES -m comment --comment "Kubernetes service cluster ip + port for masquerade purpose" '
           f"-m set --match-set KUBE-CLUSTER-IP dst,dst ! -s {POD_CIDR} -j KUBE-MARK-MASQ",
           "-A KUBE-SERVICES -m addrtype --dst-type LOCAL -j KUBE-NODE-PORT",
           "-A KUBE-SERVICES -m set --match-set KUBE-CLUSTER-IP dst,dst -j ACCEPT",
           '-A KUBE-POSTROUTING -m comment --comment "Kubernetes endpoints dst ip:port, source ip for solving hairpin '
           'purpose" -m set --match-set KUBE-LOOP-BACK dst,dst,src -j MASQUERADE',
           "-A KUBE-POSTROUTING -m mark ! --mark 0x4000/0x4000 -j RETURN",
           "-A KUBE-POSTROUTING -j MARK --xor-mark 0x4000",
           '-A KUBE-POSTROUTING -m comment --comment "kubernetes service traffic requiring SNAT" -j MASQUERADE '
           "--random-fully",
           "-A KUBE-MARK-MASQ -j MARK --or-mark 0x4000", "COMMIT"]
    return "\n".join(vs_lines + [""] + sets + [""] + ipt) + "\n"
