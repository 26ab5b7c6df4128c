"""`Lab(backend="netns", kube_proxy="upstream")`: the real kube-proxy programs every node namespace, and the kernel
differential scenarios give the same traffic outcomes as with labsupport's rules (the model, `sim`)."""
from __future__ import annotations

import pytest

from labsupport import Lab
from labsupport.testing import require_kernel
from labsupport.upstream.binaries import require_upstream

from tests.kernel import test_differential as differential
from tests.kernel.test_differential import (  # noqa: F401  (collected here, against the fixture below)
    test_external_ip, test_hairpin_a_pod_reaches_itself_through_its_service, test_internal_traffic_policy_local_stays_on_the_node,
    test_load_balancer_source_ranges, test_load_balancer_with_local_policy, test_local_nodeport_from_a_pod_via_another_node,
    test_local_nodeport_from_a_pod_via_its_own_node, test_local_nodeport_from_each_node_itself, test_local_policy,
    test_no_endpoints_is_refused, test_nodeport_cluster_policy, test_nodeport_without_endpoints_is_refused,
    test_pod_to_a_local_load_balancer_ip_bypasses_the_policy, test_pod_to_service_keeps_the_pod_ip,
    test_prefer_close_stays_in_the_zone, test_same_cluster_shape, test_session_affinity,
    test_target_port_mismatch_is_refused, test_unallocated_cluster_ip_and_unserved_port)

from .conftest import assert_same_rules

pytestmark = pytest.mark.upstream


def upstream_lab(mode: str, seed: int = 0) -> Lab:
    """A netns Lab whose nodes run the real kube-proxy."""
    require_upstream("kube-proxy")
    require_kernel("nft", "iptables-restore", "conntrack", "curl")
    lab = Lab(backend="netns", seed=seed, proxy_mode=mode, kube_proxy="upstream")
    lab.backend.network.curl_timeout = 2
    return lab


@pytest.fixture(scope="module", params=["iptables", "nftables"])
def labs(request):
    """(sim with labsupport's rules, netns with the real kube-proxy): same seed, mode and scenarios."""
    sim = Lab(backend="sim", seed=0, proxy_mode=request.param)
    try:
        real = upstream_lab(request.param)
    except BaseException:
        sim.close()
        raise
    try:
        yield differential.build(sim), differential.build(real)
        problems = real.backend.upstream.log_problems()
        assert not any(problems.values()), f"kube-proxy reported list/watch problems: {problems}"
    finally:
        real.close()
        sim.close()


def test_proxy_rules_are_what_the_real_kube_proxy_wrote():
    lab = upstream_lab("iptables")
    try:
        lab.apply(differential.SCENARIOS[0])
        lab.wait(lambda l: differential.ready(l, "cluster") == 3, timeout=120)
        shown = lab.proxy_rules("lab-worker")
        assert "KUBE-PROXY-CANARY" in shown   # written by the real kube-proxy only
        assert '"default/cluster cluster IP"' in shown
        assert_same_rules(lab.backend.upstream.nodes["lab-worker"], "the netns backend's node")
    finally:
        lab.close()


def test_a_kube_proxy_started_again_writes_its_rules_as_a_first_start(monkeypatch):
    # A start that lost its Node's zone (now and then, on a busy machine) is stopped and made again after
    # `kube-proxy --cleanup` in the node's namespace. --cleanup leaves the KUBE-FIREWALL jumps kube-proxy makes for
    # the kubelet, and the new start's jumps then came back above them, in another order than a first start's.
    # Here every node loses its first start.
    from labsupport.upstream import node as node_module
    from labsupport.upstream.kube_proxy import ZoneLost
    real_start = node_module.KubeProxyNode._start
    lost: set[str] = set()

    def start_lost_once(self):
        started = real_start(self)
        if self.node not in lost:
            lost.add(self.node)
            started.close()
            raise ZoneLost(f"kube-proxy on {self.node}: the test took its first start away")
        return started

    monkeypatch.setattr(node_module.KubeProxyNode, "_start", start_lost_once)
    lab = upstream_lab("iptables")
    try:
        nodes = lab.backend.upstream.nodes
        assert all(node.restarts for node in nodes.values()), {name: node.restarts for name, node in nodes.items()}
        lab.apply(differential.SCENARIOS[0])
        lab.wait(lambda l: differential.ready(l, "cluster") == 3, timeout=120)
        assert_same_rules(nodes["lab-worker"], "a node whose kube-proxy was started again")
    finally:
        lab.close()


def test_upstream_needs_the_netns_backend():
    from labsupport.errors import BackendUnavailable
    with pytest.raises(BackendUnavailable, match='backend="netns"'):
        Lab(backend="sim", kube_proxy="upstream")
