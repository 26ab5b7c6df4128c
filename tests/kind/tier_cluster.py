"""The kind tier's two clusters, and making them ahead of the tier: `python -m tests.kind.tier_cluster`.

The shared cluster (one control plane and six workers, two per zone: the shape lesson 07 asks for) holds every test
and lesson of the tier, each in a namespace of its own. The small cluster (one control plane, one worker, pods in a
subnet no other cluster uses) holds what must not share it: lesson 04 switches kube-proxy's mode, and the KubeSpawner
test routes this host to its pods. Both are kind clusters of the offline node image `make kind-images` builds.

`.ci/run` runs this module in the background once `make kind-images` is done, so that the clusters' minutes pass
while the other tiers run; the tier's fixtures (tests/kind/conftest.py) wait for it and adopt what it made, and make
whatever it could not. It loads the KubeSpawner test's server image into the small cluster's worker too. Exit code 0
when both clusters are ready; each step is a phase of the run's time table (tests/timetable.py).
"""
from __future__ import annotations

import os
import subprocess
import sys
import time

from labsupport import Lab
from tests.timetable import timed_phase

KIND_MODE = os.environ.get("LABSUPPORT_KIND_MODE", "nftables")
KIND_CLUSTER = os.environ.get("LABSUPPORT_KIND_CLUSTER", "labsupport-test")
#: one control plane and six workers, two per zone: the shape lesson 07 asks for (the other lessons fit in it)
KIND_WORKERS = int(os.environ.get("LABSUPPORT_KIND_WORKERS", "6"))
SMALL_CLUSTER = "labsupport-small"
#: no other cluster's pod subnet (theirs is 10.244.0.0/16): the host's routes to it cannot take another's traffic
SMALL_POD_SUBNET = "10.250.0.0/16"
#: How long a cluster made now may take to have every node and kube-system pod ready (a loaded 2-core machine).
READY_TIMEOUT = 600


def cluster_ready(lab: Lab, workers: int = KIND_WORKERS) -> bool:
    """Every node (a control plane and `workers` workers) Ready and every kube-system pod Running and ready."""
    nodes = lab.get("nodes")
    pods = lab.get("pods", namespace="kube-system")
    return (len(nodes) == 1 + workers
            and all(any(c["type"] == "Ready" and c["status"] == "True" for c in n["status"].get("conditions", []))
                    for n in nodes)
            and bool(pods) and all(p["status"].get("phase") == "Running"
                                   and all(s.get("ready") for s in p["status"].get("containerStatuses", []))
                                   for p in pods))


def open_shared(**options) -> Lab:
    """A Lab on the shared cluster (made when missing), in namespace default."""
    return Lab(backend="kind", proxy_mode=KIND_MODE, name=KIND_CLUSTER, workers=KIND_WORKERS, progress="quiet",
               **options)


def open_small(**options) -> Lab:
    """A Lab on the small cluster (made when missing), in namespace default."""
    return Lab(backend="kind", proxy_mode=KIND_MODE, name=SMALL_CLUSTER, workers=1, node_ports=(),
               pod_subnet=SMALL_POD_SUBNET, progress="quiet", **options)


def small_workers(lab: Lab) -> list[str]:
    """The small cluster's worker nodes (the containers `kind load` loads into)."""
    return [n for n in lab.backend.kind_cluster.nodes() if not n.endswith("-control-plane")]


def make(name: str, open_lab, workers: int) -> Lab:
    """Make (or reuse) one cluster and wait until it is ready; the Lab on it."""
    with timed_phase(f"kind cluster {name}: made ahead of the tier"):
        lab = open_lab(load_images=False, load_balancer=False)
        try:
            lab.wait(lambda l: cluster_ready(l, workers), timeout=READY_TIMEOUT)
        except BaseException:
            lab.close()
            raise
    return lab


def load_singleuser(lab: Lab) -> None:
    """Load the KubeSpawner test's server image into the small cluster's worker, when `make kind-images` built it."""
    from labsupport.kind import images
    from labsupport.kind.runner import program_path
    env = {**os.environ, "PATH": program_path()}
    if subprocess.run(["docker", "image", "inspect", images.SINGLEUSER_IMAGE], capture_output=True,
                      env=env).returncode != 0:
        print(f"{images.SINGLEUSER_IMAGE} was not built: the KubeSpawner test builds and loads it itself")
        return
    with timed_phase(f"kind load {images.SINGLEUSER_IMAGE} into {SMALL_CLUSTER}"):
        subprocess.run(["kind", "load", "docker-image", images.SINGLEUSER_IMAGE, "--name", SMALL_CLUSTER,
                        "--nodes", ",".join(small_workers(lab))], check=True, env=env, timeout=900)


def main(argv: list[str]) -> int:
    """Make both clusters, the shared one first; 0 when both are ready, 1 (with the reason) when one is not."""
    if argv:
        print("usage: python -m tests.kind.tier_cluster", file=sys.stderr)
        return 2
    code = 0
    for name, open_lab, workers in ((KIND_CLUSTER, open_shared, KIND_WORKERS), (SMALL_CLUSTER, open_small, 1)):
        began = time.monotonic()
        try:
            lab = make(name, open_lab, workers)
        except Exception as e:  # noqa: BLE001 - the tier makes what is missing itself; say why here
            print(f"kind cluster {name} was not made ahead: {type(e).__name__}: {e}", file=sys.stderr)
            code = 1
            continue
        try:
            print(f"kind cluster {name}: ready after {time.monotonic() - began:.0f} s", flush=True)
            if name == SMALL_CLUSTER:
                load_singleuser(lab)
        except Exception as e:  # noqa: BLE001
            print(f"loading the KubeSpawner image into {name} failed: {type(e).__name__}: {e}", file=sys.stderr)
            code = 1
        finally:
            lab.close()
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
