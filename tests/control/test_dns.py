"""The CoreDNS answer model, the search-path resolver and nslookup's text; CoreDNS handler cases rebuilt as data."""
from __future__ import annotations

import functools

import pytest

from labsupport.results import NslookupAnswer
from labsupport.control.dns import (DNSReply, answer, candidate_names, endpoint_hostname,
                                    nslookup, resolve)

SOA_PREFIX = "cluster.local.\t5\tIN\tSOA\tns.dns.cluster.local. hostmaster.cluster.local. "
SOA_SUFFIX = " 7200 1800 86400 5"


def svc(name, ns="testns", *, ip="10.0.0.1", ips=None, ports=(("http", 80, "TCP"),), kind="ClusterIP",
        external=None, rv=None):
    spec = {"type": kind, "ports": [{"name": n, "port": p, "protocol": proto} for n, p, proto in ports]}
    if kind == "ExternalName":
        spec["externalName"] = external
    else:
        spec["clusterIP"] = ip
        spec["clusterIPs"] = ips or ([ip] if ip != "None" else ["None"])
    meta = {"name": name, "namespace": ns}
    if rv:
        meta["resourceVersion"] = rv
    return {"apiVersion": "v1", "kind": "Service", "metadata": meta, "spec": spec}


def eps(service, endpoints, *, ns="testns", address_type="IPv4", ports=(("http", 80, "TCP"),), name=None):
    """A slice; endpoints are (ip, hostname, ready)."""
    return {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
            "metadata": {"name": name or f"{service}-{address_type.lower()}", "namespace": ns,
                         "labels": {"kubernetes.io/service-name": service}},
            "addressType": address_type,
            "ports": [{"name": n, "port": p, "protocol": proto} for n, p, proto in ports],
            "endpoints": [dict({"addresses": [ip], "conditions": {"ready": ready}},
                               **({"hostname": host} if host else {})) for ip, host, ready in endpoints]}


SERVICES = [
    svc("svc1"),
    svc("svcempty"),
    svc("svc6", ip="1234:abcd::1"),
    svc("hdls1", ip="None"),
    svc("hdlsprtls", ip="None", ports=()),
    svc("external", kind="ExternalName", external="ext.interwebs.test"),
    svc("external-to-service", kind="ExternalName", external="svc1.testns.svc.cluster.local"),
    svc("svc-dual-stack", ip="10.0.0.3", ips=["10.0.0.3", "10::3"]),
    svc("multiport", ip="10.0.0.9", ports=(("http", 80, "TCP"), ("dns", 53, "UDP"))),
    svc("kube-dns", "kube-system", ip="10.96.0.10", ports=(("dns", 53, "UDP"),)),
]
SLICES = [
    eps("svc1", [("172.0.0.1", None, True)]),
    eps("hdls1", [("172.0.0.2", None, True), ("172.0.0.3", None, True), ("172.0.0.4", "dup-name", True),
                  ("172.0.0.5", "dup-name", True), ("172.0.0.9", None, False)]),
    eps("hdls1", [("5678:abcd::1", None, True), ("5678:abcd::2", None, True)], address_type="IPv6"),
    eps("hdlsprtls", [("172.0.0.20", None, True)], ports=()),
]


def ask(qname, qtype, **kw):
    return answer(qname, qtype, SERVICES, SLICES, **kw)


def assert_soa_only(reply, rcode):
    assert reply.rcode == rcode
    assert reply.answer == []
    assert len(reply.authority) == 1
    assert reply.authority[0].startswith(SOA_PREFIX) and reply.authority[0].endswith(SOA_SUFFIX)


def A(owner, ip, rtype="A", ttl=5):
    return f"{owner}\t{ttl}\tIN\t{rtype}\t{ip}"


# -------------------------------------------------------------------------- CoreDNS handler cases, replayed

