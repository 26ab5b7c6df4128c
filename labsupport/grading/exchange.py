"""`nbgrader collect` from a folder exchange that a student cannot steer.

Where the class hands in through a plain folder (one machine, no exchange service), every student may write into
the course's inbound folder, and nbgrader's own collect believes what it finds there: the student id and the time
are read from the folder's name (`<student>+<assignment>+<time>`) and its `timestamp.txt`, both written by the
student; a folder owned by someone else than the student it names is only warned about; one unparseable name stops
the collect for everyone after it; and the copy follows what it checked, so a file swapped for a link to the
course's source between the check and the copy is copied. `SafeExchangeCollect` collects each hand-in as data:

* **names** are read leniently (`<student>+<assignment>+<anything>`); a student id outside the grammar of
  `labsupport.grading.ids`, or one that differs only in case from another student's, is refused for that hand-in
  alone, with its reason, and the class is collected;
* **the owner** of the folder (its Unix owner, read on its descriptor) must be the student it names (and own every
  file in it): a folder that names a classmate is impersonation, refused with its real owner named, and the
  classmate's own hand-in is collected as it is (nbgrader's `check_owner`, on by default, turns this off for a
  course whose students are not Unix users);
* **the bytes** are read by descriptors (`labsupport.grading.handin`): no link is ever followed, at any moment; no
  FIFO, device, socket or second name of another file; sizes judged by apparent size and by allocated blocks
  against `max_size`; a folder that changes while it is read is refused (the student hands in again);
* **the time** of a hand-in is the server's: the latest change time the kernel stamped on the folder or its files
  (never the folder's name nor `timestamp.txt`, which the student writes); collect writes it into the copy's
  `timestamp.txt`, which autograding's late policy reads;
* **the copy** in `submitted/` is clean (`labsupport.grading.intake.clean_against_source`: the student's markup is
  text, outputs are plain data, metadata is nbgrader's); files that browsers run (`.html`, `.svg`, `.js` …) are
  left out; it replaces an earlier copy only as nbgrader would (`--update`, `--before-duedate`), written beside it
  first and moved into place, so a refused hand-in never removes what was collected before.

With `roster_only`, a student id must also be a student of the gradebook (`nbgrader db student import`).

`nbgrader release_feedback` finds each student's feedback in the exchange by a secret nbgrader writes when the student
submits (`submission_secret.txt`). A submission placed in `submitted/` by hand or by `zip_collect` has none, and
nbgrader's release then stops at it for the whole class; `HandBackReleaseFeedback` names it and leaves it out, and
releases the rest.
"""
from __future__ import annotations

import datetime
import fnmatch
import glob
import json
import os
import pathlib
import pwd
import shutil
import tempfile
from dataclasses import dataclass

from nbgrader.api import Gradebook, MissingEntry
from nbgrader.exchange.default.collect import ExchangeCollect
from nbgrader.exchange.default.release_feedback import ExchangeReleaseFeedback
from nbgrader.utils import parse_utc
from traitlets import Bool, Integer

from labsupport.grading.handin import Folder, SubmissionRefused, read_folder, write_folder
from labsupport.grading.ids import BadStudentId, check_student_id, collisions, shown
from labsupport.grading.intake import clean_against_source, source_notebook

#: Files a browser would run or render as a page: never copied into the course.
ACTIVE_SUFFIXES = (".html", ".htm", ".xhtml", ".shtml", ".svg", ".svgz", ".js", ".mjs", ".xml", ".xsl")
#: The format of `timestamp.txt`, as nbgrader reads it.
TIME_FORMAT = "%Y-%m-%d %H:%M:%S.%f UTC"


@dataclass
class HandIn:
    """One hand-in of the inbound folder: its folder's name, the student it names, and (once read) what it holds."""

    name: str
    student: str
    folder: Folder | None = None
    time: datetime.datetime | None = None
    refused: str = ""


