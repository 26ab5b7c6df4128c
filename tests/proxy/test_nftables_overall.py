"""Upstream's "overall" nftables case: the per-Service statements must be the same set as upstream expects."""
from __future__ import annotations

import pytest

from labsupport.proxy import render
from labsupport.proxy.nftables import base_statements, dnat_maps
from labsupport.proxy.topology import NodeInfo, ProxyConfig

from .fixtures import node
from .test_iptables_overall import overall_objects

T = "ip kube-proxy"
EXPECTED = f"""\
add chain {T} service-ULMVA6XW-ns1/svc1/tcp/p80
add rule {T} service-ULMVA6XW-ns1/svc1/tcp/p80 ip daddr 172.30.0.41 ip saddr != 10.0.0.0/8 jump mark-for-masquerade
add rule {T} service-ULMVA6XW-ns1/svc1/tcp/p80 numgen random mod 1 vmap {{ 0 : goto endpoint-5OJB2KTY-ns1/svc1/tcp/p80__10.180.0.1/80 }}
add chain {T} endpoint-5OJB2KTY-ns1/svc1/tcp/p80__10.180.0.1/80
add rule {T} endpoint-5OJB2KTY-ns1/svc1/tcp/p80__10.180.0.1/80 ip saddr 10.180.0.1 jump mark-for-masquerade
add rule {T} endpoint-5OJB2KTY-ns1/svc1/tcp/p80__10.180.0.1/80 meta l4proto tcp dnat to 10.180.0.1:80
add element {T} cluster-ips {{ 172.30.0.41 }}
add element {T} service-ips {{ 172.30.0.41 . tcp . 80 : goto service-ULMVA6XW-ns1/svc1/tcp/p80 }}
add chain {T} service-42NFTM6N-ns2/svc2/tcp/p80
add rule {T} service-42NFTM6N-ns2/svc2/tcp/p80 ip daddr 172.30.0.42 ip saddr != 10.0.0.0/8 jump mark-for-masquerade
add rule {T} service-42NFTM6N-ns2/svc2/tcp/p80 numgen random mod 1 vmap {{ 0 : goto endpoint-SGOXE6O3-ns2/svc2/tcp/p80__10.180.0.2/80 }}
add chain {T} external-42NFTM6N-ns2/svc2/tcp/p80
add rule {T} external-42NFTM6N-ns2/svc2/tcp/p80 ip saddr 10.0.0.0/8 goto service-42NFTM6N-ns2/svc2/tcp/p80 comment "short-circuit pod traffic"
add rule {T} external-42NFTM6N-ns2/svc2/tcp/p80 fib saddr type local jump mark-for-masquerade comment "masquerade local traffic"
add rule {T} external-42NFTM6N-ns2/svc2/tcp/p80 fib saddr type local goto service-42NFTM6N-ns2/svc2/tcp/p80 comment "short-circuit local traffic"
add chain {T} endpoint-SGOXE6O3-ns2/svc2/tcp/p80__10.180.0.2/80
add rule {T} endpoint-SGOXE6O3-ns2/svc2/tcp/p80__10.180.0.2/80 ip saddr 10.180.0.2 jump mark-for-masquerade
add rule {T} endpoint-SGOXE6O3-ns2/svc2/tcp/p80__10.180.0.2/80 meta l4proto tcp dnat to 10.180.0.2:80
add element {T} cluster-ips {{ 172.30.0.42 }}
add element {T} service-ips {{ 172.30.0.42 . tcp . 80 : goto service-42NFTM6N-ns2/svc2/tcp/p80 }}
add element {T} service-ips {{ 192.168.99.22 . tcp . 80 : goto external-42NFTM6N-ns2/svc2/tcp/p80 }}
add element {T} service-ips {{ 1.2.3.4 . tcp . 80 : goto external-42NFTM6N-ns2/svc2/tcp/p80 }}
add element {T} service-nodeports {{ tcp . 3001 : goto external-42NFTM6N-ns2/svc2/tcp/p80 }}
add element {T} no-endpoint-nodeports {{ tcp . 3001 comment "ns2/svc2:p80" : drop }}
add element {T} no-endpoint-services {{ 1.2.3.4 . tcp . 80 comment "ns2/svc2:p80" : drop }}
add element {T} no-endpoint-services {{ 192.168.99.22 . tcp . 80 comment "ns2/svc2:p80" : drop }}
add chain {T} service-4AT6LBPK-ns3/svc3/tcp/p80
add rule {T} service-4AT6LBPK-ns3/svc3/tcp/p80 ip daddr 172.30.0.43 ip saddr != 10.0.0.0/8 jump mark-for-masquerade
add rule {T} service-4AT6LBPK-ns3/svc3/tcp/p80 numgen random mod 1 vmap {{ 0 : goto endpoint-UEIP74TE-ns3/svc3/tcp/p80__10.180.0.3/80 }}
add chain {T} external-4AT6LBPK-ns3/svc3/tcp/p80
add rule {T} external-4AT6LBPK-ns3/svc3/tcp/p80 jump mark-for-masquerade
add rule {T} external-4AT6LBPK-ns3/svc3/tcp/p80 goto service-4AT6LBPK-ns3/svc3/tcp/p80
add chain {T} endpoint-UEIP74TE-ns3/svc3/tcp/p80__10.180.0.3/80
add rule {T} endpoint-UEIP74TE-ns3/svc3/tcp/p80__10.180.0.3/80 ip saddr 10.180.0.3 jump mark-for-masquerade
add rule {T} endpoint-UEIP74TE-ns3/svc3/tcp/p80__10.180.0.3/80 meta l4proto tcp dnat to 10.180.0.3:80
add element {T} cluster-ips {{ 172.30.0.43 }}
add element {T} service-ips {{ 172.30.0.43 . tcp . 80 : goto service-4AT6LBPK-ns3/svc3/tcp/p80 }}
add element {T} service-nodeports {{ tcp . 3003 : goto external-4AT6LBPK-ns3/svc3/tcp/p80 }}
add chain {T} service-LAUZTJTB-ns4/svc4/tcp/p80
add rule {T} service-LAUZTJTB-ns4/svc4/tcp/p80 ip daddr 172.30.0.44 ip saddr != 10.0.0.0/8 jump mark-for-masquerade
add rule {T} service-LAUZTJTB-ns4/svc4/tcp/p80 numgen random mod 2 vmap {{ 0 : goto endpoint-UNZV3OEC-ns4/svc4/tcp/p80__10.180.0.4/80 , 1 : goto endpoint-5RFCDDV7-ns4/svc4/tcp/p80__10.180.0.5/80 }}
add chain {T} external-LAUZTJTB-ns4/svc4/tcp/p80
add rule {T} external-LAUZTJTB-ns4/svc4/tcp/p80 jump mark-for-masquerade
add rule {T} external-LAUZTJTB-ns4/svc4/tcp/p80 goto service-LAUZTJTB-ns4/svc4/tcp/p80
add chain {T} endpoint-5RFCDDV7-ns4/svc4/tcp/p80__10.180.0.5/80
add rule {T} endpoint-5RFCDDV7-ns4/svc4/tcp/p80__10.180.0.5/80 ip saddr 10.180.0.5 jump mark-for-masquerade
add rule {T} endpoint-5RFCDDV7-ns4/svc4/tcp/p80__10.180.0.5/80 meta l4proto tcp dnat to 10.180.0.5:80
add chain {T} endpoint-UNZV3OEC-ns4/svc4/tcp/p80__10.180.0.4/80
add rule {T} endpoint-UNZV3OEC-ns4/svc4/tcp/p80__10.180.0.4/80 ip saddr 10.180.0.4 jump mark-for-masquerade
add rule {T} endpoint-UNZV3OEC-ns4/svc4/tcp/p80__10.180.0.4/80 meta l4proto tcp dnat to 10.180.0.4:80
add element {T} cluster-ips {{ 172.30.0.44 }}
add element {T} service-ips {{ 172.30.0.44 . tcp . 80 : goto service-LAUZTJTB-ns4/svc4/tcp/p80 }}
add element {T} service-ips {{ 192.168.99.33 . tcp . 80 : goto external-LAUZTJTB-ns4/svc4/tcp/p80 }}
add set {T} affinity-GTK6MW7G-ns5/svc5/tcp/p80__10.180.0.3/80 {{ type ipv4_addr ; flags dynamic,timeout ; timeout 10800s ; }}
add chain {T} service-HVFWP5L3-ns5/svc5/tcp/p80
add rule {T} service-HVFWP5L3-ns5/svc5/tcp/p80 ip daddr 172.30.0.45 ip saddr != 10.0.0.0/8 jump mark-for-masquerade
add rule {T} service-HVFWP5L3-ns5/svc5/tcp/p80 ip saddr @affinity-GTK6MW7G-ns5/svc5/tcp/p80__10.180.0.3/80 goto endpoint-GTK6MW7G-ns5/svc5/tcp/p80__10.180.0.3/80
add rule {T} service-HVFWP5L3-ns5/svc5/tcp/p80 numgen random mod 1 vmap {{ 0 : goto endpoint-GTK6MW7G-ns5/svc5/tcp/p80__10.180.0.3/80 }}
add chain {T} external-HVFWP5L3-ns5/svc5/tcp/p80
add rule {T} external-HVFWP5L3-ns5/svc5/tcp/p80 jump mark-for-masquerade
add rule {T} external-HVFWP5L3-ns5/svc5/tcp/p80 goto service-HVFWP5L3-ns5/svc5/tcp/p80
add chain {T} endpoint-GTK6MW7G-ns5/svc5/tcp/p80__10.180.0.3/80
add rule {T} endpoint-GTK6MW7G-ns5/svc5/tcp/p80__10.180.0.3/80 ip saddr 10.180.0.3 jump mark-for-masquerade
add rule {T} endpoint-GTK6MW7G-ns5/svc5/tcp/p80__10.180.0.3/80 update @affinity-GTK6MW7G-ns5/svc5/tcp/p80__10.180.0.3/80 {{ ip saddr }}
add rule {T} endpoint-GTK6MW7G-ns5/svc5/tcp/p80__10.180.0.3/80 meta l4proto tcp dnat to 10.180.0.3:80
add chain {T} firewall-HVFWP5L3-ns5/svc5/tcp/p80
add rule {T} firewall-HVFWP5L3-ns5/svc5/tcp/p80 ip saddr != {{ 203.0.113.0/25 }} drop
add element {T} cluster-ips {{ 172.30.0.45 }}
add element {T} service-ips {{ 172.30.0.45 . tcp . 80 : goto service-HVFWP5L3-ns5/svc5/tcp/p80 }}
add element {T} service-ips {{ 5.6.7.8 . tcp . 80 : goto external-HVFWP5L3-ns5/svc5/tcp/p80 }}
add element {T} service-nodeports {{ tcp . 3002 : goto external-HVFWP5L3-ns5/svc5/tcp/p80 }}
add element {T} firewall-ips {{ 5.6.7.8 . tcp . 80 : goto firewall-HVFWP5L3-ns5/svc5/tcp/p80 }}
add element {T} cluster-ips {{ 172.30.0.46 }}
add element {T} no-endpoint-services {{ 172.30.0.46 . tcp . 80 comment "ns6/svc6:p80" : goto reject-chain }}
"""


