"""KubeProxy: syncs, stop/start, mode switches and rule counts."""
from __future__ import annotations

import pytest

from labsupport.proxy import KubeProxy, render

from .fixtures import GOLDEN_CONFIG, endpoint, endpointslice, many_services, node, scenario, two_services

CIDRS = ("172.30.0.0/16",)


def test_iptables_sync_returns_full_dump_and_rules_match_render():
    services, slices = two_services()
    kp = KubeProxy(node(), "iptables", GOLDEN_CONFIG, service_cidrs=CIDRS, nfacct=True)
    result = kp.sync(services, slices)
    assert result.applied and result.changed and result.tool == "iptables-restore --noflush"
    assert result.text == kp.rules == render("iptables", services, slices, node(), GOLDEN_CONFIG, nfacct=True)
    assert not kp.sync(services, slices).changed
    assert kp.rule_count == 4 + 15
    assert '-A PREROUTING -m comment --comment "kubernetes service portals" -j KUBE-SERVICES' in kp.rules_with_jumps


def test_nftables_sync_returns_delta_while_rules_stay_complete():
    services, slices = two_services()
    kp = KubeProxy(node(), "nftables", GOLDEN_CONFIG, service_cidrs=CIDRS)
    first = kp.sync(services, slices)
    assert first.text == kp.rules
    moved = endpointslice("ns1", "svc1", [endpoint("10.0.1.9")], [{"name": "p80", "port": 80, "protocol": "TCP"}])
    delta = kp.sync(services, [moved, slices[1]])
    assert delta.tool == "nft -f" and "ns2/svc2" not in delta.text and len(delta.text) < len(kp.rules)
    assert kp.rules == render("nftables", services, [moved, slices[1]], node(), GOLDEN_CONFIG, service_cidrs=CIDRS)
    again = kp.update(endpointslices=[slices[0]])
    assert "10.0.1.1" in again.text and "ns2/svc2" not in again.text


def test_stopped_proxy_keeps_rules_and_applies_nothing():
    services, slices = two_services()
    kp = KubeProxy(node(), "iptables", GOLDEN_CONFIG)
    kp.sync(services, slices)
    before = kp.rules
    kp.stop()
    result = kp.sync(services, [])
    assert not result.applied and "stopped" in result.message
    assert kp.rules == before
    resumed = kp.start()
    assert resumed is not None and resumed.applied and "has no endpoints" in kp.rules


def test_mode_switch_returns_cleanup_and_renders_new_mode():
    services, slices = scenario("affinity")
    kp = KubeProxy(node(), "nftables", GOLDEN_CONFIG)
    kp.sync(services, slices)
    switch = kp.set_mode("iptables")
    assert switch.cleanup == "delete table ip kube-proxy\n" and switch.cleanup_tool == "nft -f"
    assert switch.first_sync is not None and switch.first_sync.text.startswith("*filter")
    switch = kp.set_mode("ipvs")
    assert switch.cleanup_tool == "iptables-restore --noflush"
    assert "-X KUBE-SVC-XPGD46QRK7WJZT7O" in switch.cleanup and "-D PREROUTING" in switch.cleanup
    assert kp.ipvs is not None and kp.ipvs.find("172.30.0.41", 80).persistent == 10800
    switch = kp.set_mode("nftables")
    assert "ipvsadm -C" in switch.cleanup and switch.first_sync.text == kp.rules
    with pytest.raises(ValueError):
        kp.set_mode("userspace")


@pytest.mark.parametrize("mode", ["iptables", "nftables", "ipvs"])
def test_rule_count_grows_with_endpoints(mode):
    """iptables and IPVS grow with endpoints; nftables keeps one DNAT rule per Service port (its map grows)."""
    kp = KubeProxy(node(), mode, GOLDEN_CONFIG)
    kp.sync(*many_services(10, 10))
    big, big_text = kp.rule_count, kp.rules
    kp.sync(*many_services(10, 1))
    if mode == "nftables":
        assert big == kp.rule_count > 0 and len(big_text) > len(kp.rules)
        return
    assert big > kp.rule_count > 0
    if mode == "iptables":
        assert kp.rule_count == 4 + 5 + 10 * (2 + 3)


def test_health_check_node_port_answers():
    services, slices = scenario("local")
    on_node1 = KubeProxy(node("node1"), "iptables", GOLDEN_CONFIG)
    on_node1.sync(services, slices)
    status, body = on_node1.health_check(30999)
    assert status == 200 and body == {"service": {"namespace": "ns1", "name": "svc1"}, "localEndpoints": 1,
                                      "serviceProxyHealthy": True}
    on_node3 = KubeProxy(node("node3", "192.168.0.4"), "iptables", GOLDEN_CONFIG)
    on_node3.sync(services, slices)
    assert on_node3.health_check(30999)[0] == 503
    assert on_node3.health_check(31000) is None


def test_iptables_resync_deletes_stale_chains():
    services, slices = two_services()
    kp = KubeProxy(node(), "iptables", GOLDEN_CONFIG)
    kp.sync(services, slices)
    result = kp.sync(services, slices[:1])
    assert "-X KUBE-SEP-UHEGFW77JX3KXTOV" in result.text and "-X KUBE-SVC-2VJB64SDSIJUP5T6" in result.text
    assert "KUBE-SEP-UHEGFW77JX3KXTOV" not in kp.rules


def test_changed_config_rebuilds_the_nft_table():
    services, slices = two_services()
    kp = KubeProxy(node(), "nftables", GOLDEN_CONFIG, service_cidrs=CIDRS)
    kp.sync(services, slices)
    kp.config = {"clusterCIDR": "10.0.0.0/8"}
    assert kp.sync(services, slices).text == ""
    kp.config = {"clusterCIDR": "10.244.0.0/16"}
    result = kp.sync(services, slices)
    assert result.text.startswith("delete table ip kube-proxy\nadd table ip kube-proxy")
    assert "ip saddr != 10.244.0.0/16" in kp.rules
    kp.node = node(ip="192.168.0.9")
    assert "add element ip kube-proxy nodeport-ips { 192.168.0.9 }" in kp.sync(services, slices).text
