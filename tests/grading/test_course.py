"""The courses' files: source notebooks in sync with their builder, well-formed nbgrader metadata, the configs."""
from __future__ import annotations

import asyncio
import json
import os

import pytest
from traitlets.config.loader import PyFileConfigLoader

from grading import build_source
from tests.grading.course import COURSES, source_text

LANGUAGES = sorted(COURSES)


def test_source_notebooks_and_rubrics_are_up_to_date():
    assert build_source.main(["--check"]) == 0


@pytest.mark.parametrize("language", LANGUAGES)
def test_every_assignment_is_well_formed(language):
    for assignment in build_source.ASSIGNMENTS:
        (path,) = (COURSES[language] / "source" / assignment).glob("*.ipynb")
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


@pytest.mark.parametrize("language", LANGUAGES)
def test_review_and_source_ip_have_hand_graded_answers_with_rubrics(language):
    rubrics = (COURSES[language] / "RUBRICS.md").read_text()
    for grade_id in ("explain-drop", "q1-text", "q2-text", "q3-text", "q4-text"):
        assert f"### `{grade_id}`" in rubrics


def load(language: str):
    """The nbgrader config of the course in `language`, loaded as nbgrader loads it."""
    return PyFileConfigLoader("nbgrader_config.py", path=str(COURSES[language])).load_config()


@pytest.mark.parametrize("language", LANGUAGES)
def test_loading_a_config_leaves_the_environment_alone(language, monkeypatch):
    monkeypatch.delenv("LABSUPPORT_LANG", raising=False)
    before = dict(os.environ)
    load(language)
    assert dict(os.environ) == before


@pytest.mark.parametrize("language", LANGUAGES)
def test_config_pins_the_grading_kernel_to_sim_and_the_course_language(language, monkeypatch):
    monkeypatch.delenv("LABSUPPORT_CELL_TIMEOUT", raising=False)
    monkeypatch.delenv("LABSUPPORT_COURSE_ID", raising=False)
    config = load(language)
    assert config.CourseDirectory.course_id == {"en": "k8s-services", "ru": "k8s-services-ru"}[language]
    assert config.GradedExecute.language == language
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
    monkeypatch.setenv("LABSUPPORT_LANG", "ru" if language == "en" else "en")    # the grader's own shell
    parent = manager_class.__mro__[1]
    monkeypatch.setattr(parent, "start_kernel", fake_start)
    asyncio.run(manager_class(config=config).start_kernel())
    assert seen["LABSUPPORT_BACKEND"] == "sim" and "LABSUPPORT_PROXY_MODE" not in seen
    assert seen["LABSUPPORT_LANG"] == language
    assert os.environ["LABSUPPORT_LANG"] != language      # only the kernel's environment was set


def test_course_id_comes_from_the_environment_in_both_courses(monkeypatch):
    monkeypatch.setenv("LABSUPPORT_COURSE_ID", "services-2026")
    assert {load(language).CourseDirectory.course_id for language in LANGUAGES} == {"services-2026"}


def test_a_course_language_without_stubs_is_refused():
    from traitlets.config import Config

    from labsupport.grading.course_config import CourseConfigError, configure
    with pytest.raises(CourseConfigError, match="'de'.*en, ru"):
        configure(Config(), "/tmp/course", language="de")
