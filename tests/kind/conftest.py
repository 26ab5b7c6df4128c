"""Fixtures of the kind tests: the embedded API server a `kube` lab talks to over real HTTPS."""
from __future__ import annotations

import pytest

from labsupport import Lab


def embedded_kubeconfig(sim: Lab) -> str:
    """The kubeconfig of the embedded API server of `sim` (part of the project: a failure here is a failure)."""
    return sim.kubeconfig


@pytest.fixture
def server():
    """An embedded cluster whose API server the kube backend talks to."""
    with Lab(backend="sim", seed=0) as sim:
        yield sim


@pytest.fixture
def kube(server, tmp_path, monkeypatch):
    """A `kube` lab on the embedded API server, in namespace default."""
    monkeypatch.setenv("LABSUPPORT_STATE_DIR", str(tmp_path / "state"))
    lab = Lab(backend="kube", kubeconfig=embedded_kubeconfig(server))
    yield lab
    lab.close()


# --- the real kind tier: one shared cluster and a small one for the whole tier (tests/kind/tier_cluster.py) ---------
import os  # noqa: E402
import pathlib  # noqa: E402
import time  # noqa: E402

from labsupport.testing import in_ci, require  # noqa: E402
from tests.kind.tier_cluster import (KIND_CLUSTER, KIND_MODE, KIND_WORKERS, SMALL_CLUSTER,  # noqa: E402,F401
                                     cluster_ready, open_shared, open_small)
from tests.timetable import timed_phase  # noqa: E402


def kind_tier_enabled() -> bool:
    """The kind tier runs under CI (where it is required) and where a user opts in with LABSUPPORT_KIND_TESTS=1."""
    return in_ci() or os.environ.get("LABSUPPORT_KIND_TESTS") == "1"


#: How long the tier waits for the offline images `.ci/run` builds in the background before giving up.
IMAGES_BUILD_TIMEOUT = 75 * 60


def wait_for_images_build(status: pathlib.Path | None = None, timeout: float = IMAGES_BUILD_TIMEOUT) -> None:
    """Wait for `make kind-images` started beside the other tiers (LABSUPPORT_KIND_IMAGES_STATUS names the file its
    exit code is written to, LABSUPPORT_KIND_IMAGES_LOG its output); fail with the log's tail if it failed."""
    where = status or (pathlib.Path(os.environ["LABSUPPORT_KIND_IMAGES_STATUS"])
                       if os.environ.get("LABSUPPORT_KIND_IMAGES_STATUS") else None)
    if where is None:
        return
    deadline = time.monotonic() + timeout
    while not (where.exists() and where.read_text().strip()):
        if time.monotonic() > deadline:
            pytest.fail(f"`make kind-images` has not finished after {timeout / 60:.0f} min ({where} is still empty)",
                        pytrace=False)
        time.sleep(min(5, max(0.2, timeout / 100)))
    code = where.read_text().strip()
    if code != "0":
        log = pathlib.Path(os.environ.get("LABSUPPORT_KIND_IMAGES_LOG", ""))
        tail = "\n".join(log.read_text(errors="replace").splitlines()[-30:]) if log.is_file() else "(no log)"
        pytest.fail(f"`make kind-images` failed (exit code {code}); the end of {log}:\n{tail}", pytrace=False)


def require_kind_tier(mode: str = KIND_MODE) -> None:
    """Skip unless the tier is enabled (kind_tier_enabled); enabled, skip or, under CI, fail unless Docker, kind
    and kubectl are here and a node image is at hand (the one `make kind-images` built, or a registry's)."""
    if not kind_tier_enabled():
        pytest.skip("the kind tier runs under CI or when opted in: set LABSUPPORT_KIND_TESTS=1 (it needs a Docker "
                    "engine and kind; `make kind-images` builds everything offline)")
    wait_for_images_build()
    from labsupport.kind import images, preflight
    found = preflight.problems(mode)
    if not found and not images.local_node_image() and not os.environ.get("LABSUPPORT_KIND_REGISTRY"):
        found.append("the node image labsupport/kind-node (run `make kind-images`; or set LABSUPPORT_KIND_REGISTRY=1 "
                     "where kind can pull kindest/node)")
    require(found, "kind")


#: How long the tier waits for the clusters `.ci/run` makes ahead of it (after the images) before making them itself.
CLUSTERS_AHEAD_TIMEOUT = 30 * 60


