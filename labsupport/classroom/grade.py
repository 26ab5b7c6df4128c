"""Autograde a class in parallel: each submission in its own scratch course, merged into the one gradebook.

Each worker runs nbgrader's own `autograde` with the course's configuration (so whatever `nbgrader_config.py`
sets applies: kernels, timeouts, sandboxing) in the course folder, but with `CourseDirectory.root` pointed at a
scratch course that holds a snapshot of the gradebook, the assignment's source files and that one submission.
sqlite allows one writer: a submission's marks are merged into the course's `gradebook.db` through nbgrader's
Gradebook API, one submission at a time under a file lock, and nothing else here writes to it. The runs and the
merges are forks of one process that imported nbgrader once (`labsupport.classroom.runner`).
"""
from __future__ import annotations

import concurrent.futures
import json
import os
import pathlib
import shutil
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass
from typing import Callable

from labsupport.classroom.gradebook import GradingError, assignment_notebooks, locked, merge_from_scratch, snapshot
from labsupport.classroom.runner import NbgraderRun, call_in_child, warm_up
from labsupport.grading.ids import BadStudentId, check_assignment_id, check_student_id
from labsupport.grading.sandbox import SubmissionRefused, copy_submission, socket_base

# A submission whose nbgrader run takes longer than this is stopped and reported (nbgrader's own cell timeouts
# normally end a runaway cell long before).
DEFAULT_TIMEOUT = 1800.0
# nbgrader's reasons when a grading kernel did not start (before any of the student's code ran): tried once more.
STARTUP_FAILURES = ("before replying to kernel_info", "Kernel didn't respond in")
# How much of the end of one run's nbgrader log is read for its reason (a log can be as long as a kernel made it).
LOG_TAIL = 1 * 2**20


@dataclass
class Outcome:
    """How one submission's grading went."""

    student: str
    status: str                 # graded | failed | timed out | skipped
    seconds: float = 0.0
    score: float | None = None
    max_score: float | None = None
    message: str = ""


