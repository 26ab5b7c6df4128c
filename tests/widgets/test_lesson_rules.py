"""The lessons' rule readers work in every kube-proxy mode, on the sim's rules and on real nodes' output; and
`in_proxy_mode` switches where the cluster can, and shows a modelled copy where it cannot."""
from __future__ import annotations

from pathlib import Path

import pytest

from labsupport import Lab
from labsupport.kind import parse
from labsupport.widgets import lesson

DATA = Path(__file__).resolve().parents[1] / "kind" / "data"
WEB = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 12
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - {name: nginx, image: "nginx:1.27", ports: [{containerPort: 80}]}
"""


def web_service(**spec) -> dict:
    """The web Service with extra spec fields."""
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
            "spec": {"selector": {"app": "web"}, "ports": [{"port": 80, "targetPort": 80}], **spec}}


@pytest.mark.parametrize("mode", ["iptables", "nftables", "ipvs"])
def test_rule_endpoints_are_the_zones_endpoints_under_prefer_same_zone(mode):
    with Lab(workers=6, proxy_mode=mode) as lab:
        lab.apply(WEB)
        lab.apply(web_service(trafficDistribution="PreferSameZone"))
        lab.wait(lambda l: lesson.ready_count(l, "web") == 12)
        zone = lab.get("nodes", "lab-worker")["metadata"]["labels"]["topology.kubernetes.io/zone"]
        in_zone = {n["metadata"]["name"] for n in lab.get("nodes")
                   if n["metadata"]["labels"]["topology.kubernetes.io/zone"] == zone}
        expected = sorted(f"{p['status']['podIP']}:80" for p in lab.get("pods", selector="app=web")
                          if p["spec"]["nodeName"] in in_zone)
        assert 0 < len(expected) < 12
        assert sorted(lesson.rule_endpoints(lab, "web", node="lab-worker")) == expected
        assert lesson.affinity_rules(lab, "web", node="lab-worker") == []


@pytest.mark.parametrize("mode,marker", [("iptables", "--rcheck"), ("nftables", "ip saddr @affinity-"),
                                         ("ipvs", "persistent 10800")])
def test_affinity_rules_in_every_mode(mode, marker):
    with Lab(proxy_mode=mode) as lab:
        lab.apply(WEB.replace("replicas: 12", "replicas: 3"))
        lab.apply(web_service(sessionAffinity="ClientIP"))
        lab.wait(lambda l: lesson.ready_count(l, "web") == 3)
        found = lesson.affinity_rules(lab, "web")
        assert found and all(marker in line for line in found), found
        assert len(lesson.rule_endpoints(lab, "web")) == 3


def test_the_readers_on_real_nodes_output():
    nft = parse.nft_table((DATA / "nft-list-ruleset-kind-worker.txt").read_text())
    iptables = parse.kube_proxy_iptables((DATA / "iptables-save-c-kind-worker.txt").read_text())
    ipvs = parse.proc_ip_vs_to_ipvsadm((DATA / "proc-net-ip_vs.txt").read_text())
    web = ["10.244.1.2:80", "10.244.2.3:80", "10.244.3.2:80"]
    assert lesson.endpoints_in_rules(lesson.rules_of_service(nft, "default/web")) == web
    assert lesson.endpoints_in_rules(lesson.rules_of_service(iptables, "default/web")) == web
    assert lesson.endpoints_in_rules(lesson.rules_of_service(ipvs, "default/web", "10.111.76.235")) == web
    assert lesson.endpoints_in_rules(lesson.rules_of_service(nft, "default/web-other")) == []
    assert lesson.endpoints_in_rules(lesson.rules_of_service(ipvs, "kube-system/kube-dns", "10.96.0.10")) == [
        "10.244.0.2:53", "10.244.2.2:53"]


def test_in_proxy_mode_switches_a_cluster_that_can(capsys):
    with Lab() as lab:
        lab.apply(WEB.replace("replicas: 12", "replicas: 3"))
        lab.apply(web_service())
        assert lesson.in_proxy_mode(lab, "ipvs") is lab
        assert lab.proxy_mode == "ipvs" and capsys.readouterr().out == ""


def test_in_proxy_mode_models_what_a_cluster_cannot_run(tmp_path, monkeypatch, capsys):
    from tests.kind.conftest import embedded_kubeconfig
    monkeypatch.setenv("LABSUPPORT_STATE_DIR", str(tmp_path))
    with Lab(backend="sim", seed=0) as server:
        kube = Lab(backend="kube", kubeconfig=embedded_kubeconfig(server))
        try:
            kube.apply(WEB.replace("replicas: 12", "replicas: 3"))
            kube.apply(web_service())
            kube.wait(lambda l: lesson.ready_count(l, "web") == 3, timeout=60)
            model = lesson.in_proxy_mode(kube, "ipvs")
            try:
                line = capsys.readouterr().out
                assert model is not kube and model.backend_name == "sim" and model.proxy_mode == "ipvs"
                assert line.count("\n") == 1 and "ipvs" in line and "modelled" in line
                assert kube.proxy_mode == "iptables"
                assert len(lesson.rule_endpoints(model, "web")) == 3
                assert model.proxy_rules().startswith("# ipvsadm -Ln")
            finally:
                model.close()
        finally:
            kube.close()
