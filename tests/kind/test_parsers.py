"""Parsers for what real tools print on kind nodes and in pods: nslookup, curl, iptables-save -c, nft, ipvsadm,
conntrack — read into the objects the sim backend returns."""
from __future__ import annotations

from pathlib import Path

import pytest

from labsupport.results import NslookupAnswer
from labsupport.dataplane.ipvs_parse import parse_ipvs_bundle, parse_ipvsadm
from labsupport.dataplane.model import trace_packet
from labsupport import tool_output
from labsupport.dataplane.nft_compiler import compile_ruleset
from labsupport.dataplane.nft_ruleset import NftRuleset
from labsupport.kind import parse

DATA = Path(__file__).parent / "data"

BIND_OK = """Server:\t\t10.96.0.10
Address:\t10.96.0.10#53

Name:\tdb.default.svc.cluster.local
Address: 10.244.1.7
Name:\tdb.default.svc.cluster.local
Address: 10.244.2.3
Name:\tdb.default.svc.cluster.local
Address: 10.244.3.5

"""
BIND_NX = """Server:\t\t10.96.0.10
Address:\t10.96.0.10#53

** server can't find nope: NXDOMAIN

command terminated with exit code 1
"""
BIND_TIMEOUT = """;; connection timed out; no servers could be reached

command terminated with exit code 1
"""
BIND_CNAME = """Server:\t\t10.96.0.10
Address:\t10.96.0.10#53

ext.default.svc.cluster.local\tcanonical name = example.com.
Name:\texample.com
Address: 93.184.215.14
Name:\texample.com
Address: 2606:2800:21f:cb07:6820:80da:af6b:8b2c

"""
BUSYBOX_OK = """Server:    10.96.0.10
Address 1: 10.96.0.10 kube-dns.kube-system.svc.cluster.local

Name:      web
Address 1: 10.96.12.7 web.default.svc.cluster.local
"""
BIND_AAAA_NX = """Server:\t\t10.96.0.10
Address:\t10.96.0.10#53

Name:\tweb.default.svc.cluster.local
Address: 10.96.12.7
** server can't find web.default.svc.cluster.local: NXDOMAIN
"""


def test_nslookup_headless_three_pods():
    answer = tool_output.parse_nslookup(BIND_OK, "db")
    assert isinstance(answer, NslookupAnswer)
    assert answer.addresses == ["10.244.1.7", "10.244.2.3", "10.244.3.5"]
    assert answer.rcode == "NOERROR"
    assert answer.name == "db.default.svc.cluster.local"
    assert answer.text == BIND_OK.rstrip("\n") + "\n"
    assert "10.96.0.10" not in answer.addresses


def test_nslookup_nxdomain_drops_kubectls_exit_line():
    answer = tool_output.parse_nslookup(BIND_NX, "nope")
    assert (answer.addresses, answer.rcode, answer.name) == ([], "NXDOMAIN", "nope")
    assert answer.text.endswith("** server can't find nope: NXDOMAIN\n")
    assert "command terminated" not in answer.text


def test_nslookup_no_server():
    answer = tool_output.parse_nslookup(BIND_TIMEOUT, "web")
    assert (answer.addresses, answer.rcode, answer.name) == ([], "SERVFAIL", "web")


def test_nslookup_cname_and_ipv6():
    answer = tool_output.parse_nslookup(BIND_CNAME, "ext")
    assert answer.addresses == ["93.184.215.14", "2606:2800:21f:cb07:6820:80da:af6b:8b2c"]
    assert answer.name == "example.com"


def test_nslookup_busybox_format():
    answer = tool_output.parse_nslookup(BUSYBOX_OK, "web")
    assert answer.addresses == ["10.96.12.7"] and answer.rcode == "NOERROR"


def test_nslookup_a_found_aaaa_missing_stays_noerror():
    answer = tool_output.parse_nslookup(BIND_AAAA_NX, "web")
    assert answer.addresses == ["10.96.12.7"] and answer.rcode == "NOERROR"