def student_of(name: str, assignment: str) -> str | None:
    """The student id a hand-in's folder name gives (`<student>+<assignment>+<anything>`), None when it names another
    assignment or none."""
    marker = f"+{assignment}+"
    at = name.find(marker)
    return name[:at] if at > 0 else None


def server_time(changed: float) -> datetime.datetime:
    """A change time the kernel stamped, as UTC (never later than now)."""
    now = datetime.datetime.now(datetime.timezone.utc)
    return min(datetime.datetime.fromtimestamp(changed, datetime.timezone.utc), now)


def as_utc(moment: datetime.datetime | None) -> datetime.datetime | None:
    """A time as an aware UTC time (nbgrader keeps naive UTC times)."""
    if moment is None:
        return None
    return moment.replace(tzinfo=datetime.timezone.utc) if moment.tzinfo is None else moment


def existing_time(dest: str) -> datetime.datetime | None:
    """The time in an earlier copy's timestamp.txt (None when there is none, or none that reads as a time)."""
    try:
        with open(os.path.join(dest, "timestamp.txt"), errors="replace") as handle:
            return as_utc(parse_utc(handle.read(200).strip()))
    except (OSError, ValueError, OverflowError):
        return None


def user_name(uid: int) -> str | None:
    """The name of a Unix user, None for a uid without one."""
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return None


