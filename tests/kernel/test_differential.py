"""The same scenarios on `sim` and on `netns`: the model and the real kernel must agree.

A disagreement is a bug in the model, the renderer or the netns backend.
"""
from __future__ import annotations

from collections import Counter

import pytest

from labsupport import Lab

from .conftest import make_lab
from .manifests import DB, echo, node_ips, ready, workers

pytestmark = pytest.mark.kernel

SCENARIOS = [
    echo("cluster", 3, policy="Cluster"),
    echo("local", 1, policy="Local"),
    echo("sticky", 3, svc_type="ClusterIP", affinity="ClientIP"),
    echo("spread", 3, svc_type="ClusterIP"),
    echo("empty", 0, svc_type="ClusterIP"),
    echo("wrongport", 2, svc_type="ClusterIP", target_port=9999),
    echo("lb", 1, svc_type="LoadBalancer", policy="Local"),
    DB,
    echo("none", 0),
    echo("nonelocal", 0, policy="Local"),
    """
apiVersion: v1
kind: Service
metadata: {name: itp}
spec:
  internalTrafficPolicy: Local
  selector: {app: spread}
  ports: [{port: 80, targetPort: 8080}]
---
apiVersion: v1
kind: Service
metadata: {name: closed}
spec:
  type: LoadBalancer
  loadBalancerSourceRanges: ["10.0.0.0/8"]
  selector: {app: spread}
  ports: [{port: 80, targetPort: 8080}]
---
apiVersion: v1
kind: Service
metadata: {name: opened}
spec:
  type: LoadBalancer
  loadBalancerSourceRanges: ["172.18.0.0/16"]
  selector: {app: spread}
  ports: [{port: 80, targetPort: 8080}]
---
apiVersion: v1
kind: Service
metadata: {name: external}
spec:
  externalIPs: ["172.18.0.3"]
  externalTrafficPolicy: Cluster
  selector: {app: spread}
  ports: [{port: 8888, targetPort: 8080}]
---
apiVersion: v1
kind: Service
metadata: {name: close}
spec:
  trafficDistribution: PreferClose
  selector: {app: spread}
  ports: [{port: 80, targetPort: 8080}]
""",
]
READY = {"cluster": 3, "local": 1, "sticky": 3, "spread": 3, "wrongport": 2, "lb": 1, "db": 3}


def build(lab):
    for manifest in SCENARIOS:
        lab.apply(manifest)
    lab.wait(lambda l: all(ready(l, s) == n for s, n in READY.items()), timeout=120)
    return lab


@pytest.fixture(scope="module", params=["iptables", "nftables"])
def labs(request):
    """(sim, netns) labs with the same seed, mode and scenarios."""
    sim = Lab(backend="sim", seed=0, proxy_mode=request.param)
    try:
        kernel = make_lab(request.param)
    except BaseException:
        sim.close()
        raise
    try:
        yield build(sim), build(kernel)
    finally:
        kernel.close()
        sim.close()


def outcome(result) -> str:
    """ok / refused / timeout / the curl error."""
    if result.ok:
        return "ok"
    if result.refused:
        return "refused"
    if result.timed_out:
        return "timeout"
    return result.error or "?"


def placement(lab, app: str) -> dict[str, str]:
    """Pod name -> node. By name, not IP: a node hands out its pod IPs in the order its pods start, which on a busy
    machine can differ between the two labs while every pod is the same pod on the same node."""
    return {p["metadata"]["name"]: p["spec"]["nodeName"] for p in lab.get("pods", selector=f"app={app}")}


def both(labs, fn):
    return tuple(fn(lab) for lab in labs)


def test_same_cluster_shape(labs):
    sim, kernel = labs
    for app in ("cluster", "local", "sticky", "spread", "wrongport"):
        assert placement(sim, app) == placement(kernel, app)
    for svc in ("cluster", "local", "sticky", "spread", "empty", "wrongport"):
        assert sim.get("svc", svc)["spec"]["clusterIP"] == kernel.get("svc", svc)["spec"]["clusterIP"]


