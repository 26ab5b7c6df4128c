"""iptables renderer: chain names, probabilities, the upstream golden and the per-feature rules."""
from __future__ import annotations

from pathlib import Path

import pytest

from labsupport.proxy import render
from labsupport.proxy.iptables import chain_name, count_rules, endpoint_chain_name, probability
from labsupport.proxy.topology import ServicePort

from .fixtures import (GOLDEN_CONFIG, GOLDEN_RELEASE, endpoint, endpointslice, many_services, node, port, scenario, service,
                       two_services)

GOLDENS = Path(__file__).resolve().parents[1] / "goldens"
SVC1 = ServicePort("ns1", "svc1", "p80", "tcp", 80, "172.30.0.41")


def golden_lines(name: str) -> list[str]:
    """A golden file without its comment header."""
    path = GOLDENS / name
    return [line for line in path.read_text().splitlines() if line and not line.startswith("#")]


def rules(text: str) -> list[str]:
    """The -A lines of a dump."""
    return [line for line in text.splitlines() if line.startswith("-A ")]


def test_chain_names_match_upstream_examples():
    assert chain_name("KUBE-SVC", SVC1) == "KUBE-SVC-XPGD46QRK7WJZT7O"
    assert endpoint_chain_name(SVC1, "10.180.0.1:80") == "KUBE-SEP-SXIVWICOYRO3J4NJ"
    assert endpoint_chain_name(SVC1, "10.0.1.1:80") == "KUBE-SEP-SNQ3ZNILQDEJNDQO"
    assert chain_name("KUBE-SVL", SVC1).startswith("KUBE-SVL-XPGD46QRK7WJZT7O"[:9])


def test_probabilities_printed_like_upstream():
    assert [probability(n) for n in (3, 2)] == ["0.3333333333", "0.5000000000"]


def test_reproduces_upstream_golden():
    services, slices = two_services()
    text = render("iptables", services, slices, node(), GOLDEN_CONFIG, service_cidrs=("172.30.0.0/16",),
                  nfacct=True, release=GOLDEN_RELEASE)
    assert text.splitlines() == golden_lines("iptables-two-services.txt")
    current = render("iptables", services, slices, node(), GOLDEN_CONFIG, nfacct=True)
    assert ('-A KUBE-POSTROUTING -m comment --comment "kubernetes service traffic requiring SNAT" -j MASQUERADE '
            '--random-fully') in current.splitlines()


def test_endpoints_sorted_by_string_with_probabilities():
    svc = service("ns1", "svc1", "172.30.0.41", [port("p80", 80)])
    eps = endpointslice("ns1", "svc1", [endpoint("10.0.0.2"), endpoint("10.0.0.10"), endpoint("10.0.0.3")],
                        [{"name": "p80", "port": 80, "protocol": "TCP"}])
    text = render("iptables", [svc], [eps], node(), GOLDEN_CONFIG)
    svc_rules = [r for r in rules(text) if r.startswith("-A KUBE-SVC-") and "->" in r]
    assert ["10.0.0.10:80" in svc_rules[0], "10.0.0.2:80" in svc_rules[1], "10.0.0.3:80" in svc_rules[2]] == [True] * 3
    assert "--probability 0.3333333333" in svc_rules[0]
    assert "--probability 0.5000000000" in svc_rules[1]
    assert "statistic" not in svc_rules[2]


@pytest.mark.parametrize("count,per", [(0, 0), (1, 0), (1, 1), (1, 2), (1, 10), (10, 0), (10, 1), (10, 2), (10, 10)])
def test_rule_count_cluster_ip(count, per):
    services, slices = many_services(count, per)
    counts = count_rules(render("iptables", services, slices, node(), GOLDEN_CONFIG))
    expected_nat = 5 + count * (2 + 3 * per) if per else 5
    assert counts["nat"] == expected_nat
    filter_rules = rules_without_localnet(render("iptables", services, slices, node(), GOLDEN_CONFIG))
    assert filter_rules == 3 + (count if per == 0 else 0)


