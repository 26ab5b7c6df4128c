"""What a class costs on a shared cluster, measured: `labsupport class cluster` for a few students, then, as each
student (`Lab(backend="kube")` with their kubeconfig, all at once), a lesson's work in their namespace, with every
guard in force: the lessons' largest set of pods, a rollout, requests from the client through the Service, DNS
lookups. Read from the kind nodes while it runs: each pod's memory and CPU in its cgroup, sampled every second, so
the peak of a student's namespace is known; the containerd shims outside the pods' cgroups; the API server's CPU,
memory and watches, idle, with every student's lab watching (four watches each, as `lab.wait` opens them) and while
the students write. `--spawn N` then starts N students' servers (the KubeSpawner image, as KubeSpawner runs it) at
once in their namespaces and times each until it answers. The class is deleted at the end.

Run: .venv/bin/python bench/bench_class_cluster.py [--kubeconfig ADMIN.kubeconfig] [--students 3] [--spawn 6]
The default kubeconfig is the kind tier's shared cluster (labsupport-test). Needs Docker access to the kind nodes
for the cgroup readings; `--spawn` needs `make kind-images`' single-user image (loaded into the nodes by the bench).
"""
from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import pathlib
import re
import secrets
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
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


#: Reads the CPU time (ns) of many pods' cgroups on one node at once, found by their UIDs: v1 cpuacct.usage, v2
#: cpu.stat's usage_usec; and their memory working set, as pod_memory reads it.
SAMPLE_SCRIPT = r"""
for uid in "$@"; do
  alt=$(echo "$uid" | tr - _)
  d=$(find /sys/fs/cgroup/cpu,cpuacct /sys/fs/cgroup/cpuacct /sys/fs/cgroup -maxdepth 7 -type d \
      \( -name "*pod$uid*" -o -name "*pod$alt*" \) 2>/dev/null | head -n 1)
  m=$(find /sys/fs/cgroup/memory /sys/fs/cgroup -maxdepth 7 -type d \( -name "*pod$uid*" -o -name "*pod$alt*" \) \
      2>/dev/null | head -n 1)
  [ -n "$d" ] && [ -n "$m" ] || continue
  if [ -f "$d/cpuacct.usage" ]; then cpu=$(cat $d/cpuacct.usage);
  else cpu=$(( $(awk '$1=="usage_usec"{print $2}' $d/cpu.stat) * 1000 )); fi
  if [ -f "$m/memory.usage_in_bytes" ]; then
    mem=$(( $(cat $m/memory.usage_in_bytes) - $(awk '$1=="total_inactive_file"{print $2}' $m/memory.stat) ))
  else mem=$(( $(cat $m/memory.current) - $(awk '$1=="inactive_file"{print $2}' $m/memory.stat) )); fi
  echo "$uid $cpu $mem"
done
"""


