"""Every lesson runs unchanged on the tier's real kind cluster, each in a namespace of its own, several at once.

Each namespace is a class student's, made as `labsupport class cluster` makes one (Pod Security `restricted`
enforced, the NetworkPolicies, the quota and limits; the cluster-wide guards installed): the lessons' pods pass
Pod Security as the cluster defaults them, and their traffic is what the policies allow. Lesson 09 runs after 06 in
06's namespace, so what 06 left behind (nothing, once its kernel has shut down) cannot spoil it.

The notebook's `Lab()` finds the cluster through LABSUPPORT_BACKEND=kind and LABSUPPORT_KIND_CLUSTER /
LABSUPPORT_KIND_WORKERS / LABSUPPORT_KIND_NAMESPACE, as a student's environment would set them, and keeps the
cluster's kube-proxy mode (LABSUPPORT_PROXY_MODE). A lesson that switches kube-proxy's mode runs on the tier's small
cluster (tests/kind/tier_cluster.py), so the shared cluster never changes mode under the other tests.

A lesson spends most of its time waiting (for pods, for kube-proxy, for the lab's clock, which sleeps on kind), so
the lessons run in a few lanes at once, each lesson in a process of its own (`run_lesson.py`); lessons that ask for
the same fixed NodePort share a lane. Each lesson is still its own test, reporting its own failing cell.
"""
from __future__ import annotations

import ast
import concurrent.futures
import os
import pathlib
import secrets
import subprocess
import sys
from dataclasses import dataclass

import nbformat
import pytest

from labsupport import Lab
from labsupport.errors import NotFound
from tests.kind.conftest import KIND_CLUSTER, KIND_MODE, KIND_WORKERS, SMALL_CLUSTER, cluster_ready
from tests.notebooks import after_run_all
from tests.notebooks.editions import ENGLISH, ROOT, lessons
from tests.timetable import timed_phase

pytestmark = pytest.mark.kind

#: Lessons that switch kube-proxy's mode: they run on the tier's small cluster (one control plane, one worker).
ON_THE_SMALL_CLUSTER = {"04-kube-proxy-modes"}


def answered_in_the_clients_zone(nb, cluster: Lab) -> None:
    """Lesson 07: under PreferSameZone every answer came from the client's zone, by the real controller's hints and
    the real kube-proxy's filtering (on sim the picture is the same; here nothing is modelled)."""
    zones = {n["metadata"]["name"]: n["metadata"]["labels"].get("topology.kubernetes.io/zone")
             for n in cluster.get("nodes")}
    cell = after_run_all.cell_with(nb, 'lesson.spread(lab, "http://web", source="pod/client", requests=90, by="node")')
    text = "".join(o["data"]["text/plain"] for o in cell.outputs if o.output_type == "execute_result")
    answered = ast.literal_eval(text.removeprefix("Counter(").removesuffix(")"))
    client_zone = zones[f"{KIND_CLUSTER}-worker"]
    assert sum(answered.values()) == 90 and {zones.get(node) for node in answered} == {client_zone}, answered


#: What a lesson must have shown on the real cluster, beyond running without an error.
CHECKS_ON_KIND = {"07-topology-affinity": answered_in_the_clients_zone}


#: Lanes that run at once; the lessons of one lane run one after another. The longest lessons (06's 300 requests
#: through the load balancer, 04's switches of kube-proxy's mode) lead their lanes; 09 follows 06 in the same namespace.
LANES = (("06-source-ip", "09-practice"),
         ("04-kube-proxy-modes", "02-service-clusterip", "01-pods-are-mortal"),
         ("05-service-types", "08-pitfalls", "07-topology-affinity", "03-endpointslices", "00-start-here"))
#: Lanes whose lessons share one namespace, one after the other, as a student's lessons do.
SHARED_NAMESPACE = {("06-source-ip", "09-practice")}


@dataclass
class LessonRun:
    """How one lesson went: the notebook with its outputs (None when it never ran) and what went wrong."""

    notebook: object | None
    problem: str | None
    host: Lab | None = None


def student_namespace(host: Lab, namespace: str) -> None:
    """Make `namespace` as a class's student namespace: every guard of `labsupport class cluster`."""
    from labsupport.hub import cluster as class_cluster
    install_guards(host)
    student = namespace.removeprefix(class_cluster.NAMESPACE_PREFIX)
    for obj in class_cluster.student_objects(student, "t-lessons", pod_cidrs=pod_cidrs(host)):
        if obj["kind"] not in ("ServiceAccount", "Role", "RoleBinding", "ClusterRoleBinding"):
            host.apply(obj)


#: The clusters (by kubeconfig) whose cluster-wide guards this run installed.
_GUARDED: set[str] = set()


def install_guards(host: Lab) -> None:
    """The cluster-wide guards (admission policies), once per cluster."""
    from labsupport.hub import cluster as class_cluster
    if host.kubeconfig not in _GUARDED:
        class_cluster.install_guards(class_cluster.ClusterClient(host.kubeconfig))
        _GUARDED.add(host.kubeconfig)


def pod_cidrs(host: Lab) -> list[str]:
    """The cluster's pod network, as `class cluster` reads it."""
    from labsupport.hub import cluster as class_cluster
    return class_cluster.ClusterClient(host.kubeconfig).pod_cidrs()


