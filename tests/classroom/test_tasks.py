"""Per-student variants: stable per student, different between students, the identity rules, `labsupport variant`."""
from __future__ import annotations

import asyncio
import json

import pytest
from traitlets.config.loader import PyFileConfigLoader

from labsupport import Lab
from labsupport.cli import main
from labsupport.tasks import STUDENT_ENV, UnknownAssignment, draw, grading_env, seed, student_identity
from labsupport.tasks.catalog import CATALOG
from tests.grading.course import GRADING

STUDENTS = [f"s{i:03d}" for i in range(10)]


@pytest.fixture(autouse=True)
def no_identity(monkeypatch):
    for name in (STUDENT_ENV, "JUPYTERHUB_USER", "LABSUPPORT_COURSE_ID"):
        monkeypatch.delenv(name, raising=False)


@pytest.mark.parametrize("assignment", sorted(CATALOG))
def test_a_student_always_gets_the_same_task(assignment):
    assert [draw(assignment, s).values for s in STUDENTS] == [draw(assignment, s).values for s in STUDENTS]


@pytest.mark.parametrize("assignment", sorted(CATALOG))
def test_students_get_different_tasks_drawn_from_the_choices(assignment):
    tasks = [draw(assignment, s) for s in STUDENTS]
    assert len({json.dumps(t.values, sort_keys=True) for t in tasks}) >= 5
    for t in tasks:
        assert set(t.values) == set(CATALOG[assignment])
        for name, value in t.values.items():
            assert value in CATALOG[assignment][name][1]


def test_the_seed_depends_on_course_assignment_and_student():
    base = seed("k8s-services", "02-dns", "alice")
    assert base == seed("k8s-services", "02-dns", "alice")
    assert len({base, seed("other-course", "02-dns", "alice"), seed("k8s-services", "01-endpointslices", "alice"),
                seed("k8s-services", "02-dns", "bob")}) == 4
    # the course id is part of the draw: some student's task changes with it
    assert any(draw("05-troubleshooting", s).values != draw("05-troubleshooting", s, course_id="other").values
               for s in STUDENTS)


def test_without_an_identity_the_task_is_the_default_one():
    task = draw("01-endpointslices", student_identity())
    assert task.student is None
    assert task.values == {name: default for name, (default, _) in CATALOG["01-endpointslices"].items()}


def test_identity_comes_from_the_grader_first_then_jupyterhub(monkeypatch):
    monkeypatch.setenv("JUPYTERHUB_USER", "hubuser")
    assert student_identity() == "hubuser"
    monkeypatch.setenv(STUDENT_ENV, "graded")
    assert student_identity() == "graded"
    with Lab(backend="sim", seed=0) as lab:
        task = lab.task("04-kube-proxy-rules")
    assert task.student == "graded" and task.values == draw("04-kube-proxy-rules", "graded").values


def test_task_card_and_attributes():
    task = draw("06-review", "alice")
    card = task._repr_html_()
    assert "Your task" in card and "alice" in card
    for name, value in task.values.items():
        assert getattr(task, name) == value == task[name]
        assert f"task.{name}" in card and str(value) in card
    with pytest.raises(AttributeError, match="has no value 'nope'.*namespace"):
        task.nope


def test_unknown_assignment_is_a_clear_error():
    with pytest.raises(UnknownAssignment, match="no variants for assignment '07-x': known are 01-endpointslices"):
        draw("07-x", "alice")


def test_grading_env_names_the_student_from_the_autograded_folder(tmp_path):
    folder = tmp_path / "autograded" / "alice" / "02-dns"
    folder.mkdir(parents=True)
    assert grading_env(folder) == {STUDENT_ENV: "alice"}
    assert grading_env(tmp_path / "source" / "02-dns") == {}
    assert grading_env(None) == {}


def test_grading_kernel_gets_the_graded_students_id(monkeypatch, tmp_path):
    config = PyFileConfigLoader("nbgrader_config.py", path=str(GRADING)).load_config()
    manager_class = config.Execute.kernel_manager_class
    seen = {}

    async def fake_start(self, **kw):
        seen.clear()
        seen.update(kw["env"])

    monkeypatch.setattr(manager_class.__mro__[1], "start_kernel", fake_start)
    monkeypatch.setenv(STUDENT_ENV, "someone-else")
    asyncio.run(manager_class().start_kernel(cwd=str(tmp_path / "autograded" / "bob" / "01-endpointslices")))
    assert seen[STUDENT_ENV] == "bob"
    asyncio.run(manager_class().start_kernel(cwd=str(tmp_path / "source" / "01-endpointslices")))
    assert STUDENT_ENV not in seen


def test_variant_command_prints_the_task_as_json(capsys):
    assert main(["variant", "03-nodeport-source-ip", "alice"]) == 0
    assert json.loads(capsys.readouterr().out) == draw("03-nodeport-source-ip", "alice").values
    assert main(["variant", "nope", "alice"]) == 1
    assert "no variants for assignment 'nope'" in capsys.readouterr().err
