"""nft expressions beyond the kube-proxy basics, and the throughput the lab relies on."""
import random

import pytest

from labsupport.dataplane import samples
from labsupport.dataplane.model import NodeDatapath, trace_packet

NODE = ["192.168.0.2"]

RULES = """
table ip t {
	set web { type ipv4_addr . inet_proto . inet_service ; elements = { 10.1.1.1 . tcp . 80 } }
	map by-net { type ipv4_addr : verdict ; flags interval ; elements = { 10.9.0.0/16 : drop, 10.8.0.0/16 : goto nat-it } }
	chain pre {
		type nat hook prerouting priority dstnat; policy accept;
		ip daddr vmap @by-net
		tcp dport 8443 ip daddr 10.7.0.1 dnat to 10.7.0.2
		meta l4proto { tcp, udp } th dport 53 ip daddr 10.7.0.53 dnat to 10.7.0.54:5353
		fib daddr type local tcp dport 30080 counter packets 0 bytes 0 dnat to 10.7.0.80:80
	}
	chain nat-it {
		ip daddr . meta l4proto . th dport @web dnat to 10.1.1.2:8080
	}
	chain fwd {
		type filter hook forward priority filter; policy drop;
		ct state { established, related } accept
		ct state new ip saddr 10.0.0.0/8 accept
		ip daddr != 10.0.0.0/8 meta mark & 0x0000ff00 == 0x00000100 accept
	}
}
"""


@pytest.mark.parametrize("src,dst,port,proto,endpoints,verdict", [
    ("10.0.0.2", "10.9.1.1", 80, "tcp", [], "DROP"),
    ("10.0.0.2", "10.8.1.1", 80, "tcp", [], "ACCEPT"),
    ("11.0.0.2", "10.8.1.1", 80, "tcp", [], "DROP"),
    ("10.0.0.2", "10.7.0.1", 8443, "tcp", ["10.7.0.2:8443"], "ACCEPT"),
    ("10.0.0.2", "10.7.0.53", 53, "udp", ["10.7.0.54:5353"], "ACCEPT"),
    ("10.0.0.2", "10.7.0.53", 53, "sctp", [], "ACCEPT"),
    ("10.0.0.2", "192.168.0.2", 30080, "tcp", ["10.7.0.80:80"], "ACCEPT"),
    ("10.0.0.2", "192.168.0.3", 30080, "tcp", [], "ACCEPT"),
])
def test_expressions(src, dst, port, proto, endpoints, verdict):
    t = trace_packet("nftables", RULES, NODE, src, dst, port, proto)
    assert (t.endpoints, t.verdict) == (endpoints, verdict)


def test_concatenated_set_membership():
    rules = RULES.replace("10.8.0.0/16 : goto nat-it", "10.1.0.0/16 : goto nat-it")
    t = trace_packet("nftables", rules, NODE, "10.0.0.2", "10.1.1.1", 80)
    assert t.endpoints == ["10.1.1.2:8080"]
    assert trace_packet("nftables", rules, NODE, "10.0.0.2", "10.1.1.1", 81).endpoints == []


def test_datapath_trace_matches_trace_packet():
    rules = samples.nftables_rules(4, 3)
    dp = NodeDatapath("nftables", rules, NODE)
    assert dp.trace("10.0.0.2", samples.service_ip(3), 80).endpoints == \
        trace_packet("nftables", rules, NODE, "10.0.0.2", samples.service_ip(3), 80).endpoints


def test_nftables_lookup_cost_does_not_grow_with_services():
    # Throughput is measured by bench/bench_dataplane.py; here, the O(1) shape of the lookup.
    small = NodeDatapath("nftables", samples.nftables_rules(10, 3), NODE, random.Random(0))
    large = NodeDatapath("nftables", samples.nftables_rules(1000, 3), NODE, random.Random(0))
    a = small.connect("10.0.0.2", 1024, samples.service_ip(9), 80).rules_evaluated
    b = large.connect("10.0.0.2", 1024, samples.service_ip(999), 80).rules_evaluated
    assert a == b


def test_iptables_cost_is_linear_and_nftables_constant():
    costs = {}
    for mode, make in (("iptables", samples.iptables_rules), ("nftables", samples.nftables_rules),
                       ("ipvs", samples.ipvs_rules)):
        costs[mode] = [trace_packet(mode, make(s, 2), NODE, "10.0.0.2", samples.service_ip(s - 1), 80).rules_evaluated
                       for s in (100, 1000)]
    assert costs["iptables"][1] - costs["iptables"][0] == 900
    assert costs["nftables"][0] == costs["nftables"][1]
    assert costs["ipvs"][0] == costs["ipvs"][1]
