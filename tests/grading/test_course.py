"""The course's files: source notebooks in sync with their builder, well-formed nbgrader metadata, the config."""
from __future__ import annotations

import asyncio
import json

from traitlets.config.loader import PyFileConfigLoader

from grading import build_source
from tests.grading.course import GRADING, source_text


def test_source_notebooks_and_rubrics_are_up_to_date():
    assert build_source.main(["--check"]) == 0


def test_every_assignment_is_well_formed():
    for assignment in build_source.ASSIGNMENTS:
        (path,) = (GRADING / "source" / assignment).glob("*.ipynb")
        nb = json.loads(path.read_text())
        assert nb["metadata"]["kernelspec"]["name"] == "python3"
        code = [c for c in nb["cells"] if c["cell_type"] == "code"]
        first = code[0]["metadata"]["nbgrader"]
        assert first["grade_id"] == "setup" and first["locked"]
        assert 'seed=0' in source_text(code[0])
        graded = [c["metadata"]["nbgrader"] for c in nb["cells"] if c["metadata"].get("nbgrader", {}).get("grade")]
        assert all(g["points"] > 0 for g in graded)
        tests = [g for g in graded if not g["solution"]]
        assert sum(g["points"] for g in tests) >= 9, assignment
        assert any("### BEGIN HIDDEN TESTS" in source_text(c) for c in code), assignment
        assert source_text(code[-1]) == "lab.graph()"
        for cell in nb["cells"]:
            assert not cell.get("outputs") and cell.get("execution_count") is None


def test_review_and_source_ip_have_hand_graded_answers_with_rubrics():
    rubrics = (GRADING / "RUBRICS.md").read_text()
    for grade_id in ("explain-drop", "q1-text", "q2-text", "q3-text", "q4-text"):
        assert f"### `{grade_id}`" in rubrics


def test_config_pins_the_grading_kernel_to_sim(monkeypatch):
    monkeypatch.delenv("LABSUPPORT_CELL_TIMEOUT", raising=False)
    config = PyFileConfigLoader("nbgrader_config.py", path=str(GRADING)).load_config()
    assert config.Execute.timeout == 60
    timeout = config.Execute.timeout_func
    assert timeout({"metadata": {"nbgrader": {"grade_id": "setup"}}}) == 180
    assert timeout({"metadata": {"nbgrader": {"grade_id": "deploy"}}}) == 60
    assert timeout({"metadata": {}}) == 60
    assert config.Execute.interrupt_on_timeout is True
    assert config.Execute.store_widget_state is False
    manager_class = config.Execute.kernel_manager_class
    seen = {}

    async def fake_start(self, **kw):
        seen.update(kw["env"])

    monkeypatch.setenv("LABSUPPORT_BACKEND", "kind")
    monkeypatch.setenv("LABSUPPORT_PROXY_MODE", "ipvs")
    parent = manager_class.__mro__[1]
    monkeypatch.setattr(parent, "start_kernel", fake_start)
    asyncio.run(manager_class().start_kernel())
    assert seen["LABSUPPORT_BACKEND"] == "sim" and "LABSUPPORT_PROXY_MODE" not in seen
