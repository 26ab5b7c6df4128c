"""`labsupport grade --workers 2` against serial `nbgrader autograde`: the same batch of mixed submissions gives the
same marks, cell for cell; an interrupted run picks up where it stopped; a crash and a loop are reported and the
rest graded; `labsupport report` reads the result."""
from __future__ import annotations

import pathlib
import signal
import subprocess
import sys

import pytest

from labsupport.classroom.gradebook import all_marks
from labsupport.classroom.report import collect
from tests.grading.course import BIN, Course, cell_by_id

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1200)]   # the module fixture grades the batch twice

ASSIGNMENT = "01-endpointslices"
LOOP = "import time\nwhile True:\n    time.sleep(0.01)"
CRASH = "import os\nos._exit(1)"
SOLVED = ("ann", "ben", "cat")
# Runs a command as a terminal would in the foreground, with Ctrl-C's signal at its default action. A shell starts a
# background job with SIGINT ignored and an exec'd program keeps that, so a test suite started in the background
# (as CI may be) would otherwise start a `labsupport grade` that never sees the interrupt.
WITH_CTRL_C = [sys.executable, "-c", "import os, signal, sys\nsignal.signal(signal.SIGINT, signal.SIG_DFL)\n"
               "os.execv(sys.argv[1], sys.argv[1:])"]


def submissions(course: Course) -> dict[str, dict]:
    """Eight submissions: three solutions, two blanks, a wrong answer, one that kills its kernel, one that loops."""
    subs = {name: course.solved(ASSIGNMENT) for name in SOLVED}
    subs["dan"] = course.release(ASSIGNMENT)
    subs["eve"] = course.release(ASSIGNMENT)
    subs["fay"] = course.solved(ASSIGNMENT)
    cell_by_id(subs["fay"], "read-addresses")["source"] = "addresses = []"
    subs["gus"] = course.solved(ASSIGNMENT)
    cell_by_id(subs["gus"], "terminate")["source"] = CRASH
    subs["hal"] = course.solved(ASSIGNMENT)
    cell_by_id(subs["hal"], "settle")["source"] = LOOP
    return subs


def labsupport(course: Course, *args: str, timeout: float = 900) -> subprocess.CompletedProcess:
    """Run the labsupport command in the course folder."""
    return subprocess.run([str(BIN / "labsupport"), *args], cwd=course.root, env=course.env, capture_output=True,
                          text=True, timeout=timeout)


