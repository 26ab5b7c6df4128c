"""nbgrader's exchange over HTTP: the class's exchange service (`labsupport.hub.exchange_service`) instead of a shared
folder, so `nbgrader fetch_assignment / submit / list / fetch_feedback` (and the assignment list in JupyterLab) and
`nbgrader release_assignment / collect / release_feedback` (and the formgrader's buttons) work unchanged.

Every request carries the hub token of whoever runs the command (`JUPYTERHUB_API_TOKEN`, which a server the hub
started has; `ServiceExchange.token` otherwise) to `ServiceExchange.url` (`LABSUPPORT_EXCHANGE_URL`). The service
decides who that is and what they may do; this side only moves bytes and says clearly what went wrong.

* **submit** reads the assignment's folder without following a link (`handin.read_folder`: a link or a device is
  refused; checkpoints, caches and hidden files stay home) and leaves out nbgrader's `timestamp.txt` and
  `submission_secret.txt`: the service stamps the time itself.
* **collect** takes each student's latest hand-in (or the latest before the due date) from the service and writes
  it into `submitted/STUDENT/ASSIGNMENT/` with `timestamp.txt` from the service's receipt time and
  `submission_secret.txt` holding the hand-in's id (which binds the feedback to it); then the folder goes through the
  same check as the folder exchange's collect (`sandbox.check_submission`). One bad hand-in is logged and skipped;
  the class is collected.
* **release_feedback** sends each student's feedback to the hand-in it was generated from (the id in
  `feedback/STUDENT/ASSIGNMENT/submission_secret.txt`); **fetch_feedback** brings a student their own.
"""
from __future__ import annotations

import datetime
import glob
import json
import os
import pathlib
import shutil
import tempfile
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

from nbgrader.exchange import ExchangeError, abc
from nbgrader.utils import parse_utc
from traitlets import Bool, Float, Unicode, default

from labsupport.errors import LabError
from labsupport.grading.exchange_wire import (CAPS, RESERVED, Caps, HandInError, check_student, decode, encode,
                                       notebook_problem, read_folder, sha256, write_folder)
from labsupport.grading.intake import clean_against_source, source_notebook
from labsupport.grading.sandbox import SubmissionRefused, check_submission
from labsupport.i18n import tr

#: Where the exchange service is, when the configuration does not say (`labsupport class up` sets it).
URL_ENV = "LABSUPPORT_EXCHANGE_URL"
#: The hub token a server the hub started has.
TOKEN_ENV = "JUPYTERHUB_API_TOKEN"
#: The release an instructor sends may hold more than a hand-in (pictures, data).
RELEASE_CAPS = Caps(bytes=200 * 2**20, files=1000)


class ServiceRefused(LabError, ExchangeError):
    """The service said no (or could not be reached); the message says why. `status` is its HTTP status, if any."""

    def __init__(self, message: str, status: int | None = None):
        super().__init__(message)
        self.status = status


