"""The opt-in kind tier: the lesson's five exercises on a real kind cluster, plus what only real nodes show.

Runs only with LABSUPPORT_KIND_TESTS=1 on a machine with a Docker engine and kind (see .github/workflows/kind.yml).
Everywhere else every test here skips and says why — also under CI=true, since the tier is opt-in.
LABSUPPORT_KIND_MODE picks kube-proxy's mode (default nftables); LABSUPPORT_KIND_KEEP=1 keeps the cluster.
"""
from __future__ import annotations

import os

import pytest

from labsupport import Lab
from labsupport import tool_output
from labsupport.kind import parse, preflight
from tests.kind import lesson

pytestmark = pytest.mark.kind

MODE = os.environ.get("LABSUPPORT_KIND_MODE", "nftables")
CLUSTER = os.environ.get("LABSUPPORT_KIND_CLUSTER", "labsupport-test")


def kind_tier_skip_reason(mode: str = MODE) -> str | None:
    """Why the kind tier does not run here, or None when it does."""
    if os.environ.get("LABSUPPORT_KIND_TESTS") != "1":
        return "the kind tier is opt-in: set LABSUPPORT_KIND_TESTS=1 (it needs a Docker engine and kind)"
    found = preflight.problems(mode)
    if found:
        return "the kind tier needs a Docker engine and kind: " + "; ".join(found)
    return None


@pytest.fixture(scope="module")
def kind():
    """A real kind cluster for this module (created or reused), deleted at the end unless LABSUPPORT_KIND_KEEP=1."""
    reason = kind_tier_skip_reason()
    if reason:
        pytest.skip(reason)
    lab = Lab(backend="kind", proxy_mode=MODE, name=CLUSTER)
    try:
        yield lab
    finally:
        if os.environ.get("LABSUPPORT_KIND_KEEP") == "1":
            lab.close()
        else:
            lab.backend.delete_cluster()


def test_the_reason_to_skip_is_said():
    reason = kind_tier_skip_reason()
    if reason is None:
        return
    assert reason.startswith("the kind tier")
    pytest.skip(reason)


def test_cluster_shape(kind):
    nodes = kind.get("nodes")
    assert len(nodes) == 4
    zones = sorted(n["metadata"]["labels"].get("topology.kubernetes.io/zone") for n in nodes)
    assert zones == ["ru-central1-a", "ru-central1-a", "ru-central1-b", "ru-central1-d"]
    assert kind.proxy_mode == MODE


def test_five_exercises(kind):
    lesson.exercise_1(kind)
    lesson.exercise_2(kind)
    answer = lesson.exercise_3(kind)
    assert answer.text.startswith("Server:")
    node_port = lesson.exercise_4(kind)
    worker = next(n for n in kind.get("nodes") if n["metadata"]["name"].endswith("-worker"))
    ip = next(a["address"] for a in worker["status"]["addresses"] if a["type"] == "InternalIP")
    result = kind.curl(f"http://{ip}:{node_port}/")
    assert result.ok and "nginx" in result.body and result.pod, result
    before, after = lesson.exercise_5(kind)
    assert before != after


def test_real_rules_name_the_service(kind):
    kind.apply(lesson.WEB)
    kind.wait(lambda l: lesson.ready(l, "web") == 3, timeout=180)
    vip = kind.get("svc", "web")["spec"]["clusterIP"]
    rules = kind.proxy_rules()
    assert vip in rules
    if MODE == "nftables":
        assert rules.startswith("table ip kube-proxy")
    trace = kind.trace(f"http://{vip}/", source=f"node/{CLUSTER}-worker")
    assert trace.result.ok and trace.result.pod
    assert any(r.startswith("DNAT") for r in trace.rewrites), trace.text()
    assert all(tool_output.parse_conntrack_line(line) for line in kind.conntrack())
