"""How fast the data-plane model carries new connections, and how many rules one connection costs.

Run: python bench/bench_dataplane.py [--quick]
"""
from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from labsupport.dataplane import samples  # noqa: E402
from labsupport.dataplane.model import NodeDatapath, trace_packet  # noqa: E402

NODE = [samples.NODE_IP]
MAKERS = {"iptables": samples.iptables_rules, "nftables": samples.nftables_rules, "ipvs": samples.ipvs_rules}


def rendered_rules(mode: str, count: int, endpoints: int) -> str | None:
    """The same shape from labsupport.proxy.render, when it is available."""
    try:
        from labsupport.proxy import render
    except ImportError:
        return None
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node1"},
            "status": {"addresses": [{"type": "InternalIP", "address": samples.NODE_IP}]}}
    services, slices = [], []
    for i in range(count):
        name = f"svc{i}"
        ip = samples.service_ip(i)
        services.append({"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": "ns"},
                         "spec": {"type": "ClusterIP", "clusterIP": ip, "clusterIPs": [ip],
                                  "ports": [{"name": "p80", "port": 80, "protocol": "TCP", "targetPort": 8080}]}})
        slices.append({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
                       "metadata": {"name": f"{name}-x", "namespace": "ns",
                                    "labels": {"kubernetes.io/service-name": name}},
                       "addressType": "IPv4",
                       "endpoints": [{"addresses": [samples.endpoint_ip(i, j)], "conditions": {"ready": True}}
                                     for j in range(endpoints)],
                       "ports": [{"name": "p80", "port": 8080, "protocol": "TCP"}]})
    try:
        return render(mode, services, slices, node, {"clusterCIDR": samples.POD_CIDR},
                      service_cidrs=(samples.SERVICE_CIDR,))
    except Exception as exc:  # a renderer still in progress must not stop the benchmark
        print(f"  (render {mode} failed: {exc!r})")
        return None


def throughput(mode: str, rules: str, services: int, connections: int) -> tuple[float, float]:
    """(seconds to load the rules, new connections per second) through one NodeDatapath."""
    t0 = time.perf_counter()
    dp = NodeDatapath(mode, rules, NODE, random.Random(0))
    t1 = time.perf_counter()
    vips = [samples.service_ip(i) for i in range(services)]
    rng = random.Random(1)
    targets = [vips[rng.randrange(services)] for _ in range(connections)]
    t2 = time.perf_counter()
    for k, vip in enumerate(targets):
        dp.connect("10.0.0.2", 1024 + k % 64000, vip, 80, now=k * 1e-4)
    t3 = time.perf_counter()
    return t1 - t0, connections / (t3 - t2)


def main() -> None:
    """Print connections/s at 1,000 services per mode and rules evaluated per new connection by size."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="smaller sizes, for a smoke run")
    args = parser.parse_args()
    sizes = [100, 1000] if args.quick else [100, 1000, 5000, 10000]
    connections = 5000 if args.quick else 50000

    print("New connections per second at 1,000 Services (3 endpoints each)")
    for mode, make in MAKERS.items():
        load, rate = throughput(mode, make(1000, 3), 1000, connections)
        print(f"  {mode:<9} {rate:>10,.0f} conn/s   (rule set loaded in {load:.2f}s)  [sample rules]")
        rendered = rendered_rules(mode, 1000, 3)
        if rendered is not None:
            load, rate = throughput(mode, rendered, 1000, connections)
            print(f"  {mode:<9} {rate:>10,.0f} conn/s   (rule set loaded in {load:.2f}s)  [labsupport.proxy.render]")

    print("\nRules evaluated for one new connection to the last Service")
    print(f"  {'services':>9} " + " ".join(f"{m:>9}" for m in MAKERS))
    for size in sizes:
        row = []
        for mode, make in MAKERS.items():
            t = trace_packet(mode, make(size, 3), NODE, "10.0.0.2", samples.service_ip(size - 1), 80)
            row.append(t.rules_evaluated)
        print(f"  {size:>9} " + " ".join(f"{n:>9}" for n in row))


if __name__ == "__main__":
    main()