class ServiceExchange(abc.Exchange):
    """What every command shares: the service's address, the token, one JSON request, the local folders."""

    url = Unicode(help=f"The exchange service's URL, e.g. http://127.0.0.1:8000/services/exchange (default: "
                       f"${URL_ENV}).").tag(config=True)
    token = Unicode(help=f"The hub token to send (default: ${TOKEN_ENV}, which a server the hub started has)."
                    ).tag(config=True)
    timeout = Float(300.0, help="Seconds one request to the service may take.").tag(config=True)
    path_includes_course = Bool(False, help="Whether a fetched assignment lies in COURSE/ASSIGNMENT rather than "
                                            "ASSIGNMENT (as nbgrader's folder exchange has it).").tag(config=True)

    @default("url")
    def _url_default(self) -> str:
        return os.environ.get(URL_ENV, "")

    @default("token")
    def _token_default(self) -> str:
        return os.environ.get(TOKEN_ENV, "")

    # --- talking to the service -------------------------------------------------------------------------------
    def api(self, method: str, path: str, body: Any = None, query: dict[str, str] | None = None) -> Any:
        """One request to the service (`path` after `api/courses/`); its JSON answer, or `fail` with its reason."""
        try:
            return self.request(method, path, body, query)
        except ServiceRefused as e:
            self.fail(str(e))

    def request(self, method: str, path: str, body: Any = None, query: dict[str, str] | None = None) -> Any:
        """One request to the service; its JSON answer, or ServiceRefused saying why not."""
        if not self.url:
            raise ServiceRefused(tr("no exchange service is configured: set ServiceExchange.url or {env} (a class "
                                    "made by `labsupport class up` sets it)", env=URL_ENV))
        if not self.token:
            raise ServiceRefused(tr("no hub token for the exchange: run this in a terminal of your server on the hub "
                                    "(it has ${env}), or make a token on the hub's Token page and export {env}=…",
                                    env=TOKEN_ENV))
        url = self.url.rstrip("/") + "/api/courses/" + path
        if query:
            url += "?" + urllib.parse.urlencode(query)
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(url, data=data, method=method, headers={
            "Authorization": f"token {self.token}", "Content-Type": "application/json"})
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        try:
            with opener.open(request, timeout=self.timeout) as answer:
                return json.loads(answer.read() or b"null")
        except urllib.error.HTTPError as e:
            text = e.read().decode(errors="replace")
            try:
                reason = json.loads(text)["error"]
            except (ValueError, KeyError, TypeError):
                reason = text.strip()[:300] or e.reason
            raise ServiceRefused(tr("the exchange refused ({status}): {reason}", status=e.code, reason=reason),
                                 e.code) from None
        except (urllib.error.URLError, OSError) as e:
            raise ServiceRefused(tr("cannot reach the class's exchange at {url} ({error}): is the hub running?",
                                    url=self.url, error=getattr(e, "reason", e))) from None

    def course_id(self) -> str:
        """The course of this command; `fail` when none is set."""
        if not self.coursedir.course_id:
            self.fail(tr("no course id: pass --course COURSE or set CourseDirectory.course_id"))
        return self.coursedir.course_id

    @staticmethod
    def quote(value: str) -> str:
        return urllib.parse.quote(value, safe="")

    def course_url(self, *parts: str) -> str:
        """`COURSE/assignments/…` with every part quoted."""
        return "/".join([self.quote(self.course_id()), *[self.quote(p) for p in parts]])

    def local_assignment(self, assignment: str) -> pathlib.Path:
        """Where a student's copy of `assignment` lies."""
        parts = [self.course_id(), assignment] if self.path_includes_course else [assignment]
        return pathlib.Path(self.assignment_dir, *parts).absolute()

    def start(self) -> Any:
        self.set_timestamp()
        return self.run()

    def run(self) -> Any:
        """What the command does."""
        raise NotImplementedError


