"""`nbgrader export` for this course: grades.csv that a spreadsheet opens as data.

nbgrader's own CSV export joins the fields with commas as they are: a student id or a name holding a comma shifts
every column after it, and one starting with `=` (`=HYPERLINK(…)`) is a formula the moment the instructor opens the
file. `SafeCsvExport` writes the same columns through Python's csv module (a field with a comma, a quote or a line
break is quoted) and writes text a spreadsheet would evaluate as text (`labsupport.grading.ids.spreadsheet_text`).
A student id outside the grammar is exported all the same (its marks are not lost), neutralised like any text,
with an error in the log naming the id and the rule.
"""
from __future__ import annotations

import csv
import os
from typing import Any

from nbgrader.api import Gradebook, MissingEntry
from nbgrader.plugins import ExportPlugin

from labsupport.grading.ids import BadStudentId, check_student_id, spreadsheet_text

#: grades.csv's columns, as nbgrader's own export writes them.
COLUMNS = ("assignment", "duedate", "timestamp", "student_id", "last_name", "first_name", "email", "raw_score",
           "late_submission_penalty", "score", "max_score")


def grade_rows(gradebook: Gradebook, assignments: list[str], students: list[str]) -> list[dict[str, Any]]:
    """One row per assignment and student of the gradebook (only those asked for, when any are): what was scored,
    0 where nothing was submitted."""
    rows = []
    for assignment in gradebook.assignments:
        if assignments and assignment.name not in assignments:
            continue
        for student in gradebook.students:
            if students and student.id not in students:
                continue
            row: dict[str, Any] = {"assignment": assignment.name, "duedate": assignment.duedate,
                                   "student_id": student.id, "last_name": student.last_name,
                                   "first_name": student.first_name, "email": student.email,
                                   "max_score": assignment.max_score}
            try:
                submission = gradebook.find_submission(assignment.name, student.id)
            except MissingEntry:
                row.update(timestamp=None, raw_score=0.0, late_submission_penalty=0.0, score=0.0)
            else:
                penalty = submission.late_submission_penalty or 0.0
                row.update(timestamp=submission.timestamp, raw_score=submission.score,
                           late_submission_penalty=penalty, score=max(0.0, submission.score - penalty))
            rows.append(row)
    return rows


def csv_field(value: Any) -> Any:
    """A value as grades.csv writes it: empty for none, numbers as numbers, text safe from formulas."""
    if value is None:
        return ""
    if isinstance(value, (int, float)):
        return value
    return spreadsheet_text(str(value))


class SafeCsvExport(ExportPlugin):
    """grades.csv with every field quoted as CSV needs and no text a spreadsheet would evaluate."""

    def export(self, gradebook: Gradebook) -> None:
        """Write the grades to `--to` (default grades.csv)."""
        dest = self.to or "grades.csv"
        rows = grade_rows(gradebook, [str(a) for a in self.assignment], [str(s) for s in self.student])
        for student in dict.fromkeys(row["student_id"] for row in rows):
            try:
                check_student_id(student, "the gradebook")
            except BadStudentId as e:
                self.log.error("%s: exported as text, check this student", e)
        self.log.info("Exporting grades to %s", dest)
        tmp = f"{dest}.tmp-{os.getpid()}"
        with open(tmp, "w", newline="") as handle:
            writer = csv.writer(handle, quoting=csv.QUOTE_MINIMAL)
            writer.writerow(COLUMNS)
            for row in rows:
                writer.writerow([csv_field(row[column]) for column in COLUMNS])
        os.replace(tmp, dest)


__all__ = ["SafeCsvExport", "grade_rows", "csv_field", "COLUMNS"]
