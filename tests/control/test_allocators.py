"""ClusterIP and NodePort allocation with the API server's exact messages."""
import random

import pytest

from labsupport.control.allocators import ServiceAllocator, cluster_ip_static_band, node_port_static_band
from labsupport.errors import InternalError, Invalid


def svc(name="web", **spec):
    spec.setdefault("ports", [{"port": 80, "protocol": "TCP"}])
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": "default"}, "spec": spec}


@pytest.fixture
def alloc():
    a = ServiceAllocator(rng=random.Random(0))
    a.allocate(svc("kubernetes", clusterIP="10.96.0.1", ports=[{"port": 443, "protocol": "TCP"}]))
    a.allocate({"metadata": {"name": "kube-dns", "namespace": "kube-system"},
                "spec": {"clusterIP": "10.96.0.10", "ports": [{"port": 53, "protocol": "UDP"}]}})
    return a


def test_bands():
    assert cluster_ip_static_band(2 ** 20) == 256
    assert cluster_ip_static_band(256) == 16
    assert node_port_static_band(2768) == 86


def test_dynamic_cluster_ip_above_static_band(alloc):
    out = alloc.allocate(svc())
    ip = out["spec"]["clusterIP"]
    assert out["spec"]["clusterIPs"] == [ip]
    offset = int.from_bytes(bytes(int(x) for x in ip.split(".")), "big") - int.from_bytes(bytes([10, 96, 0, 1]), "big")
    assert 256 <= offset < 2 ** 20 - 2


def test_deterministic_with_seed():
    first = ServiceAllocator(rng=random.Random(7)).allocate(svc(type="NodePort"))
    second = ServiceAllocator(rng=random.Random(7)).allocate(svc(type="NodePort"))
    assert first == second


def test_input_not_mutated(alloc):
    obj = svc(type="NodePort")
    alloc.allocate(obj)
    assert "clusterIP" not in obj["spec"] and "nodePort" not in obj["spec"]["ports"][0]


def test_cluster_ip_already_allocated(alloc):
    before = alloc.used()
    with pytest.raises(Invalid) as err:
        alloc.allocate(svc(clusterIP="10.96.0.10", type="NodePort"))
    assert str(err.value) == ('The Service "web" is invalid: spec.clusterIPs: Invalid value: []string{"10.96.0.10"}: '
                              'failed to allocate IP 10.96.0.10: provided IP is already allocated')
    assert alloc.used() == before


def test_cluster_ip_out_of_range(alloc):
    with pytest.raises(Invalid) as err:
        alloc.allocate(svc(clusterIP="10.0.0.10"))
    assert str(err.value) == ('The Service "web" is invalid: spec.clusterIPs: Invalid value: []string{"10.0.0.10"}: '
                              'failed to allocate IP 10.0.0.10: provided IP is not in the valid range. The range of '
                              'valid IPs is 10.96.0.0/12')


def test_user_chosen_values_honoured(alloc):
    out = alloc.allocate(svc(clusterIP="10.96.0.50", type="NodePort",
                             ports=[{"port": 80, "protocol": "TCP", "nodePort": 30080}]))
    assert out["spec"]["clusterIP"] == "10.96.0.50"
    assert out["spec"]["ports"][0]["nodePort"] == 30080
    assert alloc.port_owner(30080) == "default/web"
    assert alloc.ip_owner("10.96.0.50") == "default/web"


def test_node_port_already_allocated_is_transactional(alloc):
    alloc.allocate(svc("other", type="NodePort", ports=[{"port": 80, "protocol": "TCP", "nodePort": 30080}]))
    before = alloc.used()
    with pytest.raises(Invalid) as err:
        alloc.allocate(svc(type="NodePort", ports=[{"name": "a", "port": 81, "protocol": "TCP"},
                                                   {"name": "b", "port": 80, "protocol": "TCP", "nodePort": 30080}]))
    assert str(err.value) == ('The Service "web" is invalid: spec.ports[1].nodePort: Invalid value: 30080: '
                              'provided port is already allocated')
    assert alloc.used() == before


