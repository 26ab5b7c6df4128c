"""Termination on real packets: a preStop hook holds a serving, terminating endpoint; nginx alone leaves at once."""
from __future__ import annotations

import pytest

from .conftest import make_lab

pytestmark = pytest.mark.kernel


def lone_nginx(name: str, pre_stop_seconds: int = 0) -> list[dict]:
    container = {"name": "nginx", "image": "nginx:1.27", "ports": [{"containerPort": 80}]}
    if pre_stop_seconds:
        container["lifecycle"] = {"preStop": {"exec": {"command": ["sleep", str(pre_stop_seconds)]}}}
    return [{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": {"app": name}},
             "spec": {"nodeName": "lab-worker", "containers": [container]}},
            {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name},
             "spec": {"selector": {"app": name}, "ports": [{"port": 80, "targetPort": 80}]}}]


def conditions(lab, name: str) -> list[dict]:
    return [e["conditions"] for s in lab.get("endpointslices", selector=f"kubernetes.io/service-name={name}")
            for e in s.get("endpoints") or []]


@pytest.fixture(scope="module", params=["iptables", "nftables"])
def lab(request):
    lab = make_lab(request.param)
    try:
        lab.apply(lone_nginx("held", pre_stop_seconds=20) + lone_nginx("quick"))
        lab.wait(lambda l: len(conditions(l, "held")) == 1 and conditions(l, "held")[0]["ready"]
                 and len(conditions(l, "quick")) == 1 and conditions(l, "quick")[0]["ready"], timeout=120)
        yield lab
    finally:
        lab.close()


def test_pre_stop_keeps_a_terminating_endpoint_serving_through_the_kernel_rules(lab):
    ip = lab.get("svc", "held")["spec"]["clusterIP"]
    lab.delete("pod", "held")
    lab.advance(10)
    assert conditions(lab, "held") == [{"ready": False, "serving": True, "terminating": True}]
    # The only endpoint is terminating: kube-proxy's rules fall back to it, and the real nginx still answers.
    reply = lab.curl(f"http://{ip}/", source="node/lab-worker2")
    assert reply.status == 200 and reply.pod == "held"
    lab.advance(11)
    assert conditions(lab, "held") == []
    assert not lab.curl(f"http://{ip}/", source="node/lab-worker2").ok


def test_nginx_without_pre_stop_is_gone_within_a_second(lab):
    ip = lab.get("svc", "quick")["spec"]["clusterIP"]
    lab.delete("pod", "quick")
    lab.advance(1)
    assert conditions(lab, "quick") == []
    assert not lab.curl(f"http://{ip}/", source="node/lab-worker2").ok
