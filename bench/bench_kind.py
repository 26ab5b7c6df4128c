"""kind beside sim, in one run: how long a real two-node kind cluster takes to create, and the same lesson step on
both (`Lab()` ready, 3 nginx replicas ready behind a Service, the rule count kube-proxy wrote for it).

Run: .venv/bin/python bench/bench_kind.py [--quick] [--mode nftables] [--keep]
Needs a Docker engine, kind, and a node image (`make kind-images` builds one offline). --quick (what `make bench`
runs) only prints the sim side and says why kind is left out when it cannot run here. The cluster it creates is
named labsupport-bench and deleted at the end unless --keep.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from labsupport import Lab  # noqa: E402

WEB = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 3
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: nginx, image: "nginx:1.27", ports: [{containerPort: 80}]}]
---
apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  selector: {app: web}
  ports: [{port: 80}]
"""


def ready(lab: Lab) -> bool:
    """All three web endpoints ready."""
    return sum(1 for s in lab.get("endpointslices", selector="kubernetes.io/service-name=web")
               for e in s.get("endpoints") or [] if e.get("conditions", {}).get("ready")) == 3


def service_rules(lab: Lab) -> int:
    """Lines of the node's kube-proxy rules that name the web Service."""
    return sum(1 for line in lab.proxy_rules().splitlines() if "default/web" in line)


def lesson_step(lab: Lab) -> dict[str, float]:
    """Deploy web, wait until its three endpoints are ready; the wall time and the rule count."""
    began = time.perf_counter()
    lab.apply(WEB)
    waited = lab.wait(ready, timeout=300)
    took = time.perf_counter() - began
    rules = 0
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        rules = service_rules(lab)
        if rules:
            break
        time.sleep(1)
    return {"wall": took, "clock": waited, "rules": rules}


def main() -> int:
    """Print sim and kind side by side."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--mode", default="nftables")
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args()
    rows = []
    began = time.perf_counter()
    sim = Lab(backend="sim", proxy_mode=args.mode, seed=0)
    rows.append(("sim", time.perf_counter() - began, lesson_step(sim)))
    sim.close()
    from labsupport.kind import images, preflight
    problems = preflight.problems(args.mode)
    if not problems and not images.local_node_image():
        problems = ["no local node image (run `make kind-images`)"]
    if args.quick or problems:
        why = "--quick" if args.quick else "; ".join(problems)
        print(f"kind: left out ({why})")
    else:
        from labsupport.kind.preflight import delete_cluster
        delete_cluster("labsupport-bench")
        began = time.perf_counter()
        kind = Lab(backend="kind", proxy_mode=args.mode, name="labsupport-bench", workers=1, node_ports=(),
                   progress="quiet")
        rows.append(("kind (2 nodes)", time.perf_counter() - began, lesson_step(kind)))
        if args.keep:
            kind.close()
        else:
            kind.backend.delete_cluster()
    print(f"{'backend':<16}{'Lab() ready':>14}{'web ready (wall)':>18}{'(lab clock)':>13}{'rules for web':>15}")
    for name, create, step in rows:
        print(f"{name:<16}{create:>12.2f} s{step['wall']:>16.2f} s{step['clock']:>11.2f} s{step['rules']:>15d}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