class SafeExchangeCollect(ExchangeCollect):
    """`nbgrader collect` that takes the owner, time and bytes of each hand-in from the server (module docstring)."""

    max_size = Integer(32 * 2**20, help="The most bytes one hand-in may hold (apparent size and disk blocks alike)."
                       ).tag(config=True)
    roster_only = Bool(False, help="Collect only students of the gradebook (nbgrader db student import).").tag(
        config=True)

    # --- reading ---------------------------------------------------------------------------------------------
    def init_src(self) -> None:
        """Read every hand-in of the assignment from the inbound folder; refused ones are logged and left there."""
        if self.coursedir.course_id == "":
            self.fail("No course id specified. Re-run with --course flag.")
        self.course_path = os.path.join(self.root, self.coursedir.course_id)
        self.inbound_path = os.path.join(self.course_path, "inbound")
        if not os.path.isdir(self.inbound_path):
            self.fail(f"Course not found: {self.inbound_path}")
        assignment = self.coursedir.assignment_id
        with Gradebook(self.coursedir.db_url, self.coursedir.course_id) as gb:
            try:
                self.duedate = gb.find_assignment(assignment).duedate
            except MissingEntry:
                self.duedate = None
            known = {student.id for student in gb.students}
        try:
            inbound = os.open(self.inbound_path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError as e:
            self.fail(f"Cannot read the inbound folder {self.inbound_path} (it must be a folder, not a link, that "
                      f"you may read: {e.strerror})")
        wanted = self.coursedir.student_id or "*"
        try:
            hand_ins = []
            for name in sorted(os.listdir(inbound)):
                student = student_of(name, assignment)
                if student is not None and fnmatch.fnmatchcase(student, wanted):
                    hand_ins.append(self.read(inbound, name, student))
        finally:
            os.close(inbound)
        self.judge_ids(hand_ins, known)
        self.refusals = [h for h in hand_ins if h.refused]
        for hand_in in self.refusals:
            self.log.error("Not collected: %s: %s", shown(hand_in.name, 120), hand_in.refused)
        self.src_records = self.choose([h for h in hand_ins if not h.refused])

    def read(self, inbound: int, name: str, student: str) -> HandIn:
        """Read one hand-in folder (refused: `refused` says why)."""
        hand_in = HandIn(name, student)
        try:
            check_student_id(student, "the name of the hand-in's folder")
            hand_in.folder = read_folder(inbound, name, name, self.max_size)
        except (BadStudentId, SubmissionRefused) as e:
            hand_in.refused = str(e)
            return hand_in
        hand_in.time = server_time(hand_in.folder.changed)
        if self.check_owner:
            owners = sorted({user_name(uid) or f"uid {uid}" for uid in hand_in.folder.owners})
            if owners != [student]:
                hand_in.refused = (f"the hand-in names student {student!r} but belongs to Unix user "
                                   f"{' and '.join(repr(o) for o in owners)}: refused as impersonation "
                                   f"({student}'s own hand-ins are collected as usual)")
        return hand_in

    def judge_ids(self, hand_ins: list[HandIn], known: set[str]) -> None:
        """Refuse ids that collide with another (differing only in case) or, with `roster_only`, that are not on the
        roster."""
        students = {h.student for h in hand_ins if not h.refused}
        clashes = collisions([*known, *students])
        for hand_in in hand_ins:
            if hand_in.refused:
                continue
            others = [other for other in clashes.get(hand_in.student, []) if other != hand_in.student]
            if others and hand_in.student not in known:
                hand_in.refused = (f"student id {hand_in.student!r} differs only in case from "
                                   f"{', '.join(repr(o) for o in others)}: two students would read as one; refused "
                                   "(rename one of the accounts)")
            elif self.roster_only and hand_in.student not in known:
                hand_in.refused = (f"student id {hand_in.student!r} is not on the course's roster: add the student "
                                   f"(nbgrader db student add {hand_in.student}), then collect again")

    def choose(self, hand_ins: list[HandIn]) -> list[dict]:
        """Each student's hand-in to collect: the latest by the server's time (with --before-duedate, the latest
        before the due date when there is one)."""
        records = []
        for student in sorted({h.student for h in hand_ins}):
            mine = sorted((h for h in hand_ins if h.student == student), key=lambda h: h.time, reverse=True)
            chosen = mine[0]
            if self.duedate is not None and self.before_duedate:
                due = as_utc(self.duedate)
                chosen = next((h for h in mine if h.time <= due), mine[0])
            records.append({"username": student, "filename": chosen.name, "timestamp": chosen.time,
                            "hand_in": chosen})
        return records

    # --- copying ---------------------------------------------------------------------------------------------
    def copy_files(self) -> None:
        """Write each chosen hand-in's clean copy into submitted/, replacing an earlier copy as nbgrader would."""
        assignment = self.coursedir.assignment_id
        if not self.src_records:
            self.log.warning("No submissions of '%s' for course '%s' to collect", assignment,
                             self.coursedir.course_id)
        else:
            self.log.info("Processing %d submissions of '%s' for course '%s'", len(self.src_records), assignment,
                          self.coursedir.course_id)
        for record in self.src_records:
            hand_in: HandIn = record["hand_in"]
            dest = self.coursedir.format_path(self.coursedir.submitted_directory, hand_in.student, assignment)
            try:
                self.place(hand_in, dest)
            except (SubmissionRefused, OSError) as e:
                hand_in.refused = str(e)
                self.refusals.append(hand_in)
                self.log.error("Not collected: %s: %s", shown(hand_in.name, 120), e)
        if self.refusals:
            self.log.error("%d hand-in(s) of '%s' not collected (see above); the others were", len(self.refusals),
                           assignment)

    def place(self, hand_in: HandIn, dest: str) -> None:
        """Write one hand-in's clean copy to `dest` (when nbgrader's rules say so)."""
        if os.path.lexists(dest):
            if os.path.islink(dest) or not os.path.isdir(dest):
                raise SubmissionRefused(f"{dest} is not a folder of the course's: refused (remove it)")
            existing = existing_time(dest)
            newer = existing is None or hand_in.time > existing
            if not (self.update and newer or self.before_duedate and existing != hand_in.time):
                self.log.info("Submission already exists, use --update to update: %s %s", hand_in.student,
                              self.coursedir.assignment_id)
                return
        files = self.clean_files(hand_in)
        parent = os.path.dirname(dest)
        os.makedirs(parent, exist_ok=True)
        if os.path.islink(parent):
            raise SubmissionRefused(f"{parent} is a symbolic link: refused")
        staging = tempfile.mkdtemp(prefix=".collect-", dir=parent)
        try:
            target = os.path.join(staging, "copy")
            write_folder(files, target)
            if os.path.isdir(dest):
                self.log.info("Updating submission: %s %s", hand_in.student, self.coursedir.assignment_id)
                shutil.rmtree(dest)
            else:
                self.log.info("Collecting submission: %s %s", hand_in.student, self.coursedir.assignment_id)
            os.rename(target, dest)
        finally:
            shutil.rmtree(staging, ignore_errors=True)

    def clean_files(self, hand_in: HandIn) -> dict[str, bytes]:
        """The files of a hand-in as the course keeps them: notebooks cleaned, pages and scripts left out, the
        server's time in timestamp.txt."""
        out: dict[str, bytes] = {}
        assert hand_in.folder is not None and hand_in.time is not None
        for path, data in hand_in.folder.files.items():
            if path == "timestamp.txt":
                continue
            if path.lower().endswith(ACTIVE_SUFFIXES):
                self.log.warning("%s: %s left out (a file a browser runs)", hand_in.student, path)
                continue
            if path.endswith(".ipynb"):
                data = self.clean_notebook(hand_in, path, data)
            out[path] = data
        out["timestamp.txt"] = hand_in.time.strftime(TIME_FORMAT).encode()
        return out

    def clean_notebook(self, hand_in: HandIn, path: str, data: bytes) -> bytes:
        """A notebook's clean copy (SubmissionRefused when it is not a notebook at all)."""
        try:
            nb = json.loads(data)
        except RecursionError:
            raise SubmissionRefused(f"{path}: nested deeper than a notebook is: refused") from None
        except ValueError as e:
            raise SubmissionRefused(f"{path}: not a notebook ({e}): refused") from None
        if not isinstance(nb, dict) or nb.get("nbformat") != 4 or not isinstance(nb.get("cells"), list):
            raise SubmissionRefused(f"{path}: not a notebook of nbformat 4: refused")
        source = source_notebook(pathlib.Path(self.coursedir.root), self.coursedir.assignment_id,
                                 path[:-len(".ipynb")], self.coursedir.source_directory)
        notes = clean_against_source(nb, source)
        if notes:
            self.log.warning("%s: %s", hand_in.student, "; ".join(notes[:20]))
        return (json.dumps(nb, indent=1, ensure_ascii=False, sort_keys=True) + "\n").encode()

    def do_copy(self, src: str, dest: str, log=None) -> None:
        """Not used: every copy goes through `place`, which reads what it checked."""
        raise SubmissionRefused("SafeExchangeCollect copies only what it has read itself")


class HandBackReleaseFeedback(ExchangeReleaseFeedback):
    """`nbgrader release_feedback` that releases every feedback it can: a submission that did not come through the
    exchange (no `submission_secret.txt`) is named and left out, to be handed back some other way."""

    def copy_files(self) -> None:
        """Release the feedback of every submission the exchange knows; say which ones it cannot release."""
        by_hand = sorted({pathlib.Path(html).parent.parent.name
                          for html in glob.glob(os.path.join(self.src_path, "*.html"))
                          if not all(pathlib.Path(html).with_name(name).is_file()
                                     for name in ("submission_secret.txt", "timestamp.txt"))})
        for student in by_hand:
            self.log.warning("Feedback for %s not released: the submission did not come through the exchange (it has "
                             "no submission_secret.txt, as one placed in submitted/ by hand or by zip_collect), so the "
                             "student could not fetch it; hand them feedback/%s/%s/ yourself.", student, student,
                             self.coursedir.assignment_id)
        excluded = self.coursedir.student_id_exclude
        self.coursedir.student_id_exclude = ",".join(filter(None, [excluded, *by_hand]))
        try:
            super().copy_files()
        finally:
            self.coursedir.student_id_exclude = excluded


__all__ = ["SafeExchangeCollect", "HandBackReleaseFeedback", "BadStudentId", "check_student_id", "student_of", "HandIn",
           "ACTIVE_SUFFIXES"]