def test_nodeport_cluster_policy(labs):
    def run(lab):
        port = lab.get("svc", "cluster")["spec"]["ports"][0]["nodePort"]
        out = {}
        for name, ip in node_ips(lab).items():
            results = [lab.curl(f"http://{ip}:{port}/clientip") for _ in range(24)]
            out[name] = ({outcome(r) for r in results}, {r.client_ip for r in results if r.node != name},
                         len({r.pod for r in results}) > 1)
        return out
    sim, kernel = both(labs, run)
    assert sim == kernel
    ips = node_ips(labs[1])
    for name, (outcomes, seen_remote, _) in kernel.items():
        assert outcomes == {"ok"}
        assert seen_remote <= {ips[name]}


def test_local_policy(labs):
    def run(lab):
        port = lab.get("svc", "local")["spec"]["ports"][0]["nodePort"]
        out = {}
        for name, ip in node_ips(lab).items():
            r = lab.curl(f"http://{ip}:{port}/clientip")
            out[name] = (outcome(r), r.client_ip)
        return out
    sim, kernel = both(labs, run)
    assert sim == kernel
    (pod,) = labs[1].get("pods", selector="app=local")
    assert kernel[pod["spec"]["nodeName"]] == ("ok", "172.18.0.100")
    assert sum(1 for o, _ in kernel.values() if o == "timeout") == len(kernel) - 1


def test_session_affinity(labs):
    def run(lab):
        ip = lab.get("svc", "sticky")["spec"]["clusterIP"]
        per_source = {}
        for w in workers(lab):
            per_source[w] = len({lab.curl(f"http://{ip}/hostname", source=f"node/{w}").pod for _ in range(8)})
        return per_source
    sim, kernel = both(labs, run)
    assert sim == kernel == {w: 1 for w in workers(labs[0])}


def test_no_endpoints_is_refused(labs):
    def run(lab):
        ip = lab.get("svc", "empty")["spec"]["clusterIP"]
        pod = sorted(p["metadata"]["name"] for p in lab.get("pods", selector="app=spread"))[0]
        return outcome(lab.curl(f"http://{ip}/", source="node/lab-worker")), \
            outcome(lab.curl(f"http://{ip}/", source=f"pod/{pod}"))
    sim, kernel = both(labs, run)
    assert sim == kernel == ("refused", "refused")


def test_target_port_mismatch_is_refused(labs):
    def run(lab):
        ip = lab.get("svc", "wrongport")["spec"]["clusterIP"]
        return {outcome(lab.curl(f"http://{ip}/", source="node/lab-worker")) for _ in range(6)}
    sim, kernel = both(labs, run)
    assert sim == kernel == {"refused"}


def test_pod_to_service_keeps_the_pod_ip(labs):
    def run(lab):
        ip = lab.get("svc", "spread")["spec"]["clusterIP"]
        return {(p["metadata"]["name"], p["status"]["podIP"],
                 lab.curl(f"http://{ip}/clientip", source=f"pod/{p['metadata']['name']}").client_ip)
                for p in lab.get("pods", selector="app=cluster")}
    sim, kernel = both(labs, run)
    # the same pods, each seen from its own IP (compared by name: see placement)
    assert {(name, src == seen) for name, src, seen in sim} == {(name, src == seen) for name, src, seen in kernel}
    assert all(src == seen for _, src, seen in kernel)


