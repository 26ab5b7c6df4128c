"""Endpoint selection: readiness, terminating fallback, traffic policies and topology hints."""
from __future__ import annotations

from labsupport.proxy.topology import Endpoint, ServicePort, categorize, slice_endpoints

from .fixtures import endpoint, endpointslice

CLUSTER = ServicePort("ns", "web", "http", "tcp", 80, "10.96.0.5")
INTERNAL_LOCAL = ServicePort("ns", "web", "http", "tcp", 80, "10.96.0.5", internal_local=True)
EXTERNAL_LOCAL = ServicePort("ns", "web", "http", "tcp", 80, "10.96.0.5", node_port=30080, external_local=True)


def eps(*items: dict) -> tuple[Endpoint, ...]:
    """Endpoints from endpoint dicts, as the renderers see them."""
    sl = endpointslice("ns", "web", list(items), [{"name": "http", "port": 80, "protocol": "TCP"}])
    return slice_endpoints([sl])[("http", "tcp")]


def keys(endpoints) -> list[str]:
    """ip:port of each endpoint."""
    return [e.key for e in endpoints]


def test_sorted_by_string_and_deduplicated():
    got = eps(endpoint("10.0.0.2"), endpoint("10.0.0.10"), endpoint("10.0.0.2"))
    assert keys(got) == ["10.0.0.10:80", "10.0.0.2:80"]


def test_ready_only_then_serving_terminating_fallback():
    sel = categorize(CLUSTER, eps(endpoint("10.0.0.1"), endpoint("10.0.0.2", ready=False)), "n1")
    assert keys(sel.cluster) == ["10.0.0.1:80"] and sel.has_endpoints
    sel = categorize(CLUSTER, eps(endpoint("10.0.0.1", ready=False, serving=True, terminating=True),
                                  endpoint("10.0.0.2", ready=False, serving=False, terminating=True)), "n1")
    assert keys(sel.cluster) == ["10.0.0.1:80"]
    sel = categorize(CLUSTER, eps(endpoint("10.0.0.2", ready=False, serving=False, terminating=True)), "n1")
    assert not sel.has_endpoints and sel.cluster == ()


def test_unset_conditions_count_as_ready():
    sel = categorize(CLUSTER, eps(endpoint("10.0.0.1")), "n1")
    assert sel.cluster[0].ready and sel.cluster[0].serving and not sel.cluster[0].terminating


def test_internal_local_uses_only_local_endpoints():
    sel = categorize(INTERNAL_LOCAL, eps(endpoint("10.0.0.1", node="n1"), endpoint("10.0.0.2", node="n2")), "n1")
    assert keys(sel.local) == ["10.0.0.1:80"] and sel.cluster == () and keys(sel.reachable) == ["10.0.0.1:80"]
    sel = categorize(INTERNAL_LOCAL, eps(endpoint("10.0.0.2", node="n2")), "n1")
    assert sel.local == () and sel.has_endpoints


def test_external_local_keeps_cluster_set_for_short_circuit():
    sel = categorize(EXTERNAL_LOCAL, eps(endpoint("10.0.0.1", node="n1"), endpoint("10.0.0.2", node="n2")), "n1")
    assert keys(sel.cluster) == ["10.0.0.1:80", "10.0.0.2:80"]
    assert keys(sel.local) == ["10.0.0.1:80"]


def test_local_terminating_fallback():
    sel = categorize(EXTERNAL_LOCAL, eps(endpoint("10.0.0.1", node="n1", ready=False, serving=True, terminating=True),
                                         endpoint("10.0.0.2", node="n2")), "n1")
    assert keys(sel.local) == ["10.0.0.1:80"]
    assert keys(sel.reachable) == ["10.0.0.1:80", "10.0.0.2:80"]


def test_endpoint_without_node_name_is_never_local():
    sel = categorize(INTERNAL_LOCAL, eps(endpoint("10.0.0.1")), "")
    assert sel.local == ()


def test_zone_hints_filter_when_all_ready_endpoints_hinted():
    items = (endpoint("10.0.0.1", zone="a", for_zones=["a"]), endpoint("10.0.0.2", zone="b", for_zones=["b"]))
    assert keys(categorize(CLUSTER, eps(*items), "n1", "a").cluster) == ["10.0.0.1:80"]
    # a zone nobody is hinted for: no filtering
    assert len(categorize(CLUSTER, eps(*items), "n1", "c").cluster) == 2
    # one ready endpoint without hints: no filtering
    items2 = items + (endpoint("10.0.0.3"),)
    assert len(categorize(CLUSTER, eps(*items2), "n1", "a").cluster) == 3


def test_node_hints_prefer_same_node():
    items = (endpoint("10.0.0.1", node="n1", for_zones=["a"], for_nodes=["n1"]),
             endpoint("10.0.0.2", node="n2", for_zones=["a"], for_nodes=["n2"]))
    assert keys(categorize(CLUSTER, eps(*items), "n1", "a").cluster) == ["10.0.0.1:80"]
    assert len(categorize(CLUSTER, eps(*items), "n3", "a").cluster) == 2


def test_hints_never_applied_to_local_endpoints():
    items = (endpoint("10.0.0.1", node="n1", for_zones=["b"]), endpoint("10.0.0.2", node="n2", for_zones=["a"]))
    sel = categorize(EXTERNAL_LOCAL, eps(*items), "n1", "a")
    assert keys(sel.cluster) == ["10.0.0.2:80"]
    assert keys(sel.local) == ["10.0.0.1:80"]
    assert keys(sel.reachable) == ["10.0.0.1:80", "10.0.0.2:80"]
