"""Incremental syncs: after each change the real kube-proxy resyncs (awaited through its metrics) and its rules
still equal labsupport's render."""
from __future__ import annotations

import time

import pytest

from labsupport import Lab

from tests.kernel.manifests import echo, ready

from .conftest import assert_same_rules

pytestmark = pytest.mark.upstream

READINESS = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: probed}
spec:
  replicas: 2
  selector: {matchLabels: {app: probed}}
  template:
    metadata: {labels: {app: probed}}
    spec:
      containers:
      - name: nginx
        image: nginx:1.27
        ports: [{containerPort: 80}]
        readinessProbe: {httpGet: {path: /, port: 80}, periodSeconds: 1, failureThreshold: 1}
---
apiVersion: v1
kind: Service
metadata: {name: probed}
spec:
  selector: {app: probed}
  ports: [{port: 80}]
"""


def changed(lab, kp, change, settle) -> None:
    """Make a change, let the cluster settle, wait for kube-proxy's sync after it, compare."""
    since = time.time()
    change()
    lab.wait(settle, timeout=120)
    kp.sync(since)
    assert_same_rules(kp, f"after {change.__doc__}")


@pytest.mark.parametrize("mode", ["iptables", "nftables"])
def test_changes_resync(kube_proxy_node, mode):
    lab = Lab(backend="sim", seed=1, proxy_mode=mode)
    try:
        lab.apply(echo("web", 3, policy="Cluster"))
        lab.apply(READINESS)
        lab.wait(lambda l: ready(l, "web") == 3 and ready(l, "probed") == 2, timeout=120)
        kp = kube_proxy_node(lab, "lab-worker", mode)
        assert_same_rules(kp, "the first sync")

        def scale_up():
            """scaling web to 5"""
            lab.scale("web", 5)
        changed(lab, kp, scale_up, lambda l: ready(l, "web") == 5)

        def delete_pod():
            """deleting a web pod"""
            lab.delete("pod", lab.get("pods", selector="app=web")[0]["metadata"]["name"])
        changed(lab, kp, delete_pod, lambda l: ready(l, "web") == 5 and len(l.get("pods", selector="app=web")) == 5)

        def unready():
            """a readiness flip (one of probed's pods stops passing its probe)"""
            pod = lab.get("pods", selector="app=probed")[0]["metadata"]["name"]
            assert lab.exec(pod, ["rm", "/usr/share/nginx/html/index.html"]).code == 0
        changed(lab, kp, unready, lambda l: ready(l, "probed") == 1)

        def local_policy():
            """switching web to externalTrafficPolicy: Local"""
            svc = lab.get("svc", "web")
            svc["spec"]["externalTrafficPolicy"] = "Local"
            lab.apply(svc)
        changed(lab, kp, local_policy, lambda l: l.get("svc", "web")["spec"]["externalTrafficPolicy"] == "Local")
    finally:
        lab.close()