def rules_without_localnet(text: str) -> int:
    """Filter-table rules, leaving out the KUBE-FIREWALL localnet rule (upstream counts that one apart)."""
    table = ""
    n = 0
    for line in text.splitlines():
        if line.startswith("*"):
            table = line[1:]
        elif line.startswith("-A ") and table == "filter" and not line.startswith("-A KUBE-FIREWALL "):
            n += 1
    return n


@pytest.mark.parametrize("count,per,nat,filt", [(0, 0, 5, 3), (1, 0, 5, 7), (1, 1, 17, 4), (1, 2, 20, 4),
                                                (1, 10, 44, 4), (10, 0, 5, 43), (10, 1, 125, 13),
                                                (10, 2, 155, 13), (10, 10, 395, 13)])
def test_rule_count_load_balancer(count, per, nat, filt):
    services, slices = many_services(count, per, "LoadBalancer")
    text = render("iptables", services, slices, node(), GOLDEN_CONFIG)
    assert count_rules(text)["nat"] == nat
    if per:
        assert nat == 5 + count * (9 + 3 * per)  # with the FW chain's closing comment rule
    assert rules_without_localnet(text) == filt


def test_no_endpoints_rejects_cluster_ip_node_port_and_external_ip():
    services, slices = scenario("noendpoints")
    text = render("iptables", services, slices, node(), GOLDEN_CONFIG)
    rejects = [r for r in rules(text) if r.endswith("-j REJECT")]
    assert len(rejects) == 3
    assert all('"ns1/svc1:p80 has no endpoints"' in r for r in rejects)
    assert not any(r.startswith("-A KUBE-SVC") for r in rules(text))


def test_local_policy_uses_svl_with_local_endpoints_only():
    services, slices = scenario("local")
    text = render("iptables", services, slices, node("node1"), GOLDEN_CONFIG)
    svl = [r for r in rules(text) if r.startswith("-A KUBE-SVL-")]
    assert len(svl) == 1 and "10.0.1.1:80" in svl[0]
    ext = [r for r in rules(text) if r.startswith("-A KUBE-EXT-")]
    assert '"pod traffic for ns1/svc1:p80 external destinations" -s 10.0.0.0/8' in ext[0]
    assert ext[-1].endswith("-j KUBE-SVL-XPGD46QRK7WJZT7O")
    assert any('"ns1/svc1:p80 health check node port"' in r and "--dport 30999 -j ACCEPT" in r for r in rules(text))


def test_local_policy_without_local_endpoints_drops():
    services, slices = scenario("local-none")
    text = render("iptables", services, slices, node("node1"), GOLDEN_CONFIG)
    drops = [r for r in rules(text) if "has no local endpoints" in r]
    assert len(drops) == 1 and "--dport 30080 -j DROP" in drops[0] and "--dst-type LOCAL" in drops[0]
    assert not any(r.startswith("-A KUBE-SVL-") for r in rules(text))
    assert not any(r.startswith("-A KUBE-EXT-") and "KUBE-SVL" in r for r in rules(text))


def test_internal_local_without_local_endpoints_drops_cluster_ip():
    services, slices = scenario("internal-local")
    text = render("iptables", services, slices, node("node3"), GOLDEN_CONFIG)
    assert any('"ns1/svc1:p80 has no local endpoints"' in r and "-d 172.30.0.41" in r and r.endswith("-j DROP")
               for r in rules(text))


def test_session_affinity_recent_rules():
    services, slices = scenario("affinity")
    text = render("iptables", services, slices, node(), GOLDEN_CONFIG)
    svc = [r for r in rules(text) if r.startswith("-A KUBE-SVC-")]
    assert "--rcheck --seconds 10800 --reap -j KUBE-SEP-SNQ3ZNILQDEJNDQO" in svc[1]
    assert "-m recent --name KUBE-SEP-SNQ3ZNILQDEJNDQO --set -m tcp -p tcp -j DNAT" in text