def default_workers() -> int:
    """The number of cores this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:
        return max(1, os.cpu_count() or 1)


def submitted_students(course: pathlib.Path, assignment: str) -> list[str]:
    """Every student with a submission of `assignment` in `submitted/`, sorted (a folder that is a link counts too:
    grading refuses it for that student, with the reason)."""
    folder = course / "submitted"
    if not folder.is_dir():
        return []
    return sorted(p.name for p in folder.iterdir() if os.path.lexists(p / assignment))


def submitted_assignments(course: pathlib.Path) -> list[str]:
    """Every assignment someone has a submission of in `submitted/`, sorted."""
    folder = course / "submitted"
    if not folder.is_dir():
        return []
    return sorted({p.name for student in folder.iterdir() if student.is_dir() for p in student.iterdir()
                   if p.is_dir()})


def is_graded(course: pathlib.Path, assignment: str, student: str, notebooks: list[str]) -> bool:
    """Whether an autograded copy of every notebook exists, each a regular file in real folders (something else
    planted there does not make a submission graded)."""
    folder = course / "autograded" / student / assignment
    for path in (course / "autograded", folder.parent, folder):
        if path.is_symlink() or not path.is_dir():
            return False
    return all((folder / f"{name}.ipynb").is_file() and not (folder / f"{name}.ipynb").is_symlink()
               for name in notebooks)


def check_gradebook(course: pathlib.Path) -> None:
    """Refuse to grade into a gradebook that sqlite could not write: a `gradebook.db-journal` (or -wal) that is not
    a plain file would make every write fail."""
    for suffix in ("-journal", "-wal", "-shm"):
        path = course / f"gradebook.db{suffix}"
        if os.path.lexists(path) and (path.is_symlink() or not path.is_file()):
            raise GradingError(f"{path} is not a plain file (a folder or a link): sqlite cannot write the gradebook "
                               "beside it; remove it (nothing of the gradebook is in it), then grade again")


class ClassGrader:
    """Grades the submissions of one assignment with a pool of workers; `run()` returns one Outcome each."""

    def __init__(self, course: pathlib.Path, assignment: str, *, workers: int | None = None,
                 students: list[str] | None = None, force: bool = False, timeout: float = DEFAULT_TIMEOUT,
                 progress: Callable[[str], None] | None = None):
        self.course = pathlib.Path(course).resolve()
        check_gradebook(self.course)
        check_assignment_id(assignment, "the command line")
        self.assignment = assignment
        self.workers = default_workers() if workers is None else workers
        if self.workers < 1:
            raise GradingError(f"--workers must be 1 or more, not {self.workers}")
        self.notebooks = assignment_notebooks(self.course, assignment)
        found = submitted_students(self.course, assignment)
        if students:
            for student in students:
                check_student_id(student, "--student")
            missing = sorted(set(students) - set(found))
            if missing:
                raise GradingError(f"{self.course / 'submitted'}: no submission of {assignment} from "
                                   f"{', '.join(missing)}")
            found = [s for s in found if s in set(students)]
        self.students = found
        self.force = force
        self.timeout = timeout
        self.progress = progress or (lambda line: None)
        self._running: dict[str, NbgraderRun] = {}
        self._lock = threading.Lock()
        self._stopping = False

    # --- one submission ------------------------------------------------------------------------------------
    def grade_one(self, student: str) -> Outcome:
        """Autograde one submission in a scratch course and merge its marks into the course's gradebook."""
        start = time.monotonic()
        try:
            return self._grade_one(student, start)
        except Exception as e:  # one submission's trouble must not stop the class
            return Outcome(student, "failed", time.monotonic() - start, message=f"{type(e).__name__}: {e}")

    def _grade_one(self, student: str, start: float) -> Outcome:
        try:
            check_student_id(student, f"{self.course / 'submitted'}")
        except BadStudentId as e:
            return Outcome(student, "failed", time.monotonic() - start, message=f"refused: {e}")
        with tempfile.TemporaryDirectory(prefix="labsupport-grade-") as tmp:
            scratch = pathlib.Path(tmp)

            snapshot(self.course, scratch / "gradebook.db")
            source = self.course / "source" / self.assignment
            if source.is_dir():
                shutil.copytree(source, scratch / "source" / self.assignment)
            try:
                if (self.course / "submitted" / student).is_symlink():
                    raise SubmissionRefused(f"{self.course / 'submitted' / student} is a symbolic link")
                copy_submission(self.course / "submitted" / student / self.assignment,
                                scratch / "submitted" / student / self.assignment)
            except SubmissionRefused as e:
                return Outcome(student, "failed", time.monotonic() - start, message=f"refused: {e}")
            # everything the run makes (sandboxes, lab servers, API servers) lives in a folder of its own that goes
            # when the run ends, even when it is killed; short, so the sockets in it stay within their path limit
            tmp = tempfile.mkdtemp(prefix="lsg-", dir=socket_base())
            try:
                status, message = self._run_nbgrader(student, scratch, tmp)
                if status == "failed" and any(s in message for s in STARTUP_FAILURES):
                    status, message = self._run_nbgrader(student, scratch, tmp)    # the kernel did not start: again
            finally:
                shutil.rmtree(tmp, ignore_errors=True)
            if status != "graded":
                keep = self.course / ".grading" / "logs" / self.assignment / f"{student}.log"
                keep.parent.mkdir(parents=True, exist_ok=True)
                keep.write_text(tail_text(scratch / "nbgrader.log", LOG_TAIL))
            if self._stopping:
                return Outcome(student, "interrupted", time.monotonic() - start)
            # the merge runs where nbgrader is imported already (a fork of the server), under the gradebook lock
            if call_in_child(merge_from_scratch, self.course, scratch, self.assignment, student) != 0:
                # The fork did not merge (it can fail while the fork server is still starting): merge here,
                # under the same lock, and say what went wrong if that fails too.
                try:
                    merge_from_scratch(self.course, scratch, self.assignment, student)
                except Exception as e:
                    raise GradingError(f"merging the marks of {student} into {self.course / 'gradebook.db'} "
                                       f"failed: {e}") from e
            merged = json.loads((scratch / "merged.json").read_text())
            graded = scratch / "autograded" / student / self.assignment
            dest = self.course / "autograded" / student / self.assignment
            if dest.exists():
                shutil.rmtree(dest)
            if status == "graded" and graded.is_dir():
                dest.parent.mkdir(parents=True, exist_ok=True)
                shutil.copytree(graded, dest)
            elif status == "graded":
                status, message = "failed", message or "nbgrader left no autograded notebook"
        outcome = Outcome(student, status, time.monotonic() - start, message=message)
        if merged["marks"] and status == "graded":
            outcome.score, outcome.max_score = merged["score"], merged["max_score"]
        return outcome

    def _run_nbgrader(self, student: str, scratch: pathlib.Path, tmp: str) -> tuple[str, str]:
        """Run `nbgrader autograde` for one student; (status, the reason when it failed)."""
        if self._stopping:
            return "interrupted", ""
        argv = ["autograde", self.assignment, "--student", student, "--force", f"--CourseDirectory.root={scratch}"]
        bindir = str(pathlib.Path(sys.executable).parent)
        env = dict(os.environ, PATH=bindir + os.pathsep + os.environ.get("PATH", ""), TMPDIR=tmp)
        run = NbgraderRun(argv, self.course, env, scratch / "nbgrader.log")
        with self._lock:
            self._running[student] = run
        try:
            status = "graded" if run.wait(self.timeout) else "timed out"
            if status == "timed out":
                run.stop()
        finally:
            with self._lock:
                self._running.pop(student, None)
        text = tail_text(scratch / "nbgrader.log", LOG_TAIL)
        if status == "timed out":
            return status, f"stopped after {self.timeout:g} s"
        errors = [line.split("]", 1)[-1].strip() for line in text.splitlines()
                  if line.startswith("[AutogradeApp | ERROR]")]
        # nbgrader logs a cell it had to interrupt as an error too, yet grades the notebook: its exit code decides
        if run.returncode != 0:
            return "failed", (errors[0] if errors else f"nbgrader exited {run.returncode}")[:300]
        return "graded", ""

    # --- the class -----------------------------------------------------------------------------------------
    def pending(self) -> tuple[list[str], list[Outcome]]:
        """(the students to grade, the outcomes of those skipped because they are graded already)."""
        todo, skipped = [], []
        for student in self.students:
            if not self.force and is_graded(self.course, self.assignment, student, self.notebooks):
                skipped.append(Outcome(student, "skipped", message="already graded (use --force to regrade)"))
            else:
                todo.append(student)
        return todo, skipped

    def running(self) -> list[str]:
        """The students being graded right now."""
        with self._lock:
            return sorted(self._running)

    def stop(self) -> None:
        """Stop every running submission; nothing more is started or merged."""
        self._stopping = True
        with self._lock:
            running = list(self._running.values())
        for run in running:
            run.stop()

    def run(self) -> list[Outcome]:
        """Grade every selected submission; already graded ones are skipped unless `force`."""
        return grade_all([self], self.progress)[0]


