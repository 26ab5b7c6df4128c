"""Every lesson of both editions, unmodified, in a browser tab: Run All with no error, then the same checks the sim
tier makes of a lesson run on CPython (what each lesson must show, the live pictures answering their buttons, every
declared port answering, Russian printed as Russian), and not one request leaving loopback."""
from __future__ import annotations

import json
import re

import nbformat
import pytest

from tests.lite.conftest import ROOT, dumps, errors
from tests.notebooks import after_run_all

pytestmark = [pytest.mark.lite, pytest.mark.slow]

#: What the page throws for requests still pending on a kernel connection the tier shut down and disposed (the last
#: lesson's, closed by `close_all`): the app's own teardown, not the lesson's.
DISPOSED = re.compile(r"[0-9a-f-]{36} was disposed")

LESSONS = [f"{edition}{path.name}" for edition, folder in (("", ROOT / "notebooks"), ("ru/", ROOT / "notebooks" / "ru"))
           for path in sorted(folder.glob("[0-9][0-9]-*.ipynb"))]


def as_notebook(lesson: str, cells: list[dict]) -> nbformat.NotebookNode:
    """The lesson as stored, with the outputs the tab's run gave each code cell."""
    nb = nbformat.read(ROOT / "notebooks" / lesson, as_version=4)
    ran = {cell["index"]: cell for cell in cells}
    for index, cell in enumerate(nb.cells):
        if cell.cell_type == "code" and index in ran:
            cell.outputs = [nbformat.from_dict(output) for output in ran[index]["outputs"]]
            cell.execution_count = ran[index]["count"]
    return nb


@pytest.mark.timeout(900)
@pytest.mark.parametrize("lesson", LESSONS)
def test_the_lesson_runs_in_a_tab_as_on_cpython(tab, lesson):
    errors_before = len(tab.page_errors)
    opened = tab.open(lesson)
    assert opened["status"] == "idle", opened
    for line in opened.get("started", []):
        print(f"\n[lite] {lesson}: {line}")
    try:
        ran = tab.run_all()
        cells = ran["cells"]
        print(f"\n[lite] {lesson}: Run All {ran['seconds']:.1f} s, {len(cells)} code cells")
        assert not errors(cells), "\n".join(errors(cells))
        alive = json.loads(tab.execute(after_run_all.PROBE).strip().splitlines()[-1])
    finally:
        tab.close_all()
    name = lesson.rsplit("/", 1)[-1]
    assert not alive["closed"], f"{name}: Run All closed the lab"
    assert alive["open"] == alive["views"], f"{name}: after Run All a picture lost its controls: {alive}"
    after_run_all.check_pictures(name, alive)
    after_run_all.check_ports(name, alive)
    nb = as_notebook(lesson, cells)
    after_run_all.CHECKS.get(name[:-len(".ipynb")], lambda nb: None)(nb)
    if lesson.startswith("ru/"):
        after_run_all.check_russian_output(nb)
    source = "".join(c.source for c in nb.cells if c.cell_type == "code")
    if "lab.graph()" in source:
        assert any('class="cluster-graph"' in after_run_all.html_of(c) for c in nb.cells if c.cell_type == "code"), \
            f"{name}: the cluster picture left no static copy"
    if "lab.kubectl(" in source:
        assert any("NAME" in after_run_all.text_of(c) for c in nb.cells if c.cell_type == "code"), \
            f"{name}: kubectl printed no table"
    assert tab.blocked == [], f"requests that tried to leave loopback: {dumps(tab.blocked)}"
    thrown = [e for e in tab.page_errors[errors_before:] if not DISPOSED.fullmatch(e)]
    assert thrown == [], f"{name}: the page threw {dumps(thrown)}"
