"""The real CoreDNS, reading the embedded API server, answers what `labsupport.control.dns.answer` answers."""
from __future__ import annotations

import re

import pytest

from labsupport import Lab
from labsupport.control.dns import DEFAULT_SEARCH, answer, resolve
from labsupport.upstream.binaries import require_upstream

from tests.conftest import DB_STATEFULSET, WEB, ready_addresses

pytestmark = pytest.mark.upstream

NAMED_PORTS = """
apiVersion: v1
kind: Service
metadata: {name: named}
spec:
  selector: {app: web}
  ports: [{name: http, port: 80, targetPort: 80}, {name: metrics, port: 9100, protocol: UDP}]
"""

QUESTIONS = [
    ("web.default.svc.cluster.local.", "A"),              # ClusterIP A
    ("db.default.svc.cluster.local.", "A"),               # headless: one A per ready pod
    ("db-0.db.default.svc.cluster.local.", "A"),          # StatefulSet pod name
    ("db-2.db.default.svc.cluster.local.", "A"),
    ("_http._tcp.named.default.svc.cluster.local.", "SRV"),   # SRV with a named port
    ("_metrics._udp.named.default.svc.cluster.local.", "SRV"),
    ("_http._tcp.db.default.svc.cluster.local.", "SRV"),  # headless SRV: one per endpoint (no named port)
    ("kubernetes.default.svc.cluster.local.", "A"),
    ("kube-dns.kube-system.svc.cluster.local.", "A"),
    ("nothere.default.svc.cluster.local.", "A"),          # NXDOMAIN
    ("web.default.svc.cluster.local.", "AAAA"),           # NODATA: the name exists, no such record
    ("web.nowhere.svc.cluster.local.", "A"),              # an unknown namespace
    ("default.svc.cluster.local.", "A"),
]
#: Names the search path resolves inside cluster.local. A name that is nowhere (`nothere`) ends with a query for
#: `nothere.` itself, which CoreDNS would forward off the machine; without `forward` it answers SERVFAIL, so that
#: walk is checked by its cluster.local steps (NXDOMAIN, in QUESTIONS) only.
SEARCHED = ["web", "db", "db-1.db", "web.default", "kubernetes.default.svc", "kube-dns.kube-system"]
TTL = 30   # the Corefile's `ttl 30`


def comparable(reply) -> tuple[str, list[str], list[str]]:
    """rcode, the sorted answer, and the authority as owner/type (the SOA serial is CoreDNS's clock)."""
    return (reply.rcode, sorted(reply.answer), sorted("\t".join(r.split("\t")[i] for i in (0, 3))
                                                      for r in reply.authority))


@pytest.fixture(scope="module")
def dns():
    """(lab, the real CoreDNS in a namespace of ours) with the lesson's names in the cluster."""
    require_upstream("coredns")
    from labsupport.netns import namespaces as kernel_ns
    from labsupport.upstream.coredns import UpstreamCoreDNS
    from labsupport.upstream.forwarder import LoopbackForwarder
    lab = Lab(backend="sim", seed=0)
    run = kernel_ns.new_run_id()
    ns = kernel_ns.ns_name(run, "coredns")
    server = forwarder = None
    try:
        lab.apply(WEB)
        lab.apply(DB_STATEFULSET)
        lab.apply(NAMED_PORTS)
        lab.wait(lambda l: ready_addresses(l, "web") == 3 and ready_addresses(l, "db") == 3, timeout=120)
        lab.kubeconfig  # noqa: B018 - starts the API server
        api = lab.backend.apiserver()
        kernel_ns.create_namespace(ns)
        kernel_ns.write_etc(ns, {"resolv.conf": "search " + " ".join(DEFAULT_SEARCH) +
                                 "\nnameserver 127.0.0.1\noptions ndots:5\n"})
        forwarder = LoopbackForwarder(ns, api.port).start()
        server = UpstreamCoreDNS(ns, lab.get("configmap", "coredns", namespace="kube-system"),
                                 api.kubeconfig_path).start()
        yield lab, server
    finally:
        if server is not None:
            server.remove()
        if forwarder is not None:
            forwarder.stop()
        kernel_ns.remove_namespace(ns)
        kernel_ns.release_run_id(run)
        lab.close()


def model(lab, qname: str, qtype: str):
    """labsupport's answer for the lab's objects, with the Corefile's settings."""
    return answer(qname, qtype, lab.get("services", namespace=None), lab.get("endpointslices", namespace=None),
                  lab.get("pods", namespace=None), ttl=TTL, pods_mode="insecure",
                  namespaces=[n["metadata"]["name"] for n in lab.get("namespaces")])


@pytest.mark.parametrize("qname,qtype", QUESTIONS)
def test_same_answer(dns, qname, qtype):
    lab, server = dns
    real, ours = server.ask(qname, qtype), model(lab, qname, qtype)
    assert comparable(ours) == comparable(real), f"{qname} {qtype}\nlabsupport:\n{ours}\nreal CoreDNS:\n{real}"


@pytest.mark.parametrize("name", SEARCHED)
def test_search_path_through_resolv_conf(dns, name):
    """The pod's resolver (dig +search, reading the namespace's resolv.conf) lands where labsupport's does."""
    from labsupport.netns.namespaces import run_in
    lab, server = dns
    out = run_in(server.ns, ["dig", "+search", "+noall", "+answer", "+comments", name, "A"], check=True).stdout
    status = re.search(r"status: (\w+)", out).group(1)
    answers = sorted(line.split(None, 4)[-1] for line in out.splitlines()
                     if line and not line.startswith(";") and "\tIN\t" in line.replace(" ", "\t"))
    ours = resolve(name, "A", lookup=lambda fqdn, qtype: model(lab, fqdn, qtype))
    assert (status, answers) == (ours.rcode, sorted(r.split("\t")[4] for r in ours.answer)), out


LOOKUPS = ["web", "db", "db-0.db", "db-2.db.default", "kubernetes", "kube-dns.kube-system",
           "nothere.default.svc.cluster.local"]


def test_netns_lab_served_by_the_real_coredns_and_kube_proxy():
    """`Lab(backend="netns", kube_proxy="upstream", dns="upstream")`: nslookup in a pod goes through the real
    kube-proxy's DNAT to the real CoreDNS in the CoreDNS pods, and lands where the sim lab's model does."""
    from labsupport.testing import require_kernel
    require_upstream("kube-proxy", "coredns")
    require_kernel("nft", "iptables-restore", "conntrack", "curl", "nslookup")
    real = Lab(backend="netns", seed=0, kube_proxy="upstream", dns="upstream")
    sim = Lab(backend="sim", seed=0)
    try:
        assert len(real.backend.upstream_dns.servers) == 2   # one CoreDNS per CoreDNS pod
        for lab in (real, sim):
            lab.apply(WEB)
            lab.apply(DB_STATEFULSET)
            lab.wait(lambda l: ready_addresses(l, "web") == 3 and ready_addresses(l, "db") == 3, timeout=120)
        for name in LOOKUPS:
            got, want = real.nslookup(name), sim.nslookup(name)
            assert (got.rcode, sorted(got.addresses)) == (want.rcode, sorted(want.addresses)), \
                f"{name}\nreal CoreDNS:\n{got.text}\nlabsupport:\n{want.text}"
    finally:
        real.close()
        sim.close()