def grade_all(graders: list[ClassGrader], progress: Callable[[str], None]) -> list[list[Outcome]]:
    """Grade the submissions of several assignments through one pool of workers (the first grader's count), so no
    worker waits at the end of one assignment; one list of outcomes per grader, in its students' order."""
    jobs, results = [], []
    for course in dict.fromkeys(g.course for g in graders):
        check_gradebook(course)
    for grader in graders:
        todo, skipped = grader.pending()
        jobs += [(grader, student) for student in todo]
        results.append(skipped)
    already = sum(len(r) for r in results)
    if not jobs:
        progress(f"nothing to grade: {already} submission(s) already graded")
        return results
    several = len(graders) > 1
    workers = graders[0].workers
    names = ", ".join(g.assignment for g in graders)
    progress(f"grading {len(jobs)} submission(s) of {names} with {workers} worker(s)"
             + (f", {already} already graded" if already else ""))
    warm_up()
    started = time.monotonic()
    done: list[Outcome] = []
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=workers)
    futures = {pool.submit(grader.grade_one, student): grader for grader, student in jobs}
    index = {id(g): i for i, g in enumerate(graders)}
    try:
        for future in concurrent.futures.as_completed(futures):
            grader = futures[future]
            outcome = future.result()
            done.append(outcome)
            results[index[id(grader)]].append(outcome)
            record_outcome(grader.course, grader.assignment, outcome)
            running = [f"{g.assignment}/{s}" if several else s for g in graders for s in g.running()]
            name = f"{grader.assignment}/{outcome.student}" if several else outcome.student
            progress(_progress_line(name, outcome, len(done), len(jobs), running, started))
    except KeyboardInterrupt:
        for future in futures:
            future.cancel()
        for grader in graders:
            grader.stop()
        pool.shutdown(wait=True)
        progress(f"interrupted: {len(done)} of {len(jobs)} graded and recorded; run again to grade the rest")
        raise
    pool.shutdown(wait=True)
    for grader, outcomes in zip(graders, results):
        order = {s: i for i, s in enumerate(grader.students)}
        outcomes.sort(key=lambda o: order[o.student])
    return results


