"""The real kube-proxy against labsupport's renderer: first sync and one-change sync at 1,000 and 5,000 Services.

Each size gets an embedded cluster holding S ClusterIP Services (5 endpoints each, hand-made EndpointSlices). The
real kube-proxy (`make upstream`) runs in a namespace of its own, in iptables and then in nftables mode, against
the embedded API server:
its first sync is timed from process start until its metrics report written rules, and its own figure for that
sync (kubeproxy_sync_proxy_rules_duration_seconds) is shown beside it; then one EndpointSlice gains an endpoint and
the time until kube-proxy has written that change is taken (its minSyncPeriod of 1 s included). labsupport's side
is the KubeProxy agent's render plus `iptables-restore` into a fresh namespace, then the agent's update for the
same change plus its `iptables-restore --noflush`. The whole first dump is also loaded with `--noflush` into a
second fresh namespace, as kube-proxy always loads it: iptables-nft's restore without flushing grows about
quadratically with the transaction, which is most of the real first sync at 5,000 Services. In nftables mode
labsupport's side is the same agent's `nft -f` transaction and its delta (there is no separate --noflush column:
`nft -f` never flushes what it is not told to). Needs Linux, root, and the binaries.

Run: .venv/bin/python bench/bench_upstream.py [--quick] [--modes iptables,nftables]
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from labsupport import Lab  # noqa: E402
from labsupport.netns.namespaces import (create_namespace, new_run_id, ns_name, release_run_id,  # noqa: E402
                                            remove_namespace, run_in)
from labsupport.proxy import KubeProxy  # noqa: E402
from labsupport.upstream import missing_upstream_requirements  # noqa: E402
from labsupport.upstream.kube_proxy import configuration  # noqa: E402
from labsupport.upstream.node import KubeProxyNode  # noqa: E402

ENDPOINTS = 5
NODE = "lab-worker"
DURATION = 'kubeproxy_sync_proxy_rules_duration_seconds_sum{ip_family="IPv4"}'


def populate(lab: Lab, count: int) -> None:
    """count selector-less ClusterIP Services in namespace `bench`, each with one EndpointSlice."""
    cluster = lab.cluster
    with cluster.lock:
        cluster.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "bench"}})
        for i in range(count):
            name = f"svc{i}"
            cluster.create({"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": "bench"},
                            "spec": {"ports": [{"name": "http", "port": 80, "protocol": "TCP",
                                                "targetPort": 8080}]}})
            cluster.store.create(endpoint_slice(name, [f"10.{200 + (j >> 16)}.{(j >> 8) & 255}.{j & 255}"
                                                      for j in range(i * ENDPOINTS, (i + 1) * ENDPOINTS)]))


def endpoint_slice(service: str, addresses: list[str]) -> dict:
    """An EndpointSlice of bench/<service> with ready endpoints on the bench node."""
    return {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice", "addressType": "IPv4",
            "metadata": {"name": f"{service}-1", "namespace": "bench",
                         "labels": {"kubernetes.io/service-name": service,
                                    "endpointslice.kubernetes.io/managed-by": "bench.labsupport.dev"}},
            "endpoints": [{"addresses": [a], "conditions": {"ready": True}, "nodeName": NODE} for a in addresses],
            "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}]}


def one_change(lab: Lab) -> dict:
    """Give bench/svc0's slice one more endpoint; returns the stored slice."""
    with lab.cluster.lock:
        current = lab.cluster.store.get("EndpointSlice", "bench", "svc0-1")
        changed = dict(current, endpoints=current["endpoints"] + [
            {"addresses": ["10.250.0.1"], "conditions": {"ready": True}, "nodeName": NODE}])
        return lab.cluster.store.update(changed)


def real_kube_proxy(lab: Lab, mode: str) -> tuple[float, float, float, float]:
    """(first sync wall s, its own duration s, one-change latency s, that sync's own duration s)."""
    lab.kubeconfig  # noqa: B018 - starts the API server
    node = KubeProxyNode(lab.cluster, lab.backend.apiserver(), NODE, mode, start_timeout=1800)
    start = time.perf_counter()
    node.start()
    try:
        first = time.perf_counter() - start
        first_own = node.kube_proxy.metrics().get(DURATION, 0.0)
        since = time.time()
        one_change(lab)
        written = node.kube_proxy.wait_synced(since, timeout=600)
        latency = written - since
        change_own = node.kube_proxy.metrics().get(DURATION, 0.0) - first_own
        return first, first_own, latency, change_own
    finally:
        node.close()


