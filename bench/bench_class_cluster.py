"""What one student's namespace costs on a shared cluster: `labsupport class cluster` for a few students, then in
each namespace, as that student (`Lab(backend="kube")` with their kubeconfig), the lessons' largest set of pods and
some of the lesson's traffic (requests from the client through the Service, a DNS lookup); each pod's memory is read from its node (the metrics API when the cluster serves one, else the pod's cgroup on the
kind node), and the class is deleted at the end.

Run: .venv/bin/python bench/bench_class_cluster.py --kubeconfig ADMIN.kubeconfig [--students 3]
The default kubeconfig is the kind tier's shared cluster (labsupport-test). Needs Docker access to the kind nodes
for the cgroup reading.
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import secrets
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

from labsupport import Lab  # noqa: E402
from labsupport.hub import cluster  # noqa: E402
from labsupport.kind.preflight import state_dir  # noqa: E402

#: Lesson 07's namespace (12 nginx replicas and a busybox client), with lessons 05/06's agnhost echo beside it:
#: the most a student keeps running at once when they never delete anything.
LARGEST = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 12
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
  ports: [{port: 80, targetPort: 80}]
---
apiVersion: v1
kind: Pod
metadata: {name: client, labels: {app: client}}
spec:
  containers: [{name: client, image: "busybox:1.36", command: [sleep, "3600"]}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: echo}
spec:
  replicas: 3
  selector: {matchLabels: {app: echo}}
  template:
    metadata: {labels: {app: echo}}
    spec:
      containers:
      - {name: agnhost, image: "registry.k8s.io/e2e-test-images/agnhost:2.53", args: [netexec, --http-port=8080]}
"""
#: Reads one pod's memory cgroup on its node: cgroup v1 (memory.usage_in_bytes, total_inactive_file, total_rss)
#: or v2 (memory.current, inactive_file, anon), found by the pod's UID.
CGROUP_SCRIPT = r"""
uid="$1"; alt=$(echo "$uid" | tr - _)
d=$(find /sys/fs/cgroup/memory /sys/fs/cgroup -maxdepth 7 -type d \( -name "*pod$uid*" -o -name "*pod$alt*" \) \
    2>/dev/null | head -n 1)
[ -n "$d" ] || exit 3
if [ -f "$d/memory.usage_in_bytes" ]; then
  echo "v1 $(cat $d/memory.usage_in_bytes) $(awk '$1=="total_inactive_file"{print $2}' $d/memory.stat)" \
       "$(awk '$1=="total_rss"{print $2}' $d/memory.stat)"
else
  echo "v2 $(cat $d/memory.current) $(awk '$1=="inactive_file"{print $2}' $d/memory.stat)" \
       "$(awk '$1=="anon"{print $2}' $d/memory.stat)"
fi
"""
MIB = 2 ** 20


def pod_memory(pod: dict) -> dict:
    """The pod's memory as its node's cgroup holds it: usage, working set (usage − inactive file, as the kubelet
    counts it) and anonymous memory (rss), in bytes."""
    node, uid = pod["spec"]["nodeName"], pod["metadata"]["uid"]
    out = subprocess.run(["docker", "exec", node, "sh", "-c", CGROUP_SCRIPT, "sh", uid], capture_output=True,
                         text=True)
    if out.returncode != 0:
        raise SystemExit(f"no memory cgroup for pod {pod['metadata']['name']} on {node}: {out.stderr.strip()}")
    version, usage, inactive, rss = out.stdout.split()
    return {"cgroup": version, "usage": int(usage), "working_set": int(usage) - int(inactive or 0),
            "rss": int(rss or 0)}


SHIM_SCRIPT = r"""
for p in $(pgrep -f containerd-shim-runc); do
  echo "$(awk '/^Pss:/{print $2}' /proc/$p/smaps_rollup) $(awk '/VmRSS/{print $2}' /proc/$p/status)"
done
"""


def shim_memory(nodes: set[str]) -> list[tuple[int, int]]:
    """Each containerd shim on these nodes (one a pod, outside the pod's cgroup): its PSS and RSS in bytes."""
    found = []
    for node in sorted(nodes):
        out = subprocess.run(["docker", "exec", node, "sh", "-c", SHIM_SCRIPT], capture_output=True, text=True)
        found += [(int(pss) * 1024, int(rss) * 1024) for pss, rss in
                  (line.split() for line in out.stdout.splitlines() if len(line.split()) == 2)]
    return found