def run_one(path: pathlib.Path, kind_cluster: Lab, small_cluster: Lab, folder: pathlib.Path,
            namespace: str | None = None) -> LessonRun:
    """Run a lesson on the shared cluster (or the small one), in a fresh student namespace removed afterwards (or in
    `namespace`, made and removed by the caller)."""
    cluster, workers, host = KIND_CLUSTER, KIND_WORKERS, kind_cluster
    if path.stem in ON_THE_SMALL_CLUSTER:
        cluster, workers, host = SMALL_CLUSTER, 1, small_cluster
    given = namespace
    namespace = namespace or f"lab-lesson-{path.stem[:2]}-{secrets.token_hex(3)}"
    try:
        try:
            host.wait(lambda lab: cluster_ready(lab, workers), timeout=240)
        except TimeoutError:
            waiting = [f"{p['metadata']['name']} ({p['status'].get('phase')})"
                       for p in host.get("pods", namespace="kube-system")
                       if p["status"].get("phase") != "Running"
                       or not all(c.get("ready") for c in p["status"].get("containerStatuses", []))]
            return LessonRun(None, f"kind cluster {cluster} not ready: nodes "
                                   f"{[n['metadata']['name'] for n in host.get('nodes')]}, kube-system pods not "
                                   f"ready {waiting}")
        if given is None:
            student_namespace(host, namespace)
        env = {**os.environ, "LABSUPPORT_BACKEND": "kind", "LABSUPPORT_PROXY_MODE": KIND_MODE,
               "LABSUPPORT_KIND_CLUSTER": cluster, "LABSUPPORT_KIND_WORKERS": str(workers),
               "LABSUPPORT_KIND_NAMESPACE": namespace}
        out = folder / path.name
        with timed_phase(f"lesson {path.stem} on kind ({cluster})"):
            done = subprocess.run([sys.executable, "-m", "tests.kind.run_lesson", str(path), str(out)], cwd=ROOT,
                                  env=env, capture_output=True, text=True, timeout=3600)
        nb = nbformat.read(out, as_version=4) if out.exists() else None
        if done.returncode != 0:
            failed = [(c.source[:300], o.get("ename"), o.get("evalue", "")[:500])
                      for c in (nb.cells if nb else []) if c.cell_type == "code"
                      for o in c.outputs if o.output_type == "error"]
            return LessonRun(nb, f"{path.name} on kind: {failed or done.stderr[-2000:]}")
        problem = None
        try:
            CHECKS_ON_KIND.get(path.stem, lambda nb, cluster: None)(nb, host)
        except AssertionError as e:
            problem = f"{path.name} on kind ran, but did not show what it should: {e}"
        return LessonRun(nb, problem)
    except Exception as e:  # noqa: BLE001 - one lesson's trouble is that lesson's failure, not the others'
        return LessonRun(None, f"{path.name} on kind: {type(e).__name__}: {e}")
    finally:
        if given is None:
            try:
                host.delete("namespaces", namespace, namespace=None)
            except Exception:  # noqa: BLE001 - never made (cluster not ready), or the cluster is gone
                pass


@pytest.fixture(scope="module")
def lesson_runs(kind_cluster, small_cluster, tmp_path_factory):
    """Every lesson, run lane by lane at once; {lesson stem: LessonRun}."""
    folder = tmp_path_factory.mktemp("lessons-on-kind")
    paths = {p.stem: p for p in lessons(ENGLISH)}
    lanes = [[paths.pop(stem) for stem in lane if stem in paths] for lane in LANES]
    lanes += [[p] for p in paths.values()]   # a lesson added since LANES was written gets a lane of its own

    def run_lane(lane: list[pathlib.Path]) -> dict[str, LessonRun]:
        if tuple(p.stem for p in lane) not in SHARED_NAMESPACE:
            return {p.stem: run_one(p, kind_cluster, small_cluster, folder) for p in lane}
        namespace = f"lab-lessons-{secrets.token_hex(3)}"
        student_namespace(kind_cluster, namespace)
        try:
            return {p.stem: run_one(p, kind_cluster, small_cluster, folder, namespace) for p in lane}
        finally:
            kind_cluster.delete("namespaces", namespace, namespace=None)

    results: dict[str, LessonRun] = {}
    with concurrent.futures.ThreadPoolExecutor(max_workers=len(lanes)) as pool:
        for done in pool.map(run_lane, lanes):
            results.update(done)
    return results


def test_every_lesson_has_a_lane():
    """A lesson missing from LANES would run in a lane of its own, beside the others: say so here."""
    named = [stem for lane in LANES for stem in lane]
    assert sorted(named) == sorted(p.stem for p in lessons(ENGLISH)) and len(set(named)) == len(named)


@pytest.mark.timeout(3600)   # the first one waits for every lane (about 12 minutes on two cores)
@pytest.mark.parametrize("path", lessons(ENGLISH), ids=lambda p: p.stem)
def test_lesson_runs_on_kind(path, lesson_runs):
    run = lesson_runs[path.stem]
    if run.problem:
        pytest.fail(run.problem, pytrace=False)
    assert run.notebook is not None
    assert not [o for c in run.notebook.cells if c.cell_type == "code" for o in c.outputs
                if o.output_type == "error"]
