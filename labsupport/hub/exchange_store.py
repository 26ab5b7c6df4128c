"""What the class's exchange service keeps, on disk: released assignments, every hand-in with its receipt, and the
feedback on each hand-in. Only the service's own account can read or write any of it.

    ROOT/COURSE/released/ASSIGNMENT/           meta.json (when, what) and files/
    ROOT/COURSE/handins/ASSIGNMENT/STUDENT/ID/ receipt.json, files/ and, once released, feedback/ (listing.json,
                                               files/)
    ROOT/COURSE/.incoming/                     half-written things, renamed into place when whole

A hand-in is filed under the name the service was given by the hub (`student`), never a name the student wrote;
its time (`received`) is the service's clock when the last byte arrived. Every hand-in is kept: a re-submission is
a new ID, as nbgrader's timestamps are. Everything is written by `handin.write_folder` into a folder made for it
and renamed into place, so a reader never sees half a hand-in and nothing is written through a link.
"""
from __future__ import annotations

import datetime
import json
import os
import pathlib
import re
import secrets
import shutil
import stat
from dataclasses import dataclass
from typing import Any, Iterable

from labsupport.errors import LabError
from labsupport.grading.exchange_wire import (CAPS, RESERVED, Caps, HandInError, check_id, check_path, check_student,
                                       notebook_problem, sha256, write_folder)
from labsupport.i18n import tr

#: nbgrader's default timestamp format, in UTC: what `timestamp.txt` holds and `parse_utc` reads back.
TIMESTAMP_FORMAT = "%Y-%m-%d %H:%M:%S.%f UTC"
#: A hand-in's id: when it arrived, then random hex (sorts by time, cannot be guessed).
HANDIN_ID = re.compile(r"^\d{8}-\d{6}-\d{6}-[0-9a-f]{12}$")


class StoreError(LabError):
    """A request the store cannot satisfy; `status` is the HTTP status that says why."""

    status = 400


class NotFound(StoreError):
    """No such released assignment, hand-in or feedback."""

    status = 404


class Corrupt(StoreError):
    """What is on disk is not what was stored (changed or replaced behind the service's back)."""

    status = 500


class Conflict(StoreError):
    """It exists already (an assignment released without --force)."""

    status = 409


@dataclass(frozen=True)
class StoreCaps:
    """How much each kind of upload may hold."""

    handin: Caps = CAPS
    release: Caps = Caps(bytes=200 * 2**20, files=1000)
    feedback: Caps = Caps(bytes=100 * 2**20, files=100)


def timestamp(moment: datetime.datetime) -> str:
    """`moment` (aware) as nbgrader writes a time in `timestamp.txt`, in UTC."""
    return moment.astimezone(datetime.timezone.utc).strftime(TIMESTAMP_FORMAT)


def listing(files: dict[str, bytes]) -> list[dict[str, Any]]:
    """Each file's path, size and SHA-256."""
    return [{"path": path, "size": len(data), "sha256": sha256(data)} for path, data in sorted(files.items())]


