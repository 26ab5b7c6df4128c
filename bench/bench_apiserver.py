"""Benchmarks of the embedded API server driven by the real kubectl and by raw HTTPS clients.

Run: .venv/bin/python bench/bench_apiserver.py [--quick]
Prints: `kubectl get pods` latency against the embedded server next to kubectl's own start-up
(`kubectl version --client`), so the server's share is the difference; list requests per second over keep-alive
connections (1 and 4 clients); watch events per second delivered to 1 and 4 watchers.
"""
from __future__ import annotations

import argparse
import http.client
import json
import statistics
import sys
import threading
import time
from pathlib import Path
from typing import Callable

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from labsupport import Lab  # noqa: E402
from labsupport.kubectl import run_kubectl  # noqa: E402
from tests.apiserver.conftest import Endpoint, endpoint_of  # noqa: E402

WEB = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 20
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: nginx, image: "nginx:1.27", ports: [{containerPort: 80}]}]
"""


def timed(fn: Callable[[], object], runs: int) -> list[float]:
    """Wall time of `runs` calls, in seconds."""
    out = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        out.append(time.perf_counter() - start)
    return out


def describe(name: str, samples: list[float]) -> None:
    """Print median and p90 in milliseconds."""
    samples = sorted(samples)
    p90 = samples[min(len(samples) - 1, int(len(samples) * 0.9))]
    print(f"{name:<42} median {statistics.median(samples) * 1000:7.1f} ms   p90 {p90 * 1000:7.1f} ms   "
          f"(n={len(samples)})")


def list_rate(endpoint: Endpoint, clients: int, seconds: float) -> float:
    """Lists of all pods per second with `clients` keep-alive connections."""
    counts = [0] * clients
    stop = time.perf_counter() + seconds

    def worker(i: int) -> None:
        conn = http.client.HTTPSConnection(endpoint.host, endpoint.port, context=endpoint.context)
        while time.perf_counter() < stop:
            conn.request("GET", "/api/v1/pods", headers={"Authorization": f"Bearer {endpoint.token}"})
            resp = conn.getresponse()
            resp.read()
            counts[i] += 1
        conn.close()

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return sum(counts) / seconds


def watch_rate(lab: Lab, endpoint: Endpoint, watchers: int, changes: int) -> float:
    """Events per second delivered (summed over watchers) while `changes` ConfigMap writes happen."""
    cluster = lab._backend.cluster
    rv = cluster.store.rv
    received = [0] * watchers
    ready = [threading.Event() for _ in range(watchers)]

    def watch(i: int) -> None:
        conn = http.client.HTTPSConnection(endpoint.host, endpoint.port, context=endpoint.context, timeout=60)
        conn.request("GET", f"/api/v1/namespaces/default/configmaps?watch=true&resourceVersion={rv}"
                            f"&timeoutSeconds=600", headers={"Authorization": f"Bearer {endpoint.token}"})
        resp = conn.getresponse()
        ready[i].set()
        while received[i] < changes:
            line = resp.readline()
            if not line:
                break
            json.loads(line)
            received[i] += 1
        conn.close()

    threads = [threading.Thread(target=watch, args=(i,), daemon=True) for i in range(watchers)]
    for t in threads:
        t.start()
    for r in ready:
        r.wait(10)
    start = time.perf_counter()
    for i in range(changes):
        name = f"bench-{i % 20}"
        obj = cluster.store.find("ConfigMap", "default", name)
        if obj is None:
            cluster.create({"apiVersion": "v1", "kind": "ConfigMap",
                            "metadata": {"name": name, "namespace": "default"}, "data": {"i": str(i)}})
        else:
            cluster.replace(dict(obj, data={"i": str(i)}))
    for t in threads:
        t.join(60)
    elapsed = time.perf_counter() - start
    for i in range(20):
        if cluster.store.find("ConfigMap", "default", f"bench-{i}") is not None:
            cluster.delete("ConfigMap", "default", f"bench-{i}")
    return sum(received) / elapsed


def main(argv: list[str] | None = None) -> int:
    """Run the benchmarks and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer runs (a smoke test)")
    args = parser.parse_args(argv)
    runs = 5 if args.quick else 20
    seconds = 1.0 if args.quick else 3.0
    changes = 300 if args.quick else 2000
    with Lab(seed=0) as lab:
        lab.apply(WEB)
        lab.wait(lambda l: len(l.get("pods")) == 20)
        kubeconfig = lab.kubeconfig
        endpoint = endpoint_of(kubeconfig)
        run_kubectl(kubeconfig, "get pods", show=False)  # warm the discovery cache
        startup = timed(lambda: run_kubectl(None, "version --client", show=False), runs)
        get_pods = timed(lambda: run_kubectl(kubeconfig, "get pods", show=False), runs)
        get_wide = timed(lambda: run_kubectl(kubeconfig, "get pods -A -o wide", show=False), runs)
        describe("kubectl version --client (start-up only)", startup)
        describe("kubectl get pods (20 pods)", get_pods)
        describe("kubectl get pods -A -o wide", get_wide)
        share = (statistics.median(get_pods) - statistics.median(startup)) * 1000
        print(f"{'server share of kubectl get pods':<42} ~{share:.1f} ms")
        for clients in (1, 4):
            print(f"{f'list /api/v1/pods, {clients} client(s)':<42} {list_rate(endpoint, clients, seconds):8.0f} req/s")
        for watchers in (1, 4):
            rate = watch_rate(lab, endpoint, watchers, changes)
            print(f"{f'watch events, {watchers} watcher(s)':<42} {rate:8.0f} events/s delivered")
    return 0


if __name__ == "__main__":
    sys.exit(main())
