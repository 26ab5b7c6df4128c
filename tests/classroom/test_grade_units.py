"""The pieces of `labsupport grade` that need no kernel: selecting submissions, clear errors, the merge, the table."""
from __future__ import annotations

import os
import pathlib

import pytest

from labsupport.classroom.grade import ClassGrader, Outcome, summary_table
from labsupport.classroom.gradebook import (GradingError, NotebookMarks, SubmissionMarks, all_marks, db_url,
                                            merge_marks, read_marks, snapshot)
from labsupport.cli import main
from labsupport.grading.ids import BadStudentId
from tests.grading.course import BIN


@pytest.fixture
def course(tmp_path, monkeypatch) -> pathlib.Path:
    """A course folder whose gradebook knows assignment `a1` (notebook `nb`, one test cell worth 2 points)."""
    from nbgrader.api import Gradebook
    monkeypatch.setenv("PATH", f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}")   # nbgrader runs alembic
    with Gradebook(db_url(tmp_path / "gradebook.db")) as gb:
        gb.add_assignment("a1")
        gb.add_notebook("nb", "a1")
        gb.add_grade_cell("t1", "nb", "a1", max_score=2, cell_type="code")
        gb.add_solution_cell("s1", "nb", "a1")
    for student in ("bob", "alice", "carol"):
        (tmp_path / "submitted" / student / "a1").mkdir(parents=True)
    return tmp_path


def test_submissions_are_found_and_graded_ones_skipped(course):
    (course / "autograded" / "bob" / "a1").mkdir(parents=True)
    (course / "autograded" / "bob" / "a1" / "nb.ipynb").write_text("{}")
    grader = ClassGrader(course, "a1", workers=2)
    assert grader.students == ["alice", "bob", "carol"]
    grader.grade_one = lambda student: Outcome(student, "graded", 1.0, 2, 2)
    outcomes = grader.run()
    assert [(o.student, o.status) for o in outcomes] == [("alice", "graded"), ("bob", "skipped"), ("carol", "graded")]
    forced = ClassGrader(course, "a1", students=["bob"], force=True)
    forced.grade_one = lambda student: Outcome(student, "graded", 1.0, 2, 2)
    assert [(o.student, o.status) for o in forced.run()] == [("bob", "graded")]


def test_bad_requests_say_what_is_wrong_and_where(course, tmp_path_factory):
    with pytest.raises(GradingError, match="no assignment 'a2' in the gradebook; run `nbgrader generate_assignment"):
        ClassGrader(course, "a2")
    with pytest.raises(GradingError, match="no submission of a1 from dave"):
        ClassGrader(course, "a1", students=["alice", "dave"])
    with pytest.raises(GradingError, match="--workers must be 1 or more, not 0"):
        ClassGrader(course, "a1", workers=0)
    empty = tmp_path_factory.mktemp("empty")
    with pytest.raises(GradingError, match="no gradebook.db here"):
        ClassGrader(empty, "a1")


def test_cli_reports_errors_without_a_traceback(course, capsys):
    assert main(["grade", "a2", "--course", str(course)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "Traceback" not in err


@pytest.mark.filterwarnings("ignore::sqlalchemy.exc.SAWarning")   # nbgrader's own add_submission warns
def test_merge_writes_the_autograded_marks_and_keeps_manual_ones(course, tmp_path_factory):
    from nbgrader.api import Gradebook
    with Gradebook(db_url(course / "gradebook.db")) as gb:
        gb.add_student("alice")
        gb.add_submission("a1", "alice")
        grade = gb.find_grade("t1", "nb", "a1", "alice")
        grade.manual_score = 1.5
        gb.db.commit()
    scratch = tmp_path_factory.mktemp("scratch") / "gradebook.db"
    snapshot(course, scratch)
    with Gradebook(db_url(scratch)) as gb:
        grade = gb.find_grade("t1", "nb", "a1", "alice")
        grade.auto_score, grade.needs_manual_grade = 2.0, True
        gb.find_comment("s1", "nb", "a1", "alice").auto_comment = "No response."
        gb.db.commit()
    marks = read_marks(scratch, "a1", "alice")
    assert marks.notebooks["nb"].grades == {"t1": (2.0, True)}
    merge_marks(course, "a1", "alice", marks)
    assert all_marks(course / "gradebook.db", "a1") == all_marks(scratch, "a1") == {
        ("alice", "nb", "t1"): (2.0, 1.5, True, None), ("alice", "nb", "s1"): (None, None, False, "No response.")}
    # a student new to the course's gradebook is added by the merge
    merge_marks(course, "a1", "bob", SubmissionMarks(None, {"nb": NotebookMarks(None, {"t1": (0.0, False)})}))
    assert all_marks(course / "gradebook.db", "a1")[("bob", "nb", "t1")] == (0.0, None, False, None)
    assert read_marks(course / "gradebook.db", "a1", "carol") is None


def test_summary_table_lists_every_submission_and_the_counts():
    table = summary_table([Outcome("alice", "graded", 3.2, 9, 11), Outcome("bob", "failed", 1.0, message="boom"),
                           Outcome("carol", "skipped", message="already graded")])
    lines = table.splitlines()
    assert lines[0].split() == ["student", "status", "score", "seconds", "note"]
    assert lines[2].split()[:5] == ["alice", "graded", "9", "/", "11"]
    assert lines[3].endswith("boom") and "skipped" in lines[4]
    assert lines[-1] == "1 graded, 1 failed, 1 skipped"
    # one dash group under each heading, starting where the heading starts
    import re
    headings = [m.start() for m in re.finditer(r"\S+", lines[0])]
    dashes = [m.start() for m in re.finditer(r"-+", lines[1])]
    assert dashes == headings
    assert len(re.findall(r"-+", lines[1])[-1]) == len("already graded")


def test_star_means_every_assignment_with_submissions(course):
    from labsupport.classroom.grade import submitted_assignments
    (course / "submitted" / "alice" / "a0").mkdir()
    assert submitted_assignments(course) == ["a0", "a1"]
    assert submitted_assignments(course / "nowhere") == []


def test_a_student_folder_outside_the_id_grammar_is_refused_alone(course):
    """A folder in submitted/ named with a line break, markup or a formula: refused with the rule, before anything of
    it is graded or written; the class is graded."""
    for bad in ("new\nline", "<img src=x onerror=alert(1)>", "=HYPERLINK(1)"):
        (course / "submitted" / bad / "a1").mkdir(parents=True)
    grader = ClassGrader(course, "a1", workers=2)
    graded: list[str] = []
    grader._run_nbgrader = lambda student, scratch, tmp: graded.append(student) or ("failed", "not run here")
    outcomes = {o.student: o for o in grader.run()}
    for bad, words in (("new\nline", "line break"), ("<img src=x onerror=alert(1)>", "markup"),
                       ("=HYPERLINK(1)", "formula")):
        assert outcomes[bad].status == "failed" and words in outcomes[bad].message, outcomes[bad]
        assert "is refused" in outcomes[bad].message and "1 to 64 characters" in outcomes[bad].message
    assert sorted(graded) == ["alice", "bob", "carol"]
    with pytest.raises(BadStudentId, match=r"student id 'x/y' \(--student\) is refused"):
        ClassGrader(course, "a1", students=["x/y"])