class ExchangeStore:
    """The exchange's folder `root`, which must be a real folder only its owner may enter."""

    def __init__(self, root: str | os.PathLike, caps: StoreCaps = StoreCaps()):
        self.root = pathlib.Path(root)
        self.caps = caps
        st = os.lstat(self.root)
        if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o077:
            raise StoreError(f"the exchange's folder {self.root} must be a folder (not a link) of this account "
                             f"(uid {os.geteuid()}) that nobody else may enter (mode 0700); it is uid "
                             f"{st.st_uid}, mode {stat.filemode(st.st_mode)}")

    # --- paths -------------------------------------------------------------------------------------------------
    def _course(self, course: str) -> pathlib.Path:
        return self.root / check_id("course", course)

    def _incoming(self, course: str) -> pathlib.Path:
        folder = self._course(course) / ".incoming"
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        return folder / secrets.token_hex(8)

    def _released(self, course: str, assignment: str) -> pathlib.Path:
        return self._course(course) / "released" / check_id("assignment", assignment)

    def _handins(self, course: str, assignment: str, student: str) -> pathlib.Path:
        return self._course(course) / "handins" / check_id("assignment", assignment) / check_student(student)

    def _handin(self, course: str, assignment: str, student: str, handin: str) -> pathlib.Path:
        if not isinstance(handin, str) or not HANDIN_ID.match(handin):
            raise NotFound(tr("{id!r} is not the id of a hand-in", id=handin))
        folder = self._handins(course, assignment, student) / handin
        if not (folder / "receipt.json").is_file():
            raise NotFound(tr("no hand-in {id} of {student} for {assignment}", id=handin, student=str(student),
                              assignment=assignment))
        return folder

    # --- reading -----------------------------------------------------------------------------------------------
    @staticmethod
    def _read_files(folder: pathlib.Path, entries: Iterable[dict[str, Any]]) -> dict[str, bytes]:
        files = {}
        for entry in entries:
            path = check_path(entry["path"])
            try:
                fd = os.open(folder / path, os.O_RDONLY | os.O_NOFOLLOW)
            except OSError as e:
                raise Corrupt(f"{folder / path} cannot be opened as stored ({e.strerror})") from e
            with os.fdopen(fd, "rb") as f:
                data = f.read()
            if sha256(data) != entry["sha256"]:
                raise Corrupt(f"{folder / path} does not hold what was stored (its SHA-256 changed)")
            files[path] = data
        return files

    @staticmethod
    def _json(path: pathlib.Path) -> dict[str, Any]:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
        with os.fdopen(fd, "rb") as f:
            return json.loads(f.read())

    # --- released assignments ----------------------------------------------------------------------------------
    def released(self, course: str) -> list[dict[str, Any]]:
        """Every released assignment of `course`: its id, when it was released and its files."""
        folder = self._course(course) / "released"
        if not folder.is_dir():
            return []
        return [self._json(entry / "meta.json") for entry in sorted(folder.iterdir())
                if (entry / "meta.json").is_file()]

    def release(self, course: str, assignment: str, files: dict[str, bytes], *, force: bool = False,
                now: datetime.datetime | None = None) -> dict[str, Any]:
        """Release `assignment` with `files`; Conflict when it is released already and not `force`."""
        target = self._released(course, assignment)
        if not any(path.endswith(".ipynb") for path in files):
            raise HandInError(f"the release of {assignment} holds no notebook")
        for path, data in files.items():
            if path.endswith(".ipynb"):
                problem = notebook_problem(data)
                if problem:
                    raise HandInError(f"{path}: {problem}")
        if target.exists() and not force:
            raise Conflict(f"{assignment} is released already: release it again with --force to replace it")
        meta = {"assignment": assignment, "released": timestamp(now or utcnow()), "files": listing(files)}
        staging = self._incoming(course)
        staging.mkdir(mode=0o700)
        write_folder(staging / "files", files)
        (staging / "meta.json").write_text(json.dumps(meta, indent=1))
        target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        old = None
        if target.exists():
            old = self._incoming(course)
            os.rename(target, old)
        os.rename(staging, target)
        if old is not None:
            shutil.rmtree(old)
        return meta

    def unrelease(self, course: str, assignment: str) -> None:
        """Take `assignment` back (students can no longer fetch it; hand-ins stay)."""
        target = self._released(course, assignment)
        if not target.exists():
            raise NotFound(tr("{assignment} is not released in {course}", assignment=assignment, course=course))
        gone = self._incoming(course)
        os.rename(target, gone)
        shutil.rmtree(gone)

    def fetch(self, course: str, assignment: str) -> tuple[dict[str, Any], dict[str, bytes]]:
        """A released assignment: its meta and its files."""
        target = self._released(course, assignment)
        if not (target / "meta.json").is_file():
            raise NotFound(tr("{assignment} is not released in {course}", assignment=assignment, course=course))
        meta = self._json(target / "meta.json")
        return meta, self._read_files(target / "files", meta["files"])

    # --- hand-ins ----------------------------------------------------------------------------------------------
    def check_handin(self, course: str, assignment: str, files: dict[str, bytes]) -> None:
        """HandInError when `files` may not be a hand-in of `assignment`: each file a notebook (that nbformat
        validates) or one of the released files, none of nbgrader's bookkeeping, at least one notebook."""
        meta, _ = self.fetch(course, assignment)
        released = {entry["path"] for entry in meta["files"]}
        for path, data in sorted(files.items()):
            if path.rsplit("/", 1)[-1] in RESERVED:
                raise HandInError(tr("{path}: the exchange writes this file itself (a hand-in's time is the time "
                                     "the server received it): leave it out", path=path))
            if path.endswith(".ipynb"):
                problem = notebook_problem(data)
                if problem:
                    raise HandInError(tr("{path} is not a notebook: {problem}", path=path, problem=problem))
            elif path not in released:
                raise HandInError(tr("{path} is neither a notebook nor a file of the released {assignment}: a "
                                     "hand-in holds the assignment's notebooks", path=path, assignment=assignment))
        if not any(path.endswith(".ipynb") for path in files):
            raise HandInError(tr("the hand-in holds no notebook: submit the folder of {assignment} you fetched",
                                 assignment=assignment))

    def submit(self, course: str, assignment: str, student: str, files: dict[str, bytes],
               received: datetime.datetime) -> dict[str, Any]:
        """Keep a new hand-in of `student` (the authenticated name) received at `received`; its receipt."""
        self.check_handin(course, assignment, files)
        handin = received.astimezone(datetime.timezone.utc).strftime("%Y%m%d-%H%M%S-%f-") + secrets.token_hex(6)
        receipt = {"id": handin, "course": course, "assignment": assignment, "student": check_student(student),
                   "received": timestamp(received), "size": sum(map(len, files.values())), "files": listing(files)}
        staging = self._incoming(course)
        staging.mkdir(mode=0o700)
        write_folder(staging / "files", files)
        (staging / "receipt.json").write_text(json.dumps(receipt, indent=1))
        folder = self._handins(course, assignment, student)
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        os.rename(staging, folder / handin)
        return receipt

    def _receipt(self, folder: pathlib.Path) -> dict[str, Any]:
        receipt = self._json(folder / "receipt.json")
        feedback = folder / "feedback" / "listing.json"
        receipt["feedback"] = self._json(feedback)["files"] if feedback.is_file() else None
        return receipt

    def submissions(self, course: str, assignment: str | None = None,
                    student: str | None = None) -> list[dict[str, Any]]:
        """The receipts of every hand-in (of one assignment, of one student), oldest first, each with the listing of
        its feedback (None before any is released)."""
        base = self._course(course) / "handins"
        assignments = [check_id("assignment", assignment)] if assignment else \
            sorted(p.name for p in base.iterdir()) if base.is_dir() else []
        found = []
        for name in assignments:
            students = [check_student(student)] if student else \
                sorted(p.name for p in (base / name).iterdir()) if (base / name).is_dir() else []
            for who in students:
                folder = base / name / who
                if folder.is_dir():
                    found += [self._receipt(entry) for entry in sorted(folder.iterdir())
                              if HANDIN_ID.match(entry.name) and (entry / "receipt.json").is_file()]
        return sorted(found, key=lambda r: (r["assignment"], r["student"], r["id"]))

    def handin(self, course: str, assignment: str, student: str, handin: str) -> tuple[dict[str, Any],
                                                                                          dict[str, bytes]]:
        """One hand-in: its receipt and its files (checked against the receipt)."""
        folder = self._handin(course, assignment, student, handin)
        receipt = self._receipt(folder)
        return receipt, self._read_files(folder / "files", receipt["files"])

    # --- feedback ----------------------------------------------------------------------------------------------
    def put_feedback(self, course: str, assignment: str, student: str, handin: str,
                     files: dict[str, bytes]) -> dict[str, Any]:
        """Release (or replace) the feedback on one hand-in: HTML files, one per notebook."""
        folder = self._handin(course, assignment, student, handin)
        for path in files:
            if "/" in path or not path.endswith(".html"):
                raise HandInError(f"{path}: feedback is one HTML file per notebook, NOTEBOOK.html")
        if not files:
            raise HandInError("no feedback file to release")
        staging = self._incoming(course)
        staging.mkdir(mode=0o700)
        write_folder(staging / "files", files)
        (staging / "listing.json").write_text(json.dumps({"files": listing(files)}))
        old = None
        if (folder / "feedback").exists():
            old = self._incoming(course)
            os.rename(folder / "feedback", old)
        os.rename(staging, folder / "feedback")
        if old is not None:
            shutil.rmtree(old)
        return self._receipt(folder)

    def feedback(self, course: str, assignment: str, student: str, handin: str) -> dict[str, bytes]:
        """The feedback released on one hand-in; NotFound before any is."""
        folder = self._handin(course, assignment, student, handin)
        receipt = self._receipt(folder)
        if receipt["feedback"] is None:
            raise NotFound(tr("no feedback on hand-in {id} yet", id=handin))
        return self._read_files(folder / "feedback" / "files", receipt["feedback"])


def utcnow() -> datetime.datetime:
    """Now, in UTC: the service's own clock."""
    return datetime.datetime.now(datetime.timezone.utc)


__all__ = ["ExchangeStore", "StoreCaps", "StoreError", "NotFound", "Conflict", "Corrupt", "timestamp", "utcnow",
           "TIMESTAMP_FORMAT", "HANDIN_ID"]
