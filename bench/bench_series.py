"""Benchmarks of the lesson series: executing every notebook on `sim`, and one ClusterGraph update at 100 pods.

Run: .venv/bin/python bench/bench_series.py [--quick]
Targets (2-core machine): the whole series (00–09, kernel start-ups included) ≤ 90 s; a ClusterGraph update
(read the cluster, rebuild the graph, lay it out, render the SVG) at 100 pods ≤ 100 ms. The kube-proxy syncs a
change triggers are the cluster's work and are run before the timed update, not inside it.
--quick skips the series and only times the graph.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.bench_cluster import DEPLOYMENT  # noqa: E402
from labsupport import Lab  # noqa: E402

SERIES_TARGET_S = 90.0
GRAPH_TARGET_MS = 100.0


def time_series() -> tuple[float, list[tuple[str, float]]]:
    """Execute every lesson with nbclient (kernel `python3`); returns the total and per-notebook seconds."""
    import nbformat
    from nbclient import NotebookClient
    rows = []
    start = time.perf_counter()
    for path in sorted((ROOT / "notebooks").glob("[0-9][0-9]-*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        t0 = time.perf_counter()
        NotebookClient(nb, kernel_name="python3", timeout=300,
                       resources={"metadata": {"path": str(path.parent)}}).execute()
        rows.append((path.name, time.perf_counter() - t0))
    return time.perf_counter() - start, rows


def time_graph(pods: int = 100, repeats: int = 20) -> dict[str, float]:
    """Median and worst ClusterGraph update time (ms) with `pods` ready pods behind a Service."""
    lab = Lab(seed=0)
    lab.apply(DEPLOYMENT.format(replicas=pods))
    lab.wait(lambda l: sum(1 for p in l.get("pods", selector="app=web")
                           if p["status"].get("phase") == "Running") == pods, timeout=600)
    graph = lab.graph(live=False)
    first = graph.refresh() * 1000
    times = []
    names = [p["metadata"]["name"] for p in lab.get("pods", selector="app=web")]
    for i in range(repeats):
        lab.delete("pod", names[i % len(names)])          # a real change each time: one pod turns terminating
        graph.sync_proxies()                               # kube-proxy's own work, not the picture's
        times.append(graph.refresh() * 1000)
    lab.close()
    return {"first": first, "median": statistics.median(times), "worst": max(times),
            "pods": len(graph.pods_by_state().get("ready", [])) + len(graph.pods_by_state().get("terminating", []))}


def main() -> int:
    """Run the benchmarks and print results against their targets; exit 1 when a target is missed."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="only time the ClusterGraph update")
    args = parser.parse_args()
    ok = True
    if not args.quick:
        total, rows = time_series()
        for name, seconds in rows:
            print(f"  {name:32} {seconds:6.1f} s")
        verdict = "ok" if total <= SERIES_TARGET_S else "MISSED"
        ok &= total <= SERIES_TARGET_S
        print(f"series on sim: {total:.1f} s for {len(rows)} notebooks (target ≤ {SERIES_TARGET_S:.0f} s) {verdict}")
    graph = time_graph()
    verdict = "ok" if graph["median"] <= GRAPH_TARGET_MS else "MISSED"
    ok &= graph["median"] <= GRAPH_TARGET_MS
    print(f"ClusterGraph update at 100 pods: median {graph['median']:.1f} ms, worst {graph['worst']:.1f} ms, "
          f"first draw {graph['first']:.1f} ms (target ≤ {GRAPH_TARGET_MS:.0f} ms) {verdict}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