def test_node_port_out_of_range(alloc):
    with pytest.raises(Invalid) as err:
        alloc.allocate(svc(type="NodePort", ports=[{"port": 80, "protocol": "TCP", "nodePort": 29999}]))
    assert str(err.value) == ('The Service "web" is invalid: spec.ports[0].nodePort: Invalid value: 29999: provided '
                              'port is not in the valid range. The range of valid ports is 30000-32767')
    assert err.value.errors[0].cause()["field"] == "spec.ports[0].nodePort"


def test_dynamic_node_ports_from_upper_band(alloc):
    for i in range(20):
        out = alloc.allocate(svc(f"s{i}", type="NodePort"))
        assert 30086 <= out["spec"]["ports"][0]["nodePort"] <= 32767
    info = alloc.used()["nodePorts"]
    assert info["used"] == 20 and info["static_used"] == 0 and info["static_band"] == 86
    assert info["range"] == "30000-32767" and info["size"] == 2768


def test_tcp_and_udp_share_one_node_port(alloc):
    out = alloc.allocate(svc("dns", type="NodePort", ports=[{"name": "dns", "port": 53, "protocol": "UDP"},
                                                            {"name": "dns-tcp", "port": 53, "protocol": "TCP"}]))
    ports = out["spec"]["ports"]
    assert ports[0]["nodePort"] == ports[1]["nodePort"]
    assert alloc.used()["nodePorts"]["used"] == 1


def test_health_check_node_port(alloc):
    out = alloc.allocate(svc("lb", type="LoadBalancer", externalTrafficPolicy="Local",
                             allocateLoadBalancerNodePorts=True))
    assert 30000 <= out["spec"]["healthCheckNodePort"] <= 32767
    assert alloc.used()["nodePorts"]["used"] == 2
    alloc.allocate(svc("np", type="NodePort", ports=[{"port": 80, "protocol": "TCP", "nodePort": 30081}]))
    before = alloc.used()
    with pytest.raises(InternalError) as err:
        alloc.allocate(svc(type="LoadBalancer", externalTrafficPolicy="Local", healthCheckNodePort=30081))
    assert err.value.message == ("Internal error occurred: failed to allocate requested HealthCheck NodePort 30081: "
                                 "provided port is already allocated")
    assert alloc.used() == before


def test_load_balancer_without_node_ports(alloc):
    out = alloc.allocate(svc("lb", type="LoadBalancer", allocateLoadBalancerNodePorts=False))
    assert "nodePort" not in out["spec"]["ports"][0]


def test_headless_and_external_name_get_no_ip(alloc):
    out = alloc.allocate(svc("db", clusterIP="None"))
    assert out["spec"]["clusterIP"] == "None" and out["spec"]["clusterIPs"] == ["None"]
    out = alloc.allocate(svc("ext", type="ExternalName", externalName="example.com"))
    assert "clusterIP" not in out["spec"]
    assert alloc.used()["clusterIPs"]["used"] == 2


def test_type_changes_on_update(alloc):
    v1 = alloc.allocate(svc())
    ip = v1["spec"]["clusterIP"]
    assert alloc.used()["nodePorts"]["used"] == 0
    update = svc(type="NodePort")
    v2 = alloc.allocate(update, old=v1)
    assert v2["spec"]["clusterIP"] == ip and v2["spec"]["clusterIPs"] == [ip]
    node_port = v2["spec"]["ports"][0]["nodePort"]
    assert alloc.port_owner(node_port) == "default/web"
    v3 = alloc.allocate(svc(type="NodePort"), old=v2)
    assert v3["spec"]["ports"][0]["nodePort"] == node_port
    back = svc(type="ClusterIP", clusterIP=ip, ports=[dict(v2["spec"]["ports"][0])])
    v4 = alloc.allocate(back, old=v3)
    assert "nodePort" not in v4["spec"]["ports"][0]
    assert alloc.used()["nodePorts"]["used"] == 0
    assert alloc.ip_owner(ip) == "default/web"