POSITIVE = [
    ("svc1.testns.svc.cluster.local.", "A", [A("svc1.testns.svc.cluster.local.", "10.0.0.1")], []),
    ("svcempty.testns.svc.cluster.local.", "A", [A("svcempty.testns.svc.cluster.local.", "10.0.0.1")], []),
    ("svc1.testns.svc.cluster.local.", "SRV",
     ["svc1.testns.svc.cluster.local.\t5\tIN\tSRV\t0 100 80 svc1.testns.svc.cluster.local."],
     [A("svc1.testns.svc.cluster.local.", "10.0.0.1")]),
    ("svc6.testns.svc.cluster.local.", "SRV",
     ["svc6.testns.svc.cluster.local.\t5\tIN\tSRV\t0 100 80 svc6.testns.svc.cluster.local."],
     [A("svc6.testns.svc.cluster.local.", "1234:abcd::1", "AAAA")]),
    ("_http._tcp.svc1.testns.svc.cluster.local.", "SRV",
     ["_http._tcp.svc1.testns.svc.cluster.local.\t5\tIN\tSRV\t0 100 80 svc1.testns.svc.cluster.local."],
     [A("svc1.testns.svc.cluster.local.", "10.0.0.1")]),
    ("_http._tcp.svcempty.testns.svc.cluster.local.", "SRV",
     ["_http._tcp.svcempty.testns.svc.cluster.local.\t5\tIN\tSRV\t0 100 80 svcempty.testns.svc.cluster.local."],
     [A("svcempty.testns.svc.cluster.local.", "10.0.0.1")]),
    ("hdls1.testns.svc.cluster.local.", "A",
     [A("hdls1.testns.svc.cluster.local.", ip) for ip in ("172.0.0.2", "172.0.0.3", "172.0.0.4", "172.0.0.5")],
     []),
    ("hdlsprtls.testns.svc.cluster.local.", "A", [A("hdlsprtls.testns.svc.cluster.local.", "172.0.0.20")], []),
    ("172-0-0-20.hdlsprtls.testns.svc.cluster.local.", "A",
     [A("172-0-0-20.hdlsprtls.testns.svc.cluster.local.", "172.0.0.20")], []),
    ("172-0-0-2.hdls1.testns.svc.cluster.local.", "A",
     [A("172-0-0-2.hdls1.testns.svc.cluster.local.", "172.0.0.2")], []),
    ("dup-name.hdls1.testns.svc.cluster.local.", "A",
     [A("dup-name.hdls1.testns.svc.cluster.local.", "172.0.0.4"),
      A("dup-name.hdls1.testns.svc.cluster.local.", "172.0.0.5")], []),
    ("_http._tcp.hdls1.testns.svc.cluster.local.", "SRV",
     [f"_http._tcp.hdls1.testns.svc.cluster.local.\t5\tIN\tSRV\t0 16 80 {t}.hdls1.testns.svc.cluster.local."
      for t in ("172-0-0-2", "172-0-0-3", "5678-abcd--1", "5678-abcd--2", "dup-name")],
     [A("172-0-0-2.hdls1.testns.svc.cluster.local.", "172.0.0.2"),
      A("172-0-0-3.hdls1.testns.svc.cluster.local.", "172.0.0.3"),
      A("5678-abcd--1.hdls1.testns.svc.cluster.local.", "5678:abcd::1", "AAAA"),
      A("5678-abcd--2.hdls1.testns.svc.cluster.local.", "5678:abcd::2", "AAAA"),
      A("dup-name.hdls1.testns.svc.cluster.local.", "172.0.0.4"),
      A("dup-name.hdls1.testns.svc.cluster.local.", "172.0.0.5")]),
    ("5678-abcd--2.hdls1.testns.svc.cluster.local", "AAAA",
     [A("5678-abcd--2.hdls1.testns.svc.cluster.local.", "5678:abcd::2", "AAAA")], []),
    ("external.testns.svc.cluster.local.", "CNAME",
     ["external.testns.svc.cluster.local.\t5\tIN\tCNAME\text.interwebs.test."], []),
    ("external-to-service.testns.svc.cluster.local", "A",
     ["external-to-service.testns.svc.cluster.local.\t5\tIN\tCNAME\tsvc1.testns.svc.cluster.local.",
      A("svc1.testns.svc.cluster.local.", "10.0.0.1")], []),
    ("dns-version.cluster.local.", "TXT", ['dns-version.cluster.local.\t28800\tIN\tTXT\t"1.1.0"'], []),
    ("svc6.testns.svc.cluster.local.", "AAAA", [A("svc6.testns.svc.cluster.local.", "1234:abcd::1", "AAAA")], []),
    ("hdls1.testns.svc.cluster.local.", "AAAA",
     [A("hdls1.testns.svc.cluster.local.", "5678:abcd::1", "AAAA"),
      A("hdls1.testns.svc.cluster.local.", "5678:abcd::2", "AAAA")], []),
    ("svc-dual-stack.testns.svc.cluster.local.", "A", [A("svc-dual-stack.testns.svc.cluster.local.", "10.0.0.3")],
     []),
    ("svc-dual-stack.testns.svc.cluster.local.", "AAAA",
     [A("svc-dual-stack.testns.svc.cluster.local.", "10::3", "AAAA")], []),
    ("svc-dual-stack.testns.svc.cluster.local.", "SRV",
     ["svc-dual-stack.testns.svc.cluster.local.\t5\tIN\tSRV\t0 50 80 svc-dual-stack.testns.svc.cluster.local."],
     [A("svc-dual-stack.testns.svc.cluster.local.", "10.0.0.3"),
      A("svc-dual-stack.testns.svc.cluster.local.", "10::3", "AAAA")]),
]


