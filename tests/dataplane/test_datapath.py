"""NodeDatapath: concrete connections, seeded randomness, conntrack, affinity, counters."""
import random
import re
from collections import Counter
from pathlib import Path

import pytest

from labsupport.dataplane import samples
from labsupport.dataplane.model import NodeDatapath, trace_packet
from labsupport.errors import UnknownProxyMode

DATA = Path(__file__).parent / "data"
GOLDENS = Path(__file__).resolve().parents[1] / "goldens"
NODE = ["192.168.0.2"]
MODES = [("iptables", samples.iptables_rules), ("nftables", samples.nftables_rules)]


@pytest.mark.parametrize("mode,make", MODES)
def test_uniform_spread_at_fixed_seed(mode, make):
    dp = NodeDatapath(mode, make(5, 4), NODE, random.Random(7))
    vip = samples.service_ip(2)
    n = 8000
    counts = Counter(dp.connect("10.0.0.2", 1024 + k, vip, 80).endpoint for k in range(n))
    assert set(counts) == {f"{samples.endpoint_ip(2, j)}:8080" for j in range(4)}
    expected = n / 4
    chi2 = sum((c - expected) ** 2 / expected for c in counts.values())
    assert chi2 < 16.27          # chi-square, 3 degrees of freedom, p = 0.001


@pytest.mark.parametrize("mode,make", MODES)
def test_same_seed_same_choices(mode, make):
    rules = make(3, 5)
    runs = []
    for _ in range(2):
        dp = NodeDatapath(mode, rules, NODE, random.Random(42))
        runs.append([dp.connect("10.0.0.2", 2000 + k, samples.service_ip(1), 80).endpoint for k in range(50)])
    assert runs[0] == runs[1]


@pytest.mark.parametrize("mode,make", MODES)
def test_conntrack_keeps_connection_on_its_pod_after_load(mode, make):
    dp = NodeDatapath(mode, make(3, 3), NODE, random.Random(1))
    vip = samples.service_ip(0)
    first = dp.connect("10.0.0.2", 40000, vip, 80)
    assert not first.from_conntrack and first.endpoint
    # kube-proxy rewrites the rules: the service now has no endpoints at all
    dp.load(mode, make(3, 3, no_endpoints=3))
    again = dp.connect("10.0.0.2", 40000, vip, 80, now=5)
    assert again.from_conntrack and again.endpoint == first.endpoint and again.verdict == "ACCEPT"
    assert dp.connect("10.0.0.2", 40001, vip, 80, now=5).verdict == "REJECT"
    assert dp.close("10.0.0.2", 40000, vip, 80)
    assert dp.connect("10.0.0.2", 40000, vip, 80, now=6).verdict == "REJECT"


def test_conntrack_entry_expires():
    dp = NodeDatapath("iptables", samples.iptables_rules(1, 3), NODE, random.Random(1))
    vip = samples.service_ip(0)
    # the sample rules serve tcp only: in iptables a udp flow passes untouched, still tracked (30 s timeout)
    assert dp.connect("10.0.0.2", 40000, vip, 80, protocol="udp", now=0).verdict == "ACCEPT"
    assert len(dp.conntrack_entries(now=10)) == 1
    assert dp.conntrack_entries(now=31) == []
    assert dp.expire(31) == 1


def test_a_closed_tcp_connection_stays_in_time_wait_for_120_seconds():
    dp = NodeDatapath("iptables", (GOLDENS / "iptables-two-services.txt").read_text(), NODE, random.Random(1))
    dp.connect("192.168.0.2", 51000, "172.30.0.41", 80, now=0)
    assert dp.close("192.168.0.2", 51000, "172.30.0.41", 80, now=5)
    [line] = dp.conntrack_entries(now=6)
    assert re.fullmatch(
        r"tcp +6 119 TIME_WAIT src=192\.168\.0\.2 dst=172\.30\.0\.41 sport=51000 dport=80 "
        r"src=10\.0\.1\.1 dst=192\.168\.0\.2 sport=80 dport=51000 \[ASSURED\] mark=0 use=1", line)
    assert not dp.close("192.168.0.2", 51000, "172.30.0.41", 80, now=6)
    assert len(dp.conntrack_entries(now=124)) == 1
    assert dp.conntrack_entries(now=125) == [] and dp.expire(125) == 1


def test_an_unanswered_connection_stays_syn_sent_and_a_refused_one_close():
    dp = NodeDatapath("iptables", (GOLDENS / "iptables-two-services.txt").read_text(), NODE, random.Random(1))
    dp.connect("192.168.0.2", 51000, "172.30.0.41", 80, now=0)
    dp.close("192.168.0.2", 51000, "172.30.0.41", 80, now=10, state="SYN_SENT")
    [line] = dp.conntrack_entries(now=10)
    assert re.fullmatch(
        r"tcp +6 120 SYN_SENT src=192\.168\.0\.2 dst=172\.30\.0\.41 sport=51000 dport=80 \[UNREPLIED\] "
        r"src=10\.0\.1\.1 dst=192\.168\.0\.2 sport=80 dport=51000 mark=0 use=1", line)
    dp.connect("192.168.0.2", 51001, "172.30.0.41", 80, now=0)
    dp.close("192.168.0.2", 51001, "172.30.0.41", 80, now=0, state="CLOSE")
    assert [line.split()[2:4] for line in dp.conntrack_entries(now=9) if "sport=51001" in line] == [["1", "CLOSE"]]
    assert not [line for line in dp.conntrack_entries(now=10) if "sport=51001" in line]