class Batch:
    """The same batch in two courses: one graded by `labsupport grade`, one by serial `nbgrader autograde`."""

    def __init__(self, root: pathlib.Path):
        self.parallel = Course(root / "parallel", cell_timeout=10)
        self.serial = Course(root / "serial", cell_timeout=10)
        for course in (self.parallel, self.serial):
            course.nbgrader("generate_assignment", ASSIGNMENT, "--force")
            for student, nb in submissions(course).items():
                course.submit(ASSIGNMENT, student, nb)
        self.interrupted = self.interrupt_after_first()
        self.rerun = labsupport(self.parallel, "grade", ASSIGNMENT, "--workers", "2")
        self.serial_run = subprocess.run([str(BIN / "nbgrader"), "autograde", ASSIGNMENT], cwd=self.serial.root,
                                         env=self.serial.env, capture_output=True, text=True, timeout=900)

    def interrupt_after_first(self) -> tuple[int, str]:
        """Start grading with one worker and press Ctrl-C once the first submission is recorded."""
        proc = subprocess.Popen([*WITH_CTRL_C, str(BIN / "labsupport"), "grade", ASSIGNMENT, "--workers", "1"],
                                cwd=self.parallel.root, env=self.parallel.env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        seen = []
        try:
            for line in proc.stderr:
                seen.append(line)
                if line.startswith("[1/8]"):
                    proc.send_signal(signal.SIGINT)
                    break
            rest = proc.communicate(timeout=120)[1]
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        return proc.returncode, "".join(seen) + rest


@pytest.fixture(scope="module")
def batch(tmp_path_factory) -> Batch:
    return Batch(tmp_path_factory.mktemp("grade"))


def graded_students(course: Course) -> set[str]:
    folder = course.root / "autograded"
    return {p.name for p in folder.iterdir() if (p / ASSIGNMENT).is_dir()} if folder.exists() else set()


def test_parallel_grading_gives_exactly_the_serial_marks(batch):
    parallel = all_marks(batch.parallel.root / "gradebook.db", ASSIGNMENT)
    serial = all_marks(batch.serial.root / "gradebook.db", ASSIGNMENT)
    assert {key[0] for key in serial} == set(submissions(batch.parallel))
    differ = {k: (parallel.get(k), serial.get(k)) for k in set(parallel) | set(serial)
              if parallel.get(k) != serial.get(k)}
    assert not differ
    # The crashing kernel's notebook is graded with what ran (the sandboxed grader's rule), with the same marks
    # in both gradebooks (above); serial nbgrader leaves no autograded copy of it, `labsupport grade` keeps one.
    everyone_but_the_crash = set(submissions(batch.parallel)) - {"gus"}
    assert graded_students(batch.parallel) - {"gus"} == graded_students(batch.serial) - {"gus"} == \
        everyone_but_the_crash


def test_the_batch_is_mixed_as_intended(batch):
    for student in SOLVED:
        score, maximum = batch.parallel.auto_total(ASSIGNMENT, student)
        assert score == maximum > 0, student
    assert batch.parallel.auto_total(ASSIGNMENT, "dan")[0] == 0
    assert batch.parallel.marks(ASSIGNMENT, "fay")["read-addresses-test"].auto == 0
    loop_score, maximum = batch.parallel.auto_total(ASSIGNMENT, "hal")
    assert 0 < loop_score < maximum
    assert "Timeout" in batch.parallel.errors(ASSIGNMENT, "hal", "settle") or \
        "KeyboardInterrupt" in batch.parallel.errors(ASSIGNMENT, "hal", "settle")


def test_interrupt_stops_the_run_and_keeps_what_was_graded(batch):
    code, stderr = batch.interrupted
    assert code == 130, stderr
    assert "interrupted: 1 of 8 graded and recorded" in stderr


def test_rerun_skips_graded_submissions_and_grades_the_rest(batch):
    run = batch.rerun
    assert run.returncode == 0, run.stdout + run.stderr     # the crash is graded with what ran
    rows = {line.split()[0]: line for line in run.stdout.splitlines()[2:] if line.strip() and " " in line}
    skipped = [s for s, line in rows.items() if " skipped " in line]
    assert len(skipped) == 1
    assert "grading 7 submission(s) of 01-endpointslices with 2 worker(s), 1 already graded" in run.stderr
    assert "[7/7]" in run.stderr and "left" in run.stderr


def test_a_crashing_submission_is_graded_with_what_ran_and_the_rest_graded(batch):
    line = next(line for line in batch.rerun.stdout.splitlines() if line.startswith("gus "))
    assert " graded " in line, line
    score, maximum = batch.parallel.auto_total(ASSIGNMENT, "gus")
    assert 0 < score < maximum          # the cells before the crash count, the ones after it do not
    assert "7 graded" in batch.rerun.stdout or "6 graded" in batch.rerun.stdout


def test_report_reads_the_class(batch):
    results = collect(batch.parallel.root, ASSIGNMENT)
    assert set(results.scores) == set(submissions(batch.parallel))
    assert not results.failed
    stats = results.tests["read-addresses-test"]
    assert stats.graded == 8 and stats.passed == 5     # three solutions, the loop and the crash (before it) pass
    messages = dict(stats.failures)
    # the two blanks: the grader could not fetch the answer the test reads
    blank = "AnswerError: name 'addresses' is not defined: run the cell that sets it before this test"
    assert messages.pop(blank, None) == 2, messages
    ((message, count),) = messages.items()                                      # fay's empty list
    assert count == 1 and message.startswith("CheckFailed: ")
    assert set(results.seconds) == set(results.scores)


def test_force_regrades_and_a_hanging_submission_is_stopped(batch):
    before = all_marks(batch.parallel.root / "gradebook.db", ASSIGNMENT)
    again = labsupport(batch.parallel, "grade", ASSIGNMENT, "--student", "ann", "--force")
    assert again.returncode == 0 and "ann " in again.stdout and " graded " in again.stdout, again.stderr
    hang = labsupport(batch.parallel, "grade", ASSIGNMENT, "--student", "hal", "--force", "--timeout", "2")
    assert hang.returncode == 1 and "timed out" in hang.stdout and "stopped after 2 s" in hang.stdout
    assert all_marks(batch.parallel.root / "gradebook.db", ASSIGNMENT) == before
