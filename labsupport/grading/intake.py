"""What a submitted notebook must be before nbgrader reads it further: the first steps of autograding.

nbgrader's own checks stop a whole `nbgrader autograde` batch when one notebook carries cell metadata of another
nbgrader version (SchemaTooNewError, SchemaTooOldError), and follow a submitted notebook that is a symbolic link to
whatever it names (the instructor's source). `CheckSubmission` runs first and refuses such a notebook with an
ordinary error, which nbgrader records for that student alone: the batch goes on, every other student keeps their
grade, and the refused student gets no marks until they submit a plain notebook. It refuses a student id outside
the grammar of `labsupport.grading.ids` too (and takes the id nbgrader just added back out of the gradebook).

`CleanSubmission` then makes the notebook data (`labsupport.grading.clean`): the student's markdown, outputs,
attachments and metadata can hold no markup that runs in the formgrader, the feedback or any page; the
instructor's own cells (from the course's source notebook) stay as they are. `CleanOutputs` does the same for the
outputs the graded run wrote (they come from the student's kernel), so the autograded notebook — what the formgrader,
feedback and the class report read — is clean. `nbgrader collect` writes the same clean copy into `submitted/`
(`labsupport.grading.exchange`); cleaning is idempotent, so a notebook cleaned there comes through unchanged.
"""
from __future__ import annotations

import json
import os
import pathlib
from typing import Any

from nbformat.notebooknode import NotebookNode, from_dict
from nbgrader.nbgraderformat import SCHEMA_VERSION
from nbgrader.preprocessors import NbGraderPreprocessor

from labsupport.grading.clean import clean_notebook, clean_outputs, course_grade_ids, course_texts
from labsupport.grading.ids import BadStudentId, check_student_id
from labsupport.grading.sandbox import SubmissionRefused, check_submission, regular_file

#: The largest source notebook read for the instructor's own cells, in bytes.
MAX_SOURCE = 64 * 2**20


class CheckSubmission(NbGraderPreprocessor):
    """Refuse a submitted notebook that is a link or not a regular file, lies in a folder that holds one, carries
    nbgrader metadata of another schema, repeats a graded cell's id, or belongs to a student id outside the
    grammar."""

    def preprocess(self, nb: NotebookNode, resources: Any) -> tuple[NotebookNode, Any]:
        """Check the notebook's file, its student and its cells; SubmissionRefused when they are not what a
        submission may be."""
        student = ((resources or {}).get("nbgrader") or {}).get("student")
        if student is not None:
            try:
                check_student_id(student, "the folder in submitted/")
            except BadStudentId as e:
                forget_student(resources, student)
                raise SubmissionRefused(str(e)) from None
        meta = (resources or {}).get("metadata", {})
        folder, name = meta.get("path"), meta.get("name")
        if folder and name:
            folder = pathlib.Path(folder)
            if folder.parent.is_symlink():          # submitted/<student> itself
                raise SubmissionRefused(f"{folder.parent} is a symbolic link: refused")
            check_submission(folder)
            regular_file(folder / f"{name}.ipynb")
        seen: set[str] = set()
        for index, cell in enumerate(nb.cells):
            grading = cell.get("metadata", {}).get("nbgrader")
            if not grading:
                continue
            version = grading.get("schema_version", SCHEMA_VERSION)
            if version != SCHEMA_VERSION:
                raise SubmissionRefused(f"cell {index + 1}: nbgrader metadata of schema version {version!r}, not "
                                        f"{SCHEMA_VERSION}: refused (restore the cell from the released notebook)")
            grade_id = grading.get("grade_id")
            if grade_id:
                if grade_id in seen:
                    raise SubmissionRefused(f"cell {index + 1}: a second cell with the id {grade_id!r}: refused "
                                            "(delete the copy; each graded cell appears once)")
                seen.add(grade_id)
        return nb, resources


def forget_student(resources: Any, student: str) -> None:
    """Take a refused student id back out of the gradebook (nbgrader adds it before any preprocessor runs), with
    the submission nbgrader made for it; a student with other submissions stays."""
    db_url = ((resources or {}).get("nbgrader") or {}).get("db_url")
    if not db_url:
        return
    from nbgrader.api import Gradebook, MissingEntry
    with Gradebook(db_url) as gb:
        try:
            record = gb.find_student(student)
        except MissingEntry:
            return
        assignment = resources["nbgrader"].get("assignment")
        if all(sub.assignment.name == assignment for sub in record.submissions):
            gb.remove_student(student)


def course_root(config: Any, resources: Any) -> pathlib.Path | None:
    """The course folder of the run: nbgrader's CourseDirectory.root, else three levels above the graded folder."""
    root = config.get("CourseDirectory", {}).get("root") if config is not None else None
    if root:
        return pathlib.Path(root)
    path = ((resources or {}).get("metadata") or {}).get("path")
    return pathlib.Path(path).resolve().parents[2] if path else None


def source_notebook(root: pathlib.Path | None, assignment: str | None, notebook: str | None,
                    source: str = "source") -> dict | None:
    """The course's source notebook of one notebook of an assignment (None when there is none to read)."""
    if root is None or not assignment or not notebook:
        return None
    path = root / source / assignment / f"{notebook}.ipynb"
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as handle:
        data = handle.read(MAX_SOURCE + 1)
    if len(data) > MAX_SOURCE:
        return None
    try:
        nb = json.loads(data)
    except (ValueError, RecursionError):
        return None
    return nb if isinstance(nb, dict) else None


def clean_against_source(nb: Any, source_nb: dict | None) -> list[str]:
    """Clean a student's notebook, keeping the instructor's own text and cell ids of `source_nb` (when there is
    one); what was changed."""
    if source_nb is None:
        return clean_notebook(nb)
    return clean_notebook(nb, course_texts(source_nb), course_grade_ids(source_nb))


class CleanSubmission(NbGraderPreprocessor):
    """Make a submitted notebook data: the student's markdown, outputs, attachments and metadata cleaned
    (`labsupport.grading.clean`), the instructor's own text kept."""

    def preprocess(self, nb: NotebookNode, resources: Any) -> tuple[NotebookNode, Any]:
        """Clean the notebook in place and log what was changed."""
        grading = (resources or {}).get("nbgrader") or {}
        source = self.config.get("CourseDirectory", {}).get("source_directory") or "source"
        notes = clean_against_source(nb, source_notebook(course_root(self.config, resources),
                                                         grading.get("assignment"), grading.get("notebook"), source))
        if notes:
            self.log.warning("The submission of %s: %s", grading.get("student", "?"), "; ".join(notes[:20]))
        return nb, resources


class CleanOutputs(NbGraderPreprocessor):
    """Clean the outputs the graded run wrote (the student's kernel made them) as intake cleans a submission."""

    def preprocess_cell(self, cell: NotebookNode, resources: Any, index: int):
        """Keep only what may be shown of a code cell's outputs."""
        if cell.get("cell_type") == "code" and cell.get("outputs"):
            notes: list[str] = []
            cell.outputs = [from_dict(output) for output in clean_outputs(cell.outputs, notes)]
        return cell, resources


__all__ = ["CheckSubmission", "CleanSubmission", "CleanOutputs", "source_notebook", "clean_against_source",
           "course_root", "forget_student"]