def test_nslookup_same_text_as_sim(lab):
    lab.apply("""
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  serviceName: db
  replicas: 2
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec:
      containers: [{name: nginx, image: nginx:1.27}]
---
apiVersion: v1
kind: Service
metadata: {name: db}
spec:
  clusterIP: None
  selector: {app: db}
  ports: [{port: 80}]
""")
    lab.wait(lambda l: len(l.nslookup("db").addresses) == 2)
    sim = lab.nslookup("db")
    again = tool_output.parse_nslookup(sim.text, "db")
    assert (again.addresses, again.rcode, again.name, again.text) == (sim.addresses, sim.rcode, sim.name, sim.text)
    nx = lab.nslookup("nope")
    again = tool_output.parse_nslookup(nx.text, "nope")
    assert (again.addresses, again.rcode, again.text) == (nx.addresses, nx.rcode, nx.text)


# --- curl ---------------------------------------------------------------------------------------------------

def test_curl_argv_and_output():
    argv = tool_output.curl_argv("http://web/hostname", timeout=5, headers={"X-Test": "1"})
    assert argv[:6] == ["curl", "-sS", "--connect-timeout", "5", "--max-time", "10"]
    assert argv[-1] == "http://web/hostname" and ["-H", "X-Test: 1"] == argv[-3:-1]
    out = tool_output.parse_curl("web-7d4b9c-x2x9p\n" + tool_output.CURL_MARK + " 200 10.96.12.7 80 10.244.1.4 56120\n")
    assert (out.status, out.body, out.remote_ip, out.remote_port, out.local_ip, out.local_port) == \
        (200, "web-7d4b9c-x2x9p", "10.96.12.7", 80, "10.244.1.4", 56120)
    assert out.error is None


def test_curl_refused_and_timeout():
    refused = tool_output.parse_curl(tool_output.CURL_MARK + " 000  0  0\n",
                               "curl: (7) Failed to connect to 10.96.12.7 port 80 after 1 ms: Couldn't connect to "
                               "server\n", 7)
    assert refused.status is None and refused.exit_code == 7 and refused.body == ""
    assert refused.error.startswith("curl: (7) Failed to connect to 10.96.12.7 port 80")
    timeout = tool_output.parse_curl(tool_output.CURL_MARK + " 000  0  0\n", "curl: (28) Connection timed out after 5001 ms\n",
                               28)
    assert timeout.status is None and timeout.error == "curl: (28) Connection timed out after 5001 ms"


def test_answering_pod_from_app_replies():
    echo = ("\n\nHostname: web-5f8c7-abcde\n\nPod Information:\n\t-no pod information available-\n\n"
            "Request Information:\n\tclient_address=172.18.0.3\n\tmethod=GET\n")
    assert parse.answering_pod(echo) == ("web-5f8c7-abcde", "172.18.0.3")
    assert parse.answering_pod("10.244.1.1:39012") == (None, "10.244.1.1")
    assert parse.answering_pod("web-5f8c7-abcde") == ("web-5f8c7-abcde", None)
    assert parse.answering_pod("<html><body>Welcome to nginx!</body></html>") == (None, None)


# --- iptables -----------------------------------------------------------------------------------------------

def test_iptables_save_c_counters_and_kube_proxy_part():
    text = (DATA / "iptables-save-c-kind-worker.txt").read_text()
    plain, counters = parse.strip_iptables_counters(text)
    assert "[" not in "".join(line for line in plain.splitlines() if line.startswith("-A"))
    svc = [c for c in counters if c.chain == "KUBE-SVC-LOLE4ISW44XBNF3G"]
    assert len(svc) == 4 and all(c.table == "nat" for c in svc)
    assert svc[0].rule.startswith("-A KUBE-SVC-LOLE4ISW44XBNF3G -m comment --comment \"default/web cluster IP\"")
    assert svc[0].bytes == svc[0].packets * 60
    ours = parse.kube_proxy_iptables(plain)
    for foreign in ("DOCKER_OUTPUT", "KIND-MASQ-AGENT", "*mangle", "CANARY", "# Generated"):
        assert foreign not in ours
    assert '-A PREROUTING -m comment --comment "kubernetes service portals" -j KUBE-SERVICES' in ours
    for rules in (plain, ours):
        verdict = trace_packet("iptables", rules, ["172.18.0.3"], "172.18.0.5", "172.18.0.3", 30080)
        assert verdict.endpoints == ["10.244.1.2:80", "10.244.2.3:80", "10.244.3.2:80"]
        assert verdict.masquerade and verdict.verdict == "ACCEPT"
        inside = trace_packet("iptables", rules, ["172.18.0.3"], "10.244.1.4", "10.111.76.235", 80)
        assert len(inside.endpoints) == 3 and not inside.masquerade