def wait_for_clusters_made_ahead(status: pathlib.Path | None = None, timeout: float = CLUSTERS_AHEAD_TIMEOUT) -> None:
    """Wait for `python -m tests.kind.tier_cluster` started by `.ci/run` once the images were built
    (LABSUPPORT_KIND_CLUSTERS_STATUS names the file its exit code is written to, LABSUPPORT_KIND_CLUSTERS_LOG its
    output), so that no two `kind create` of one cluster run at once. What it could not make, the tier makes: its
    reason is printed here (shown with the test's output) and the tier goes on."""
    where = status or (pathlib.Path(os.environ["LABSUPPORT_KIND_CLUSTERS_STATUS"])
                       if os.environ.get("LABSUPPORT_KIND_CLUSTERS_STATUS") else None)
    if where is None:
        return
    deadline = time.monotonic() + timeout
    while not (where.exists() and where.read_text().strip()):
        if time.monotonic() > deadline:
            pytest.fail(f"the kind clusters made ahead of the tier are not ready after {timeout / 60:.0f} min "
                        f"({where} is still empty)", pytrace=False)
        time.sleep(min(2, max(0.2, timeout / 100)))
    code = where.read_text().strip()
    if code != "0":
        log = pathlib.Path(os.environ.get("LABSUPPORT_KIND_CLUSTERS_LOG", ""))
        tail = "\n".join(log.read_text(errors="replace").splitlines()[-20:]) if log.is_file() else "(no log)"
        print(f"the clusters made ahead of the tier: exit code {code}; the tier makes what is missing. "
              f"The end of {log}:\n{tail}")


def opened(name: str, open_lab, workers: int, timeout: float = 420) -> Lab:
    """The Lab `open_lab()` opens on cluster `name`, once every node and kube-system pod is ready; the time it took
    is a phase of the time table, named for whether the cluster was made here or adopted."""
    from labsupport.kind.preflight import list_clusters
    from labsupport.kind.runner import CommandRunner
    made = name not in list_clusters(CommandRunner())
    with timed_phase(f"kind cluster {name}: {'made' if made else 'adopted'} by the tier"):
        lab = open_lab()
        try:
            # kind's --wait covers the control plane only: wait for every node, its CNI and kube-proxy, and CoreDNS
            lab.wait(lambda l: cluster_ready(l, workers), timeout=timeout)
        except BaseException:
            release_cluster(lab)
            raise
    return lab


@pytest.fixture(scope="package")
def kind_cluster():
    """The tier's one shared kind cluster (made ahead of the tier, made here or reused), deleted after the tier's last
    test (so it does not idle through the other tiers) unless LABSUPPORT_KIND_KEEP=1.
    Yields a Lab on it in namespace default; tests that leave objects behind use a namespace of their own."""
    require_kind_tier()
    wait_for_clusters_made_ahead()
    lab = opened(KIND_CLUSTER, open_shared, KIND_WORKERS)
    try:
        yield lab
    finally:
        release_cluster(lab)


@pytest.fixture(scope="package")
def small_cluster():
    """The tier's small cluster (one worker; made ahead of the tier, made here or reused) for what must not share
    the shared one: lesson 04's mode switches and the KubeSpawner test's host routes. Yields a Lab on it in namespace
    default, without the load balancer; deleted after the tier unless LABSUPPORT_KIND_KEEP=1."""
    require_kind_tier()
    wait_for_clusters_made_ahead()
    lab = opened(SMALL_CLUSTER, lambda: open_small(load_images=False, load_balancer=False), 1)
    try:
        yield lab
    finally:
        release_cluster(lab)


def release_cluster(lab: Lab) -> None:
    """The end of a test cluster: deleted (so it does not idle through the other tiers), or only closed when
    LABSUPPORT_KIND_KEEP=1 keeps it for the next run."""
    if os.environ.get("LABSUPPORT_KIND_KEEP") == "1":
        lab.close()
    else:
        lab.backend.delete_cluster()


@pytest.fixture
def kind_ns(kind_cluster, request):
    """A Lab on the tier's cluster in a fresh namespace of its own (deleted afterwards)."""
    import re
    import secrets
    name = "t-" + re.sub(r"[^a-z0-9-]", "-", request.node.name.lower())[:40].strip("-") + "-" + secrets.token_hex(3)
    kind_cluster.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    lab = Lab(backend="kind", proxy_mode=KIND_MODE, name=KIND_CLUSTER, workers=KIND_WORKERS, namespace=name,
              load_images=False, preflight=False, progress="quiet")
    try:
        yield lab
    finally:
        lab.close()
        kind_cluster.delete("namespaces", name, namespace=None)


@pytest.fixture(scope="package")
def shared_class(kind_cluster, tmp_path_factory):
    """A class of three students on the tier's cluster (tests/kind/student_class.py), shared by the class tests and
    the escape suite, deleted after them."""
    from tests.kind.student_class import make_class, remove_class
    klass = make_class(kind_cluster.kubeconfig, tmp_path_factory.mktemp("shared-class"))
    yield klass
    remove_class(klass, kind_cluster)
