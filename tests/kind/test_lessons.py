"""Every lesson runs unchanged on the tier's real kind cluster, each in a namespace of its own, several at once.

The notebook's `Lab()` finds the cluster through LABSUPPORT_BACKEND=kind and LABSUPPORT_KIND_CLUSTER /
LABSUPPORT_KIND_WORKERS / LABSUPPORT_KIND_NAMESPACE, as a student's environment would set them, and keeps the
cluster's kube-proxy mode (LABSUPPORT_PROXY_MODE). A lesson that switches kube-proxy's mode runs on a small cluster
of its own, so the tier's shared cluster never changes mode under the other tests.

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
from tests.kind.conftest import KIND_CLUSTER, KIND_MODE, KIND_WORKERS, cluster_ready
from tests.notebooks import after_run_all
from tests.notebooks.editions import ENGLISH, ROOT, lessons

pytestmark = pytest.mark.kind

#: Lessons that switch kube-proxy's mode, and the cluster (one control plane, one worker) each runs on instead.
OWN_CLUSTER = {"04-kube-proxy-modes": "labsupport-modes"}


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


#: Lanes that run at once; the lessons of one lane run one after another. 05 and 08 both ask for NodePort 30080; the
#: longest lessons (06's 300 requests through the load balancer, 04's cluster of its own) lead their lanes.
LANES = (("06-source-ip", "01-pods-are-mortal"),
         ("04-kube-proxy-modes", "02-service-clusterip", "09-practice"),
         ("05-service-types", "08-pitfalls", "07-topology-affinity", "03-endpointslices", "00-start-here"))


@dataclass
class LessonRun:
    """How one lesson went: the notebook with its outputs (None when it never ran) and what went wrong."""

    notebook: object | None
    problem: str | None
    host: Lab | None = None


def run_one(path: pathlib.Path, kind_cluster: Lab, folder: pathlib.Path) -> LessonRun:
    """Run a lesson on the shared cluster (or its own), in a fresh namespace removed afterwards."""
    cluster, workers, host, own = KIND_CLUSTER, KIND_WORKERS, kind_cluster, None
    namespace = f"lesson-{path.stem[:2]}-{secrets.token_hex(3)}"
    try:
        if OWN_CLUSTER.get(path.stem, KIND_CLUSTER) != KIND_CLUSTER:
            cluster, workers = OWN_CLUSTER[path.stem], 1
            own = Lab(backend="kind", proxy_mode=KIND_MODE, name=cluster, workers=workers, progress="quiet")
            host = own
        try:
            # a cluster made now, on a machine shared with other runs, can take minutes to have every pod ready
            host.wait(lambda lab: cluster_ready(lab, workers), timeout=240 if own is None else 600)
        except TimeoutError:
            waiting = [f"{p['metadata']['name']} ({p['status'].get('phase')})"
                       for p in host.get("pods", namespace="kube-system")
                       if p["status"].get("phase") != "Running"
                       or not all(c.get("ready") for c in p["status"].get("containerStatuses", []))]
            return LessonRun(None, f"kind cluster {cluster} not ready: nodes "
                                   f"{[n['metadata']['name'] for n in host.get('nodes')]}, kube-system pods not "
                                   f"ready {waiting}")
        host.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
        env = {**os.environ, "LABSUPPORT_BACKEND": "kind", "LABSUPPORT_PROXY_MODE": KIND_MODE,
               "LABSUPPORT_KIND_CLUSTER": cluster, "LABSUPPORT_KIND_WORKERS": str(workers),
               "LABSUPPORT_KIND_NAMESPACE": namespace}
        out = folder / path.name
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
        try:
            host.delete("namespaces", namespace, namespace=None)
        except Exception:  # noqa: BLE001 - never made (cluster not ready), or the cluster is gone
            pass
        if own is not None:
            own.backend.delete_cluster()


@pytest.fixture(scope="module")
def lesson_runs(kind_cluster, tmp_path_factory):
    """Every lesson, run lane by lane at once; {lesson stem: LessonRun}."""
    folder = tmp_path_factory.mktemp("lessons-on-kind")
    paths = {p.stem: p for p in lessons(ENGLISH)}
    lanes = [[paths.pop(stem) for stem in lane if stem in paths] for lane in LANES]
    lanes += [[p] for p in paths.values()]   # a lesson added since LANES was written gets a lane of its own

    def run_lane(lane: list[pathlib.Path]) -> dict[str, LessonRun]:
        return {p.stem: run_one(p, kind_cluster, folder) for p in lane}

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
