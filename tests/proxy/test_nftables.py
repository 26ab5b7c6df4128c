"""nftables renderer: names, the upstream golden, feature rules and incremental updates."""
from __future__ import annotations

import time

import pytest

from labsupport.proxy import render
from labsupport.proxy.nftables import NftablesSyncer, endpoint_chain_base, port_chain_base
from labsupport.proxy.release import UnknownRelease, dnat_maps
from labsupport.proxy.topology import Endpoint, ServicePort

from .fixtures import GOLDEN_CONFIG, GOLDEN_RELEASE, endpoint, endpointslice, many_services, node, scenario, two_services
from .test_iptables import golden_lines

SVC1 = ServicePort("ns1", "svc1", "p80", "tcp", 80, "172.30.0.41")
CIDRS = ("172.30.0.0/16",)


def test_chain_names_match_upstream_examples():
    assert "service-" + port_chain_base(SVC1) == "service-ULMVA6XW-ns1/svc1/tcp/p80"
    ep = Endpoint.make("10.180.0.1", 80)
    assert "endpoint-" + endpoint_chain_base(SVC1, ep) == "endpoint-5OJB2KTY-ns1/svc1/tcp/p80__10.180.0.1/80"


def test_reproduces_upstream_golden_as_a_set():
    services, slices = two_services()
    text = render("nftables", services, slices, node(), GOLDEN_CONFIG, service_cidrs=CIDRS, release=GOLDEN_RELEASE)
    assert sorted(line for line in text.splitlines() if line) == sorted(golden_lines("nftables-two-services.txt"))


def test_dnat_map_layout_of_current_releases():
    """Since v1.36 a Service chain DNATs itself: one endpoint directly, several through a numgen map; endpoint
    chains exist only for session affinity, and a local endpoint's own traffic is found in hairpin-connections."""
    services, slices = two_services()
    text = render("nftables", services, slices, node(), GOLDEN_CONFIG, service_cidrs=CIDRS)
    assert "add rule ip kube-proxy service-ULMVA6XW-ns1/svc1/tcp/p80 meta l4proto tcp dnat to 10.0.1.1:80" in text
    assert "chain ip kube-proxy endpoint-" not in text and "mark-for-masquerade" not in text
    assert "add element ip kube-proxy hairpin-connections { 10.0.1.1 . 10.0.1.1 . tcp . 80 }" in text
    assert ('add rule ip kube-proxy services ip daddr @cluster-ips ip saddr != 10.0.0.0/8 mark set mark or 0x4000 '
            'comment "masquerade clusterIP traffic from outside cluster"') in text
    services, slices = many_services(1, 3)
    text = render("nftables", services, slices, node(), GOLDEN_CONFIG)
    assert "dnat ip addr . port to numgen random mod 3 map { 0 : " in text
    affinity = render("nftables", *scenario("affinity"), node(), GOLDEN_CONFIG)
    assert "numgen random mod" in affinity and "vmap { 0 : goto endpoint-" in affinity


def test_release_is_checked():
    with pytest.raises(UnknownRelease, match="'1.x'"):
        render("nftables", *two_services(), node(), GOLDEN_CONFIG, release="1.x")
    assert dnat_maps("v1.36.0") and dnat_maps("1.37") and not dnat_maps("v1.35")


def test_every_chain_is_added_before_it_is_referenced():
    services, slices = scenario("affinity")
    lines = render("nftables", services, slices, node(), GOLDEN_CONFIG).splitlines()
    seen: set[str] = set()
    for line in lines:
        words = line.split()
        if line.startswith("add chain"):
            seen.add(words[4])
        elif line.startswith("add set"):
            seen.add(words[4])
        for i, w in enumerate(words):
            if w in ("goto", "jump") and i + 1 < len(words):
                assert words[i + 1].rstrip(",") in seen, line
            if w.startswith("@affinity-"):
                assert w[1:] in seen, line


def test_affinity_local_noendpoint_and_firewall():
    text = render("nftables", *scenario("affinity"), node(), GOLDEN_CONFIG)
    assert "{ type ipv4_addr ; flags dynamic,timeout ; timeout 10800s ; }" in text
    assert "update @affinity-" in text and "ip saddr @affinity-" in text
    text = render("nftables", *scenario("local-none"), node(), GOLDEN_CONFIG)
    assert 'add element ip kube-proxy no-endpoint-nodeports { tcp . 30080 comment "ns1/svc1:p80" : drop }' in text
    text = render("nftables", *scenario("noendpoints"), node(), GOLDEN_CONFIG)
    assert ('add element ip kube-proxy no-endpoint-services { 172.30.0.41 . tcp . 80 comment "ns1/svc1:p80" : '
            "goto reject-chain }") in text
    text = render("nftables", *scenario("loadbalancer"), node(), GOLDEN_CONFIG)
    assert "ip saddr != { 203.0.113.0/24 } drop" in text
    assert "firewall-ips { 5.6.7.8 . tcp . 80 : goto firewall-" in text
    text = render("nftables", *scenario("local"), node("node1"), GOLDEN_CONFIG)
    assert 'ip saddr 10.0.0.0/8 goto service-ULMVA6XW-ns1/svc1/tcp/p80 comment "short-circuit pod traffic"' in text
    assert "goto local-ULMVA6XW-ns1/svc1/tcp/p80" in text


def test_incremental_delta_touches_only_the_changed_service():
    services, slices = two_services()
    for release in (GOLDEN_RELEASE, "v1.37"):
        syncer = NftablesSyncer(node(), GOLDEN_CONFIG, service_cidrs=CIDRS, release=release)
        first = syncer.sync(services, slices)
        assert first == syncer.rules
        assert syncer.sync(services, slices) == ""
        changed = endpointslice("ns1", "svc1", [endpoint("10.0.1.2", node="node1")],
                                [{"name": "p80", "port": 80, "protocol": "TCP"}])
        delta = syncer.sync(services, [changed, slices[1]])
        assert "ns2/svc2" not in delta
        assert "flush chain ip kube-proxy service-ULMVA6XW-ns1/svc1/tcp/p80" in delta
        if release == GOLDEN_RELEASE:
            assert "delete chain ip kube-proxy endpoint-5TPGNJF2-ns1/svc1/tcp/p80__10.0.1.1/80" in delta
            assert "add chain ip kube-proxy endpoint-" in delta
        else:
            assert "delete element ip kube-proxy hairpin-connections { 10.0.1.1 . 10.0.1.1 . tcp . 80 }" in delta
            assert "add element ip kube-proxy hairpin-connections { 10.0.1.2 . 10.0.1.2 . tcp . 80 }" in delta
        assert syncer.rules == render("nftables", services, [changed, slices[1]], node(), GOLDEN_CONFIG,
                                      service_cidrs=CIDRS, release=release)


def _one_change_delta(count: int) -> tuple[str, float]:
    services, slices = many_services(count, 10)
    syncer = NftablesSyncer(node(), GOLDEN_CONFIG)
    syncer.sync(services, slices)
    changed = dict(slices[50])
    changed["endpoints"] = changed["endpoints"][:-1] + [endpoint("10.250.0.1")]
    start = time.perf_counter()
    delta = syncer.update(endpointslices=[changed])
    return delta, time.perf_counter() - start


def test_delta_size_does_not_grow_with_cluster_size():
    small, _ = _one_change_delta(100)
    large, _ = _one_change_delta(3000)
    assert len(large) <= len(small)
    assert large == small