def test_hairpin_a_pod_reaches_itself_through_its_service(labs):
    def run(lab):
        ip = lab.get("svc", "spread")["spec"]["clusterIP"]
        out = {}
        for p in lab.get("pods", selector="app=spread"):
            name = p["metadata"]["name"]
            results = [lab.curl(f"http://{ip}/clientip", source=f"pod/{name}") for _ in range(30)]
            assert all(r.ok for r in results), [r.error for r in results if not r.ok]
            out[name] = {r.client_ip for r in results if r.pod == name}
        return out
    sim, kernel = both(labs, run)
    assert sim == kernel
    gateways = {p["metadata"]["name"]: labs[1]._backend.cluster.kubelet.gateway(p["spec"]["nodeName"])
                for p in labs[1].get("pods", selector="app=spread")}
    assert kernel == {name: {gw} for name, gw in gateways.items()}     # hairpin traffic is masqueraded


def test_unallocated_cluster_ip_and_unserved_port(labs):
    def run(lab):
        ip = lab.get("svc", "spread")["spec"]["clusterIP"]
        return (outcome(lab.curl("http://10.96.200.200/", source="node/lab-worker")),
                outcome(lab.curl(f"http://{ip}:81/", source="node/lab-worker")))
    sim, kernel = both(labs, run)
    assert sim == kernel
    if labs[1].proxy_mode == "nftables":
        assert kernel == ("timeout", "refused")


def test_load_balancer_with_local_policy(labs):
    def run(lab):
        svc = lab.get("svc", "lb")
        ip = svc["status"]["loadBalancer"]["ingress"][0]["ip"]
        results = [lab.curl(f"http://{ip}/clientip") for _ in range(6)]
        return {(outcome(r), r.client_ip, r.node) for r in results}
    sim, kernel = both(labs, run)
    assert sim == kernel
    (pod,) = labs[1].get("pods", selector="app=lb")
    assert kernel == {("ok", "172.18.0.100", pod["spec"]["nodeName"])}


def test_300_new_connections_spread(labs):
    def run(lab):
        ip = lab.get("svc", "spread")["spec"]["clusterIP"]
        return Counter(lab.curl(f"http://{ip}/hostname", source="node/lab-worker").pod for _ in range(300))
    sim, kernel = both(labs, run)
    pods = {p["metadata"]["name"] for p in labs[1].get("pods", selector="app=spread")}
    assert set(sim) == set(kernel) == pods
    assert min(sim.values()) >= 60 and min(kernel.values()) >= 60, (sim, kernel)


NAMES = ["spread", "db", "nope", "kubernetes.default", "spread.default.svc.cluster.local", "db.default",
         "kube-dns.kube-system", "db-0.db", "web-0.db", "10-244-1-2.default.pod"]


def test_nslookup_prints_as_the_real_one(labs):
    def run(lab):
        pod = sorted(p["metadata"]["name"] for p in lab.get("pods", selector="app=spread"))[0]
        return [(lambda a: (a.rcode, a.addresses, a.text.rstrip("\n")))(lab.nslookup(name, pod=pod))
                for name in NAMES]
    sim, kernel = both(labs, run)
    for name, model, real in zip(NAMES, sim, kernel):
        assert model == real, name


def test_internal_traffic_policy_local_stays_on_the_node(labs):
    def run(lab):
        ip = lab.get("svc", "itp")["spec"]["clusterIP"]
        return {w: {(outcome(r), r.node) for r in (lab.curl(f"http://{ip}/hostname", source=f"node/{w}")
                                                   for _ in range(8))} for w in workers(lab)}
    sim, kernel = both(labs, run)
    assert sim == kernel == {w: {("ok", w)} for w in workers(labs[0])}


def test_prefer_close_stays_in_the_zone(labs):
    def run(lab):
        ip = lab.get("svc", "close")["spec"]["clusterIP"]
        return {w: {r.node for r in (lab.curl(f"http://{ip}/hostname", source=f"node/{w}") for _ in range(8))}
                for w in workers(lab)}
    sim, kernel = both(labs, run)
    assert sim == kernel


