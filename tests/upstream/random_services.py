"""Seeded random Services with hand-made EndpointSlices: every field kube-proxy reads, in many combinations."""
from __future__ import annotations

import random

ZONES = ("ru-central1-a", "ru-central1-b", "ru-central1-d")
NODES = ("lab-worker", "lab-worker2", "lab-worker3")
PORT_NAMES = ("http", "metrics", "grpc", "admin")


def random_service(rng: random.Random, ns: str, name: str) -> list[dict]:
    """One Service (no selector, so its slices are ours) and its EndpointSlice(s), chosen by `rng`."""
    kind = rng.choice(("ClusterIP", "ClusterIP", "NodePort", "LoadBalancer", "headless"))
    n_ports = rng.choice((1, 1, 2, 3))
    names = rng.sample(PORT_NAMES, n_ports) if n_ports > 1 else [rng.choice(("", "http"))]
    ports, slice_ports = [], []
    for i, pname in enumerate(names):
        protocol = rng.choice(("TCP", "TCP", "TCP", "UDP", "SCTP")) if kind != "headless" else "TCP"
        target = rng.choice((8080 + i, pname or 8080 + i)) if pname else 8080 + i
        port = {"port": 80 + i * 1000 + rng.randrange(3), "protocol": protocol, "targetPort": target}
        if pname:
            port["name"] = pname
        ports.append(port)
        slice_port = {"port": 8080 + i, "protocol": protocol}
        if pname:
            slice_port["name"] = pname
        slice_ports.append(slice_port)
    spec: dict = {"ports": ports}
    if kind == "headless":
        spec["clusterIP"] = "None"
    else:
        spec["type"] = kind
    if kind in ("NodePort", "LoadBalancer"):
        spec["externalTrafficPolicy"] = rng.choice(("Cluster", "Local"))
    if kind == "LoadBalancer" and rng.random() < 0.5:
        spec["loadBalancerSourceRanges"] = rng.sample(["10.0.0.0/8", "172.18.0.0/16", "192.168.7.0/24",
                                                       "203.0.113.0/25"], rng.choice((1, 2)))
    if kind != "headless":
        if rng.random() < 0.3:
            spec["internalTrafficPolicy"] = "Local"
        if rng.random() < 0.3:
            spec["sessionAffinity"] = "ClientIP"
            if rng.random() < 0.5:
                spec["sessionAffinityConfig"] = {"clientIP": {"timeoutSeconds": rng.choice((60, 3600, 10800))}}
        if rng.random() < 0.3:
            spec["trafficDistribution"] = rng.choice(("PreferClose", "PreferSameZone", "PreferSameNode"))
        if rng.random() < 0.2:
            spec["externalIPs"] = [rng.choice(("172.18.0.3", "192.0.2.10", "198.51.100.7"))]
    service = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": ns}, "spec": spec}
    objects = [service]
    n_endpoints = rng.choice((0, 0, 1, 2, 3, 5))
    endpoints = []
    for j in range(n_endpoints):
        node = rng.choice(NODES)
        zone = ZONES[NODES.index(node)]
        state = rng.choice(("ready", "ready", "ready", "notready", "terminating", "terminating-serving"))
        conditions = {"ready": state == "ready", "serving": state in ("ready", "terminating-serving"),
                      "terminating": state.startswith("terminating")}
        ep: dict = {"addresses": [f"10.244.{NODES.index(node) + 1}.{100 + j + 10 * rng.randrange(10)}"],
                    "conditions": conditions, "nodeName": node, "zone": zone}
        if spec.get("trafficDistribution") and rng.random() < 0.8:
            ep["hints"] = {"forZones": [{"name": zone}]}
        endpoints.append(ep)
    unique = {e["addresses"][0]: e for e in endpoints}
    if n_endpoints or rng.random() < 0.5:
        objects.append({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice", "addressType": "IPv4",
                        "metadata": {"name": f"{name}-1", "namespace": ns,
                                     "labels": {"kubernetes.io/service-name": name,
                                                "endpointslice.kubernetes.io/managed-by": "test.labsupport.dev"}},
                        "endpoints": list(unique.values()), "ports": slice_ports})
    return objects


def random_batch(seed: int, count: int) -> list[dict]:
    """`count` random Services (with their slices) in namespace `r<seed>`, and that namespace."""
    rng = random.Random(seed)
    ns = f"r{seed}"
    out: list[dict] = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}]
    claimed: set[tuple[str, str, int]] = set()
    for i in range(count):
        objects = random_service(rng, ns, f"svc{i}")
        _drop_claimed_external_ips(objects[0]["spec"], claimed)
        out.extend(objects)
    return out


def _drop_claimed_external_ips(spec: dict, claimed: set[tuple[str, str, int]]) -> None:
    """Keep an externalIP only if no earlier Service serves the same IP, protocol and port: for such a pair
    upstream has no defined winner (the nftables map keeps whichever Service its Go map walk met last)."""
    keys = {(ip, p["protocol"], p["port"]) for ip in spec.get("externalIPs", ()) for p in spec["ports"]}
    if keys & claimed:
        del spec["externalIPs"]
    else:
        claimed.update(keys)