# --- nftables -----------------------------------------------------------------------------------------------

def test_nft_list_ruleset_from_a_kind_node():
    text = (DATA / "nft-list-ruleset-kind-worker.txt").read_text()
    ours = parse.nft_table(text)
    assert ours.startswith("table ip kube-proxy {") and ours.rstrip().endswith("}") and "kindnet" not in ours
    assert parse.nft_table(text, "inet", "kindnet-network-policies").count("chain ") == 1
    assert parse.nft_table(text, "ip6") == ""
    compile_ruleset(NftRuleset.parse(ours))
    (counter,) = parse.nft_counters(text)
    assert (counter.table, counter.chain, counter.packets, counter.bytes) == \
        ("inet kindnet-network-policies", "postrouting", 18234, 9921877)
    verdict = trace_packet("nftables", ours, ["172.18.0.3"], "172.18.0.5", "172.18.0.3", 30080)
    assert verdict.endpoints == ["10.244.1.2:80", "10.244.2.3:80", "10.244.3.2:80"] and verdict.masquerade


# --- ipvs ---------------------------------------------------------------------------------------------------

def test_proc_net_ip_vs_reads_as_ipvsadm():
    text = parse.proc_ip_vs_to_ipvsadm((DATA / "proc-net-ip_vs.txt").read_text())
    assert "TCP  10.111.76.235:80 rr" in text and "UDP  10.96.0.10:53 rr" in text
    services = parse_ipvsadm(text)
    web = [vs for vs in services.values() if vs.port == 80 and vs.proto == "tcp"][0]
    assert [r.address for r in web.reals] == ["10.244.1.2:80", "10.244.2.3:80", "10.244.3.2:80"]
    node_port = [vs for vs in services.values() if vs.port == 30080][0]
    assert [r.address for r in node_port.reals] == ["10.244.1.2:80"]


def test_ipvsadm_stats():
    counters = parse.ipvs_stats((DATA / "ipvsadm-Ln-stats.txt").read_text())
    web = [c for c in counters if c.chain == "TCP 10.111.76.235:80"]
    assert [(c.rule, c.packets, c.bytes) for c in web] == [
        ("TCP 10.111.76.235:80", 54, 3421), ("TCP 10.111.76.235:80 -> 10.244.1.2:80", 18, 1140),
        ("TCP 10.111.76.235:80 -> 10.244.2.3:80", 24, 1521), ("TCP 10.111.76.235:80 -> 10.244.3.2:80", 12, 760)]


