"""The course's one gradebook: a locked writer, snapshots for scratch courses, and merging a graded submission."""
from __future__ import annotations

import contextlib
import fcntl
import json
import pathlib
import sqlite3
import warnings
from dataclasses import dataclass, field
from typing import Iterator

from labsupport.errors import LabError


class GradingError(LabError):
    """A course cannot be graded as asked; the message says what is wrong and where."""


def db_url(path: pathlib.Path) -> str:
    """The SQLAlchemy URL of a gradebook file."""
    return f"sqlite:///{path.resolve()}"


@contextlib.contextmanager
def locked(course: pathlib.Path) -> Iterator[None]:
    """Hold the course's gradebook lock (sqlite allows one writer; every writer here takes this lock first)."""
    with open(course / ".gradebook.lock", "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def snapshot(course: pathlib.Path, dest: pathlib.Path) -> None:
    """Copy the course's gradebook to `dest`, consistently, while no one writes to it."""
    with locked(course):
        src = sqlite3.connect(course / "gradebook.db")
        out = sqlite3.connect(dest)
        try:
            src.backup(out)
        finally:
            out.close()
            src.close()


@dataclass
class NotebookMarks:
    """What autograding recorded for one notebook of one submission."""

    late_penalty: float | None
    grades: dict[str, tuple[float | None, bool]] = field(default_factory=dict)   # grade id -> (auto, needs manual)
    comments: dict[str, str | None] = field(default_factory=dict)                # grade id -> auto comment


@dataclass
class SubmissionMarks:
    """What autograding recorded for one student's submission of one assignment."""

    timestamp: object
    notebooks: dict[str, NotebookMarks] = field(default_factory=dict)
    code_score: float = 0.0         # the autograded (code) cells' score, as the gradebook sums it
    max_code_score: float = 0.0


def read_marks(gradebook: pathlib.Path, assignment: str, student: str) -> SubmissionMarks | None:
    """The marks of one submission in a gradebook file, or None when it has none."""
    from nbgrader.api import Gradebook, MissingEntry
    with Gradebook(db_url(gradebook)) as gb:
        try:
            sub = gb.find_submission(assignment, student)
        except MissingEntry:
            return None
        marks = SubmissionMarks(sub.timestamp)
        for nb in sub.notebooks:
            item = NotebookMarks(nb.late_submission_penalty)
            for grade in nb.grades:
                item.grades[grade.name] = (grade.auto_score, bool(grade.needs_manual_grade))
            for comment in nb.comments:
                item.comments[comment.name] = comment.auto_comment
            marks.notebooks[nb.name] = item
        marks.code_score, marks.max_code_score = sub.code_score, sub.max_code_score
        return marks


def merge_marks(course: pathlib.Path, assignment: str, student: str, marks: SubmissionMarks) -> None:
    """Write one submission's autograded marks into the course's gradebook, as `nbgrader autograde` would have.

    Manual scores, extra credit and manual comments already in the gradebook are left as they are.
    """
    from nbgrader.api import Gradebook
    from sqlalchemy.exc import SAWarning
    with locked(course), Gradebook(db_url(course / "gradebook.db")) as gb, warnings.catch_warnings():
        # nbgrader's update_or_create_submission autoflushes half-built rows; it warns, then builds them right
        warnings.simplefilter("ignore", SAWarning)
        gb.update_or_create_student(student)
        if marks.timestamp is not None:
            gb.update_or_create_submission(assignment, student, timestamp=marks.timestamp)
        else:
            gb.update_or_create_submission(assignment, student)
        for name, item in marks.notebooks.items():
            nb = gb.find_submission_notebook(name, assignment, student)
            nb.late_submission_penalty = item.late_penalty
            for grade_id, (auto, needs_manual) in item.grades.items():
                grade = gb.find_grade(grade_id, name, assignment, student)
                grade.auto_score = auto
                grade.needs_manual_grade = needs_manual
            for grade_id, text in item.comments.items():
                gb.find_comment(grade_id, name, assignment, student).auto_comment = text
        gb.db.commit()


def assignment_notebooks(course: pathlib.Path, assignment: str) -> list[str]:
    """The notebook names of an assignment as the gradebook knows it; a clear error when it does not.

    Read with plain sqlite (nbgrader's schema), so that a grading run's parent process need not import nbgrader.
    """
    path = course / "gradebook.db"
    if not path.exists():
        raise GradingError(f"{course}: no gradebook.db here; run this in the course folder, after "
                           f"`nbgrader generate_assignment {assignment}`")
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        known = db.execute("SELECT id FROM assignment WHERE name = ?", (assignment,)).fetchone()
        names = [row[0] for row in db.execute(
            "SELECT notebook.name FROM notebook JOIN assignment ON notebook.assignment_id = assignment.id "
            "WHERE assignment.name = ? ORDER BY notebook.name", (assignment,))]
    except sqlite3.Error as e:
        raise GradingError(f"{path}: not an nbgrader gradebook ({e})") from e
    finally:
        db.close()
    if known is None:
        raise GradingError(f"{path}: no assignment {assignment!r} in the gradebook; run "
                           f"`nbgrader generate_assignment {assignment}` first")
    return names


def merge_from_scratch(course: pathlib.Path, scratch: pathlib.Path, assignment: str, student: str) -> None:
    """Merge one student's marks from a scratch course's gradebook into the course's; write what was merged to
    `scratch/merged.json` (whether there were marks, and the autograded score and its maximum)."""
    marks = read_marks(scratch / "gradebook.db", assignment, student)
    if marks is not None:
        merge_marks(course, assignment, student, marks)
    summary = {"marks": marks is not None, "score": marks.code_score if marks else None,
               "max_score": marks.max_code_score if marks else None}
    (scratch / "merged.json").write_text(json.dumps(summary))


def all_marks(gradebook: pathlib.Path, assignment: str) -> dict[tuple[str, str, str], tuple]:
    """Every recorded mark of an assignment, keyed (student, notebook, grade id): (auto score, manual score,
    needs manual grade, auto comment) — what two gradebooks must agree on, cell for cell."""
    from nbgrader.api import Gradebook, MissingEntry
    out: dict[tuple[str, str, str], tuple] = {}
    with Gradebook(db_url(gradebook)) as gb:
        try:
            submissions = gb.find_assignment(assignment).submissions
        except MissingEntry:
            return out
        for sub in submissions:
            for nb in sub.notebooks:
                comments = {c.name: c.auto_comment for c in nb.comments}
                for grade in nb.grades:
                    out[(sub.student.id, nb.name, grade.name)] = (
                        grade.auto_score, grade.manual_score, bool(grade.needs_manual_grade),
                        comments.get(grade.name))
                for name, text in comments.items():
                    out.setdefault((sub.student.id, nb.name, name), (None, None, False, text))
    return out
