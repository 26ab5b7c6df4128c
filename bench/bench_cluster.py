"""Benchmarks of the embedded cluster: start-up, a 5,000-replica Deployment, one-pod reconcile, watch bytes.

Run: .venv/bin/python bench/bench_cluster.py [--quick]
Targets (2-core machine): start-up ≤ 0.3 s; 5,000 replicas ready and sliced ≤ 5 s; one-pod reconcile ≤ 10 ms
touching 1 slice; watch bytes for one change compared with the published figures (spec/scale-anchors.md).
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from labsupport import Lab  # noqa: E402
import json  # noqa: E402

from labsupport.control.endpointslice import endpoints_for, reconcile  # noqa: E402
from labsupport.model.objects import clone  # noqa: E402

DEPLOYMENT = """
apiVersion: apps/v1
kind: Deployment
metadata: {{name: web}}
spec:
  replicas: {replicas}
  selector: {{matchLabels: {{app: web}}}}
  template:
    metadata: {{labels: {{app: web}}}}
    spec:
      containers: [{{name: nginx, image: "nginx:1.27", ports: [{{containerPort: 80}}]}}]
---
apiVersion: v1
kind: Service
metadata: {{name: web}}
spec:
  selector: {{app: web}}
  ports: [{{port: 80}}]
"""

PUBLISHED = {"endpoints_change_bytes": 1.5e6 * 3000, "slices_change_bytes": 10e3 * 3000}


def startup(runs: int) -> float:
    """Median seconds for Lab() to be ready."""
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        lab = Lab(seed=0)
        times.append(time.perf_counter() - t)
        lab.close()
    return statistics.median(times)


def ready_count(lab: Lab) -> int:
    """Ready addresses in the web Service's slices."""
    return sum(1 for s in lab.cluster.store.list("EndpointSlice", "default")
               if s["metadata"].get("labels", {}).get("kubernetes.io/service-name") == "web"
               for e in s.get("endpoints") or [] if e["conditions"].get("ready"))


def big_deployment(replicas: int):
    """Seconds from apply to every replica ready and sliced; returns (seconds, lab)."""
    workers = max(3, -(-replicas // 100))
    lab = Lab(seed=0, workers=workers, record_events=False)
    t = time.perf_counter()
    lab.apply(DEPLOYMENT.format(replicas=replicas))
    lab.wait(lambda l: ready_count(l) == replicas, timeout=600)
    return time.perf_counter() - t, lab


def one_pod_reconcile(lab: Lab, runs: int) -> tuple[float, int]:
    """Median ms of the pure reconcile after one pod's readiness flips, and the slices it touches."""
    store = lab.cluster.store
    svc = store.get("Service", "default", "web")
    pods = [p for p in store.list("Pod", "default") if p["metadata"].get("labels", {}).get("app") == "web"]
    slices = [s for s in store.list("EndpointSlice", "default")
              if s["metadata"]["labels"].get("kubernetes.io/service-name") == "web"]
    nodes = store.list("Node")
    flipped = clone(pods[len(pods) // 2])
    for cond in flipped["status"]["conditions"]:
        if cond["type"] == "Ready":
            cond["status"] = "False"
    changed = pods[: len(pods) // 2] + [flipped] + pods[len(pods) // 2 + 1:]
    times, touched = [], 0
    for _ in range(runs):
        t = time.perf_counter()
        plan = reconcile(svc, changed, slices, nodes)
        times.append((time.perf_counter() - t) * 1000)
        touched = len(plan.create) + len(plan.update) + len(plan.delete)
    return statistics.median(times), touched


def watch_bytes(lab: Lab, watchers: int) -> dict:
    """Bytes one pod's removal ships to `watchers` subscribers of Endpoints vs EndpointSlices."""
    ep_meter = lab.meter(("Endpoints",), watchers=watchers)
    slice_meter = lab.meter(("EndpointSlice",), watchers=watchers)
    victim = next(p for p in lab.cluster.store.list("Pod", "default")
                  if p["metadata"].get("labels", {}).get("app") == "web")
    lab.delete("pod", victim["metadata"]["name"], grace_period=0)
    lab.cluster.store.stop_meter(ep_meter)
    lab.cluster.store.stop_meter(slice_meter)
    return {"endpoints": ep_meter, "slices": slice_meter}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1,000 replicas instead of 5,000")
    args = parser.parse_args()
    replicas = 1000 if args.quick else 5000
    print(f"Lab() start-up (median of 5):          {startup(5):8.3f} s   (target ≤ 0.3 s)")
    seconds, lab = big_deployment(replicas)
    print(f"{replicas:,} replicas ready and sliced:      {seconds:8.2f} s   (target ≤ 5 s at 5,000)")
    slices = [s for s in lab.cluster.store.list("EndpointSlice", "default")
              if s["metadata"]["labels"].get("kubernetes.io/service-name") == "web"]
    print(f"slices for {replicas:,} endpoints:               {len(slices):5d}      "
          f"(sizes {sorted({len(s['endpoints']) for s in slices})})")
    ms, touched = one_pod_reconcile(lab, 10)
    print(f"one-pod reconcile (median of 10):      {ms:8.1f} ms  touching {touched} slice(s)  (target ≤ 10 ms, 1)")
    meters = watch_bytes(lab, 3000)
    ep, sl = meters["endpoints"], meters["slices"]
    print(f"one pod removed, fan-out to 3,000 kube-proxies (JSON watch events as this server ships them):")
    print(f"  Endpoints:      {ep.events} event(s), {ep.bytes / 1e9:8.3f} GB   "
          f"(published for 5,000 pods: {PUBLISHED['endpoints_change_bytes'] / 1e9:.1f} GB)")
    print(f"  EndpointSlices: {sl.events} event(s), {sl.bytes / 1e6:8.1f} MB   "
          f"(published estimate: {PUBLISHED['slices_change_bytes'] / 1e6:.0f} MB)")
    store = lab.cluster.store
    pods = [p for p in store.list("Pod", "default") if p["metadata"].get("labels", {}).get("app") == "web"]
    full = endpoints_for(store.get("Service", "default", "web"), pods, max_addresses=None)
    full_bytes = len(json.dumps({"type": "MODIFIED", "object": full}, separators=(",", ":")))
    print(f"  Endpoints is capped at 1,000 addresses since 1.22 (over-capacity: truncated); uncapped, as the "
          f"published figure assumes:")
    print(f"  Endpoints (uncapped): {full_bytes / 1e3:.0f} KB per object, {full_bytes * 3000 / 1e9:.2f} GB per change; "
          f"ratio to slices {full_bytes * 3000 / max(sl.bytes, 1):.0f}x")
    if sl.events:
        print(f"  one slice: {sl.bytes / sl.events / 3000 / 1e3:.1f} KB ({len(slices[0]['endpoints'])} endpoints)")
    lab.close()


if __name__ == "__main__":
    main()
