"""A failed check as the student sees it — in JupyterLab's kernel and in nbgrader's Validate: the student's line
and the check's message, with a hint that names the cause; no traceback through labsupport's code."""
from __future__ import annotations

import os
import re
import subprocess
import sys
import pathlib

import nbformat
import pytest

from labsupport import Lab, checks
from labsupport.check_display import WIDTH, wrapped_message
from tests.conftest import WEB

ANSI = re.compile(r"\x1b\[[0-9;]*m")
SETUP = f'''from labsupport import Lab, checks
from labsupport.widgets import lesson
lab = Lab(seed=0)
lab.apply("""{WEB}""")
lab.apply({{"apiVersion": "v1", "kind": "Service", "metadata": {{"name": "typo"}},
           "spec": {{"selector": {{"app": "wbe"}}, "ports": [{{"port": 80}}]}}}})
lab.wait(lambda l: lesson.running(l, "app=web") == 3)'''
FAILING = 'checks.slice_has_ready_addresses(lab, "typo", 3)'
#: A student's own calls that the cluster refuses: a pod that does not exist, a manifest the API server rejects.
REFUSED = ['lab.curl("http://web", source="pod/client")',
           'lab.apply({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "x"}, '
           '"spec": {"ports": [{"port": 70000}]}})']
#: A student's own predicate that fails while lab.wait calls it.
WAITING = 'lab.wait(lambda l: len(l.get("pods", selector="app=web")) == replicas_wanted, timeout=5)'


def notebook(*tests: str) -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = [nbformat.v4.new_code_cell(SETUP)]
    for index, source in enumerate(tests):
        cell = nbformat.v4.new_code_cell(source)
        cell.metadata["nbgrader"] = {"grade": True, "grade_id": f"test{index}", "locked": True, "points": 1,
                                     "schema_version": 3, "solution": False, "task": False}
        nb.cells.append(cell)
    return nb


def shown_error(cell) -> str:
    errors = [o for o in cell.outputs if o.output_type == "error"]
    assert errors, "the cell did not fail"
    return ANSI.sub("", "\n".join(errors[0].traceback))


@pytest.fixture(scope="module")
def executed(tmp_path_factory):
    from nbclient import NotebookClient
    nb = notebook(FAILING, 'lesson.self_check(False, "done", "scale web to 5 first")', *REFUSED, WAITING)
    NotebookClient(nb, kernel_name="python3", timeout=120, allow_errors=True,
                   resources={"metadata": {"path": str(tmp_path_factory.mktemp("kernel"))}}).execute()
    return nb


def test_a_failed_check_shows_the_students_line_and_the_message(executed):
    shown = shown_error(executed.cells[1])
    assert FAILING in shown
    assert "checks.py" not in shown and "_fail(" not in shown, f"a walk through labsupport:\n{shown}"
    assert 'the slices of "typo" list 0 ready address(es), expected 3' in " ".join(shown.split())


def test_the_hint_names_the_labels_the_pods_have(executed):
    shown = " ".join(shown_error(executed.cells[1]).split())
    assert "No pod has the labels app=wbe" in shown and "app=web (3 pods)" in shown


def test_a_lesson_self_check_shows_only_its_hint(executed):
    shown = shown_error(executed.cells[2])
    assert "not yet: scale web to 5 first" in shown
    assert "lesson.py" not in shown and "checks.py" not in shown


@pytest.mark.parametrize("index,message", [(3, 'NotFound: pods "client" not found'),
                                           (4, "spec.ports[0].port: Invalid value: 70000")])
def test_a_refused_call_shows_the_students_line_and_the_servers_answer(executed, index, message):
    shown = shown_error(executed.cells[index])
    assert REFUSED[index - 3][:30] in shown and message in shown, shown
    assert "labsupport/" not in shown and "File " not in shown, f"a walk through labsupport:\n{shown}"
    assert len(shown.splitlines()) <= 10, shown


