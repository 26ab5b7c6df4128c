"""What a submitted notebook must be before nbgrader reads it further: the first step of autograding.

nbgrader's own checks stop a whole `nbgrader autograde` batch when one notebook carries cell metadata of another
nbgrader version (SchemaTooNewError, SchemaTooOldError), and follow a submitted notebook that is a symbolic link to
whatever it names (the instructor's source). `CheckSubmission` runs first and refuses such a notebook with an
ordinary error, which nbgrader records for that student alone: the batch goes on, every other student keeps their
grade, and the refused student gets no marks until they submit a plain notebook.
"""
from __future__ import annotations

import pathlib
from typing import Any

from nbformat.notebooknode import NotebookNode
from nbgrader.nbgraderformat import SCHEMA_VERSION
from nbgrader.preprocessors import NbGraderPreprocessor

from labsupport.grading.sandbox import SubmissionRefused, check_submission, regular_file


class CheckSubmission(NbGraderPreprocessor):
    """Refuse a submitted notebook that is a link or not a regular file, lies in a folder that holds one, carries
    nbgrader metadata of another schema, or repeats a graded cell's id."""

    def preprocess(self, nb: NotebookNode, resources: Any) -> tuple[NotebookNode, Any]:
        """Check the notebook's file and cells; SubmissionRefused when they are not what a submission may be."""
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


__all__ = ["CheckSubmission"]
