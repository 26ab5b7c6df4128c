"""Every lesson runs unchanged on the tier's real kind cluster, each in a namespace of its own.

The notebook's `Lab()` finds the cluster through LABSUPPORT_BACKEND=kind and LABSUPPORT_KIND_CLUSTER /
LABSUPPORT_KIND_WORKERS / LABSUPPORT_KIND_NAMESPACE, as a student's environment would set them, and keeps the
cluster's kube-proxy mode (LABSUPPORT_PROXY_MODE). A lesson that switches kube-proxy's mode runs on a small cluster
of its own, so the tier's shared cluster never changes mode under the other tests.
"""
from __future__ import annotations

import ast

import nbformat
import pytest

from labsupport import Lab
from labsupport.errors import NotFound
from tests.kind.conftest import KIND_CLUSTER, KIND_MODE, KIND_WORKERS, cluster_ready
from tests.notebooks import after_run_all
from tests.notebooks.editions import ENGLISH, lessons

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


@pytest.mark.parametrize("path", lessons(ENGLISH), ids=lambda p: p.stem)
def test_lesson_runs_on_kind(path, kind_cluster, tmp_path, monkeypatch):
    from nbclient import NotebookClient
    import secrets
    cluster, workers, host, own = KIND_CLUSTER, KIND_WORKERS, kind_cluster, None
    if OWN_CLUSTER.get(path.stem, KIND_CLUSTER) != KIND_CLUSTER:
        cluster, workers = OWN_CLUSTER[path.stem], 1
        own = Lab(backend="kind", proxy_mode=KIND_MODE, name=cluster, workers=workers, progress="quiet")
        host = own
    namespace = f"lesson-{path.stem[:2]}-{secrets.token_hex(3)}"
    try:
        try:
            # a cluster made now, on a machine shared with other runs, can take minutes to have every pod ready
            host.wait(lambda lab: cluster_ready(lab, workers), timeout=240 if own is None else 600)
        except TimeoutError:
            waiting = [f"{p['metadata']['name']} ({p['status'].get('phase')})"
                       for p in host.get("pods", namespace="kube-system")
                       if p["status"].get("phase") != "Running"
                       or not all(c.get("ready") for c in p["status"].get("containerStatuses", []))]
            pytest.fail(f"kind cluster {cluster} not ready: nodes "
                        f"{[n['metadata']['name'] for n in host.get('nodes')]}, kube-system pods not ready {waiting}")
        host.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
        monkeypatch.setenv("LABSUPPORT_BACKEND", "kind")
        monkeypatch.setenv("LABSUPPORT_PROXY_MODE", KIND_MODE)
        monkeypatch.setenv("LABSUPPORT_KIND_CLUSTER", cluster)
        monkeypatch.setenv("LABSUPPORT_KIND_WORKERS", str(workers))
        monkeypatch.setenv("LABSUPPORT_KIND_NAMESPACE", namespace)
        nb = nbformat.read(path, as_version=4)
        client = NotebookClient(nb, kernel_name="python3", timeout=600,
                                resources={"metadata": {"path": str(tmp_path)}})
        try:
            client.execute()
        except Exception as e:  # noqa: BLE001 - the failing cell is reported below with its source
            failed = [(c.source[:300], o.get("ename"), o.get("evalue", "")[:500])
                      for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
            pytest.fail(f"{path.name} on kind: {failed or e}")
        CHECKS_ON_KIND.get(path.stem, lambda nb, cluster: None)(nb, host)
    finally:
        try:
            host.delete("namespaces", namespace, namespace=None)
        except NotFound:   # the cluster was not ready in time, so the namespace was never made
            pass
        if own is not None:
            own.backend.delete_cluster()
