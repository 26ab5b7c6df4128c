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


def test_release_feedback_names_a_submission_placed_by_hand_and_releases_the_rest(tmp_path):
    """A submission that came through the exchange has its submission_secret.txt; one placed in submitted/ by hand
    (or by zip_collect) has none. nbgrader's own release stops at it for everyone; ours names it and goes on."""
    assignment = "06-review"
    course = Course(tmp_path / "course")
    exchange = course.root / "exchange"
    exchange.mkdir()
    os.chmod(exchange, 0o777)
    for student, secret in (("alice", "s3cret"), ("bob", None)):
        folder = course.root / "feedback" / student / assignment
        folder.mkdir(parents=True)
        (folder / f"{notebook_name(assignment)}.html").write_text(f"<p>feedback for {student}</p>")
        (folder / "timestamp.txt").write_text("2026-01-01 10:00:00.000000 UTC")
        if secret:
            (folder / "submission_secret.txt").write_text(secret)
    proc = course.nbgrader("release_feedback", assignment)
    out = proc.stdout + proc.stderr
    released = list((exchange / "k8s-services" / "feedback").glob("*.html"))
    assert len(released) == 1 and "feedback for alice" in released[0].read_text()
    assert "Feedback for bob not released: the submission did not come through the exchange" in " ".join(out.split())
    assert f"feedback/bob/{assignment}/" in out