def load_command(mode: str, noflush: bool) -> list[str]:
    """How kube-proxy's text of `mode` is loaded into a kernel."""
    if mode == "nftables":
        return ["nft", "-f", "-"]
    return ["iptables-restore", "--noflush"] if noflush else ["iptables-restore"]


def labsupport_side(lab: Lab, mode: str) -> tuple[float, float, float | None, float, float]:
    """(first render s, its load s, the same with --noflush s (iptables only), one-change update s, its load
    s)."""
    with lab.cluster.lock:
        services = lab.cluster.store.list("Service")
        slices = lab.cluster.store.list("EndpointSlice")
        node = lab.cluster.get("Node", None, NODE)
        config_map = lab.cluster.get("ConfigMap", "kube-system", "kube-proxy")
    agent = KubeProxy(node, mode, configuration(config_map, NODE, mode, ""))
    run = new_run_id()
    ns = ns_name(run, "bench-render")
    unflushed = ns_name(run, "bench-noflush")
    create_namespace(ns)
    create_namespace(unflushed)
    try:
        start = time.perf_counter()
        result = agent.sync(services, slices)
        render = time.perf_counter() - start
        first_text = agent.rules_with_jumps if mode == "iptables" else result.text
        start = time.perf_counter()
        run_in(ns, load_command(mode, False), input=first_text, check=True, timeout=3600)
        load = time.perf_counter() - start
        load_noflush = None
        if mode == "iptables":
            start = time.perf_counter()
            run_in(unflushed, load_command(mode, True), input=first_text, check=True, timeout=3600)
            load_noflush = time.perf_counter() - start
        changed = one_change(lab)
        start = time.perf_counter()
        result = agent.update(endpointslices=[changed])
        update = time.perf_counter() - start
        start = time.perf_counter()
        run_in(ns, load_command(mode, True), input=result.text, check=True, timeout=3600)
        reload = time.perf_counter() - start
        return render, load, load_noflush, update, reload
    finally:
        remove_namespace(unflushed)
        remove_namespace(ns)
        release_run_id(run)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="100 and 500 Services instead of 1,000 and 5,000")
    parser.add_argument("--modes", default="iptables,nftables", help="comma-separated kube-proxy modes to measure")
    args = parser.parse_args()
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    unknown = [m for m in modes if m not in ("iptables", "nftables")]
    if unknown or not modes:
        parser.error(f"--modes takes iptables and/or nftables (the real kube-proxy runs here in those), not {unknown}")
    problems = missing_upstream_requirements("kube-proxy")
    if problems:
        print("bench_upstream: needs " + " and ".join(problems))
        return 0 if args.quick else 1
    sizes = (100, 500) if args.quick else (1000, 5000)
    print(f"{'mode':>8} {'Services':>8} | {'real first sync':>15} {'(its own)':>9} {'real 1-change':>13} "
          f"{'(its own)':>9} | {'ls render':>9} {'+load':>8} {'(noflush)':>9} {'ls update':>9} {'+load':>8}")
    for mode in modes:
        for count in sizes:
            for_real = Lab(backend="sim", seed=0, proxy_mode=mode)
            for_render = Lab(backend="sim", seed=0, proxy_mode=mode)
            try:
                populate(for_real, count)
                populate(for_render, count)
                first, first_own, latency, change_own = real_kube_proxy(for_real, mode)
                render, load, load_noflush, update, reload = labsupport_side(for_render, mode)
            finally:
                for_real.close()
                for_render.close()
            noflush = f"{load_noflush:>7.2f} s" if load_noflush is not None else f"{'—':>9}"
            print(f"{mode:>8} {count:>8} | {first:>13.2f} s {first_own:>7.2f} s {latency:>11.2f} s "
                  f"{change_own:>7.3f} s | {render:>7.2f} s {load:>6.2f} s {noflush} {update:>7.3f} s "
                  f"{reload:>6.2f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
