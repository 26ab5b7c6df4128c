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
    slices = [endpointslice("ns1", "svc1", [endpoint("10.0.1.1", node="node1")],
                            [{"name": "p80", "port": 80, "protocol": "TCP"}]),
              endpointslice("ns2", "svc2", [endpoint("10.0.2.1", node="node1")],
                            [{"name": "p8080", "port": 8080, "protocol": "TCP"}])]
    return services, slices


GOLDEN_CONFIG = {"clusterCIDR": "10.0.0.0/8"}
#: The release of upstream's expected outputs kept in tests/goldens and the "overall" cases: v1.35, the last with a
#: chain per nftables endpoint and with `--random-fully` only where the (in its tests, fake) iptables offers it.
GOLDEN_RELEASE = "v1.35"


def scenario(kind: str) -> tuple[list[dict], list[dict]]:
    """Services and slices for a named case: affinity, local, nodeport, noendpoints, loadbalancer, externalip."""
    p80 = [{"name": "p80", "port": 80, "protocol": "TCP"}]
    two_nodes = [endpoint("10.0.1.1", node="node1"), endpoint("10.0.2.1", node="node2")]
    if kind == "affinity":
        svc = service("ns1", "svc1", "172.30.0.41", [port("p80", 80)], sessionAffinity="ClientIP",
                      sessionAffinityConfig={"clientIP": {"timeoutSeconds": 10800}})
        return [svc], [endpointslice("ns1", "svc1", two_nodes, p80)]
    if kind == "local":
        svc = service("ns1", "svc1", "172.30.0.41", [port("p80", 80, node_port=30080)], type="LoadBalancer",
                      externalTrafficPolicy="Local", healthCheckNodePort=30999,
                      status={"loadBalancer": {"ingress": [{"ip": "5.6.7.8"}]}})
        return [svc], [endpointslice("ns1", "svc1", two_nodes, p80)]
    if kind == "local-none":
        svc = service("ns1", "svc1", "172.30.0.41", [port("p80", 80, node_port=30080)], type="NodePort",
                      externalTrafficPolicy="Local")
        return [svc], [endpointslice("ns1", "svc1", [endpoint("10.0.2.1", node="node2")], p80)]
    if kind == "nodeport":
        svc = service("ns1", "svc1", "172.30.0.41", [port("p80", 80, node_port=3001)], type="NodePort")
        return [svc], [endpointslice("ns1", "svc1", two_nodes, p80)]
    if kind == "noendpoints":
        svc = service("ns1", "svc1", "172.30.0.41", [port("p80", 80, node_port=30080)], type="NodePort",
                      externalIPs=["192.168.99.11"])
        return [svc], [endpointslice("ns1", "svc1", [], p80)]
    if kind == "loadbalancer":
        svc = service("ns1", "svc1", "172.30.0.41", [port("p80", 80, node_port=30080)], type="LoadBalancer",
                      loadBalancerSourceRanges=["203.0.113.0/24"],
                      status={"loadBalancer": {"ingress": [{"ip": "5.6.7.8"}]}})
        return [svc], [endpointslice("ns1", "svc1", two_nodes, p80)]
    if kind == "externalip":
        svc = service("ns1", "svc1", "172.30.0.41", [port("p80", 80)], externalIPs=["192.168.99.11"])
        return [svc], [endpointslice("ns1", "svc1", two_nodes, p80)]
    if kind == "internal-local":
        svc = service("ns1", "svc1", "172.30.0.41", [port("p80", 80)], internalTrafficPolicy="Local")
        return [svc], [endpointslice("ns1", "svc1", two_nodes, p80)]
    raise KeyError(kind)


SCENARIOS = ("affinity", "local", "local-none", "nodeport", "noendpoints", "loadbalancer", "externalip",
             "internal-local")


def many_services(count: int, per_service: int, svc_type: str = "ClusterIP") -> tuple[list[dict], list[dict]]:
    """count Services with per_service endpoints each, shaped like upstream's generateServiceEndpoints."""
    services, slices = [], []
    for i in range(count):
        ip = f"172.{16 + (i >> 16)}.{(i >> 8) & 255}.{i & 255}"
        p = {"name": "8080", "port": 80 + (i % 1000), "protocol": "TCP"}
        extra: dict = {}
        if svc_type in ("NodePort", "LoadBalancer"):
            p["nodePort"] = 30000 + i
        if svc_type == "LoadBalancer":
            extra = {"externalIPs": ["1.2.3.4"], "loadBalancerSourceRanges": [" 1.2.3.4/28"],
                     "healthCheckNodePort": 32000 + count + i,
                     "status": {"loadBalancer": {"ingress": [{"ip": "1.2.3.4"}]}}}
        services.append(service("namespace", f"svc{i}", ip, [p], type=svc_type, **extra))
        eps = [endpoint(f"10.{100 + (j >> 16)}.{(j >> 8) & 255}.{j & 255}")
               for j in range(i * per_service, (i + 1) * per_service)]
        slices.append(endpointslice("namespace", f"svc{i}", eps, [{"name": "8080", "port": 8080, "protocol": "TCP"}],
                                    name=f"svc{i}"))
    return services, slices
