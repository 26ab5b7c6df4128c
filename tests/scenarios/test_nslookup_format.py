"""`lab.nslookup(name, pod=…)` prints what `kubectl exec <pod> -- nslookup <name>` prints: the pod's own image's
nslookup (busybox's in a busybox pod, BIND's in a dnsutils pod)."""
from __future__ import annotations

import pytest

from labsupport import Lab
from tests.conftest import WEB

CLIENTS = """
apiVersion: v1
kind: Pod
metadata: {name: bb}
spec:
  containers: [{name: bb, image: "busybox:1.36", command: [sleep, "3600"]}]
---
apiVersion: v1
kind: Pod
metadata: {name: dnsutils}
spec:
  containers: [{name: dnsutils, image: "registry.k8s.io/e2e-test-images/jessie-dnsutils:1.3",
                command: [sleep, "3600"]}]
"""


@pytest.fixture(scope="module")
def lab():
    with Lab(seed=0) as lab:
        lab.apply(WEB)
        lab.apply(CLIENTS)
        lab.wait(lambda l: all(p["status"].get("phase") == "Running" for p in l.get("pods")))
        yield lab


@pytest.mark.parametrize("pod,marker", [("bb", "Address:\t10.96.0.10:53"), ("dnsutils", "Address:\t10.96.0.10#53")])
@pytest.mark.parametrize("name", ["web", "nope"])
def test_the_pod_answers_in_its_own_images_format_both_ways(lab, pod, marker, name):
    answer = lab.nslookup(name, pod=pod)
    shown = lab.kubectl(f"exec {pod} -- nslookup {name}", show=False)
    assert answer.text == shown.stdout, (answer.text, shown.stdout)
    assert marker in answer.text


def test_the_answer_is_read_from_busyboxs_text(lab):
    web = lab.get("svc", "web")["spec"]["clusterIP"]
    answer = lab.nslookup("web", pod="pod/default/bb")
    assert answer.addresses == [web] and answer.rcode == "NOERROR"
    assert "** server can't find web.svc.cluster.local: NXDOMAIN" in answer.text
    missing = lab.nslookup("nope", pod="bb")
    assert missing.addresses == [] and missing.rcode == "NXDOMAIN"
