"""trace_packet over iptables-save dumps: upstream's golden, verdicts, branches, parsing."""
from pathlib import Path

import pytest

from labsupport.dataplane import samples
from labsupport.dataplane.iptables_parse import parse_iptables, split_words
from labsupport.dataplane.model import trace_packet
from labsupport.dataplane.netfilter import RulesSyntaxError
from labsupport.errors import LabError

GOLDEN = Path(__file__).resolve().parents[1] / "goldens" / "iptables-two-services.txt"
NODE = ["192.168.0.2"]


@pytest.fixture(scope="module")
def golden():
    return GOLDEN.read_text()


def test_pod_to_cluster_ip_unmasqueraded(golden):
    t = trace_packet("iptables", golden, NODE, "10.0.0.2", "172.30.0.41", 80)
    assert (t.endpoints, t.masquerade, t.verdict) == (["10.0.1.1:80"], False, "ACCEPT")


def test_node_to_cluster_ip_masqueraded(golden):
    t = trace_packet("iptables", golden, NODE, "192.168.0.2", "172.30.0.41", 80)
    assert (t.endpoints, t.masquerade, t.verdict) == (["10.0.1.1:80"], True, "ACCEPT")


def test_endpoint_hairpins_to_itself_masqueraded(golden):
    t = trace_packet("iptables", golden, NODE, "10.0.1.1", "172.30.0.41", 80)
    assert (t.endpoints, t.masquerade, t.verdict) == (["10.0.1.1:80"], True, "ACCEPT")


def test_second_service(golden):
    t = trace_packet("iptables", golden, NODE, "10.0.0.2", "172.30.0.42", 8080)
    assert t.endpoints == ["10.0.2.1:8080"]


@pytest.mark.parametrize("dst,port", [("172.30.0.41", 81), ("172.30.0.99", 80), ("8.8.8.8", 443)])
def test_unserved_port_and_unallocated_ip_pass_untouched(golden, dst, port):
    t = trace_packet("iptables", golden, NODE, "10.0.0.2", dst, port)
    assert (t.endpoints, t.masquerade, t.verdict) == ([], False, "ACCEPT")


def test_hits_tell_the_story(golden):
    t = trace_packet("iptables", golden, NODE, "10.0.0.2", "172.30.0.41", 80)
    actions = [(h.chain, h.action) for h in t.paths[0].hits]
    assert ("KUBE-SERVICES", "jump KUBE-SVC-XPGD46QRK7WJZT7O") in actions
    assert ("KUBE-SEP-SNQ3ZNILQDEJNDQO", "DNAT to 10.0.1.1:80") in actions
    assert actions[0] == ("PREROUTING", "jump KUBE-SERVICES")
    rule = next(h.rule for h in t.paths[0].hits if h.chain == "KUBE-SERVICES")
    assert '--comment "ns1/svc1:p80 cluster IP"' in rule


def test_service_without_endpoints_is_rejected():
    rules = samples.iptables_rules(3, 2, no_endpoints=1)
    t = trace_packet("iptables", rules, NODE, "10.0.0.2", samples.service_ip(2), 80)
    assert (t.endpoints, t.verdict) == ([], "REJECT")


def test_every_statistic_branch_is_explored():
    rules = samples.iptables_rules(4, 10)
    t = trace_packet("iptables", rules, NODE, "10.0.0.2", samples.service_ip(3), 80)
    assert t.endpoints == sorted(f"{samples.endpoint_ip(3, j)}:8080" for j in range(10))
    assert len(t.paths) == 10
    assert "0.1000000000" in rules and "0.5000000000" in rules


def test_recent_rcheck_does_not_match_a_first_seen_client():
    rules = samples.iptables_rules(2, 3, affinity=True)
    t = trace_packet("iptables", rules, NODE, "10.0.0.2", samples.service_ip(1), 80)
    assert len(t.endpoints) == 3
    assert not any("--rcheck" in h.rule for p in t.paths for h in p.hits)


