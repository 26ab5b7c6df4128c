"""The rules the real kube-proxy writes equal labsupport's render for the same objects (counters removed)."""
from __future__ import annotations

import json
import os
import re

import pytest

from labsupport import Invalid, Lab, NotFound
from labsupport.errors import BadRequest

from tests.kernel.manifests import ready
from tests.kernel.test_differential import READY, SCENARIOS

from .conftest import assert_same_rules
from .random_services import random_batch

pytestmark = pytest.mark.upstream

MODES = ("iptables", "nftables")
NOTEBOOKS = os.path.join(os.path.dirname(__file__), "..", "..", "notebooks")
#: 10 clusters of 20 random Services: 200 seeded configurations.
RANDOM_SEEDS = range(10)
PER_BATCH = 20


@pytest.mark.parametrize("mode", MODES)
def test_differential_scenarios(kube_proxy_node, mode):
    lab = Lab(backend="sim", seed=0, proxy_mode=mode)
    try:
        for manifest in SCENARIOS:
            lab.apply(manifest)
        lab.wait(lambda l: all(ready(l, s) == n for s, n in READY.items()), timeout=120)
        for node in ("lab-worker", "lab-worker2"):
            assert_same_rules(kube_proxy_node(lab, node, mode), "the kernel differential scenarios")
    finally:
        lab.close()


def lesson_notebooks() -> list[str]:
    """The lesson notebooks that apply a Service."""
    return sorted(n for n in os.listdir(NOTEBOOKS) if n.endswith(".ipynb")
                  and "kind: Service" in open(os.path.join(NOTEBOOKS, n)).read())


def lesson_manifests(notebook: str) -> tuple[list[str], int]:
    """The YAML texts a lesson's code cells give `lab.apply`, in order, and how many workers its Lab has."""
    with open(os.path.join(NOTEBOOKS, notebook)) as fh:
        cells = [("".join(c["source"])) for c in json.load(fh)["cells"] if c["cell_type"] == "code"]
    code = "\n".join(cells)
    workers = re.search(r"Lab\([^)]*workers=(\d+)", code)
    texts = [t for t in re.findall(r'apply\(\s*"""(.*?)"""', code, re.S) if "kind:" in t]
    return texts, int(workers.group(1)) if workers else 3


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("notebook", lesson_notebooks())
def test_lesson_services(kube_proxy_node, mode, notebook):
    texts, workers = lesson_manifests(notebook)
    assert texts, f"{notebook} applies no manifest the scan can read"
    lab = Lab(backend="sim", seed=0, proxy_mode=mode, workers=workers)
    try:
        for text in texts:
            try:
                lab.apply(text)
            except (Invalid, NotFound, BadRequest):  # a lesson's deliberate mistake, refused as the lesson shows
                continue
        lab.advance(30)
        assert lab.get("services"), f"{notebook}: no Service was stored"
        assert_same_rules(kube_proxy_node(lab, "lab-worker", mode), f"the Services of {notebook}")
    finally:
        lab.close()


@pytest.mark.parametrize("seed", RANDOM_SEEDS)
@pytest.mark.parametrize("mode", MODES)
def test_random_configurations(kube_proxy_node, mode, seed):
    lab = Lab(backend="sim", seed=seed, proxy_mode=mode)
    try:
        lab.apply(random_batch(seed, PER_BATCH))
        node = ("lab-worker", "lab-worker2", "lab-worker3")[seed % 3]
        assert_same_rules(kube_proxy_node(lab, node, mode), f"random configurations, seed {seed}")
    finally:
        lab.close()
