"""trace_packet over nftables: the `nft -f` golden, `nft list ruleset` output, incremental updates."""
from pathlib import Path

import pytest

from labsupport.dataplane import samples
from labsupport.dataplane.model import NodeDatapath, trace_packet
from labsupport.dataplane.netfilter import RulesSyntaxError
from labsupport.dataplane.nft_compiler import compile_ruleset
from labsupport.dataplane.nft_lexer import parse_duration
from labsupport.dataplane.nft_ruleset import NftRuleset
from labsupport.errors import LabError

DATA = Path(__file__).parent / "data"
GOLDENS = Path(__file__).resolve().parents[1] / "goldens"
NODE = ["192.168.0.2"]


@pytest.fixture(scope="module")
def golden():
    return (GOLDENS / "nftables-two-services.txt").read_text()


@pytest.fixture(scope="module")
def listed():
    return (DATA / "nft-list-ruleset.txt").read_text()


@pytest.mark.parametrize("src,masq", [("10.0.0.2", False), ("192.168.0.2", True), ("10.0.1.1", True)])
def test_golden_examples(golden, src, masq):
    t = trace_packet("nftables", golden, NODE, src, "172.30.0.41", 80)
    assert (t.endpoints, t.masquerade, t.verdict) == (["10.0.1.1:80"], masq, "ACCEPT")


def test_unserved_port_rejected_unallocated_ip_dropped(golden):
    assert trace_packet("nftables", golden, NODE, "10.0.0.2", "172.30.0.41", 81).verdict == "REJECT"
    assert trace_packet("nftables", golden, NODE, "192.168.0.2", "172.30.0.41", 81).verdict == "REJECT"
    assert trace_packet("nftables", golden, NODE, "10.0.0.2", "172.30.0.99", 80).verdict == "DROP"
    outside = trace_packet("nftables", golden, NODE, "10.0.0.2", "8.8.8.8", 80)
    assert (outside.endpoints, outside.verdict) == ([], "ACCEPT")


def test_o1_lookup(golden):
    big = samples.nftables_rules(1000, 3)
    a = trace_packet("nftables", samples.nftables_rules(10, 3), NODE, "10.0.0.2", samples.service_ip(9), 80)
    b = trace_packet("nftables", big, NODE, "10.0.0.2", samples.service_ip(999), 80)
    assert a.rules_evaluated == b.rules_evaluated < 30


def test_numgen_branches_all_explored():
    rules = samples.nftables_rules(3, 7)
    t = trace_packet("nftables", rules, NODE, "10.0.0.2", samples.service_ip(2), 80)
    assert t.endpoints == sorted(f"{samples.endpoint_ip(2, j)}:8080" for j in range(7))


@pytest.mark.parametrize("release", ["v1.35", "v1.37"])
@pytest.mark.parametrize("affinity", [False, True])
def test_samples_of_both_layouts_reach_every_endpoint_and_masquerade_outside_traffic(release, affinity):
    rules = samples.nftables_rules(3, 4, affinity=affinity, release=release)
    assert ("mark-for-masquerade" in rules) is (release == "v1.35")
    assert (" map { 0 : " in rules) is (release == "v1.37" and not affinity)
    wanted = sorted(f"{samples.endpoint_ip(1, j)}:8080" for j in range(4))
    from_pod = trace_packet("nftables", rules, NODE, "10.0.0.2", samples.service_ip(1), 80)
    from_node = trace_packet("nftables", rules, NODE, "192.168.0.2", samples.service_ip(1), 80)
    assert (from_pod.endpoints, from_pod.masquerade) == (wanted, False)
    assert (from_node.endpoints, from_node.masquerade) == (wanted, True)


def test_no_endpoints_rejected():
    rules = samples.nftables_rules(3, 2, no_endpoints=1)
    assert trace_packet("nftables", rules, NODE, "10.0.0.2", samples.service_ip(2), 80).verdict == "REJECT"


def test_list_ruleset_form(listed):
    t = trace_packet("nftables", listed, NODE, "10.0.0.2", "172.30.0.41", 80)
    assert (t.endpoints, t.masquerade, t.verdict) == (["10.0.1.1:80", "10.0.1.2:80"], False, "ACCEPT")
    t = trace_packet("nftables", listed, NODE, "192.168.0.2", "172.30.0.41", 80)
    assert t.masquerade
    assert trace_packet("nftables", listed, NODE, "10.0.0.2", "172.30.0.41", 81).verdict == "REJECT"
    assert trace_packet("nftables", listed, NODE, "10.0.0.2", "172.30.0.77", 80).verdict == "DROP"
    assert trace_packet("nftables", listed, NODE, "10.0.0.2", "172.30.0.43", 80).verdict == "REJECT"
    nodeport = trace_packet("nftables", listed, NODE, "203.0.113.9", "192.168.0.2", 3001)
    assert nodeport.endpoints == ["10.0.1.1:80", "10.0.1.2:80"] and nodeport.masquerade


