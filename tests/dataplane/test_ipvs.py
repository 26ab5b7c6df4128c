"""IPVS mode: sectioned text, schedulers (rr, wrr, lc, sh), persistence, ipsets."""
import random
from collections import Counter

import pytest

from labsupport.dataplane import samples
from labsupport.dataplane.ipset import parse_ipsets
from labsupport.dataplane.ipvs_parse import parse_ipvsadm, split_sections
from labsupport.dataplane.model import NodeDatapath, trace_packet
from labsupport.dataplane.netfilter import RulesSyntaxError

NODE = ["192.168.0.2"]
VIP = samples.service_ip(0)
EPS = [f"{samples.endpoint_ip(0, j)}:8080" for j in range(3)]


def test_trace_explores_every_real_server():
    rules = samples.ipvs_rules(2, 3)
    pod = trace_packet("ipvs", rules, NODE, "10.0.0.2", VIP, 80)
    assert (pod.endpoints, pod.masquerade, pod.verdict) == (sorted(EPS), False, "ACCEPT")
    node = trace_packet("ipvs", rules, NODE, "192.168.0.2", VIP, 80)
    assert node.masquerade and node.endpoints == sorted(EPS)
    assert pod.rules_evaluated < 15


def test_hairpin_via_loopback_set():
    t = trace_packet("ipvs", samples.ipvs_rules(1, 3), NODE, samples.endpoint_ip(0, 0), VIP, 80)
    assert t.masquerade and t.verdict == "ACCEPT"


def test_rr_cycles_in_order():
    dp = NodeDatapath("ipvs", samples.ipvs_rules(1, 3), NODE, random.Random(0))
    got = [dp.connect("10.0.0.2", 1000 + k, VIP, 80).endpoint for k in range(6)]
    assert got == sorted(EPS) * 2


def test_wrr_follows_weights():
    dp = NodeDatapath("ipvs", samples.ipvs_rules(1, 3, scheduler="wrr", weights=(3, 1, 2)), NODE)
    got = Counter(dp.connect("10.0.0.2", 1000 + k, VIP, 80).endpoint for k in range(60))
    assert [got[e] for e in sorted(EPS)] == [30, 10, 20]


def test_lc_prefers_least_active():
    dp = NodeDatapath("ipvs", samples.ipvs_rules(1, 3, scheduler="lc"), NODE)
    first = [dp.connect("10.0.0.2", 1000 + k, VIP, 80).endpoint for k in range(3)]
    assert sorted(first) == sorted(EPS)
    # closing one connection makes its server the least loaded
    dp.close("10.0.0.2", 1001, VIP, 80)
    assert dp.connect("10.0.0.2", 2000, VIP, 80).endpoint == first[1]


def test_sh_sticks_per_source_and_spreads_sources():
    dp = NodeDatapath("ipvs", samples.ipvs_rules(1, 3, scheduler="sh"), NODE)
    for src in ("10.0.0.2", "10.0.0.3", "10.9.8.7"):
        seen = {dp.connect(src, 1000 + k, VIP, 80).endpoint for k in range(5)}
        assert len(seen) == 1
    spread = {dp.connect(f"10.0.{k}.{k}", 999, VIP, 80).endpoint for k in range(1, 60)}
    assert spread == set(EPS)


def test_persistence_until_timeout():
    dp = NodeDatapath("ipvs", samples.ipvs_rules(1, 3, persistent=60), NODE)
    first = dp.connect("10.0.0.2", 1000, VIP, 80, now=0).endpoint
    same = {dp.connect("10.0.0.2", 1001 + k, VIP, 80, now=30 * k).endpoint for k in range(5)}
    assert same == {first}
    # idle longer than the persistence timeout: rr moves on
    after = dp.connect("10.0.0.2", 2000, VIP, 80, now=10_000).endpoint
    assert after != first


def test_no_real_servers_is_port_unreachable():
    rules = samples.ipvs_rules(1, 0)
    assert trace_packet("ipvs", rules, NODE, "10.0.0.2", VIP, 80).verdict == "REJECT"


def test_conntrack_keeps_ipvs_choice_after_load():
    dp = NodeDatapath("ipvs", samples.ipvs_rules(1, 3), NODE)
    first = dp.connect("10.0.0.2", 1000, VIP, 80)
    dp.load("ipvs", samples.ipvs_rules(1, 0))
    again = dp.connect("10.0.0.2", 1000, VIP, 80)
    assert again.from_conntrack and again.endpoint == first.endpoint


def test_parsers():
    vs = parse_ipvsadm("TCP  10.96.0.10:53 rr persistent 10800\n  -> 10.244.1.3:53  Masq  1  0  0\n")
    [v] = vs.values()
    assert (v.scheduler, v.persistent, v.reals[0].address) == ("rr", 10800.0, "10.244.1.3:53")
    sets = parse_ipsets("create KUBE-NODE-PORT-TCP bitmap:port range 0-65535\nadd KUBE-NODE-PORT-TCP 30001\n"
                        "create KUBE-CLUSTER-IP hash:ip,port family inet\nadd KUBE-CLUSTER-IP 10.96.0.1,tcp:443\n")
    assert set(sets) == {"KUBE-NODE-PORT-TCP", "KUBE-CLUSTER-IP"}
    sections = split_sections("# ipvsadm -Ln\nTCP  1.2.3.4:80 rr\n# iptables-save\n*nat\nCOMMIT\n")
    assert set(sections) == {"ipvsadm", "iptables-save"}


def test_bare_iptables_dump_is_accepted():
    text = "*nat\n:KUBE-SERVICES - [0:0]\nCOMMIT\n"
    assert trace_packet("ipvs", text, NODE, "10.0.0.2", VIP, 80).verdict == "ACCEPT"


@pytest.mark.parametrize("text,what,lineno", [
    ("# ipvsadm -Ln\nTCP  10.96.0.10:53 rr\n  -> garbage here\n", "ipvsadm", 3),
    ("# ipset list\nName: X\nType: hash:ip\nMembers:\nnot-an-ip\n", "ipset", 5),
])
def test_garbage(text, what, lineno):
    with pytest.raises(RulesSyntaxError) as err:
        trace_packet("ipvs", text, NODE, "10.0.0.2", VIP, 80)
    assert err.value.lineno == lineno and str(err.value).startswith(f"{what} line {lineno}")
