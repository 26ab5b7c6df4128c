"""The fallbacks kube-proxy applies when choosing endpoints, end to end: controller hints, rules, a new connection."""
from __future__ import annotations

import pytest

from labsupport import Lab
from labsupport.dataplane.model import trace_packet


def pinned_pod(name: str, node: str, never_ready: bool = False) -> dict:
    container = {"name": "nginx", "image": "nginx:1.27", "ports": [{"containerPort": 80}]}
    if never_ready:
        container["readinessProbe"] = {"tcpSocket": {"port": 81}, "periodSeconds": 1}   # nothing listens on 81
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": {"app": "web"}},
            "spec": {"nodeName": node, "containers": [container]}}


def web_service(**spec) -> dict:
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
            "spec": {"selector": {"app": "web"}, "ports": [{"port": 80, "targetPort": 80}], **spec}}


def destinations(lab: Lab, node: str, mode: str) -> set[str]:
    """Where a new connection from `node` to the Service may be DNATed to (every random branch explored)."""
    node_obj = lab.get("node", node)
    node_ip = next(a["address"] for a in node_obj["status"]["addresses"] if a["type"] == "InternalIP")
    cluster_ip = lab.get("svc", "web")["spec"]["clusterIP"]
    verdict = trace_packet(mode, lab.proxy_rules(node=node), [node_ip], node_ip, cluster_ip, 80)
    return {ep.split(":")[0] for ep in verdict.endpoints}


def pod_ip(lab: Lab, name: str) -> str:
    return lab.get("pod", name)["status"]["podIP"]


@pytest.mark.parametrize("mode", ["iptables", "nftables", "ipvs"])
def test_prefer_same_node_falls_back_to_the_zone_then_the_cluster(mode):
    # workers: lab-worker (z1), lab-worker2 (z2), lab-worker3 (z1), lab-worker4 (z2)
    with Lab(backend="sim", seed=0, workers=4, zones=("z1", "z2"), proxy_mode=mode) as lab:
        lab.apply([pinned_pod("a", "lab-worker"), pinned_pod("b", "lab-worker2"),
                   web_service(trafficDistribution="PreferSameNode")])
        lab.wait(lambda l: all(l.get("pod", n)["status"].get("podIP") for n in ("a", "b")))
        lab.advance(2)
        hints = {e["addresses"][0]: e.get("hints") for s in lab.get("endpointslices") for e in s["endpoints"]
                 if s["metadata"]["labels"].get("kubernetes.io/service-name") == "web"}
        assert hints[pod_ip(lab, "a")] == {"forZones": [{"name": "z1"}], "forNodes": [{"name": "lab-worker"}]}
        assert destinations(lab, "lab-worker", mode) == {pod_ip(lab, "a")}       # its own node
        assert destinations(lab, "lab-worker3", mode) == {pod_ip(lab, "a")}      # no local endpoint: same zone
        assert destinations(lab, "lab-worker4", mode) == {pod_ip(lab, "b")}
        lab.delete("pod", "b", grace_period=0)
        lab.advance(1)
        assert destinations(lab, "lab-worker4", mode) == {pod_ip(lab, "a")}      # nothing in z2: the rest


@pytest.mark.parametrize("policy", [{}, {"internalTrafficPolicy": "Local"}])
def test_terminating_endpoints_serve_when_nothing_is_ready(policy):
    with Lab(backend="sim", seed=0, proxy_mode="iptables") as lab:
        hold = {"lifecycle": {"preStop": {"exec": {"command": ["sleep", "30"]}}}}
        pods = [pinned_pod("a", "lab-worker"), pinned_pod("b", "lab-worker2")]
        for pod in pods:
            pod["spec"]["containers"][0].update(hold)
        lab.apply(pods + [web_service(**policy)])
        lab.wait(lambda l: all(l.get("pod", n)["status"].get("podIP") for n in ("a", "b")))
        lab.advance(2)
        a, b = pod_ip(lab, "a"), pod_ip(lab, "b")
        lab.delete("pod", "a")
        lab.advance(1)
        # a is terminating, b is ready: only b gets new connections (a stays reachable only from its own node under
        # Local policy, where the local terminating endpoint is all there is).
        assert destinations(lab, "lab-worker2", "iptables") == {b}
        expected_on_a_node = {a} if policy else {b}
        assert destinations(lab, "lab-worker", "iptables") == expected_on_a_node
        lab.delete("pod", "b")
        lab.advance(1)
        # Nothing is ready anywhere: kube-proxy falls back to serving, terminating endpoints.
        if policy:
            assert destinations(lab, "lab-worker", "iptables") == {a}
            assert destinations(lab, "lab-worker2", "iptables") == {b}
        else:
            assert destinations(lab, "lab-worker3", "iptables") == {a, b}


def test_publish_not_ready_addresses_makes_every_endpoint_ready():
    with Lab(backend="sim", seed=0) as lab:
        lab.apply([pinned_pod("a", "lab-worker", never_ready=True), web_service(publishNotReadyAddresses=True)])
        lab.wait(lambda l: l.get("pod", "a")["status"].get("podIP"))
        lab.advance(10)
        ready = {c["type"]: c["status"] for c in lab.get("pod", "a")["status"]["conditions"]}["Ready"]
        assert ready == "False"
        conditions = [e["conditions"] for s in lab.get("endpointslices") for e in s["endpoints"]
                      if s["metadata"]["labels"].get("kubernetes.io/service-name") == "web"]
        assert conditions and conditions[0]["ready"] is True
        assert destinations(lab, "lab-worker2", "iptables") == {pod_ip(lab, "a")}