@pytest.mark.parametrize("qname,qtype,want_answer,want_extra", POSITIVE, ids=[f"{c[0]}{c[1]}" for c in POSITIVE])
def test_coredns_positive_cases(qname, qtype, want_answer, want_extra):
    reply = ask(qname, qtype)
    assert reply.rcode == "NOERROR"
    assert sorted(reply.answer) == sorted(want_answer)
    assert sorted(reply.additional) == sorted(want_extra)
    assert reply.authority == []


NODATA = [
    ("svc1.testns.svc.cluster.local.", "AAAA"),
    ("svc1.testns.svc.cluster.local.", "TXT"),
    ("svc1.testns.svc.cluster.local.", "SOA"),
    ("svc.cluster.local.", "A"),
    ("pod.cluster.local.", "A"),
    ("testns.svc.cluster.local.", "A"),
    ("svc.cluster.local.", "NS"),
    ("testns.svc.cluster.local.", "NS"),
    ("cluster.local.", "A"),
    ("hdlsprtls.testns.svc.cluster.local.", "SRV"),
    ("172-0-0-20.hdlsprtls.testns.svc.cluster.local.", "AAAA"),
]


@pytest.mark.parametrize("qname,qtype", NODATA)
def test_coredns_nodata_cases(qname, qtype):
    assert_soa_only(ask(qname, qtype), "NOERROR")


NXDOMAIN = [
    ("svc0.testns.svc.cluster.local.", "AAAA"),
    ("svc0.testns.svc.cluster.local.", "A"),
    ("svc0.svc-nons.svc.cluster.local.", "A"),
    ("bogusendpoint.hdls1.testns.svc.cluster.local.", "A"),
    ("bogusendpoint.svc0.testns.svc.cluster.local.", "A"),
    ("foo.cluster.local.", "NS"),
    ("foo.svc.cluster.local.", "NS"),
    ("endpoint.external.testns.svc.cluster.local.", "CNAME"),
    ("172-0-0-9.hdls1.testns.svc.cluster.local.", "A"),   # not ready: no name
    ("a.b.c.d.testns.svc.cluster.local.", "A"),
    ("_dns._udp.svc1.testns.svc.cluster.local.", "SRV"),
    ("10-1-2-3.testns.pod.cluster.local.", "A"),          # pods disabled
]


@pytest.mark.parametrize("qname,qtype", NXDOMAIN)
def test_coredns_nxdomain_cases(qname, qtype):
    assert_soa_only(ask(qname, qtype), "NXDOMAIN")


# -------------------------------------------------------------------------------------- the rules, one by one

def test_clusterip_answered_with_zero_endpoints():
    reply = answer("web.default.svc.cluster.local", "A", [svc("web", "default", ip="10.96.12.7")], [])
    assert reply.answer == ["web.default.svc.cluster.local.\t5\tIN\tA\t10.96.12.7"]


def test_headless_without_ready_endpoints_is_nxdomain():
    services = [svc("db", "default", ip="None")]
    slices = [eps("db", [("10.244.1.7", None, False)], ns="default")]
    assert_soa_only(answer("db.default.svc.cluster.local", "A", services, slices), "NXDOMAIN")
    assert_soa_only(answer("db.default.svc.cluster.local", "A", services, []), "NXDOMAIN")