def test_load_balancer_source_ranges(labs):
    def run(lab):
        out = {}
        for name in ("closed", "opened"):
            ip = lab.get("svc", name)["status"]["loadBalancer"]["ingress"][0]["ip"]
            out[name] = {outcome(lab.curl(f"http://{ip}/hostname")) for _ in range(3)}
        return out
    sim, kernel = both(labs, run)
    assert sim == kernel == {"closed": {"timeout"}, "opened": {"ok"}}


def test_local_nodeport_from_each_node_itself(labs):
    def run(lab):
        port = lab.get("svc", "local")["spec"]["ports"][0]["nodePort"]
        return {n: (outcome(r), r.client_ip) for n, ip in node_ips(lab).items()
                for r in [lab.curl(f"http://{ip}:{port}/clientip", source=f"node/{n}")]}
    sim, kernel = both(labs, run)
    assert sim == kernel


def local_nodeport_from_pods(lab, same: bool) -> dict:
    """Pods curl every node's NodePort of the Local Service: those that enter at their own node (same=True)
    or at another node (same=False); outcome and whether the app saw the pod's own IP."""
    port = lab.get("svc", "local")["spec"]["ports"][0]["nodePort"]
    (endpoint,) = lab.get("pods", selector="app=local")
    out = {}
    for p in lab.get("pods", selector="app=spread"):
        for n, ip in node_ips(lab).items():
            entered_at_own_node = n == p["spec"]["nodeName"]
            at_endpoint_node = n == endpoint["spec"]["nodeName"]
            if entered_at_own_node == same and (same or not at_endpoint_node):
                r = lab.curl(f"http://{ip}:{port}/clientip", source=f"pod/{p['metadata']['name']}")
                out[(p["metadata"]["name"], n)] = (outcome(r), r.client_ip == p["status"]["podIP"])
    return out


def test_local_nodeport_from_a_pod_via_its_own_node(labs):
    sim, kernel = both(labs, lambda lab: local_nodeport_from_pods(lab, same=True))
    assert sim == kernel
    assert set(kernel.values()) == {("ok", True)}         # pods bypass the Local policy


def test_local_nodeport_from_a_pod_via_another_node(labs):
    sim, kernel = both(labs, lambda lab: dict(sorted(local_nodeport_from_pods(lab, same=False).items())[:2]))
    assert kernel and set(kernel.values()) == {("timeout", False)}
    # The endpoint answers the pod directly, bypassing the node that DNATed: the reply is INVALID there.
    assert sim == kernel


def test_external_ip(labs):
    def run(lab):
        return ({(outcome(r), r.node, r.client_ip) for r in (lab.curl("http://172.18.0.3:8888/clientip")
                                                             for _ in range(40))},
                {(outcome(r), r.node, r.client_ip) for r in (lab.curl("http://172.18.0.3:8888/clientip",
                                                                      source="node/lab-worker2") for _ in range(40))})
    sim, kernel = both(labs, run)
    assert sim == kernel


def test_pod_to_a_local_load_balancer_ip_bypasses_the_policy(labs):
    def run(lab):
        ip = lab.get("svc", "lb")["status"]["loadBalancer"]["ingress"][0]["ip"]
        return {(p["spec"]["nodeName"], outcome(r), r.client_ip == p["status"]["podIP"])
                for p in lab.get("pods", selector="app=spread")
                for r in [lab.curl(f"http://{ip}/clientip", source=f"pod/{p['metadata']['name']}")]}
    sim, kernel = both(labs, run)
    assert sim == kernel
    assert {(o, own) for _, o, own in kernel} == {("ok", True)}


def test_nodeport_without_endpoints_is_refused(labs):
    def run(lab):
        out = {}
        for name in ("none", "nonelocal"):
            port = lab.get("svc", name)["spec"]["ports"][0]["nodePort"]
            out[name] = {outcome(lab.curl(f"http://{ip}:{port}/")) for ip in node_ips(lab).values()}
        return out
    sim, kernel = both(labs, run)
    assert sim == kernel == {"none": {"refused"}, "nonelocal": {"refused"}}