class ServiceFetchAssignment(ServiceExchange, abc.ExchangeFetchAssignment):
    """`nbgrader fetch_assignment`: the released assignment into the student's folder."""

    def run(self) -> None:
        assignment = self.coursedir.assignment_id
        answer = self.api("GET", self.course_url("assignments", assignment))
        files = self.decoded(answer, RELEASE_CAPS)
        dest = self.local_assignment(assignment)
        if dest.exists() and not self.replace_missing_files:
            self.fail(tr("you already have a copy of {assignment} in {dest}: rename or delete it to fetch a fresh "
                         "one", assignment=assignment, dest=dest))
        dest.parent.mkdir(parents=True, exist_ok=True)
        if not dest.exists():
            write_folder(dest, files, mode=0o755, file_mode=0o644)
        else:
            missing = {p: d for p, d in files.items() if not (dest / p).exists()}
            for path, data in missing.items():
                self.log.warning("Replacing missing file '%s'", path)
                (dest / path).parent.mkdir(parents=True, exist_ok=True)
                fd = os.open(dest / path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
                with os.fdopen(fd, "wb") as f:
                    f.write(data)
        self.log.info("Fetched as: %s %s", self.course_id(), assignment)

    def decoded(self, answer: Any, caps: Caps) -> dict[str, bytes]:
        try:
            return decode({"files": answer["files"]}, caps)
        except (HandInError, KeyError, TypeError) as e:
            self.fail(tr("the exchange sent something that is not an assignment: {error}", error=e))


class ServiceSubmit(ServiceExchange, abc.ExchangeSubmit):
    """`nbgrader submit`: the assignment's folder to the service, which files it under the student's login and
    stamps its time."""

    def run(self) -> dict[str, Any]:
        assignment = self.coursedir.assignment_id
        src = self.local_assignment(assignment)
        if not src.is_dir():
            self.fail(tr("there is no {src} to submit: fetch {assignment} first (or run this where its folder is)",
                         src=src, assignment=assignment))
        for name in sorted(RESERVED):
            if (src / name).exists() or (src / name).is_symlink():
                self.log.warning(tr("{name} is not sent: the exchange stamps the hand-in's time itself",
                                    name=name))
        try:
            files = read_folder(src, CAPS, self.coursedir.ignore, reserved=RESERVED)
        except HandInError as e:
            self.fail(tr("not submitted: {error}", error=e))
        self.check_notebooks(assignment, files)
        body: dict[str, Any] = encode(files)
        if self.coursedir.student_id not in ("", "*"):
            body["student"] = self.coursedir.student_id
        receipt = self.api("POST", self.course_url("assignments", assignment, "submissions"), body)
        self.log.info("Submitted as: %s %s %s", self.course_id(), assignment, receipt["received"])
        return receipt

    def check_notebooks(self, assignment: str, files: dict[str, bytes]) -> None:
        """Warn (or, `strict`, fail) when the released notebooks and the submitted ones differ."""
        released = {entry["assignment"]: entry for entry in self.api("GET", self.course_url("assignments"))
                    ["assignments"]}
        if assignment not in released:
            self.fail(tr("{assignment} is not released in {course}", assignment=assignment, course=self.course_id()))
        expected = {e["path"] for e in released[assignment]["files"] if e["path"].endswith(".ipynb")}
        sent = {p for p in files if p.endswith(".ipynb")}
        missing, extra = sorted(expected - sent), sorted(sent - expected)
        if missing and self.strict:
            self.fail(tr("{assignment} not submitted: notebooks missing: {missing}", assignment=assignment,
                         missing=", ".join(missing)))
        if missing or extra:
            self.log.warning(tr("notebooks missing: {missing}; extra notebooks: {extra}",
                                missing=", ".join(missing) or "-", extra=", ".join(extra) or "-"))


class ServiceList(ServiceExchange, abc.ExchangeList):
    """`nbgrader list` (and the assignment list in JupyterLab): released assignments; with --cached a student's own
    hand-ins and their feedback, with --inbound (instructor) everyone's; --remove takes a release back."""

    def init_src(self) -> None:
        pass

    def init_dest(self) -> None:
        pass

    def copy_files(self) -> None:
        pass

    def start(self) -> Any:
        if self.inbound and self.cached:
            self.fail("Options --inbound and --cached are incompatible.")
        self.set_timestamp()
        if self.remove:
            return self.remove_files()
        return self.list_files()

    def released(self) -> list[dict[str, Any]]:
        assignments = self.api("GET", self.course_url("assignments"))["assignments"]
        wanted = self.coursedir.assignment_id
        found = []
        for entry in assignments:
            if wanted and wanted != "*" and entry["assignment"] != wanted:
                continue
            local = self.local_assignment(entry["assignment"])
            status = "fetched" if local.exists() else "released"
            base = str(local) if status == "fetched" else f"{self.url.rstrip('/')}/{entry['assignment']}"
            notebooks = sorted(str(p) for p in local.glob("*.ipynb")) if status == "fetched" else \
                [f"{base}/{e['path']}" for e in entry["files"] if e["path"].endswith(".ipynb") and "/" not in e["path"]]
            found.append({"course_id": self.course_id(), "assignment_id": entry["assignment"], "status": status,
                          "path": base, "released": entry["released"],
                          "notebooks": [{"notebook_id": pathlib.Path(n).stem, "path": n} for n in notebooks]})
        return found

    def submitted(self) -> list[dict[str, Any]]:
        query = {}
        if self.inbound and self.coursedir.student_id not in ("", "*"):
            query["student"] = self.coursedir.student_id
        wanted = self.coursedir.assignment_id
        assignments = [wanted] if wanted and wanted != "*" else \
            [e["assignment"] for e in self.api("GET", self.course_url("assignments"))["assignments"]]
        receipts = []
        for assignment in assignments:
            receipts += self.api("GET", self.course_url("assignments", assignment, "submissions"),
                                 query=query)["submissions"]
        groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
        for receipt in receipts:
            info = self.submission_info(receipt)
            groups.setdefault((receipt["student"], receipt["assignment"]), []).append(info)
        return [{"course_id": self.course_id(), "student_id": student, "assignment_id": assignment,
                 "status": "submitted", "submissions": sorted(infos, key=lambda i: i["timestamp"])}
                for (student, assignment), infos in sorted(groups.items())]

    def submission_info(self, receipt: dict[str, Any]) -> dict[str, Any]:
        """One hand-in as nbgrader's list shows it, with whether its feedback is here and on the service."""
        local = self.local_assignment(receipt["assignment"])
        feedback_dir = local / "feedback" / receipt["received"]
        exchange = {e["path"]: e["sha256"] for e in receipt.get("feedback") or []}
        notebooks = []
        for entry in receipt["files"]:
            if not entry["path"].endswith(".ipynb") or "/" in entry["path"]:
                continue
            notebook_id = entry["path"][:-len(".ipynb")]
            html = feedback_dir / f"{notebook_id}.html"
            has_local = html.is_file()
            has_exchange = f"{notebook_id}.html" in exchange
            updated = has_local and has_exchange and sha256(html.read_bytes()) != exchange[f"{notebook_id}.html"]
            notebooks.append({"notebook_id": notebook_id, "path": str(local / entry["path"]),
                              "has_local_feedback": has_local, "has_exchange_feedback": has_exchange,
                              "local_feedback_path": str(html) if has_local else None,
                              "feedback_updated": updated})
        info = {"course_id": self.course_id(), "student_id": receipt["student"],
                "assignment_id": receipt["assignment"], "timestamp": receipt["received"], "status": "submitted",
                "path": str(local), "id": receipt["id"], "notebooks": notebooks,
                "has_local_feedback": bool(notebooks) and all(n["has_local_feedback"] for n in notebooks),
                "has_exchange_feedback": bool(notebooks) and all(n["has_exchange_feedback"] for n in notebooks),
                "feedback_updated": any(n["feedback_updated"] for n in notebooks)}
        info["local_feedback_path"] = str(feedback_dir) if info["has_local_feedback"] else None
        return info

    def list_files(self) -> list[dict[str, Any]]:
        if self.inbound or self.cached:
            found = self.submitted()
            self.log.info("Submitted assignments:")
            for group in found:
                for info in group["submissions"]:
                    self.log.info("%s %s %s %s", info["course_id"], info["student_id"], info["assignment_id"],
                                  info["timestamp"])
            return found
        found = self.released()
        self.log.info("Released assignments:")
        for info in found:
            self.log.info("%s %s%s", info["course_id"], info["assignment_id"],
                          " (already downloaded)" if info["status"] == "fetched" else "")
        return found

    def remove_files(self) -> list[dict[str, Any]]:
        if self.inbound or self.cached:
            self.fail("the exchange keeps every hand-in: nothing can be removed from it")
        found = self.released()
        for info in found:
            self.api("DELETE", self.course_url("assignments", info["assignment_id"]))
            self.log.info("Removed the release of %s %s", info["course_id"], info["assignment_id"])
            info["status"] = "removed"
        return found


class ServiceFetchFeedback(ServiceExchange, abc.ExchangeFetchFeedback):
    """`nbgrader fetch_feedback`: the student's own feedback, into ASSIGNMENT/feedback/TIME/NOTEBOOK.html."""

    def run(self) -> None:
        assignment = self.coursedir.assignment_id
        receipts = self.api("GET", self.course_url("assignments", assignment, "submissions"))["submissions"]
        fetched = 0
        for receipt in receipts:
            if not receipt.get("feedback"):
                continue
            answer = self.api("GET", self.course_url("assignments", assignment, "submissions", receipt["student"],
                                                     receipt["id"], "feedback"))
            files = decode(answer, Caps(bytes=100 * 2**20, files=100))
            folder = self.local_assignment(assignment) / "feedback" / receipt["received"]
            folder.mkdir(parents=True, exist_ok=True)
            for name, data in files.items():
                temporary = folder / f".{name}.{os.getpid()}.tmp"
                fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o644)
                with os.fdopen(fd, "wb") as f:
                    f.write(data)
                os.replace(temporary, folder / name)
                fetched += 1
                self.log.info("Fetched feedback: %s", folder / name)
        if not fetched:
            self.log.warning(tr("no feedback on {assignment} yet", assignment=assignment))