def test_nodeport_and_load_balancer_firewall():
    services, slices = scenario("loadbalancer")
    text = render("iptables", services, slices, node(), GOLDEN_CONFIG)
    assert ("-A KUBE-NODEPORTS -m comment --comment ns1/svc1:p80 -m tcp -p tcp --dport 30080 "
            "-j KUBE-EXT-XPGD46QRK7WJZT7O") in text
    assert '"ns1/svc1:p80 loadbalancer IP" -m tcp -p tcp -d 5.6.7.8 --dport 80 -j KUBE-FW-XPGD46QRK7WJZT7O' in text
    assert "-s 203.0.113.0/24 -j KUBE-EXT-XPGD46QRK7WJZT7O" in text
    assert "traffic not accepted by KUBE-FW-XPGD46QRK7WJZT7O" in text


def test_nodeport_outside_range_is_not_validated():
    services, slices = scenario("nodeport")
    assert "--dport 3001 -j KUBE-EXT-" in render("iptables", services, slices, node(), GOLDEN_CONFIG)


def test_headless_and_external_name_produce_no_rules():
    headless = service("ns1", "db", "None", [port("p5432", 5432)])
    external = service("ns1", "ext", "", [port("p80", 80)], type="ExternalName", externalName="example.com")
    eps = endpointslice("ns1", "db", [endpoint("10.0.1.1")], [{"name": "p5432", "port": 5432, "protocol": "TCP"}])
    empty = render("iptables", [], [], node(), GOLDEN_CONFIG)
    assert render("iptables", [headless, external], [eps], node(), GOLDEN_CONFIG) == empty


def test_large_cluster_mode_drops_endpoint_comments():
    services, slices = many_services(101, 10)
    text = render("iptables", services, slices, node(), GOLDEN_CONFIG)
    assert not any(r.startswith("-A KUBE-SEP-") and "--comment" in r for r in rules(text))
    assert not any(r.startswith("-A KUBE-SVC-") and "->" in r for r in rules(text))
    small = render("iptables", *many_services(100, 10), node(), GOLDEN_CONFIG)
    assert any(r.startswith("-A KUBE-SEP-") and "--comment" in r for r in rules(small))


def test_masquerade_all_and_custom_mark():
    services, slices = two_services()
    text = render("iptables", services, slices, node(),
                  {"clusterCIDR": "10.0.0.0/8", "iptables": {"masqueradeAll": True, "masqueradeBit": 15}})
    assert "-A KUBE-MARK-MASQ -j MARK --or-mark 0x8000" in text
    assert ('-A KUBE-SVC-XPGD46QRK7WJZT7O -m comment --comment "ns1/svc1:p80 cluster IP" -m tcp -p tcp '
            "-d 172.30.0.41 --dport 80 -j KUBE-MARK-MASQ") in text


def test_terminating_fallback_and_unset_conditions():
    svc = service("ns1", "svc1", "172.30.0.41", [port("p80", 80)])
    eps = endpointslice("ns1", "svc1", [endpoint("10.0.1.1", ready=False, serving=True, terminating=True),
                                        endpoint("10.0.1.2", ready=False, serving=False, terminating=True)],
                        [{"name": "p80", "port": 80, "protocol": "TCP"}])
    text = render("iptables", [svc], [eps], node(), GOLDEN_CONFIG)
    assert "--to-destination 10.0.1.1:80" in text and "10.0.1.2:80" not in text


def test_nfacct_flag_and_localhost_nodeports_off():
    services, slices = two_services()
    text = render("iptables", services, slices, node(),
                  {"clusterCIDR": "10.0.0.0/8", "iptables": {"localhostNodePorts": False}})
    assert "nfacct" not in text
    assert "block incoming localnet connections" not in text
    assert "--dst-type LOCAL ! -d 127.0.0.0/8 -j KUBE-NODEPORTS" in text