def test_list_ruleset_structure(listed):
    rs = NftRuleset.parse(listed)
    table = rs.tables[("ip", "kube-proxy")]
    assert table.chains["nat-prerouting"].hook == "prerouting"
    assert table.chains["nat-prerouting"].priority == -100
    assert table.chains["filter-prerouting-pre-dnat"].priority == -110
    assert table.sets["service-ips"].is_map and len(table.sets["service-ips"].elements) == 2
    aff = table.sets["affinity-XGB6Q4QC-ns2/svc2/tcp/p8080__10.0.2.1/8080"]
    assert aff.timeout == 10800 and "dynamic" in aff.flags


def test_incremental_update_on_loaded_state(golden):
    rs = NftRuleset.parse(golden)
    rs.apply("""
add chain ip kube-proxy endpoint-AAAAAAAA-ns1/svc1/tcp/p80__10.0.1.9/80
add rule ip kube-proxy endpoint-AAAAAAAA-ns1/svc1/tcp/p80__10.0.1.9/80 ip saddr 10.0.1.9 jump mark-for-masquerade
add rule ip kube-proxy endpoint-AAAAAAAA-ns1/svc1/tcp/p80__10.0.1.9/80 meta l4proto tcp dnat to 10.0.1.9:80
flush chain ip kube-proxy service-ULMVA6XW-ns1/svc1/tcp/p80
add rule ip kube-proxy service-ULMVA6XW-ns1/svc1/tcp/p80 ip daddr 172.30.0.41 ip saddr != 10.0.0.0/8 jump mark-for-masquerade
add rule ip kube-proxy service-ULMVA6XW-ns1/svc1/tcp/p80 numgen random mod 1 vmap { 0 : goto endpoint-AAAAAAAA-ns1/svc1/tcp/p80__10.0.1.9/80 }
delete chain ip kube-proxy endpoint-5TPGNJF2-ns1/svc1/tcp/p80__10.0.1.1/80
delete element ip kube-proxy service-ips { 172.30.0.42 . tcp . 8080 }
add element ip kube-proxy no-endpoint-services { 172.30.0.42 . tcp . 8080 : goto reject-chain }
""")
    from labsupport.dataplane.model import explore, _local_set
    program = compile_ruleset(rs)
    local = _local_set(NODE)
    assert explore(program, local, "10.0.0.2", "172.30.0.41", 80).endpoints == ["10.0.1.9:80"]
    assert explore(program, local, "10.0.0.2", "172.30.0.42", 8080).verdict == "REJECT"


def test_datapath_apply_keeps_connections(golden):
    dp = NodeDatapath("nftables", golden, NODE)
    first = dp.connect("10.0.0.2", 5000, "172.30.0.41", 80)
    dp.apply("delete element ip kube-proxy service-ips { 172.30.0.41 . tcp . 80 }\n")
    again = dp.connect("10.0.0.2", 5000, "172.30.0.41", 80)
    assert again.from_conntrack and again.endpoint == first.endpoint == "10.0.1.1:80"
    fresh = dp.connect("10.0.0.2", 5001, "172.30.0.41", 80)
    assert fresh.verdict == "REJECT" and fresh.endpoint is None


def test_durations():
    assert parse_duration("10800s") == parse_duration("3h") == 10800
    assert parse_duration("1d2h3m4s") == 93784


@pytest.mark.parametrize("text,lineno,fragment", [
    ("add table ip kube-proxy\nadd chain ip kube-proxy x\nadd rule ip kube-proxy x ip daddr 1.2.3.4 frobnicate\n",
     3, "frobnicate"),
    ("add table ip kube-proxy\nadd rule ip kube-proxy nowhere accept\n", 2, "nowhere"),
    ("hello world\n", 1, "hello"),
    ("table ip t {\n\tchain c {\n\t\tjump missing\n\t}\n}\n", 3, "missing"),
    ("add table ip t\nadd set ip t s { type ipv4_addr ; }\nadd element ip t s { 10.0.0.999 }\n", 3, "10.0.0.999"),
])
def test_garbage_names_line_and_text(text, lineno, fragment):
    with pytest.raises(RulesSyntaxError) as err:
        compile_ruleset(NftRuleset.parse(text))
    assert isinstance(err.value, LabError)
    assert err.value.lineno == lineno
    assert f"line {lineno}" in str(err.value) and fragment in str(err.value)
