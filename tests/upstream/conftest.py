"""Upstream-tier fixtures: the real kube-proxy (and CoreDNS) against the embedded API server, in namespaces of ours."""
from __future__ import annotations

import os

import pytest

from labsupport.upstream.binaries import require_upstream


def own_leftovers() -> list[str]:
    """Namespaces of this process that the tests did not remove."""
    from labsupport.netns.namespaces import list_namespaces
    return list_namespaces(f"lsk-{os.getpid()}-")


@pytest.fixture(scope="session", autouse=True)
def nothing_left_behind():
    """After the tier: no namespace of ours remains."""
    yield
    if os.geteuid() != 0:
        return
    assert not own_leftovers(), f"the upstream tests left these namespaces behind: {own_leftovers()}"


@pytest.fixture
def kube_proxy_node():
    """Start the real kube-proxy for a lab's node: `start(lab, node, mode)`; all are closed after the test."""
    require_upstream("kube-proxy")
    from labsupport.upstream.node import KubeProxyNode
    started: list[KubeProxyNode] = []

    def start(lab, node: str = "lab-worker", mode: str = "iptables") -> KubeProxyNode:
        lab.kubeconfig  # noqa: B018 - starts the API server
        kp = KubeProxyNode(lab.cluster, lab.backend.apiserver(), node, mode)
        started.append(kp)
        return kp.start()

    yield start
    for kp in started:
        kp.close()


def assert_same_rules(kp, what: str) -> None:
    """The real kube-proxy's rules equal labsupport's render for the same objects; the first differences if not,
    and no list/watch trouble in its log."""
    from labsupport.upstream.compare import first_differences
    kp.sync(0.0)
    expected, actual = kp.expected(), kp.actual()
    diff = first_differences(expected, actual)
    assert not diff, f"{what} ({kp.mode}, node {kp.node}): labsupport's render differs from the real kube-proxy:\n{diff}"
    problems = kp.kube_proxy.log_problems()
    assert not problems, f"kube-proxy reported list/watch problems:\n" + "\n".join(problems[:20])