class ServiceReleaseAssignment(ServiceExchange, abc.ExchangeReleaseAssignment):
    """`nbgrader release_assignment`: the generated assignment (release/ASSIGNMENT) to the service."""

    def run(self) -> None:
        assignment = self.coursedir.assignment_id
        src = pathlib.Path(self.coursedir.format_path(self.coursedir.release_directory, ".", assignment))
        if not src.is_dir():
            source = pathlib.Path(self.coursedir.format_path(self.coursedir.source_directory, ".", assignment))
            if source.is_dir():
                self.fail(f"{assignment} is in {source} but not in {src}: run `nbgrader generate_assignment "
                          f"{assignment}` first")
            self.fail(f"no assignment {assignment} in {src}")
        try:
            files = read_folder(src, RELEASE_CAPS, self.coursedir.ignore)
        except HandInError as e:
            self.fail(f"not released: {e}")
        query = {"force": "1"} if self.force else None
        self.api("PUT", self.course_url("assignments", assignment), encode(files), query=query)
        self.log.info("Released as: %s %s", self.course_id(), assignment)


class ServiceCollect(ServiceExchange, abc.ExchangeCollect):
    """`nbgrader collect`: each student's latest hand-in (or the latest before the due date) into
    submitted/STUDENT/ASSIGNMENT, its time from the service; one bad hand-in is refused alone."""

    def run(self) -> dict[str, list[str]]:
        assignment = self.coursedir.assignment_id
        query = {}
        if self.coursedir.student_id not in ("", "*"):
            query["student"] = self.coursedir.student_id
        receipts = self.api("GET", self.course_url("assignments", assignment, "submissions"),
                            query=query)["submissions"]
        by_student: dict[str, list[dict[str, Any]]] = {}
        for receipt in receipts:
            by_student.setdefault(receipt["student"], []).append(receipt)
        if not by_student:
            self.log.warning("No submissions of '%s' for course '%s' to collect", assignment, self.course_id())
        duedate = self.duedate(assignment)
        done: dict[str, list[str]] = {"collected": [], "unchanged": [], "refused": []}
        for student, handins in sorted(by_student.items()):
            chosen = self.choose(handins, duedate)
            try:
                done[self.collect_one(student, assignment, chosen)].append(student)
            except (HandInError, SubmissionRefused, ServiceRefused, OSError, ValueError) as e:
                self.log.error("Not collected: %s's hand-in %s of %s: %s", student, chosen["id"], assignment, e)
                done["refused"].append(student)
        self.log.info("Collected %d, unchanged %d, refused %d of %d students", len(done["collected"]),
                      len(done["unchanged"]), len(done["refused"]), len(by_student))
        return done

    def duedate(self, assignment: str) -> datetime.datetime | None:
        """The assignment's due date in the gradebook (naive UTC, as nbgrader keeps it), if any (collect does not
        make a gradebook where there is none)."""
        from nbgrader.api import Gradebook, MissingEntry
        url = self.coursedir.db_url
        if url.startswith("sqlite:///") and not os.path.exists(url[len("sqlite:///"):]):
            return None
        with Gradebook(self.coursedir.db_url, self.coursedir.course_id) as gb:
            try:
                return gb.find_assignment(assignment).duedate
            except MissingEntry:
                return None

    def choose(self, handins: list[dict[str, Any]], duedate: datetime.datetime | None) -> dict[str, Any]:
        """The latest hand-in, or with `before_duedate` the latest one before the due date (else the latest)."""
        ordered = sorted(handins, key=lambda r: parse_utc(r["received"]), reverse=True)
        if self.before_duedate and duedate is not None:
            early = [r for r in ordered if parse_utc(r["received"]) <= duedate]
            if early:
                return early[0]
        return ordered[0]

    def cleaned(self, student: str, assignment: str, path: str, data: bytes) -> bytes:
        """A hand-in's notebook made data, as the folder exchange's collect makes it (`intake.clean_against_source`:
        the student's markup, outputs and metadata cleaned, the instructor's own text kept)."""
        nb = json.loads(data)
        source = source_notebook(pathlib.Path(self.coursedir.root), assignment, path[:-len(".ipynb")],
                                 self.coursedir.source_directory)
        notes = clean_against_source(nb, source)
        if notes:
            self.log.warning("%s: %s", student, "; ".join(notes[:20]))
        return (json.dumps(nb, indent=1, ensure_ascii=False, sort_keys=True) + "\n").encode()

    def collect_one(self, student: str, assignment: str, receipt: dict[str, Any]) -> str:
        """Write one hand-in into submitted/; `collected` or `unchanged`."""
        check_student(student)
        dest = pathlib.Path(self.coursedir.format_path(self.coursedir.submitted_directory, student, assignment))
        received = parse_utc(receipt["received"])
        if dest.is_dir() and not dest.is_symlink():
            existing = self.coursedir.get_existing_timestamp(str(dest))
            newer = existing is None or received > existing
            if not ((self.update and newer) or (self.before_duedate and existing != received)):
                self.log.info("Submission already exists, use --update to update: %s %s" if not self.update else
                              "No newer submission to collect: %s %s", student, assignment)
                return "unchanged"
        answer = self.request("GET", self.course_url("assignments", assignment, "submissions", student,
                                                     receipt["id"]))
        if answer.get("student") != student or answer.get("id") != receipt["id"]:
            raise HandInError(f"the exchange answered with another hand-in ({answer.get('student')}/"
                              f"{answer.get('id')}) than the one asked for")
        files = decode({"files": answer["files"]}, CAPS)
        for path, data in files.items():
            if path.endswith(".ipynb"):
                problem = notebook_problem(data)
                if problem:
                    raise HandInError(f"{path} is not a notebook: {problem}")
                files[path] = self.cleaned(student, assignment, path, data)
        files["timestamp.txt"] = receipt["received"].encode()
        files["submission_secret.txt"] = receipt["id"].encode()
        dest.parent.mkdir(parents=True, exist_ok=True)
        if dest.parent.is_symlink():
            raise HandInError(f"{dest.parent} is a symbolic link: refused")
        staging = pathlib.Path(tempfile.mkdtemp(prefix=f".{assignment}.", dir=dest.parent))
        try:
            write_folder(staging / "files", files, mode=0o755, file_mode=0o644)
            check_submission(staging / "files")
            if dest.is_symlink() or dest.is_file():
                dest.unlink()
            elif dest.exists():
                shutil.rmtree(dest)
            os.rename(staging / "files", dest)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        self.log.info("Collecting submission: %s %s (received %s)", student, assignment, receipt["received"])
        return "collected"


