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


# --- the real kind tier: one cluster for the whole tier ------------------------------------------------------------
import os  # noqa: E402
import pathlib  # noqa: E402
import time  # noqa: E402

from labsupport.testing import in_ci, require  # noqa: E402

KIND_MODE = os.environ.get("LABSUPPORT_KIND_MODE", "nftables")
KIND_CLUSTER = os.environ.get("LABSUPPORT_KIND_CLUSTER", "labsupport-test")
#: one control plane and six workers, two per zone: the shape lesson 07 asks for (the other lessons fit in it)
KIND_WORKERS = int(os.environ.get("LABSUPPORT_KIND_WORKERS", "6"))


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


@pytest.fixture(scope="package")
def kind_cluster():
    """The tier's one real kind cluster (created or reused), deleted after the tier's last test (so it does not idle
    through the other tiers) unless LABSUPPORT_KIND_KEEP=1.
    Yields a Lab on it in namespace default; tests that leave objects behind use a namespace of their own."""
    require_kind_tier()
    lab = Lab(backend="kind", proxy_mode=KIND_MODE, name=KIND_CLUSTER, workers=KIND_WORKERS, progress="quiet")
    try:
        # kind's --wait covers the control plane only: wait for every node, its CNI and kube-proxy, and CoreDNS
        lab.wait(cluster_ready, timeout=420)
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