class Sampler:
    """Samples every second, on their nodes, the CPU time and memory working set of the pods of some namespaces,
    until stopped; `peaks()` then says, per namespace, the most CPU (cores, over one sample) and memory it used at
    once, and its CPU seconds in all."""

    def __init__(self, labs: dict[str, Lab], period: float = 1.0):
        self.labs = labs
        self.period = period
        self.samples: list[tuple[float, dict[str, tuple[str, int, int]]]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> "Sampler":
        """Begin sampling in a background thread."""
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop sampling."""
        self._stop.set()
        self._thread.join()

    def _pods(self) -> dict[str, tuple[str, str]]:
        found = {}
        for namespace, lab in self.labs.items():
            for pod in lab.get("pods"):
                if pod["spec"].get("nodeName"):
                    found[pod["metadata"]["uid"]] = (namespace, pod["spec"]["nodeName"])
        return found

    def _run(self) -> None:
        while not self._stop.is_set():
            began = time.monotonic()
            pods = self._pods()
            by_node: dict[str, list[str]] = {}
            for uid, (_, node) in pods.items():
                by_node.setdefault(node, []).append(uid)
            seen = {}
            for node, uids in by_node.items():
                out = subprocess.run(["docker", "exec", node, "sh", "-c", SAMPLE_SCRIPT, "sh", *uids],
                                     capture_output=True, text=True)
                for line in out.stdout.splitlines():
                    uid, cpu, mem = line.split()
                    seen[uid] = (pods[uid][0], int(cpu), int(mem))
            self.samples.append((time.monotonic(), seen))
            self._stop.wait(max(0.0, self.period - (time.monotonic() - began)))

    def peaks(self) -> dict[str, dict]:
        """Per namespace: peak cores (CPU time between two samples over their interval), peak working set (bytes),
        CPU seconds in all."""
        result = {ns: {"cores": 0.0, "memory": 0, "cpu_seconds": 0.0} for ns in self.labs}
        for (t0, before), (t1, after) in zip(self.samples, self.samples[1:]):
            used: dict[str, float] = {}
            for uid, (namespace, cpu, _) in after.items():
                if uid in before:
                    used[namespace] = used.get(namespace, 0.0) + max(0, cpu - before[uid][1]) / 1e9
            for namespace, seconds in used.items():
                result[namespace]["cores"] = max(result[namespace]["cores"], seconds / (t1 - t0))
                result[namespace]["cpu_seconds"] += seconds
        for _, seen in self.samples:
            memory: dict[str, int] = {}
            for namespace, _, mem in seen.values():
                memory[namespace] = memory.get(namespace, 0) + mem
            for namespace, total in memory.items():
                result[namespace]["memory"] = max(result[namespace]["memory"], total)
        return result


APISERVER_SCRIPT = r"""
p=$(pgrep -o kube-apiserver)
echo "$(awk '{print $14 + $15}' /proc/$p/stat) $(getconf CLK_TCK) $(awk '/VmRSS/{print $2}' /proc/$p/status)"
"""


def apiserver_usage(node: str) -> tuple[float, int]:
    """The API server's CPU seconds so far and its resident memory (bytes), read on the control-plane node."""
    out = subprocess.run(["docker", "exec", node, "sh", "-c", APISERVER_SCRIPT], capture_output=True, text=True)
    ticks, hertz, rss = out.stdout.split()
    return int(ticks) / int(hertz), int(rss) * 1024


def registered_watches(admin: Lab) -> int:
    """The watches the API server serves now (`apiserver_longrunning_requests{verb="WATCH"}`, summed)."""
    text = admin.kubectl("get --raw /metrics", show=False).stdout
    return int(sum(float(m.group(1)) for m in re.finditer(
        r'^apiserver_longrunning_requests\{[^}]*verb="WATCH"[^}]*\} (\S+)$', text, re.M)))


def apiserver_load(admin: Lab, labs: list[Lab], node: str, seconds: float) -> dict:
    """The API server's CPU (cores) and memory, idle with no lab watching, then with every lab watching (the four
    watches `lab.wait` opens), then while every lab scales its Deployment up and down (each change fans out to the
    watches)."""
    def rate(window: float) -> tuple[float, int]:
        cpu0, _ = apiserver_usage(node)
        time.sleep(window)
        cpu1, rss = apiserver_usage(node)
        return (cpu1 - cpu0) / window, rss

    found = {"watches_before": registered_watches(admin)}
    found["idle"] = rate(seconds)
    for lab in labs:
        lab.backend._ensure_watchers(("pods", "endpointslices", "services", "deployments"))
    time.sleep(3)
    found["watches_with_labs"] = registered_watches(admin)
    found["watched"] = rate(seconds)
    cpu0, _ = apiserver_usage(node)
    began = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(max_workers=len(labs)) as pool:
        list(pool.map(lambda lab: [lab.scale("web", n) for n in (6, 12, 6, 12)], labs))
    for lab in labs:
        lab.wait(lambda l: (l.get("deployments", "web").get("status") or {}).get("readyReplicas") == 12, timeout=300)
    took = time.monotonic() - began
    cpu1, rss = apiserver_usage(node)
    found["writing"] = ((cpu1 - cpu0) / took, rss)
    found["writing_seconds"] = took
    return found


SERVER_POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "jupyter-bench",
                                                              "labels": {"component": "singleuser-server"}},
              "spec": {"serviceAccountName": "student", "containers": [{
                  "name": "notebook", "image": "labsupport/singleuser:local", "imagePullPolicy": "Never",
                  "command": ["python", "-m", "labsupport.student_lab", "--ip=0.0.0.0", "--port=8888",
                              "--no-browser"],
                  "env": [{"name": "LABSUPPORT_BACKEND", "value": "kube"}],
                  "ports": [{"containerPort": 8888}],
                  "resources": {"requests": {"cpu": "50m", "memory": "192M"},
                                "limits": {"cpu": "1", "memory": "512M"}},
                  "readinessProbe": {"httpGet": {"path": "/api", "port": 8888}, "periodSeconds": 1}}]}}