def test_a_new_connection_on_a_tuple_in_time_wait_walks_the_rules_again():
    dp = NodeDatapath("iptables", samples.iptables_rules(1, 3), NODE, random.Random(1))
    vip = samples.service_ip(0)
    dp.connect("10.0.0.2", 40000, vip, 80, now=0)
    dp.close("10.0.0.2", 40000, vip, 80, now=1)
    again = dp.connect("10.0.0.2", 40000, vip, 80, now=2)
    assert not again.from_conntrack and again.endpoint
    [line] = dp.conntrack_entries(now=2)
    assert " ESTABLISHED " in line


def test_conntrack_lines_look_like_conntrack_L():
    dp = NodeDatapath("iptables", (GOLDENS / "iptables-two-services.txt").read_text(), NODE, random.Random(1))
    dp.connect("192.168.0.2", 51000, "172.30.0.41", 80, now=0)
    [line] = dp.conntrack_entries(now=1)
    assert re.fullmatch(
        r"tcp +6 86399 ESTABLISHED src=192\.168\.0\.2 dst=172\.30\.0\.41 sport=51000 dport=80 "
        r"src=10\.0\.1\.1 dst=192\.168\.0\.2 sport=80 dport=51000 \[ASSURED\] mark=0 use=1", line)


def test_masquerade_rewrites_and_client_ip():
    dp = NodeDatapath("iptables", (GOLDENS / "iptables-two-services.txt").read_text(), NODE, random.Random(1))
    pod = dp.connect("10.0.0.2", 50000, "172.30.0.41", 80)
    assert pod.rewrites == ["DNAT 172.30.0.41:80 -> 10.0.1.1:80"] and not pod.masquerade
    assert pod.client_ip == "10.0.0.2:50000"
    hair = dp.connect("10.0.1.1", 50000, "172.30.0.41", 80)
    assert hair.masquerade and hair.rewrites[-1] == "SNAT 10.0.1.1:50000 -> 192.168.0.2:50000"
    assert hair.client_ip == "192.168.0.2:50000"


def test_hits_and_counters():
    dp = NodeDatapath("nftables", (GOLDENS / "nftables-two-services.txt").read_text(), NODE, random.Random(1))
    c = dp.connect("10.0.0.2", 50000, "172.30.0.41", 80)
    assert [h.action for h in c.hits if h.chain == "services"] == ["goto service-ULMVA6XW-ns1/svc1/tcp/p80"]
    assert any(h.action == "DNAT to 10.0.1.1:80" for h in c.hits)
    dp.connect("10.0.0.2", 50001, "172.30.0.41", 80)
    counts = {(chain, text): n for _, chain, text, n in dp.counters()}
    assert counts[("endpoint-5TPGNJF2-ns1/svc1/tcp/p80__10.0.1.1/80", "meta l4proto tcp dnat to 10.0.1.1:80")] == 2
    assert counts[("endpoint-7RVP4LUQ-ns2/svc2/tcp/p8080__10.0.2.1/8080",
                   "meta l4proto tcp dnat to 10.0.2.1:8080")] == 0


@pytest.mark.parametrize("mode,make", MODES)
def test_affinity_until_timeout(mode, make):
    rules = make(2, 5, affinity=True)
    dp = NodeDatapath(mode, rules, NODE, random.Random(3))
    vip = samples.service_ip(1)
    first = dp.connect("10.0.0.2", 30000, vip, 80, now=0).endpoint
    same = {dp.connect("10.0.0.2", 30001 + k, vip, 80, now=100 * k).endpoint for k in range(30)}
    assert same == {first}
    # another client is spread independently
    others = {dp.connect("10.0.0.3", 31000 + k, vip, 80, now=0).endpoint for k in range(1)}
    assert len(others) == 1
    # after the affinity timeout (10800 s idle), the client is balanced afresh
    later = {dp.connect("10.0.0.2", 32000 + k, vip, 80, now=3000 + 10801 + k * 20000).endpoint for k in range(40)}
    assert len(later) > 1


def test_affinity_from_list_ruleset_form():
    dp = NodeDatapath("nftables", (DATA / "nft-list-ruleset.txt").read_text(), NODE, random.Random(3))
    c = dp.connect("10.0.0.5", 1000, "172.30.0.42", 8080, now=0)
    again = dp.connect("10.0.0.5", 1001, "172.30.0.42", 8080, now=60)
    assert any(h.rule.startswith("ip saddr @affinity-") for h in again.hits)
    assert not any(h.rule.startswith("ip saddr @affinity-") for h in c.hits)


def test_unknown_mode():
    with pytest.raises(UnknownProxyMode):
        NodeDatapath("userspace", "", NODE)
    with pytest.raises(UnknownProxyMode):
        trace_packet("userspace", "", NODE, "10.0.0.1", "10.0.0.2", 80)
