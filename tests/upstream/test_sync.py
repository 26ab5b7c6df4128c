"""Incremental syncs: after each change the real kube-proxy resyncs (awaited through its metrics) and its rules
still equal labsupport's render."""
from __future__ import annotations

import threading
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


ZONED = """
apiVersion: v1
kind: Service
metadata: {name: zoned}
spec:
  ports: [{port: 80, targetPort: 8080}]
  trafficDistribution: PreferSameZone
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: zoned-1
  labels: {kubernetes.io/service-name: zoned, endpointslice.kubernetes.io/managed-by: test.labsupport.dev}
addressType: IPv4
ports: [{port: 8080, protocol: TCP}]
endpoints:
- {addresses: [10.244.1.10], nodeName: lab-worker, zone: ru-central1-a, hints: {forZones: [{name: ru-central1-a}]}}
- {addresses: [10.244.2.10], nodeName: lab-worker2, zone: ru-central1-b, hints: {forZones: [{name: ru-central1-b}]}}
- {addresses: [10.244.3.10], nodeName: lab-worker3, zone: ru-central1-d, hints: {forZones: [{name: ru-central1-d}]}}
"""
#: How long the Node's watch events are held back from kube-proxy (unless its rules are read first).
HOLD = 3.0


def set_zone(lab, node: str, zone: str | None) -> None:
    """Give a Node a zone label, or take it away (None)."""
    with lab.cluster.lock:
        obj = lab.cluster.get("Node", None, node)
        labels = obj["metadata"].setdefault("labels", {})
        labels.pop("topology.kubernetes.io/zone", None)
        if zone is not None:
            labels["topology.kubernetes.io/zone"] = zone
        lab.cluster.replace(obj)


@pytest.mark.parametrize("mode", ["iptables", "nftables"])
def test_a_zone_kube_proxy_learns_late_is_awaited(kube_proxy_node, mode, monkeypatch):
    # kube-proxy takes its Node's zone from an informer of its own, apart from Services and EndpointSlices: its
    # first sync can come before it (a loaded machine), and a later label change arrives on a watch of its own.
    # Here that watch is slowed: the Node's changes reach kube-proxy only after its rules were read (or HOLD).
    from labsupport.apiserver.watch import Watching
    lab = Lab(backend="sim", seed=0, proxy_mode=mode)
    try:
        lab.apply(ZONED)
        set_zone(lab, "lab-worker", None)
        kp = kube_proxy_node(lab, "lab-worker", mode)
        assert_same_rules(kp, "a node without a zone: every endpoint")
        without_zone = kp.expected()

        released = threading.Event()
        send_event = Watching._send_event

        def slowed(handler, kind, obj):
            if kind == "MODIFIED" and obj.get("kind") == "Node":
                released.wait(30)
            send_event(handler, kind, obj)
        monkeypatch.setattr(Watching, "_send_event", slowed)
        read_rules = kp.kube_proxy.rules

        def rules_then_release():
            try:
                return read_rules()
            finally:
                released.set()
        monkeypatch.setattr(kp.kube_proxy, "rules", rules_then_release)
        timer = threading.Timer(HOLD, released.set)
        timer.start()
        try:
            set_zone(lab, "lab-worker", "ru-central1-a")
            assert kp.expected() != without_zone, "the zone changes nothing labsupport renders: the test tests nothing"
            assert_same_rules(kp, "the node's zone, which kube-proxy learns late")
        finally:
            timer.cancel()
            released.set()
    finally:
        lab.close()


@pytest.mark.parametrize("mode", ["iptables", "nftables"])
def test_a_start_that_lost_its_zone_is_made_again_in_a_new_namespace(kube_proxy_node, mode, monkeypatch):
    # A kube-proxy can lose its Node's zone at start for good (its topology handler is registered after the Node
    # is replayed to it, now and then); here the first start is taken for such a one.
    from labsupport.upstream.kube_proxy import UpstreamKubeProxy
    takes_zone = UpstreamKubeProxy._takes_zone
    namespaces: list[str] = []

    def lost_first(kube_proxy, zone, grace):
        namespaces.append(kube_proxy.ns)
        return len(namespaces) > 1 and takes_zone(kube_proxy, zone, grace)
    monkeypatch.setattr(UpstreamKubeProxy, "_takes_zone", lost_first)
    lab = Lab(backend="sim", seed=0, proxy_mode=mode)
    try:
        lab.apply(ZONED)
        kp = kube_proxy_node(lab, "lab-worker", mode)
        assert "without its Node's zone 'ru-central1-a'" in kp.restarts[0]     # (a later one may lack the CIDRs)
        assert len(set(namespaces)) == len(namespaces) >= 2 and kp.ns == namespaces[-1]
        assert_same_rules(kp, "a kube-proxy started again after losing its zone")
    finally:
        lab.close()


def test_a_start_that_lost_its_zone_in_a_given_namespace_is_made_again_there(monkeypatch):
    # A netns lab's node namespace is given: kube-proxy starts again in it after `kube-proxy --cleanup`.
    from labsupport.netns import namespaces as kernel_ns
    from labsupport.upstream.binaries import require_upstream
    from labsupport.upstream.kube_proxy import UpstreamKubeProxy
    from labsupport.upstream.node import KubeProxyNode
    require_upstream("kube-proxy")
    takes_zone = UpstreamKubeProxy._takes_zone
    calls: list[str] = []

    def lost_first(kube_proxy, zone, grace):
        calls.append(kube_proxy.ns)
        return len(calls) > 1 and takes_zone(kube_proxy, zone, grace)
    monkeypatch.setattr(UpstreamKubeProxy, "_takes_zone", lost_first)
    lab = Lab(backend="sim", seed=0, proxy_mode="nftables")
    run = kernel_ns.new_run_id()
    ns = kernel_ns.ns_name(run, "kp-given")
    kp = None
    try:
        kernel_ns.create_namespace(ns)
        kernel_ns.add_bridge(ns, "eth0", lab.cluster.node_ip("lab-worker"), 16)
        lab.apply(ZONED)
        lab.kubeconfig  # noqa: B018 - starts the API server
        kp = KubeProxyNode(lab.cluster, lab.backend.apiserver(), "lab-worker", "nftables", ns=ns).start()
        assert len(kp.restarts) >= 1 and set(calls) == {ns}
        assert_same_rules(kp, "a kube-proxy started again in its given namespace")
    finally:
        if kp is not None:
            kp.close()
        kernel_ns.remove_namespace(ns)
        kernel_ns.release_run_id(run)
        lab.close()