def test_builtin_chains_present_are_not_doubled():
    rules = """*nat
:PREROUTING ACCEPT [0:0]
:OUTPUT ACCEPT [0:0]
:POSTROUTING ACCEPT [0:0]
:KUBE-SERVICES - [0:0]
:KUBE-SEP-A - [0:0]
-A PREROUTING -m comment --comment "kubernetes service portals" -j KUBE-SERVICES
-A KUBE-SERVICES -d 10.96.0.7/32 -p tcp -m tcp --dport 80 -j KUBE-SEP-A
-A KUBE-SEP-A -p tcp -m tcp -j DNAT --to-destination 10.244.1.7:8080
COMMIT
"""
    t = trace_packet("iptables", rules, NODE, "10.244.2.5", "10.96.0.7", 80)
    assert t.endpoints == ["10.244.1.7:8080"]
    assert sum(1 for h in t.paths[0].hits if h.chain == "PREROUTING") == 1


def test_drop_policy_and_marks():
    rules = """*filter
:INPUT ACCEPT [0:0]
:FORWARD DROP [0:0]
:OUTPUT ACCEPT [0:0]
:MARKS - [0:0]
-A FORWARD -j MARKS
-A FORWARD -m mark --mark 0x1/0x1 -p tcp -m multiport --dports 22,80:90 -j ACCEPT
-A MARKS -s 10.0.0.0/8 -j MARK --set-xmark 0x1/0xffffffff
COMMIT
"""
    assert trace_packet("iptables", rules, NODE, "10.0.0.2", "10.1.1.1", 85).verdict == "ACCEPT"
    assert trace_packet("iptables", rules, NODE, "10.0.0.2", "10.1.1.1", 91).verdict == "DROP"
    assert trace_packet("iptables", rules, NODE, "11.0.0.2", "10.1.1.1", 85).verdict == "DROP"


def test_localnet_firewall_drops_remote_to_loopback(golden):
    t = trace_packet("iptables", golden, NODE, "10.0.0.2", "127.0.0.1", 80)
    assert t.verdict == "DROP"


def test_quoted_comment_with_escaped_quote():
    assert split_words(r'-A X -m comment --comment "a \"b\" c" -j ACCEPT') == [
        "-A", "X", "-m", "comment", "--comment", 'a "b" c', "-j", "ACCEPT"]


@pytest.mark.parametrize("text,lineno,fragment", [
    ("*nat\n:KUBE-SERVICES - [0:0]\n-A KUBE-SERVICES --bogus 1 -j ACCEPT\nCOMMIT\n", 3, "--bogus"),
    ("-A KUBE-SERVICES -j ACCEPT\n", 1, "outside any table"),
    ("*nat\n:A - [0:0]\n-A A -j KUBE-NOWHERE\nCOMMIT\n", 3, "KUBE-NOWHERE"),
    ("*nat\nthis is not iptables\n", 2, "this is not iptables"),
    ("*nat\n:A - [0:0]\n-A A -j DNAT --to-destination 10.0.0.300:80\nCOMMIT\n", 3, "10.0.0.300"),
])
def test_garbage_names_line_and_text(text, lineno, fragment):
    with pytest.raises(RulesSyntaxError) as err:
        parse_iptables(text)
    assert isinstance(err.value, LabError)
    assert err.value.lineno == lineno
    assert f"line {lineno}" in str(err.value) and fragment in str(err.value)


def test_rules_evaluated_grows_with_services():
    small = trace_packet("iptables", samples.iptables_rules(100, 2), NODE, "10.0.0.2", samples.service_ip(99), 80)
    large = trace_packet("iptables", samples.iptables_rules(1000, 2), NODE, "10.0.0.2", samples.service_ip(999), 80)
    assert large.rules_evaluated > 900 > small.rules_evaluated > 100
