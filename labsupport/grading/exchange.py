"""nbgrader's exchange, made to trust nothing a student put in it.

`nbgrader collect` copies each submission from the exchange's inbound folder into `submitted/<student>/…` as the
instructor. nbgrader's own copy follows symbolic links, so a student who leaves a link in the world-writable inbound
folder (`…/endpointslices.ipynb -> /course/source/…`) would have the instructor copy — and grade — a file the
student cannot read. Here a submission folder, or anything in it, that is a link or not a regular file is refused
and logged, and a student id that could name another folder (a slash, `..`, a leading dot) is refused too; every
other submission is collected as nbgrader collects it.
"""
from __future__ import annotations

import pathlib

from nbgrader.exchange.default.collect import ExchangeCollect

from labsupport.errors import LabError
from labsupport.grading.sandbox import SubmissionRefused, check_submission


class BadStudentId(LabError, ValueError):
    """A student id that is not a plain name: it could point at another folder."""


def check_student_id(student: str) -> str:
    """A student id that names one folder and nothing else; BadStudentId otherwise."""
    if not student or "/" in student or "\\" in student or "\0" in student or student.startswith(".") \
            or student in (".", ".."):
        raise BadStudentId(f"student id {student!r} is refused: an id may not be empty, contain a slash or start "
                           "with a dot")
    return student


class SafeExchangeCollect(ExchangeCollect):
    """`nbgrader collect` that refuses links, special files and path-like student ids in a submission."""

    def do_copy(self, src: str, dest: str, log=None) -> None:
        """Copy one submission, refusing anything that is not a regular file or folder (nothing is copied then)."""
        try:
            check_submission(pathlib.Path(src))
        except SubmissionRefused as e:
            self.log.error("Refused the submission in %s: %s", src, e)
            raise
        super().do_copy(src, dest, log)

    def copy_files(self) -> None:
        """Collect every submission; one refused submission is logged and skipped, the others are collected."""
        records = list(self.src_records)
        keep = []
        for rec in records:
            try:
                check_student_id(rec["username"])
                check_submission(pathlib.Path(self.inbound_path, rec["filename"]))
            except (SubmissionRefused, BadStudentId) as e:
                self.log.error("Not collected: %s", e)
                continue
            keep.append(rec)
        self.src_records = keep
        super().copy_files()


__all__ = ["SafeExchangeCollect", "BadStudentId", "check_student_id"]