def spawn_burst(labs: list[Lab], kind_cluster: str) -> list[float]:
    """Start one server per student at once (the KubeSpawner image and command, the student's account), all on one
    worker (the image, 1.3 GB, is loaded there once; on this machine every node shares the same two cores anyway),
    and time each from its creation until it answers (Ready: its /api answered)."""
    workers = [n for n in subprocess.run(["kind", "get", "nodes", "--name", kind_cluster], capture_output=True,
                                         text=True).stdout.split() if not n.endswith("-control-plane")]
    worker = sorted(workers)[0]
    if subprocess.run(["docker", "exec", worker, "crictl", "inspecti", "docker.io/labsupport/singleuser:local"],
                      capture_output=True).returncode != 0:
        began = time.monotonic()
        subprocess.run(["kind", "load", "docker-image", "labsupport/singleuser:local", "--name", kind_cluster,
                        "--nodes", worker], check=True, capture_output=True)
        print(f"loaded labsupport/singleuser:local into {worker} in {time.monotonic() - began:.0f} s")
    pod = json.loads(json.dumps(SERVER_POD))
    pod["spec"]["nodeSelector"] = {"kubernetes.io/hostname": worker}
    created = {}
    for lab in labs:
        lab.apply(pod)
        created[lab.namespace] = time.monotonic()
    ready: dict[str, float] = {}

    def answering(lab: Lab) -> bool:
        pod = lab.get("pods", "jupyter-bench")
        ok = any(c["type"] == "Ready" and c["status"] == "True" for c in (pod.get("status") or {}).get(
            "conditions") or [])
        if ok:
            ready.setdefault(lab.namespace, time.monotonic())
        return ok

    with concurrent.futures.ThreadPoolExecutor(max_workers=len(labs)) as pool:
        list(pool.map(lambda lab: lab.wait(answering, timeout=900), labs))
    return sorted(ready[ns] - created[ns] for ns in created)


def metrics_api(admin: Lab) -> bool:
    """Whether the cluster serves the metrics API (`kubectl top`)."""
    return admin.kubectl("top pods -n kube-system", show=False).returncode == 0


def lesson_work(lab: Lab, requests: int) -> int:
    """A lesson's work as one student: the largest set of pods, requests through the Service and a DNS lookup, a
    rollout of the 12 nginx replicas to another image, the requests again. Returns the answers that were 200."""
    lab.apply(LARGEST)
    lab.wait(lambda l: len(l.get("pods")) == 16 and all(p["status"].get("phase") == "Running" for p in l.get("pods")),
             timeout=600)
    served = sum(lab.curl("http://web/", source="pod/client").status == 200 for _ in range(requests))
    lab.nslookup("web")
    lab.apply(LARGEST.replace("nginx:1.27", "nginx:1.28"))
    lab.wait(lambda l: (l.get("deployments", "web").get("status") or {}).get("updatedReplicas") == 12 and
             (l.get("deployments", "web").get("status") or {}).get("readyReplicas") == 12 and
             len(l.get("pods", selector="app=web")) == 12, timeout=600)
    return served + sum(lab.curl("http://web/", source="pod/client").status == 200 for _ in range(requests))


