"""The kind tier: the lesson's five exercises on a real kind cluster, plus what only real nodes show.

One cluster serves the whole tier (`kind_cluster` in conftest.py: a control plane and six workers, created or
reused, deleted at the end unless LABSUPPORT_KIND_KEEP=1); each test works in a namespace of its own. The tier runs
under CI, where it fails when Docker, kind or the node image are missing, and on a laptop when opted in
(LABSUPPORT_KIND_TESTS=1; `make kind-images` first where no registry is reachable).
LABSUPPORT_KIND_MODE picks kube-proxy's mode (default nftables).
"""
from __future__ import annotations

import os

import pytest

from labsupport import Lab
from labsupport import tool_output
from labsupport.errors import NotFound, ProxyModeUnavailable
from labsupport.kind import images
from tests.kind import lesson
from tests.kind.conftest import KIND_CLUSTER, KIND_MODE, KIND_WORKERS

pytestmark = pytest.mark.kind


def test_cluster_shape(kind_cluster):
    nodes = kind_cluster.get("nodes")
    assert len(nodes) == 1 + KIND_WORKERS
    assert all(any(c["type"] == "Ready" and c["status"] == "True" for c in n["status"]["conditions"]) for n in nodes)
    assert kind_cluster.proxy_mode == KIND_MODE
    if kind_cluster.backend.kind_cluster.image == images.NODE_IMAGE:
        assert {n["status"]["nodeInfo"]["kubeletVersion"] for n in nodes} == {images.KUBERNETES_VERSION}


def test_the_first_deployment_spreads_over_the_workers_as_on_sim(kind_ns):
    """Lab(backend="kind") returns once every worker is Ready, so a Deployment's replicas spread over them as the
    embedded cluster spreads them (not all onto the first worker to be Ready)."""
    with Lab(backend="sim", seed=0) as sim:
        lesson.exercise_1(sim)
        on_sim = {p["spec"]["nodeName"] for p in lesson.running_pods(sim, "web")}
    lesson.exercise_1(kind_ns)
    on_kind = {p["spec"]["nodeName"] for p in lesson.running_pods(kind_ns, "web")}
    assert len(on_sim) == 3 and len(on_kind) == 3, (on_sim, on_kind)
    assert not any(n.endswith("-control-plane") for n in on_kind)


def test_five_exercises(kind_ns):
    addresses = lesson.exercise_1(kind_ns)
    assert len(addresses) == 3
    terminating = lesson.exercise_2(kind_ns)
    assert terminating["conditions"]["terminating"] is True
    answer = lesson.exercise_3(kind_ns)
    # Debian bookworm's nslookup (in the dnsutils image built here) warns ";; Got recursion not available" first
    assert "Server:\t\t10.96.0.10" in answer.text and len(answer.addresses) == 3
    node_port = lesson.exercise_4(kind_ns)
    worker = next(n for n in kind_ns.get("nodes") if n["metadata"]["name"].endswith("-worker"))
    ip = next(a["address"] for a in worker["status"]["addresses"] if a["type"] == "InternalIP")
    # a real kube-proxy writes the new NodePort's rules within its sync period, not at once as sim does
    replies = []
    kind_ns.wait(lambda l: replies.append(l.curl(f"http://{ip}:{node_port}/")) or replies[-1].ok, timeout=30)
    outside = replies[-1]
    assert "Welcome to nginx!" in outside.body and outside.pod, outside
    before, after = lesson.exercise_5(kind_ns)
    assert before != after


def test_real_rules_name_the_service(kind_ns):
    kind_ns.apply(lesson.WEB)
    kind_ns.wait(lambda l: lesson.ready(l, "web") == 3, timeout=180)
    vip = kind_ns.get("svc", "web")["spec"]["clusterIP"]
    rules = kind_ns.proxy_rules()
    assert vip in rules
    if KIND_MODE == "nftables":
        assert rules.startswith("table ip kube-proxy")
    # a real kube-proxy writes a new Service's rules within its sync period
    kind_ns.wait(lambda l: l.curl(f"http://{vip}/", source=f"node/{KIND_CLUSTER}-worker").ok, timeout=30)
    trace = kind_ns.trace(f"http://{vip}/", source=f"node/{KIND_CLUSTER}-worker")
    assert trace.result.ok and trace.result.pod
    assert any(r.startswith("DNAT") for r in trace.rewrites), trace.text()
    assert all(tool_output.parse_conntrack_line(line) for line in kind_ns.conntrack())


def test_ipvs_on_a_kernel_without_it_is_refused_and_kube_proxy_keeps_its_mode(kind_cluster):
    backend = kind_cluster.backend
    reason = backend.ipvs_problem()
    if reason is None:
        pytest.skip("this host's kernel has IPVS: switching would change the shared cluster's mode")
    config = kind_cluster.get("configmap", "kube-proxy", namespace="kube-system")
    with pytest.raises(ProxyModeUnavailable) as refused:
        kind_cluster.set_proxy_mode("ipvs")
    assert refused.value.reason == reason and os.uname().release in reason
    assert f"stays in {KIND_MODE} mode" in str(refused.value)
    after = kind_cluster.get("configmap", "kube-proxy", namespace="kube-system")
    assert after["data"] == config["data"] and after["metadata"]["resourceVersion"] == config["metadata"][
        "resourceVersion"]
    assert kind_cluster.proxy_mode == KIND_MODE


def test_embedded_node_names_in_a_manifest_land_on_the_kind_node(kind_ns):
    kind_ns.apply("""
apiVersion: v1
kind: Pod
metadata: {name: pinned}
spec:
  nodeName: lab-worker
  containers: [{name: c, image: "busybox:1.36", command: [sleep, "3600"]}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: near}
spec:
  replicas: 2
  selector: {matchLabels: {app: near}}
  template:
    metadata: {labels: {app: near}}
    spec:
      nodeSelector: {kubernetes.io/hostname: lab-worker}
      containers: [{name: c, image: "busybox:1.36", command: [sleep, "3600"]}]
""")
    kind_ns.wait(lambda l: len(lesson.running_pods(l, "near")) == 2
                 and l.get("pod", "pinned")["status"].get("phase") == "Running", timeout=180)
    placed = {p["spec"]["nodeName"] for p in kind_ns.get("pods")}
    assert placed == {f"{KIND_CLUSTER}-worker"}, placed


def test_kube_backend_on_the_real_cluster_a_namespace_per_student(kind_cluster):
    for name in ("alice", "bob"):
        kind_cluster.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": f"lab-{name}"}})
    config = kind_cluster.kubeconfig
    try:
        with Lab(backend="kube", kubeconfig=config, namespace="lab-alice") as alice, \
                Lab(backend="kube", kubeconfig=config, namespace="lab-bob") as bob:
            addresses = lesson.exercise_1(alice)
            assert len(addresses) == 3
            svc = alice.get("svc", "web")
            assert svc["metadata"]["namespace"] == "lab-alice"
            with pytest.raises(NotFound):
                bob.get("svc", "web")
            listed = alice.kubectl("get svc -o name", show=False)
            assert listed.stdout.split() == ["service/web"], listed
            assert alice.nslookup("web").addresses == [svc["spec"]["clusterIP"]]
            lesson.exercise_2(alice)
    finally:
        for name in ("alice", "bob"):
            kind_cluster.delete("namespaces", f"lab-{name}", namespace=None)
