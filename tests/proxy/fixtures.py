"""Small builders for Service, EndpointSlice and Node dicts used by the proxy tests."""
from __future__ import annotations


def service(ns: str, name: str, ip: str, ports: list[dict], **spec) -> dict:
    """A Service dict with the given ports (each {name, port, protocol, nodePort?})."""
    body = {"clusterIP": ip, "type": spec.pop("type", "ClusterIP"), "ports": ports}
    status = spec.pop("status", {})
    body.update(spec)
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"namespace": ns, "name": name},
            "spec": body, "status": status}


def port(name: str, number: int, protocol: str = "TCP", node_port: int | None = None) -> dict:
    """A Service port."""
    p = {"name": name, "port": number, "protocol": protocol}
    if node_port:
        p["nodePort"] = node_port
    return p


def endpoint(ip: str, node: str | None = None, ready: bool | None = None, serving: bool | None = None,
             terminating: bool | None = None, zone: str | None = None, for_zones=None, for_nodes=None) -> dict:
    """One EndpointSlice endpoint."""
    ep: dict = {"addresses": [ip], "conditions": {}}
    for key, value in (("ready", ready), ("serving", serving), ("terminating", terminating)):
        if value is not None:
            ep["conditions"][key] = value
    if node:
        ep["nodeName"] = node
    if zone:
        ep["zone"] = zone
    hints = {}
    if for_zones:
        hints["forZones"] = [{"name": z} for z in for_zones]
    if for_nodes:
        hints["forNodes"] = [{"name": n} for n in for_nodes]
    if hints:
        ep["hints"] = hints
    return ep


def endpointslice(ns: str, svc: str, endpoints: list[dict], ports: list[dict], name: str | None = None) -> dict:
    """An EndpointSlice of Service ns/svc."""
    return {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice", "addressType": "IPv4",
            "metadata": {"namespace": ns, "name": name or f"{svc}-abcde",
                         "labels": {"kubernetes.io/service-name": svc}},
            "endpoints": endpoints, "ports": ports}


def node(name: str = "node1", ip: str = "192.168.0.2", zone: str | None = None) -> dict:
    """A Node dict with one InternalIP."""
    labels = {"kubernetes.io/hostname": name}
    if zone:
        labels["topology.kubernetes.io/zone"] = zone
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels},
            "status": {"addresses": [{"type": "InternalIP", "address": ip}, {"type": "Hostname", "address": name}]}}


def two_services() -> tuple[list[dict], list[dict]]:
    """The two ClusterIP services of upstream's TestSyncProxyRulesRepeated."""
    services = [service("ns1", "svc1", "172.30.0.41", [port("p80", 80)]),
                service("ns2", "svc2", "172.30.0.42", [port("p8080", 8080)])]
    slices = [endpointslice("ns1", "svc1", [endpoint("10.0.1.1")], [{"name": "p80", "port": 80, "protocol": "TCP"}]),
              endpointslice("ns2", "svc2", [endpoint("10.0.2.1")],
                            [{"name": "p8080", "port": 8080, "protocol": "TCP"}])]
    return services, slices


GOLDEN_CONFIG = {"clusterCIDR": "10.0.0.0/8"}