def _progress_line(name: str, outcome: Outcome, done: int, total: int, running: list[str], started: float) -> str:
    left = total - done
    eta = (time.monotonic() - started) / done * left if left else 0.0
    result = (f"{outcome.score:g}/{outcome.max_score:g}" if outcome.score is not None
              else f"{outcome.status.upper()}: {outcome.message}")
    line = f"[{done}/{total}] {name}: {result} ({outcome.seconds:.1f} s)"
    if running:
        line += f"; grading {', '.join(running)}"
    if left:
        line += f"; about {_duration(eta)} left"
    return line


def tail_text(path: pathlib.Path, limit: int) -> str:
    """The last `limit` bytes of a file as text (all of it when shorter; empty when it is missing)."""
    try:
        with open(path, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            handle.seek(max(0, handle.tell() - limit))
            return handle.read(limit).decode(errors="replace")
    except OSError:
        return ""


def record_path(course: pathlib.Path, assignment: str) -> pathlib.Path:
    """Where the grading runs of an assignment are recorded (status, seconds, reason), for the report."""
    return course / ".grading" / f"{assignment}.json"


def record_outcome(course: pathlib.Path, assignment: str, outcome: Outcome) -> None:
    """Add one graded submission to the assignment's grading record (the latest run of each student wins)."""
    path = record_path(course, assignment)
    path.parent.mkdir(exist_ok=True)
    with locked(course):
        runs = json.loads(path.read_text()) if path.exists() else {}
        runs[outcome.student] = asdict(outcome)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(runs, indent=1, sort_keys=True))
        tmp.replace(path)


def read_record(course: pathlib.Path, assignment: str) -> dict[str, Outcome]:
    """The recorded grading runs of an assignment, by student (empty when it was never graded here)."""
    path = record_path(course, assignment)
    if not path.exists():
        return {}
    return {student: Outcome(**item) for student, item in json.loads(path.read_text()).items()}


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    return f"{seconds / 60:.0f} min"


def summary_table(outcomes: list[Outcome]) -> str:
    """The end-of-run table: one row per submission, then the counts."""
    rows = [("student", "status", "score", "seconds", "note")]
    for o in outcomes:
        score = f"{o.score:g} / {o.max_score:g}" if o.score is not None else "-"
        seconds = f"{o.seconds:.1f}" if o.status != "skipped" else "-"
        rows.append((o.student, o.status, score, seconds, o.message))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(r, widths)).rstrip() for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    counts: dict[str, int] = {}
    for o in outcomes:
        counts[o.status] = counts.get(o.status, 0) + 1
    lines.append("")
    lines.append(", ".join(f"{n} {status}" for status, n in counts.items()) or "no submissions")
    return "\n".join(lines)