def test_ready_unset_counts_as_ready():
    services = [svc("db", "default", ip="None")]
    slice_ = eps("db", [("10.244.1.7", None, True)], ns="default")
    del slice_["endpoints"][0]["conditions"]["ready"]
    assert answer("db.default.svc.cluster.local", "A", services, [slice_]).answer


def test_endpoint_names_resolve_under_clusterip_services():
    reply = ask("172-0-0-1.svc1.testns.svc.cluster.local", "A")
    assert reply.answer == [A("172-0-0-1.svc1.testns.svc.cluster.local.", "172.0.0.1")]


def test_statefulset_hostname():
    services = [svc("web", "default", ip="None")]
    slices = [eps("web", [("10.244.1.5", "web-0", True), ("10.244.2.6", "web-1", True)], ns="default")]
    reply = answer("web-0.web.default.svc.cluster.local", "A", services, slices)
    assert reply.answer == ["web-0.web.default.svc.cluster.local.\t5\tIN\tA\t10.244.1.5"]


def test_endpoint_hostname_rules():
    assert endpoint_hostname("10.244.1.5") == "10-244-1-5"
    assert endpoint_hostname("fd00::1") == "fd00--1"
    assert endpoint_hostname("fd00::") == "fd00--0"
    assert endpoint_hostname("10.244.1.5", "web-0") == "web-0"


def test_srv_all_ports_and_port_protocol_case_insensitive():
    reply = ask("multiport.testns.svc.cluster.local", "SRV")
    assert sorted(reply.answer) == sorted([
        "multiport.testns.svc.cluster.local.\t5\tIN\tSRV\t0 50 53 multiport.testns.svc.cluster.local.",
        "multiport.testns.svc.cluster.local.\t5\tIN\tSRV\t0 50 80 multiport.testns.svc.cluster.local."])
    assert reply.additional == [A("multiport.testns.svc.cluster.local.", "10.0.0.9")]
    upper = ask("_DNS._UDP.multiport.testns.svc.cluster.local", "SRV")
    assert [r.split("\t")[-1] for r in upper.answer] == ["0 100 53 multiport.testns.svc.cluster.local."]


def test_headless_srv_uses_endpoint_port():
    services = [svc("db", "default", ip="None", ports=(("pg", 5432, "TCP"),))]
    slices = [eps("db", [("10.244.1.7", None, True)], ns="default", ports=(("pg", 15432, "TCP"),))]
    reply = answer("_pg._tcp.db.default.svc.cluster.local", "SRV", services, slices)
    assert reply.answer == ["_pg._tcp.db.default.svc.cluster.local.\t5\tIN\tSRV\t"
                            "0 100 15432 10-244-1-7.db.default.svc.cluster.local."]


def test_external_name_a_query_outside_cluster_answers_cname_only():
    reply = ask("external.testns.svc.cluster.local", "A")
    assert reply.answer == ["external.testns.svc.cluster.local.\t5\tIN\tCNAME\text.interwebs.test."]


@pytest.mark.parametrize("mode,rcode", [("disabled", "NXDOMAIN"), ("insecure", "NOERROR"), ("verified", "NXDOMAIN")])
def test_pod_records_by_mode(mode, rcode):
    reply = ask("10-1-2-3.testns.pod.cluster.local", "A", pods_mode=mode)
    assert reply.rcode == rcode
    if rcode == "NOERROR":
        assert reply.answer == ["10-1-2-3.testns.pod.cluster.local.\t5\tIN\tA\t10.1.2.3"]


def test_verified_pod_records_need_a_pod_with_that_ip():
    pods = [{"metadata": {"name": "p", "namespace": "testns"}, "status": {"podIP": "10.1.2.3"}}]
    reply = answer("10-1-2-3.testns.pod.cluster.local", "A", SERVICES, SLICES, pods, pods_mode="verified")
    assert reply.answer == ["10-1-2-3.testns.pod.cluster.local.\t5\tIN\tA\t10.1.2.3"]
    other_ns = answer("10-1-2-3.default.pod.cluster.local", "A", SERVICES, SLICES, pods, pods_mode="verified",
                      namespaces=["testns", "default"])
    assert other_ns.rcode == "NXDOMAIN"


