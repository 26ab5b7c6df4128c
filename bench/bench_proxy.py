"""Benchmark kube-proxy's renderers: render time, rule counts and the size of a one-endpoint update.

Run: .venv/bin/python bench/bench_proxy.py [--quick]
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from labsupport.proxy import KubeProxy, render  # noqa: E402
from labsupport.proxy.iptables import count_rules  # noqa: E402
from labsupport.proxy.ipvs import ipvs_delta, ipvs_state  # noqa: E402

ENDPOINTS = 10
CONFIG = {"clusterCIDR": "10.244.0.0/16"}
NODE = {"metadata": {"name": "worker", "labels": {"topology.kubernetes.io/zone": "ru-central1-a"}},
        "status": {"addresses": [{"type": "InternalIP", "address": "172.18.0.2"}]}}
IPTABLES_TARGET_S = 3.0
NFT_UPDATE_TARGET_S = 0.005
CHANGED = 50


def cluster(count: int, per_service: int) -> tuple[list[dict], list[dict]]:
    """count ClusterIP Services with per_service endpoints each."""
    services, slices = [], []
    for i in range(count):
        name = f"svc{i}"
        services.append({"metadata": {"namespace": "bench", "name": name, "resourceVersion": "1", "uid": name},
                         "spec": {"type": "ClusterIP", "clusterIP": f"10.{96 + (i >> 16)}.{(i >> 8) & 255}.{i & 255}",
                                  "ports": [{"name": "http", "port": 80, "protocol": "TCP"}]}})
        endpoints = [{"addresses": [f"10.{200 + (j >> 16)}.{(j >> 8) & 255}.{j & 255}"], "conditions": {"ready": True},
                      "nodeName": f"worker{j % 3}"} for j in range(i * per_service, (i + 1) * per_service)]
        slices.append({"metadata": {"namespace": "bench", "name": name, "resourceVersion": "1", "uid": name,
                                    "labels": {"kubernetes.io/service-name": name}},
                       "addressType": "IPv4", "endpoints": endpoints,
                       "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}]})
    return services, slices


def one_endpoint_changed(slices: list[dict]) -> dict:
    """A copy of svc50's slice (present at every size, so deltas compare byte for byte), last endpoint replaced."""
    victim = slices[CHANGED]
    changed = dict(victim)
    changed["metadata"] = dict(victim["metadata"], resourceVersion="2")
    changed["endpoints"] = victim["endpoints"][:-1] + [{"addresses": ["10.255.255.254"],
                                                        "conditions": {"ready": True}, "nodeName": "worker1"}]
    return changed


def timed(fn: Callable[[], Any]) -> tuple[Any, float]:
    """(result, seconds)."""
    start = time.perf_counter()
    result = fn()
    return result, time.perf_counter() - start


def bench(count: int) -> list[tuple]:
    """Rows (services, mode, render s, rules, update bytes, update s, note) for one cluster size."""
    services, slices = cluster(count, ENDPOINTS)
    changed = one_endpoint_changed(slices)
    new_slices = [changed if i == CHANGED else s for i, s in enumerate(slices)]
    rows = []

    text, seconds = timed(lambda: render("iptables", services, slices, NODE, CONFIG))
    nat = count_rules(text)["nat"]
    expected = 5 + count * (2 + 3 * ENDPOINTS)
    proxy = KubeProxy(NODE, "iptables", CONFIG)
    proxy.sync(services, slices)
    update, upd_s = timed(lambda: proxy.sync(services, new_slices).text)
    note = "nat rules; 5+S(2+3E) ok" if nat == expected else f"FORMULA MISMATCH (expected {expected})"
    if seconds > IPTABLES_TARGET_S:
        note += f"; over {IPTABLES_TARGET_S}s target"
    rows.append((count, "iptables", seconds, nat, len(update), upd_s, note + " (update = partial restore)"))

    proxy = KubeProxy(NODE, "nftables", CONFIG)
    first, seconds = timed(lambda: proxy.sync(services, slices))
    rules = sum(1 for line in first.text.splitlines() if line.startswith("add rule "))
    result, upd_s = timed(lambda: proxy.update(endpointslices=[changed]))
    note = "ok" if upd_s <= NFT_UPDATE_TARGET_S else f"over {NFT_UPDATE_TARGET_S * 1000:.0f}ms target"
    rows.append((count, "nftables", seconds, rules, len(result.text), upd_s, "nft rules; delta " + note))

    state, seconds = timed(lambda: ipvs_state(services, slices, NODE, CONFIG))
    servers = sum(1 + len(vs.real_servers) for vs in state.virtual_servers)
    new_state, upd_s = timed(lambda: ipvs_state(services, new_slices, NODE, CONFIG))
    delta = ipvs_delta(state, new_state)
    rows.append((count, "ipvs", seconds, servers, len(delta), upd_s, "rules = virtual + real servers"))
    return rows


def main(argv: list[str] | None = None) -> int:
    """Print the benchmark table; exit 1 when a target is missed."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="only 100 and 1000 services")
    args = parser.parse_args(argv)
    sizes = (100, 1000) if args.quick else (100, 1000, 5000, 10000)
    header = f"{'services':>8} {'mode':<9} {'render s':>9} {'rules':>8} {'update B':>9} {'update ms':>10}  note"
    print(f"{ENDPOINTS} endpoints per service")
    print(header)
    print("-" * len(header))
    failed = False
    for count in sizes:
        for n, mode, render_s, rules, upd_bytes, upd_s, note in bench(count):
            print(f"{n:>8} {mode:<9} {render_s:>9.3f} {rules:>8} {upd_bytes:>9} {upd_s * 1000:>10.2f}  {note}")
            failed = failed or "over" in note or "MISMATCH" in note
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