def main() -> int:
    """Make a class, run a lesson's work as every student at once while sampling, measure the API server and a
    spawn burst, print the tables, delete the class."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kubeconfig", default=str(state_dir() / "kind-labsupport-test.kubeconfig"))
    parser.add_argument("--students", type=int, default=3)
    parser.add_argument("--settle", type=float, default=30, help="seconds to wait after the traffic")
    parser.add_argument("--requests", type=int, default=30, help="requests from each client through its Service")
    parser.add_argument("--window", type=float, default=20, help="seconds the API server's CPU is measured over")
    parser.add_argument("--spawn", type=int, default=0, help="start this many students' servers at once (needs "
                                                             "labsupport/singleuser:local)")
    parser.add_argument("--kind-cluster", default="labsupport-test", help="the kind cluster of --kubeconfig")
    parser.add_argument("--quick", action="store_true", help="two students, short windows, no spawn burst")
    args = parser.parse_args()
    if args.quick:
        args.students, args.spawn, args.settle, args.requests, args.window = 2, 0, 5, 10, 5
    if not os.path.exists(args.kubeconfig):
        print(f"no cluster to measure ({args.kubeconfig} does not exist: the kind tier's cluster, or give "
              "--kubeconfig); skipped")
        return 0
    tag = secrets.token_hex(3)
    name = f"bench-{tag}"
    students = [f"bench-{tag}-{i}" for i in range(1, max(args.students, args.spawn) + 1)]
    out = pathlib.Path(tempfile.mkdtemp(prefix="labsupport-class-"))
    admin = Lab(backend="kube", kubeconfig=args.kubeconfig)
    control_plane = f"{args.kind_cluster}-control-plane"
    labs: list[Lab] = []
    try:
        began = time.perf_counter()
        cluster.make_class(students, args.kubeconfig, out, class_name=name)
        made = time.perf_counter() - began
        print(f"class of {len(students)}: `class cluster` took {made:.1f} s ({made / len(students):.2f} s a student, "
              "the guards' check included)")
        all_labs = [Lab(backend="kube", kubeconfig=str(out / f"{s}.kubeconfig")) for s in students]
        if args.spawn:
            waited = spawn_burst(all_labs[:args.spawn], args.kind_cluster)
            print(f"spawn burst of {args.spawn} servers at once, created → answering: median "
                  f"{statistics.median(waited):.1f} s, first {waited[0]:.1f} s, last {waited[-1]:.1f} s")
            for lab in all_labs[:args.spawn]:
                lab.delete("pod", "jupyter-bench", grace_period=0)
        labs = all_labs[:args.students]
        for lab in all_labs[args.students:]:
            lab.close()
        sampler = Sampler({lab.namespace: lab for lab in labs}).start()
        began = time.perf_counter()
        with concurrent.futures.ThreadPoolExecutor(max_workers=len(labs)) as pool:
            served = sum(pool.map(lambda lab: lesson_work(lab, args.requests), labs))
        worked = time.perf_counter() - began
        time.sleep(args.settle)
        sampler.stop()
        peaks = sampler.peaks()
        print(f"a lesson's work as {len(labs)} students at once (16 pods each, a rollout of 12, "
              f"{2 * args.requests} requests, a lookup): {worked:.0f} s; {served} of {2 * args.requests * len(labs)} "
              f"requests answered 200; sampled every second ({len(sampler.samples)} samples)")
        print("| student namespace | peak CPU (cores, over 1 s) | CPU seconds in all | peak working set |")
        print("|---|---|---|---|")
        for namespace, peak in sorted(peaks.items()):
            print(f"| {namespace} | {peak['cores']:.2f} | {peak['cpu_seconds']:.1f} | {peak['memory'] / MIB:.0f} MiB |")
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
        print(f"metrics API (kubectl top): {'yes' if top else 'no'}; memory read from each pod's cgroup on its node "
              f"({rows and next(iter(rows.values()))[0]['cgroup']}), idle")
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
        load = apiserver_load(admin, labs, control_plane, args.window)
        print(f"API server: watches {load['watches_before']} → {load['watches_with_labs']} with the {len(labs)} "
              f"students' labs watching; CPU idle {load['idle'][0]:.3f} cores, watched {load['watched'][0]:.3f}, "
              f"while every student scales 12→6→12→6→12 ({load['writing_seconds']:.0f} s) "
              f"{load['writing'][0]:.3f}; resident memory {load['idle'][1] / MIB:.0f} → "
              f"{load['writing'][1] / MIB:.0f} MiB")
        print(json.dumps({"seconds_per_student": made / len(students),
                          "peaks": {ns: {k: round(v, 3) for k, v in p.items()} for ns, p in peaks.items()},
                          "namespace_working_set_mib": [round(t / MIB, 1) for t in per_namespace],
                          "apiserver": {k: v for k, v in load.items()}}))
    finally:
        for lab in labs:
            lab.close()
        cluster.delete_class(args.kubeconfig, class_name=name, out=out)
        admin.close()
        shutil.rmtree(out, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
