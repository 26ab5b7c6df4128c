"""What a submission may be before it is graded or collected: regular files in real folders, plain student ids."""
from __future__ import annotations

import os
import pathlib

import pytest

from labsupport.grading.exchange import BadStudentId, check_student_id
from labsupport.grading.intake import CheckSubmission
from labsupport.grading.sandbox import SubmissionRefused, check_submission, copy_submission


@pytest.fixture
def submission(tmp_path) -> pathlib.Path:
    folder = tmp_path / "submitted" / "ann" / "01"
    folder.mkdir(parents=True)
    (folder / "nb.ipynb").write_text('{"cells": []}')
    (folder / "data").mkdir()
    (folder / "data" / "web.yaml").write_text("kind: Service\n")
    return folder


def test_a_plain_submission_is_copied(submission, tmp_path):
    copy_submission(submission, tmp_path / "copy")
    assert (tmp_path / "copy" / "nb.ipynb").read_text() == '{"cells": []}'
    assert (tmp_path / "copy" / "data" / "web.yaml").is_file()


@pytest.mark.parametrize("make, words", [
    (lambda f, t: (f / "nb.ipynb").unlink() or (f / "nb.ipynb").symlink_to("/etc/hostname"), "symbolic link"),
    (lambda f, t: (f / "inner").symlink_to(t), "symbolic link"),
    (lambda f, t: os.mkfifo(f / "pipe"), "not a regular file"),
    (lambda f, t: os.link(f / "nb.ipynb", t / "other-name"), "hard link"),
])
def test_links_and_special_files_are_refused(submission, tmp_path, make, words):
    make(submission, tmp_path)
    with pytest.raises(SubmissionRefused, match=words):
        check_submission(submission)
    with pytest.raises(SubmissionRefused):
        copy_submission(submission, tmp_path / "copy")


def test_a_linked_folder_is_refused(submission, tmp_path):
    (tmp_path / "linked").symlink_to(submission)
    with pytest.raises(SubmissionRefused, match="not a folder"):
        check_submission(tmp_path / "linked")


@pytest.mark.parametrize("student", ["..", ".", "", "a/b", ".hidden", "x\\y"])
def test_path_like_student_ids_are_refused(student):
    with pytest.raises(BadStudentId, match="refused"):
        check_student_id(student)


def test_plain_student_ids_pass():
    assert check_student_id("ann.lee+2") == "ann.lee+2"


def _cell(grade_id: str, version: int = 3) -> dict:
    return {"cell_type": "code", "source": "", "metadata": {"nbgrader": {"grade_id": grade_id, "grade": True,
                                                                          "schema_version": version}}}


def test_check_submission_refuses_foreign_schema_and_repeated_cells(submission):
    import nbformat
    resources = {"metadata": {"path": str(submission), "name": "nb"}}
    step = CheckSubmission()
    ok = nbformat.from_dict({"cells": [_cell("a"), _cell("b")], "metadata": {}, "nbformat": 4, "nbformat_minor": 5})
    step.preprocess(ok, resources)
    with pytest.raises(SubmissionRefused, match="schema version 99"):
        step.preprocess(nbformat.from_dict({**ok, "cells": [_cell("a", 99)]}), resources)
    with pytest.raises(SubmissionRefused, match="a second cell with the id 'a'"):
        step.preprocess(nbformat.from_dict({**ok, "cells": [_cell("a"), _cell("a")]}), resources)
    (submission / "nb.ipynb").unlink()
    (submission / "nb.ipynb").symlink_to("/etc/hostname")
    with pytest.raises(SubmissionRefused, match="symbolic link"):
        step.preprocess(ok, resources)
