"""Every lesson of both editions runs top to bottom on `sim` (and on `netns`), and the lessons are stored clean."""
from __future__ import annotations

import pathlib
import re

import nbformat
import pytest

from tests.notebooks import after_run_all
from tests.notebooks.editions import (EDITIONS, ENGLISH, errors_on_netns, lesson_params, lessons, require_edition,
                                     require_lesson)

LESSONS = lessons(ENGLISH)
SECTIONS = ENGLISH.sections
EVERY_LESSON = lesson_params(*EDITIONS)


@pytest.mark.parametrize("edition", EDITIONS, ids=lambda e: e.language)
def test_the_series_is_complete(edition):
    require_edition(edition)
    numbers = [p.name[:2] for p in sorted(edition.folder.glob("[0-9][0-9]-*.ipynb"))]
    assert numbers == [f"{i:02d}" for i in range(10)], numbers


@pytest.mark.parametrize("edition,path", EVERY_LESSON)
def test_stored_without_outputs(edition, path):
    require_lesson(path)
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [], f"{path.name}: a code cell was saved with outputs"
            assert cell.execution_count is None, f"{path.name}: a code cell was saved with an execution count"
    assert "widgets" not in nb.metadata, f"{path.name}: saved widget state"


@pytest.mark.parametrize("edition,path", EVERY_LESSON)
def test_one_skeleton(edition, path):
    require_lesson(path)
    nb = nbformat.read(path, as_version=4)
    text = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    positions = [text.find(s) for s in edition.sections]
    missing = [s for s, at in zip(edition.sections, positions) if at < 0]
    assert not missing, f"{path.name} lacks {missing}"
    assert positions == sorted(positions), f"{path.name}: sections out of order"


@pytest.mark.parametrize("edition,path", EVERY_LESSON)
def test_no_generated_names_in_code(edition, path):
    """Cells look up generated names and addresses instead of hard-coding them."""
    require_lesson(path)
    nb = nbformat.read(path, as_version=4)
    code = "\n".join(c.source for c in nb.cells if c.cell_type == "code")
    assert not re.search(r"\b10\.(9[6-9]|1[01]\d)\.\d+\.\d+\b", code), "a ClusterIP is hard-coded"
    assert not re.search(r"\b10\.244\.\d+\.\d+\b", code), "a pod IP is hard-coded"
    assert not re.search(r"\b172\.18\.\d+\.\d+\b", code), "a node, client or load-balancer IP is hard-coded"
    assert not re.search(r"-[0-9a-f]{8,10}-[a-z0-9]{5}\b", code), "a generated pod name is hard-coded"


@pytest.mark.parametrize("edition,path", EVERY_LESSON)
def test_executes_on_sim(edition, path, tmp_path, monkeypatch):
    from nbclient import NotebookClient
    require_lesson(path)
    monkeypatch.setenv("LABSUPPORT_BACKEND", "sim")
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, kernel_name="python3", timeout=180, resources={"metadata": {"path": str(tmp_path)}})
    probe = nbformat.v4.new_code_cell(after_run_all.PROBE)
    nb.cells.append(probe)
    with client.setup_kernel():
        for index, cell in enumerate(nb.cells):
            client.execute_cell(cell, index)
    nb.cells.pop()
    alive = after_run_all.probe_result(probe)
    assert not alive["closed"], f"{path.name}: Run All closed the lab"
    assert alive["open"] == alive["views"], f"{path.name}: after Run All a picture lost its controls: {alive}"
    after_run_all.check_pictures(path.name, alive)
    after_run_all.check_ports(path.name, alive)
    after_run_all.CHECKS.get(path.stem, lambda nb: None)(nb)
    if edition is not ENGLISH:
        after_run_all.check_russian_output(nb)
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
    assert not errors
    pictures = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs
                if o.output_type == "display_data" and "<svg" in o.get("data", {}).get("text/html", "")]
    if "lab.graph()" in "".join(c.source for c in nb.cells):
        assert pictures, f"{path.name}: the cluster picture left no static copy"
        from nbconvert import HTMLExporter
        page, _ = HTMLExporter().from_notebook_node(nb)
        assert 'class="cluster-graph"' in page and '<g class="pod ' in page, \
            f"{path.name}: the HTML export (as in nbgrader feedback) does not show the cluster picture"


@pytest.mark.kernel
@pytest.mark.parametrize("edition,path", EVERY_LESSON)
def test_executes_on_netns(edition, path, tmp_path, monkeypatch):
    """The same lessons on the real Linux data plane (root and the netfilter tools needed; required in CI)."""
    require_lesson(path)
    monkeypatch.setenv("LABSUPPORT_BACKEND", "netns")
    errors = errors_on_netns(path, tmp_path)
    assert not errors, f"{path.name} on netns: {errors}"
