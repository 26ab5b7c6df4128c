"""Variants through the whole pipeline: the solution, written against `lab.task`, scores full for ten students on
every assignment; a submission that hard-codes student A's values scores full as A and loses, graded as B, the
marks of the tests that check those values."""
from __future__ import annotations

import re

import pytest

from grading.build_source import ASSIGNMENTS
from labsupport.tasks import draw
from labsupport.tasks.catalog import CATALOG
from tests.classroom.test_grade import labsupport
from tests.grading.course import Course, source_text

pytestmark = [pytest.mark.slow, pytest.mark.timeout(2400)]   # the module fixture grades the whole batch

STUDENTS = [f"v{i:02d}" for i in range(10)]
AUTHOR = "hc-author"
# The tests that check the values a hard-coded submission carries (they must fail for another student's task).
VALUE_TESTS = {
    "01-endpointslices": {"deploy-test"},
    "02-dns": {"pod-dns-test", "fqdn-test", "pod-back-test"},
    "03-nodeport-source-ip": {"nodeport-test", "before-test"},
    "04-kube-proxy-rules": {"five-test", "nftables-test"},
    "05-troubleshooting": {"pay-test", "admin-test"},
    "06-review": {"q2-walk-test", "q4-name-test"},
}


def other_student(assignment: str, prefix: str = "hc-other") -> str:
    """A student whose every value differs from the author's."""
    mine = draw(assignment, AUTHOR).values
    return next(s for s in (f"{prefix}{i}" for i in range(1000))
                if all(v != mine[k] for k, v in draw(assignment, s).values.items()))


def forged_task(course: Course, assignment: str) -> dict:
    """The hard-coded submission that also overwrites `task` in the kernel with the author's task, so that a test
    reading `task` from the kernel would agree with the hard-coded values."""
    nb = hard_coded(course, assignment)
    first = next(c for c in nb["cells"] if c.get("metadata", {}).get("nbgrader", {}).get("solution")
                 and c["cell_type"] == "code")
    first["source"] = (f"task = __import__('labsupport.tasks', fromlist=['draw']).draw({assignment!r}, {AUTHOR!r})\n"
                       + source_text(first))
    return nb


def hard_coded(course: Course, assignment: str) -> dict:
    """The solution with every `task.<name>` in the student's cells replaced by the author's own value."""
    values = draw(assignment, AUTHOR).values
    nb = course.solved(assignment)
    for cell in nb["cells"]:
        if cell.get("metadata", {}).get("nbgrader", {}).get("solution") and cell["cell_type"] == "code":
            cell["source"] = re.sub(r"\btask\.(\w+)", lambda m: repr(values[m.group(1)]), source_text(cell))
    assert any("task." in source_text(c) for c in course.solved(assignment)["cells"]), assignment
    return nb


@pytest.fixture(scope="module")
def course(tmp_path_factory) -> Course:
    """Every assignment: ten solutions, and one hard-coded submission graded as its author and as another."""
    course = Course(tmp_path_factory.mktemp("variants"))
    course.nbgrader("generate_assignment", "*", "--force")
    for assignment in ASSIGNMENTS:
        for student in STUDENTS:
            course.submit(assignment, student, course.solved(assignment))
        fixed = hard_coded(course, assignment)
        course.submit(assignment, AUTHOR, fixed)
        course.submit(assignment, other_student(assignment), fixed)
        course.submit(assignment, other_student(assignment, "hc-forger"), forged_task(course, assignment))
        run = labsupport(course, "grade", assignment, "--workers", "2", timeout=1800)
        assert run.returncode == 0, run.stdout + run.stderr
    return course


def test_the_catalog_covers_every_assignment():
    assert sorted(CATALOG) == sorted(ASSIGNMENTS) == sorted(VALUE_TESTS)


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_solution_scores_full_for_ten_students(course, assignment):
    assert len({str(draw(assignment, s).values) for s in STUDENTS}) >= 5
    for student in STUDENTS:
        score, maximum = course.auto_total(assignment, student)
        failing = {m.grade_id: course.errors(assignment, student, m.grade_id)[-400:]
                   for m in course.marks(assignment, student).values() if m.kind == "test" and m.auto != m.max}
        assert score == maximum > 0, (student, failing)


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_another_students_values_lose_the_tests_that_check_them(course, assignment):
    score, maximum = course.auto_total(assignment, AUTHOR)
    assert score == maximum, "hard-coding one's own values is still a right answer"
    other = other_student(assignment)
    marks = course.marks(assignment, other)
    lost = {m.grade_id for m in marks.values() if m.kind == "test" and m.auto != m.max}
    assert VALUE_TESTS[assignment] <= lost, {t: course.errors(assignment, other, t)[-300:]
                                             for t in VALUE_TESTS[assignment] - lost}
    assert 0 < course.auto_total(assignment, other)[0] < maximum


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_a_task_forged_in_the_kernel_does_not_change_what_is_checked(course, assignment):
    """The grader draws the graded student's task itself: overwriting `task` in the kernel buys nothing."""
    forger = other_student(assignment, "hc-forger")
    marks = course.marks(assignment, forger)
    lost = {m.grade_id for m in marks.values() if m.kind == "test" and m.auto != m.max}
    assert VALUE_TESTS[assignment] <= lost, {t: course.errors(assignment, forger, t)[-300:]
                                             for t in VALUE_TESTS[assignment] - lost}