def metrics_api(admin: Lab) -> bool:
    """Whether the cluster serves the metrics API (`kubectl top`)."""
    return admin.kubectl("top pods -n kube-system", show=False).returncode == 0


def main() -> int:
    """Make a class, fill every namespace, read the pods' memory, print the table, delete the class."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kubeconfig", default=str(state_dir() / "kind-labsupport-test.kubeconfig"))
    parser.add_argument("--students", type=int, default=3)
    parser.add_argument("--settle", type=float, default=30, help="seconds to wait after the traffic")
    parser.add_argument("--requests", type=int, default=30, help="requests from each client through its Service")
    args = parser.parse_args()
    # the students' labs write their kubeconfigs into the state folder: a throwaway one, removed at the end
    state = tempfile.mkdtemp(prefix="labsupport-bench-state-")
    os.environ["LABSUPPORT_STATE_DIR"] = state
    tag = secrets.token_hex(3)
    name = f"bench-{tag}"
    students = [f"bench-{tag}-{i}" for i in range(1, args.students + 1)]
    out = pathlib.Path(tempfile.mkdtemp(prefix="labsupport-class-"))
    admin = Lab(backend="kube", kubeconfig=args.kubeconfig)
    labs: list[Lab] = []
    try:
        began = time.perf_counter()
        cluster.make_class(students, args.kubeconfig, out, class_name=name)
        made = time.perf_counter() - began
        began = time.perf_counter()
        for student in students:
            lab = Lab(backend="kube", kubeconfig=str(out / f"{student}.kubeconfig"))
            labs.append(lab)
            lab.apply(LARGEST)
        for lab in labs:
            lab.wait(lambda l: all(p["status"].get("phase") == "Running" for p in l.get("pods"))
                     and len(l.get("pods")) == 16, timeout=600)
        started = time.perf_counter() - began
        served = 0
        for lab in labs:   # the lesson's traffic: requests from the client through the Service, one DNS lookup
            served += sum(lab.curl("http://web/", source="pod/client").status == 200 for _ in range(args.requests))
            lab.nslookup("web")
        time.sleep(args.settle)
        rows: dict[str, list[dict]] = {}
        per_namespace = []
        nodes: set[str] = set()
        for lab in labs:
            total = 0
            for pod in lab.get("pods"):
                nodes.add(pod["spec"]["nodeName"])
                image = pod["spec"]["containers"][0]["image"]
                memory = pod_memory(pod)
                rows.setdefault(image, []).append(memory)
                total += memory["working_set"]
            per_namespace.append(total)
        top = metrics_api(admin)
        print(f"class of {args.students}: `class cluster` took {made:.1f} s ({made / args.students:.2f} s a student); "
              f"{16 * args.students} pods running {started:.1f} s after the first apply")
        print(f"{served} of {args.requests * args.students} requests answered 200 (then {args.settle:g} s idle)")
        print(f"metrics API (kubectl top): {'yes' if top else 'no'}; memory read from each pod's cgroup on its node "
              f"({rows and next(iter(rows.values()))[0]['cgroup']})")
        print("| image | pods | working set per pod, median (min–max) | rss per pod, median | usage per pod, median |")
        print("|---|---|---|---|---|")
        for image, found in sorted(rows.items()):
            ws = [m["working_set"] / MIB for m in found]
            print(f"| {image} | {len(found)} | {statistics.median(ws):.1f} MiB ({min(ws):.1f}–{max(ws):.1f}) | "
                  f"{statistics.median(m['rss'] / MIB for m in found):.1f} MiB | "
                  f"{statistics.median(m['usage'] / MIB for m in found):.1f} MiB |")
        shims = shim_memory(nodes)
        print(f"containerd shims on those {len(nodes)} nodes (one a pod, outside its cgroup): {len(shims)}, PSS "
              f"median {statistics.median(p for p, _ in shims) / MIB:.1f} MiB, RSS median "
              f"{statistics.median(r for _, r in shims) / MIB:.1f} MiB")
        print(f"namespace of 16 pods, working set: median {statistics.median(per_namespace) / MIB:.0f} MiB, "
              f"max {max(per_namespace) / MIB:.0f} MiB")
        print(json.dumps({"seconds_per_student": made / args.students,
                          "namespace_working_set_mib": [round(t / MIB, 1) for t in per_namespace]}))
    finally:
        for lab in labs:
            lab.close()
        cluster.delete_class(args.kubeconfig, class_name=name, out=out)
        admin.close()
        shutil.rmtree(state, ignore_errors=True)
        shutil.rmtree(out, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