class ServiceReleaseFeedback(ServiceExchange, abc.ExchangeReleaseFeedback):
    """`nbgrader release_feedback`: each student's feedback HTML to the hand-in it was generated from."""

    def run(self) -> None:
        assignment = self.coursedir.assignment_id
        exclude = set(filter(None, self.coursedir.student_id_exclude.split(",")))
        student_glob = self.coursedir.student_id if self.coursedir.student_id not in ("", None) else "*"
        pattern = self.coursedir.format_path(self.coursedir.feedback_directory, student_glob, assignment)
        failed = []
        for folder in sorted(glob.glob(pattern)):
            folder = pathlib.Path(folder)
            student = folder.parent.name
            if student in exclude or folder.is_symlink() or not folder.is_dir():
                continue
            try:
                check_student(student)
                handin = (folder / "submission_secret.txt").read_text().strip()
                files = {p.name: p.read_bytes() for p in sorted(folder.glob("*.html"))
                         if p.is_file() and not p.is_symlink()}
                if not files:
                    continue
                self.request("PUT", self.course_url("assignments", assignment, "submissions", student, handin,
                                                    "feedback"), encode(files))
            except (HandInError, ServiceRefused, OSError) as e:
                self.log.error("Feedback of %s not released: %s", student, e)
                failed.append(student)
                continue
            self.log.info("Released feedback for %s on %s/%s (%s)", student, self.course_id(), assignment,
                          ", ".join(files))
        if failed:
            self.log.error("feedback not released for: %s", ", ".join(failed))


#: nbgrader's exchange factory traits and the class each gets.
CLASSES = {"exchange": ServiceExchange, "fetch_assignment": ServiceFetchAssignment, "submit": ServiceSubmit,
           "list": ServiceList, "fetch_feedback": ServiceFetchFeedback, "release_assignment": ServiceReleaseAssignment,
           "collect": ServiceCollect, "release_feedback": ServiceReleaseFeedback}


def configure_service_exchange(c: Any, url: str | None = None) -> None:
    """Point nbgrader's config `c` at the exchange service (at `url`, else LABSUPPORT_EXCHANGE_URL when used)."""
    for trait, cls in CLASSES.items():
        setattr(c.ExchangeFactory, trait, f"{cls.__module__}.{cls.__qualname__}")
    if url:
        c.ServiceExchange.url = url



__all__ = ["ServiceExchange", "ServiceRefused", "ServiceFetchAssignment", "ServiceSubmit", "ServiceList",
           "ServiceFetchFeedback", "ServiceReleaseAssignment", "ServiceCollect", "ServiceReleaseFeedback",
           "configure_service_exchange", "CLASSES", "URL_ENV", "TOKEN_ENV", "RELEASE_CAPS"]