def test_pod_record_malformed_and_ipv6():
    assert ask("not-an-ip.testns.pod.cluster.local", "A", pods_mode="insecure").rcode == "NXDOMAIN"
    reply = ask("fd00--5.testns.pod.cluster.local", "AAAA", pods_mode="insecure")
    assert reply.answer == ["fd00--5.testns.pod.cluster.local.\t5\tIN\tAAAA\tfd00::5"]


def test_soa_at_apex_in_answer():
    reply = ask("cluster.local.", "SOA")
    assert reply.rcode == "NOERROR" and reply.authority == []
    [soa] = reply.answer
    assert soa.startswith(SOA_PREFIX) and soa.endswith(SOA_SUFFIX)


def test_soa_serial_is_stable_and_follows_resource_versions():
    services = [svc("web", "default", rv="4711")]
    a = answer("cluster.local", "SOA", services, [])
    b = answer("cluster.local", "SOA", services, [])
    assert a == b
    assert a.answer[0].split("\t")[4].split()[2] == "4711"


def test_ns_at_apex_with_glue():
    reply = ask("cluster.local", "NS")
    assert reply.answer == ["cluster.local.\t5\tIN\tNS\tns.dns.cluster.local."]
    assert reply.additional == ["ns.dns.cluster.local.\t5\tIN\tA\t10.96.0.10"]
    assert ask("ns.dns.cluster.local", "A").answer == ["ns.dns.cluster.local.\t5\tIN\tA\t10.96.0.10"]


def test_ttl_and_zone_are_configurable():
    reply = answer("web.default.svc.k8s.test", "A", [svc("web", "default", ip="10.96.0.7")], [], zone="k8s.test",
                   ttl=30)
    assert reply.answer == ["web.default.svc.k8s.test.\t30\tIN\tA\t10.96.0.7"]
    nodata = answer("web.default.svc.k8s.test", "AAAA", [svc("web", "default", ip="10.96.0.7")], [],
                    zone="k8s.test", ttl=30)
    assert nodata.authority == ["k8s.test.\t30\tIN\tSOA\tns.dns.k8s.test. hostmaster.k8s.test. 1 7200 1800 86400 30"]


def test_names_are_case_insensitive_and_trailing_dot_optional():
    for name in ("SVC1.TestNS.svc.Cluster.Local.", "svc1.testns.svc.cluster.local"):
        reply = ask(name, "A")
        assert reply.rcode == "NOERROR"
        assert reply.answer[0].split("\t")[4] == "10.0.0.1"
    assert ask("svc1.testns.svc.cluster.local", "a").answer


def test_namespaces_argument_decides_which_exist():
    reply = answer("svc.empty.svc.cluster.local", "A", [], [], namespaces=["empty"])
    assert reply.rcode == "NXDOMAIN"
    assert_soa_only(answer("empty.svc.cluster.local", "A", [], [], namespaces=["empty"]), "NOERROR")
    assert_soa_only(answer("empty.svc.cluster.local", "A", [], []), "NXDOMAIN")


# ---------------------------------------------------------------------------------------------- resolver

def test_candidate_names_follow_resolv_conf():
    assert candidate_names("db") == ["db.default.svc.cluster.local.", "db.svc.cluster.local.",
                                     "db.cluster.local.", "db."]
    assert candidate_names("db.") == ["db."]
    assert candidate_names("a.b.c.d.e.f") == ["a.b.c.d.e.f.", "a.b.c.d.e.f.default.svc.cluster.local.",
                                              "a.b.c.d.e.f.svc.cluster.local.", "a.b.c.d.e.f.cluster.local."]
    assert candidate_names("x.y", ndots=1)[0] == "x.y."


def test_resolver_walks_search_path():
    services = [svc("web", "default", ip="10.96.12.7"), svc("api", "other", ip="10.96.3.3")]
    lookup = functools.partial(_lookup, services, [])
    short = resolve("web", lookup=lookup)
    assert short.name == "web.default.svc.cluster.local." and short.rcode == "NOERROR"
    cross = resolve("api.other", lookup=lookup)
    assert cross.name == "api.other.svc.cluster.local."
    full = resolve("api.other.svc.cluster.local", lookup=lookup)
    assert full.name == "api.other.svc.cluster.local." and full.rcode == "NOERROR"
    assert resolve("web.default.svc.cluster.local.", lookup=lookup).name == "web.default.svc.cluster.local."
    missing = resolve("nope", lookup=lookup)
    assert missing.rcode == "NXDOMAIN" and missing.name == "nope."