#: The same objects in v1.37's layout (upstream's case with its alpha localhost-NodePort gate left off).
EXPECTED_V137 = f"""\
add chain {T} service-ULMVA6XW-ns1/svc1/tcp/p80
add rule {T} service-ULMVA6XW-ns1/svc1/tcp/p80 meta l4proto tcp dnat to 10.180.0.1:80
add element {T} cluster-ips {{ 172.30.0.41 }}
add element {T} service-ips {{ 172.30.0.41 . tcp . 80 : goto service-ULMVA6XW-ns1/svc1/tcp/p80 }}
add element {T} hairpin-connections {{ 10.180.0.1 . 10.180.0.1 . tcp . 80 }}
add chain {T} service-42NFTM6N-ns2/svc2/tcp/p80
add rule {T} service-42NFTM6N-ns2/svc2/tcp/p80 meta l4proto tcp dnat to 10.180.0.2:80
add chain {T} external-42NFTM6N-ns2/svc2/tcp/p80
add rule {T} external-42NFTM6N-ns2/svc2/tcp/p80 ip saddr 10.0.0.0/8 goto service-42NFTM6N-ns2/svc2/tcp/p80 \
comment "short-circuit pod traffic"
add rule {T} external-42NFTM6N-ns2/svc2/tcp/p80 fib saddr type local mark set mark or 0x4000 \
comment "masquerade local traffic"
add rule {T} external-42NFTM6N-ns2/svc2/tcp/p80 fib saddr type local goto service-42NFTM6N-ns2/svc2/tcp/p80 \
comment "short-circuit local traffic"
add element {T} cluster-ips {{ 172.30.0.42 }}
add element {T} service-ips {{ 172.30.0.42 . tcp . 80 : goto service-42NFTM6N-ns2/svc2/tcp/p80 }}
add element {T} service-ips {{ 192.168.99.22 . tcp . 80 : goto external-42NFTM6N-ns2/svc2/tcp/p80 }}
add element {T} service-ips {{ 1.2.3.4 . tcp . 80 : goto external-42NFTM6N-ns2/svc2/tcp/p80 }}
add element {T} service-nodeports {{ tcp . 3001 : goto external-42NFTM6N-ns2/svc2/tcp/p80 }}
add element {T} no-endpoint-nodeports {{ tcp . 3001 comment "ns2/svc2:p80" : drop }}
add element {T} no-endpoint-services {{ 1.2.3.4 . tcp . 80 comment "ns2/svc2:p80" : drop }}
add element {T} no-endpoint-services {{ 192.168.99.22 . tcp . 80 comment "ns2/svc2:p80" : drop }}
add chain {T} service-4AT6LBPK-ns3/svc3/tcp/p80
add rule {T} service-4AT6LBPK-ns3/svc3/tcp/p80 meta l4proto tcp dnat to 10.180.0.3:80
add chain {T} external-4AT6LBPK-ns3/svc3/tcp/p80
add rule {T} external-4AT6LBPK-ns3/svc3/tcp/p80 mark set mark or 0x4000 comment "masquerade"
add rule {T} external-4AT6LBPK-ns3/svc3/tcp/p80 goto service-4AT6LBPK-ns3/svc3/tcp/p80
add element {T} cluster-ips {{ 172.30.0.43 }}
add element {T} service-ips {{ 172.30.0.43 . tcp . 80 : goto service-4AT6LBPK-ns3/svc3/tcp/p80 }}
add element {T} service-nodeports {{ tcp . 3003 : goto external-4AT6LBPK-ns3/svc3/tcp/p80 }}
add element {T} hairpin-connections {{ 10.180.0.3 . 10.180.0.3 . tcp . 80 }}
add chain {T} service-LAUZTJTB-ns4/svc4/tcp/p80
add rule {T} service-LAUZTJTB-ns4/svc4/tcp/p80 meta l4proto tcp dnat ip addr . port to numgen random mod 2 \
map {{ 0 : 10.180.0.4 . 80 , 1 : 10.180.0.5 . 80 }}
add chain {T} external-LAUZTJTB-ns4/svc4/tcp/p80
add rule {T} external-LAUZTJTB-ns4/svc4/tcp/p80 mark set mark or 0x4000 comment "masquerade"
add rule {T} external-LAUZTJTB-ns4/svc4/tcp/p80 goto service-LAUZTJTB-ns4/svc4/tcp/p80
add element {T} cluster-ips {{ 172.30.0.44 }}
add element {T} service-ips {{ 172.30.0.44 . tcp . 80 : goto service-LAUZTJTB-ns4/svc4/tcp/p80 }}
add element {T} service-ips {{ 192.168.99.33 . tcp . 80 : goto external-LAUZTJTB-ns4/svc4/tcp/p80 }}
add element {T} hairpin-connections {{ 10.180.0.5 . 10.180.0.5 . tcp . 80 }}
add set {T} affinity-GTK6MW7G-ns5/svc5/tcp/p80__10.180.0.3/80 {{ type ipv4_addr ; flags dynamic,timeout ; \
timeout 10800s ; }}
add chain {T} service-HVFWP5L3-ns5/svc5/tcp/p80
add rule {T} service-HVFWP5L3-ns5/svc5/tcp/p80 ip saddr @affinity-GTK6MW7G-ns5/svc5/tcp/p80__10.180.0.3/80 \
goto endpoint-GTK6MW7G-ns5/svc5/tcp/p80__10.180.0.3/80
add rule {T} service-HVFWP5L3-ns5/svc5/tcp/p80 numgen random mod 1 vmap \
{{ 0 : goto endpoint-GTK6MW7G-ns5/svc5/tcp/p80__10.180.0.3/80 }}
add chain {T} external-HVFWP5L3-ns5/svc5/tcp/p80
add rule {T} external-HVFWP5L3-ns5/svc5/tcp/p80 mark set mark or 0x4000 comment "masquerade"
add rule {T} external-HVFWP5L3-ns5/svc5/tcp/p80 goto service-HVFWP5L3-ns5/svc5/tcp/p80
add chain {T} endpoint-GTK6MW7G-ns5/svc5/tcp/p80__10.180.0.3/80
add rule {T} endpoint-GTK6MW7G-ns5/svc5/tcp/p80__10.180.0.3/80 update \
@affinity-GTK6MW7G-ns5/svc5/tcp/p80__10.180.0.3/80 {{ ip saddr }}
add rule {T} endpoint-GTK6MW7G-ns5/svc5/tcp/p80__10.180.0.3/80 meta l4proto tcp dnat to 10.180.0.3:80
add chain {T} firewall-HVFWP5L3-ns5/svc5/tcp/p80
add rule {T} firewall-HVFWP5L3-ns5/svc5/tcp/p80 ip saddr != {{ 203.0.113.0/25 }} drop
add element {T} cluster-ips {{ 172.30.0.45 }}
add element {T} service-ips {{ 172.30.0.45 . tcp . 80 : goto service-HVFWP5L3-ns5/svc5/tcp/p80 }}
add element {T} service-ips {{ 5.6.7.8 . tcp . 80 : goto external-HVFWP5L3-ns5/svc5/tcp/p80 }}
add element {T} service-nodeports {{ tcp . 3002 : goto external-HVFWP5L3-ns5/svc5/tcp/p80 }}
add element {T} firewall-ips {{ 5.6.7.8 . tcp . 80 : goto firewall-HVFWP5L3-ns5/svc5/tcp/p80 }}
add element {T} cluster-ips {{ 172.30.0.46 }}
add element {T} no-endpoint-services {{ 172.30.0.46 . tcp . 80 comment "ns6/svc6:p80" : goto reject-chain }}
"""


@pytest.mark.parametrize("release, expected", [("v1.35", EXPECTED), ("v1.37", EXPECTED_V137)])
def test_overall_statements_match_upstream(release, expected):
    services, slices = overall_objects()
    config = {"clusterCIDR": "10.0.0.0/8"}
    text = render("nftables", services, slices, node("test-node"), config, service_cidrs=("172.30.0.0/16",),
                  release=release)
    base = set(base_statements(NodeInfo.from_node(node("test-node")), ProxyConfig.from_dict(config, "nftables"),
                               ("172.30.0.0/16",), dnat_maps(release)))
    per_service = sorted(line for line in text.splitlines() if line and line not in base)
    assert per_service == sorted(expected.splitlines())