def test_ipvs_bundle_parses_like_sims():
    ipvsadm = parse.proc_ip_vs_to_ipvsadm((DATA / "proc-net-ip_vs.txt").read_text())
    ipset = ("Name: KUBE-CLUSTER-IP\nType: hash:ip,port\nRevision: 6\nHeader: family inet hashsize 1024 maxelem "
             "65536 comment bucketsize 12 initval 0x7a3b6a1f\nSize in memory: 488\nReferences: 2\n"
             "Number of entries: 2\nMembers:\n10.111.76.235,tcp:80 comment \"default/web\"\n"
             "10.96.0.10,udp:53 comment \"kube-system/kube-dns:dns\"\n")
    iptables = ("*nat\n:PREROUTING ACCEPT [0:0]\n:KUBE-SERVICES - [0:0]\n:KUBE-MARK-MASQ - [0:0]\n"
                ":KUBE-POSTROUTING - [0:0]\n:DOCKER_OUTPUT - [0:0]\n"
                "-A PREROUTING -m comment --comment \"kubernetes service portals\" -j KUBE-SERVICES\n"
                "-A PREROUTING -d 172.18.0.1/32 -j DOCKER_OUTPUT\n"
                "-A KUBE-MARK-MASQ -j MARK --or-mark 0x4000\n"
                "-A KUBE-POSTROUTING -m mark ! --mark 0x4000/0x4000 -j RETURN\n"
                "-A KUBE-POSTROUTING -j MARK --xor-mark 0x4000\n"
                "-A KUBE-POSTROUTING -m comment --comment \"kubernetes service traffic requiring SNAT\" -j MASQUERADE\n"
                "-A KUBE-SERVICES -m comment --comment \"Kubernetes service cluster ip + port for masquerade "
                "purpose\" -m set --match-set KUBE-CLUSTER-IP dst,dst ! -s 10.244.0.0/16 -j KUBE-MARK-MASQ\n"
                "COMMIT\n")
    bundle = parse.ipvs_bundle(ipvsadm, "kube-ipvs0       DOWN           10.96.0.10/32 10.111.76.235/32", ipset,
                               iptables)
    assert bundle.startswith("# ipvsadm -Ln\n") and "DOCKER_OUTPUT" not in bundle
    parse_ipvs_bundle(bundle)
    verdict = trace_packet("ipvs", bundle, ["172.18.0.3"], "10.244.1.9", "10.111.76.235", 80)
    assert verdict.endpoints == ["10.244.1.2:80", "10.244.2.3:80", "10.244.3.2:80"]


# --- conntrack ----------------------------------------------------------------------------------------------

def test_conntrack_entries():
    text = (DATA / "conntrack-L.txt").read_text()
    records = tool_output.parse_conntrack(text)
    assert len(records) == 6
    nodeport = records[0]
    assert (nodeport.protocol, nodeport.timeout, nodeport.state) == ("tcp", 117, "TIME_WAIT")
    assert nodeport.dnat and nodeport.snat and nodeport.endpoint == "10.244.2.3:80"
    assert nodeport.seen_client == "172.18.0.3" and nodeport.flags == ["ASSURED"]
    in_cluster = records[1]
    assert in_cluster.dnat and not in_cluster.snat and in_cluster.seen_client == "10.244.1.4"
    dns = records[2]
    assert dns.state is None and dns.endpoint == "10.244.0.2:53"
    api = records[3]
    assert not api.dnat and not api.snat
    assert records[4].flags == ["UNREPLIED"] and not records[4].dnat
    assert records[5].protocol == "icmp" and records[5].original.sport is None
    assert tool_output.conntrack_lines(text) == text.splitlines()[:6]


def test_conntrack_extended_format():
    line = ("ipv4     2 tcp      6 431999 ESTABLISHED src=10.244.1.4 dst=10.111.76.235 sport=1 dport=80 "
            "src=10.244.3.2 dst=10.244.1.4 sport=80 dport=1 [ASSURED] mark=0 zone=0 use=2")
    record = tool_output.parse_conntrack_line(line)
    assert record.protocol == "tcp" and record.state == "ESTABLISHED" and record.endpoint == "10.244.3.2:80"


@pytest.mark.parametrize("line", ["", "conntrack v1.4.7 (conntrack-tools): 0 flow entries have been shown."])
def test_conntrack_noise(line):
    assert tool_output.parse_conntrack_line(line) is None


def test_a_command_repeated_in_one_shell_is_read_back_run_by_run():
    import subprocess
    boundary = "__b0__"
    command = ["sh", "-c", 'echo "run $$"; printf "no newline at the end"; echo oops >&2; exit 3']
    done = subprocess.run(parse.repeat_argv(command, 3, boundary), capture_output=True, text=True)
    runs = parse.repeated_runs(done.stdout, boundary)
    assert [(code, err) for code, _, err in runs] == [(3, "oops\n")] * 3
    assert all(out.startswith("run ") and out.endswith("\nno newline at the end") for _, out, _ in runs)
    assert len({out for _, out, _ in runs}) == 3, "each run is a process of its own"
    # cut off in the middle of the third run: the two whole runs, nothing of the third
    assert parse.repeated_runs(done.stdout[:done.stdout.rindex(boundary + " 3") + 12], boundary) == runs[:2]
    assert parse.repeated_runs("", boundary) == [] and parse.repeated_runs("sh: mktemp: not found\n", boundary) == []