def test_update_adds_a_port(alloc):
    v1 = alloc.allocate(svc(type="NodePort", ports=[{"name": "http", "port": 80, "protocol": "TCP"}]))
    v2 = alloc.allocate(svc(type="NodePort", ports=[{"name": "http", "port": 80, "protocol": "TCP"},
                                                    {"name": "https", "port": 443, "protocol": "TCP"}]), old=v1)
    assert v2["spec"]["ports"][0]["nodePort"] == v1["spec"]["ports"][0]["nodePort"]
    assert alloc.used()["nodePorts"]["used"] == 2


def test_release(alloc):
    out = alloc.allocate(svc(type="LoadBalancer", externalTrafficPolicy="Local"))
    assert alloc.used()["nodePorts"]["used"] == 2
    alloc.release(out)
    assert alloc.used()["nodePorts"]["used"] == 0
    assert alloc.ip_owner(out["spec"]["clusterIP"]) is None
    assert alloc.used()["clusterIPs"]["used"] == 2


def test_full_node_port_range():
    a = ServiceAllocator(node_port_range=(30000, 30002), rng=random.Random(1))
    for i in range(3):
        a.allocate(svc(f"s{i}", type="NodePort"))
    before = a.used()
    with pytest.raises(InternalError) as err:
        a.allocate(svc(type="NodePort"))
    assert err.value.message == "Internal error occurred: failed to allocate a nodePort: range is full"
    assert a.used() == before
    assert before["nodePorts"]["free"] == 0


def test_full_cluster_ip_range():
    a = ServiceAllocator(service_cidr="10.0.0.0/30", rng=random.Random(1))
    a.allocate(svc("a"))
    a.allocate(svc("b"))
    with pytest.raises(InternalError) as err:
        a.allocate(svc("c"))
    assert err.value.message == "Internal error occurred: failed to allocate a serviceIP: range is full"


def test_static_band_used_when_dynamic_full():
    a = ServiceAllocator(node_port_range=(30000, 30031), rng=random.Random(3))
    got = sorted(a.allocate(svc(f"s{i}", type="NodePort"))["spec"]["ports"][0]["nodePort"] for i in range(32))
    assert got == list(range(30000, 30032))
    assert a.used()["nodePorts"]["static_band"] == 16


def test_copy_is_independent(alloc):
    twin = alloc.copy()
    out = twin.allocate(svc(type="NodePort"))
    assert alloc.used()["nodePorts"]["used"] == 0 and twin.used()["nodePorts"]["used"] == 1
    assert alloc.allocate(svc(type="NodePort")) == out


def test_replace_without_allocated_fields_keeps_them(alloc):
    v1 = alloc.allocate(svc(type="LoadBalancer", externalTrafficPolicy="Local",
                            ports=[{"name": "http", "port": 80, "protocol": "TCP"}]))
    v2 = alloc.allocate(svc(type="LoadBalancer", externalTrafficPolicy="Local",
                            ports=[{"name": "http", "port": 80, "protocol": "TCP"}]), old=v1)
    assert v2["spec"]["clusterIP"] == v1["spec"]["clusterIP"]
    assert v2["spec"]["ports"][0]["nodePort"] == v1["spec"]["ports"][0]["nodePort"]
    assert v2["spec"]["healthCheckNodePort"] == v1["spec"]["healthCheckNodePort"]
    assert alloc.used()["nodePorts"]["used"] == 2


def test_switch_to_external_name_releases_ip(alloc):
    v1 = alloc.allocate(svc())
    v2 = alloc.allocate(dict(v1, spec=dict(v1["spec"], type="ExternalName", externalName="example.com")), old=v1)
    assert "clusterIP" not in v2["spec"] and "clusterIPs" not in v2["spec"]
    assert alloc.ip_owner(v1["spec"]["clusterIP"]) is None


def test_health_check_port_dropped_with_local_policy(alloc):
    v1 = alloc.allocate(svc(type="LoadBalancer", externalTrafficPolicy="Local"))
    v2 = alloc.allocate(dict(v1, spec=dict(v1["spec"], externalTrafficPolicy="Cluster")), old=v1)
    assert "healthCheckNodePort" not in v2["spec"]
    assert alloc.used()["nodePorts"]["used"] == 1