def test_an_error_in_a_wait_predicate_shows_the_students_lines_only(executed):
    shown = shown_error(executed.cells[5])
    assert "NameError: name 'replicas_wanted' is not defined" in shown and "<lambda>" in shown, shown
    assert "labsupport/" not in shown, f"a walk through labsupport:\n{shown}"


def test_validate_shows_the_whole_message(tmp_path):
    path = tmp_path / "assignment.ipynb"
    nbformat.write(notebook(FAILING), path)
    nbgrader = pathlib.Path(sys.executable).with_name("nbgrader")
    run = subprocess.run([str(nbgrader), "validate", str(path)], capture_output=True, text=True, timeout=300,
                         cwd=tmp_path)
    out = run.stdout + run.stderr
    assert "VALIDATION FAILED" in out, out[-2000:]
    assert "checks.py" not in out, f"Validate shows a walk through labsupport:\n{out[-2000:]}"
    assert "app=web (3 pods)" in " ".join(out.split()), f"Validate cut the hint:\n{out[-2000:]}"


def test_messages_wrap_for_validate():
    error = checks.CheckFailed("word " * 60)
    assert all(len(line) <= WIDTH for line in wrapped_message(error).splitlines())


def test_a_selector_whose_pods_are_pending_says_so():
    with Lab(seed=0) as lab:
        lab.apply(WEB)                  # no time has passed: the three pods are Pending, without an IP
        with pytest.raises(checks.CheckFailed) as failure:
            checks.slice_has_ready_addresses(lab, "web", 3)
        assert "It picks 3 pod(s), but none has an IP yet (still Pending?)" in str(failure.value)
        assert "No pod has the labels" not in str(failure.value)


def test_validate_on_a_blank_release_shows_only_the_checks_messages(tmp_path):
    """A blank assignment fails its tests with the checks' own messages: no chained lookup through labsupport, and
    no kernel warning about its transport."""
    from tests.grading.course import Course
    course = Course(tmp_path / "course")
    course.nbgrader("generate_assignment", "01-endpointslices", "--force")
    course.env["LABSUPPORT_BACKEND"] = "sim"            # as a student's own kernel runs
    (path,) = (course.root / "release" / "01-endpointslices").glob("*.ipynb")
    nbgrader = pathlib.Path(sys.executable).with_name("nbgrader")
    run = subprocess.run([str(nbgrader), "validate", str(path)], capture_output=True, text=True, timeout=600,
                         cwd=course.root, env=course.env)
    out = run.stdout + run.stderr
    assert "VALIDATION FAILED" in out, out[-2000:]
    assert 'CheckFailed: there is no Deployment "web" in namespace "default"' in out, out[:3000]
    assert "During handling of the above exception" not in out and "NotFound" not in out, out[:3000]
    assert "checks.py" not in out and "cluster.py" not in out, out[:3000]
    assert "without encryption" not in out, out[-1500:]
    # the tests that read an answer the blank cells never set say so in the feedback's words, not Python's
    flat = " ".join(out.split())
    missing = re.findall(r"NameError: name '(\w+)' is not defined(: run the cell that sets it before this test)?", flat)
    assert {name for name, _ in missing} == {"addresses", "captured", "settle_seconds"}, missing
    assert all(hint for _, hint in missing), f"a bare NameError:\n{out[:4000]}"


def test_validate_in_make_labs_environment_prints_no_kernel_warning(tmp_path):
    """`nbgrader validate` as a student runs it in a terminal of make lab (outside any course folder)."""
    from labsupport import student_lab
    config = student_lab.write_config(tmp_path / "config", exchange=False)
    env = student_lab.environment(config, dict(os.environ, JUPYTER_CONFIG_DIR=str(tmp_path / "user")))
    path = tmp_path / "work" / "assignment.ipynb"
    path.parent.mkdir()
    nbformat.write(notebook(FAILING), path)
    run = subprocess.run(["nbgrader", "validate", str(path)], capture_output=True, text=True, timeout=300,
                         cwd=path.parent, env=env)
    out = run.stdout + run.stderr
    assert "VALIDATION FAILED" in out, out[-2000:]
    assert "without encryption" not in out and "No nbgrader_config.py file found" not in out, out[-1500:]
