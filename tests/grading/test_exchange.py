"""The class workflow through nbgrader's exchange: release, a student fetches and submits, the instructor collects."""
from __future__ import annotations

import json
import os
import subprocess

import pytest

from tests.grading.course import BIN, Course, cell_by_id, notebook_name

pytestmark = pytest.mark.slow


def test_release_fetch_submit_collect(tmp_path):
    assignment = "06-review"
    course = Course(tmp_path / "course")
    course.nbgrader("generate_assignment", assignment)
    exchange = course.root / "exchange"
    exchange.mkdir(exist_ok=True)
    os.chmod(exchange, 0o777)
    course.nbgrader("release_assignment", assignment, "--force")

    home = tmp_path / "student"
    home.mkdir()
    student_args = ["--course", "k8s-services", f"--Exchange.root={exchange}"]

    def student(*args):
        proc = subprocess.run([str(BIN / "nbgrader"), *args, *student_args], cwd=home, env=course.env,
                              capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stdout + proc.stderr

    student("fetch_assignment", assignment)
    path = home / assignment / f"{notebook_name(assignment)}.ipynb"
    nb = json.loads(path.read_text())
    cell_by_id(nb, "q3-answers")["source"] = 'q3_true = {"a", "c", "e"}'
    path.write_text(json.dumps(nb))
    student("submit", assignment)

    course.nbgrader("collect", assignment)
    (collected,) = (course.root / "submitted").glob(f"*/{assignment}/{notebook_name(assignment)}.ipynb")
    got = json.loads(collected.read_text())
    assert cell_by_id(got, "q3-answers")["source"] == 'q3_true = {"a", "c", "e"}'