def test_resolver_records_every_query():
    asked = []

    def lookup(qname, qtype):
        asked.append(qname)
        return DNSReply("NXDOMAIN")

    resolve("db", lookup=lookup, search=("ns1.svc.cluster.local",), ndots=2)
    assert asked == ["db.ns1.svc.cluster.local.", "db."]


def _lookup(services, slices, qname, qtype):
    return answer(qname, qtype, services, slices)


# ---------------------------------------------------------------------------------------------- nslookup

def _db_cluster():
    services = [svc("db", "default", ip="None", ports=(("pg", 5432, "TCP"),)),
                svc("web", "default", ip="10.96.12.7"),
                svc("ext", "default", kind="ExternalName", external="web.default.svc.cluster.local"),
                svc("far", "default", kind="ExternalName", external="example.com"),
                svc("v6", "default", ip="fd00::7")]
    slices = [eps("db", [("10.244.3.5", None, True), ("10.244.1.7", None, True), ("10.244.2.3", None, True)],
                  ns="default", ports=(("pg", 5432, "TCP"),))]
    return functools.partial(_lookup, services, slices)


def test_nslookup_headless_db_matches_spec_exactly():
    result = nslookup("db", lookup=_db_cluster())
    assert isinstance(result, NslookupAnswer)
    assert result.text == ("Server:\t\t10.96.0.10\nAddress:\t10.96.0.10#53\n\n"
                           "Name:\tdb.default.svc.cluster.local\nAddress: 10.244.1.7\n"
                           "Name:\tdb.default.svc.cluster.local\nAddress: 10.244.2.3\n"
                           "Name:\tdb.default.svc.cluster.local\nAddress: 10.244.3.5\n")
    assert result.addresses == ["10.244.1.7", "10.244.2.3", "10.244.3.5"]
    assert result.rcode == "NOERROR"
    assert repr(result) == result.text


def test_nslookup_unknown_name():
    result = nslookup("nope", lookup=_db_cluster())
    assert result.text.endswith("** server can't find nope: NXDOMAIN\n")
    assert result.text.startswith("Server:\t\t10.96.0.10\nAddress:\t10.96.0.10#53\n\n")
    assert result.rcode == "NXDOMAIN" and result.addresses == []


def test_nslookup_cname_chain():
    result = nslookup("ext", lookup=_db_cluster())
    body = result.text.split("\n\n", 1)[1]
    assert body.startswith("ext.default.svc.cluster.local\tcanonical name = web.default.svc.cluster.local.\n"
                           "Name:\tweb.default.svc.cluster.local\nAddress: 10.96.12.7\n")
    assert result.addresses == ["10.96.12.7"]


def test_nslookup_ipv6_only_service_prints_aaaa():
    result = nslookup("v6", lookup=_db_cluster())
    assert result.text.endswith("Name:\tv6.default.svc.cluster.local\nAddress: fd00::7\n")
    assert result.addresses == ["fd00::7"]


def test_nslookup_no_answer():
    services = [svc("web", "default", ip="10.96.12.7")]

    def lookup(qname, qtype):
        reply = answer(qname, qtype, services, [])
        if qtype == "A" and reply.rcode == "NOERROR":
            return DNSReply("NOERROR", authority=reply.authority)
        return reply

    result = nslookup("web", lookup=lookup)
    assert result.text.endswith("*** Can't find web.default.svc.cluster.local: No answer\n")
    assert result.addresses == []


def test_nslookup_custom_server_and_pretty_repr():
    result = nslookup("web", lookup=_db_cluster(), server="10.96.0.53")
    assert result.text.startswith("Server:\t\t10.96.0.53\nAddress:\t10.96.0.53#53\n")

    class Printer:
        out = ""

        def text(self, s):
            self.out += s

    printer = Printer()
    result._repr_pretty_(printer, False)
    assert printer.out == result.text
