"""`nbgrader collect` from a folder exchange that a student cannot steer (`SafeExchangeCollect`).

Each test fills a course's inbound folder with an honest classmate's hand-in and one or more bad ones, collects
(in this process, as nbgrader's `collect` does, or through nbgrader's command line), and demands: the bad hand-in
is refused alone, with a message that says which and why; the classmate is collected; nothing the student wrote
decides whose the hand-in is, when it came, or which bytes are copied. Swaps "between the check and the copy" are
made by a Python audit hook at the very moment the collector opens the file, so they happen every time.
"""
from __future__ import annotations

import datetime
import json
import logging
import os
import pathlib
import secrets
import shutil
import stat
import subprocess
import sys
import tempfile

import pytest
from traitlets.config import Config

from labsupport.grading.exchange import SafeExchangeCollect
from labsupport.testing import missing_kernel_requirements, require
from tests.grading.course import BIN, Course, notebook_name

A = "a1"
COURSE_ID = "k8s-services"
SECRET = "BEGIN SOLUTION: the instructor's model answer"
EARLY = "2020-01-01 00:00:00.000000 UTC"


def notebook(text: str = "my answer") -> dict:
    """A small notebook with one markdown answer."""
    return {"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [
        {"cell_type": "markdown", "id": "c1", "metadata": {}, "source": text}]}


@pytest.fixture(scope="module")
def gradebook(tmp_path_factory) -> pathlib.Path:
    """An empty gradebook, made once (nbgrader runs alembic for a new one, which takes seconds)."""
    from nbgrader.api import Gradebook
    path = tmp_path_factory.mktemp("gradebook") / "gradebook.db"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PATH", f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}")
        with Gradebook(f"sqlite:///{path}"):
            pass
    return path


@pytest.fixture
def course(gradebook) -> pathlib.Path:
    """A course folder (source notebook, gradebook) and its exchange, inbound open to everyone like nbgrader's (in
    a folder other users can reach, for the test with real accounts)."""
    base = pathlib.Path(tempfile.mkdtemp(prefix="labsupport-collect-", dir="/tmp"))
    os.chmod(base, 0o755)
    root = base / "course"
    (root / "source" / A).mkdir(parents=True)
    shutil.copy(gradebook, root / "gradebook.db")
    (root / "source" / A / "nb.ipynb").write_text(json.dumps(notebook(SECRET)))
    inbound = base / "exchange" / COURSE_ID / "inbound"
    inbound.mkdir(parents=True)
    os.chmod(base / "exchange", 0o755)
    os.chmod(inbound.parent, 0o755)
    os.chmod(inbound, 0o1733)
    yield root
    shutil.rmtree(base, ignore_errors=True)


def inbound(course: pathlib.Path) -> pathlib.Path:
    return course.parent / "exchange" / COURSE_ID / "inbound"


def hand_in(course: pathlib.Path, name: str, nb: dict | None = None, *, stamp: str | None = None) -> pathlib.Path:
    """A hand-in folder `name` in the inbound folder, as nbgrader's submit leaves it."""
    folder = inbound(course) / name
    folder.mkdir()
    (folder / "nb.ipynb").write_text(json.dumps(nb or notebook()))
    (folder / "timestamp.txt").write_text(stamp or datetime.datetime.now(datetime.timezone.utc).strftime(
        "%Y-%m-%d %H:%M:%S.%f UTC"))
    return folder


def collect(course: pathlib.Path, caplog, *, check_owner: bool = False, **options) -> str:
    """Collect assignment A in this process as `nbgrader collect` would; the log it wrote."""
    from nbgrader.coursedir import CourseDirectory
    config = Config()
    config.CourseDirectory.root = str(course)
    config.CourseDirectory.course_id = COURSE_ID
    config.CourseDirectory.assignment_id = A
    config.Exchange.root = str(course.parent / "exchange")
    config.ExchangeCollect.check_owner = check_owner
    for name, value in options.items():
        setattr(config.SafeExchangeCollect, name, value)
    collector = SafeExchangeCollect(coursedir=CourseDirectory(config=config), config=config)
    collector.log = logging.getLogger("collect-test")
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="collect-test"):
        collector.start()
    return caplog.text


def collected(course: pathlib.Path, student: str) -> dict | None:
    """The notebook collected for `student` (None: nothing)."""
    path = course / "submitted" / student / A / "nb.ipynb"
    return json.loads(path.read_text()) if path.exists() else None


def stamp_of(course: pathlib.Path, student: str) -> datetime.datetime:
    text = (course / "submitted" / student / A / "timestamp.txt").read_text().strip()
    return datetime.datetime.strptime(text, "%Y-%m-%d %H:%M:%S.%f UTC").replace(tzinfo=datetime.timezone.utc)


# --- swaps at the moment of the copy ------------------------------------------------------------------------------
_SWAPS: list = []


def _audit(event: str, args: tuple) -> None:
    if event == "open" and _SWAPS:
        path = args[0]
        if isinstance(path, (str, bytes, os.PathLike)):
            for swap in list(_SWAPS):
                if swap(os.fsdecode(path)):
                    _SWAPS.remove(swap)


sys.addaudithook(_audit)


@pytest.fixture
def at_open():
    """Register `swap(path) -> bool`, called as the collector opens each file (True: done, run no more)."""
    yield _SWAPS.append
    _SWAPS.clear()


def swap_for_link(victim: pathlib.Path, target: pathlib.Path, owner: int | None = None):
    """A swap that replaces the file `victim` (a name no other file has) by a symbolic link to `target` at the
    moment it is opened."""
    def swap(path: str) -> bool:
        if os.path.basename(path) != victim.name:
            return False
        victim.unlink()
        victim.symlink_to(target)
        if owner is not None:
            os.lchown(victim, owner, owner)
        return True
    return swap


# --- the tests ----------------------------------------------------------------------------------------------------
def test_names_are_read_leniently_and_a_bad_one_is_refused_alone(course, caplog):
    """nbgrader's collect stopped for everyone at a time it could not parse; ids that are markup, formulas or hold
    a line break became student folders."""
    hand_in(course, f"honest+{A}+{EARLY}")
    hand_in(course, f"clock+{A}+not a time at all")
    hand_in(course, f"bare+{A}+")
    hand_in(course, f"<img src=x onerror=alert(1)>+{A}+{EARLY}")
    hand_in(course, f"=HYPERLINK(1)+{A}+{EARLY}")
    hand_in(course, f"new\nline+{A}+{EARLY}")
    hand_in(course, f"lookalike\u0430+{A}+{EARLY}")
    hand_in(course, f"+{A}+{EARLY}")
    (inbound(course) / "no-plus-signs").mkdir()
    log = collect(course, caplog)
    assert collected(course, "honest") and collected(course, "clock") and collected(course, "bare")
    assert sorted(p.name for p in (course / "submitted").iterdir()) == ["bare", "clock", "honest"]
    for words in ("'<img src=x onerror=alert(1)>' (the name of the hand-in's folder) is refused: it holds markup",
                  "'=HYPERLINK(1)' (the name of the hand-in's folder) is refused: it starts with '='",
                  "'new\\nline' (the name of the hand-in's folder) is refused: it holds a line break",
                  "is refused: it holds 'а' (U+0430, CYRILLIC SMALL LETTER A)"):
        assert words in log, log


def test_sizes_count_apparent_and_allocated(course, caplog):
    """A 200 MB sparse file takes 20 KiB of disk: refused by its apparent size; a dense one by its blocks."""
    sparse = hand_in(course, f"sparse+{A}+{EARLY}")
    with open(sparse / "big.bin", "wb") as handle:
        handle.truncate(200 * 2**20)
    assert os.stat(sparse / "big.bin").st_blocks * 512 < 64 * 1024
    dense = hand_in(course, f"dense+{A}+{EARLY}")
    (dense / "data.bin").write_bytes(os.urandom(2 * 2**20))
    hand_in(course, f"honest+{A}+{EARLY}")
    log = collect(course, caplog, max_size=1 * 2**20)
    assert collected(course, "honest") and not collected(course, "sparse") and not collected(course, "dense")
    assert "big.bin is 209715200 bytes long: more than the" in log
    assert "data.bin is 2097152 bytes long" in log or "data.bin takes" in log


def test_the_time_is_the_servers_not_the_students(course, caplog):
    """The folder's name and timestamp.txt say 2020 and the files' modification times were moved back: the
    collected copy's time is when the kernel saw the files change."""
    before = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(seconds=2)
    folder = hand_in(course, f"late+{A}+{EARLY}", stamp=EARLY)
    old = datetime.datetime(2020, 1, 1, tzinfo=datetime.timezone.utc).timestamp()
    for path in (folder / "nb.ipynb", folder / "timestamp.txt", folder):
        os.utime(path, (old, old))
    collect(course, caplog)
    when = stamp_of(course, "late")
    assert before <= when <= datetime.datetime.now(datetime.timezone.utc), when


def test_the_newest_hand_in_by_the_servers_time_wins(course, caplog):
    """Two hand-ins of one student: the one whose name claims the later time is the older one."""
    older = hand_in(course, f"ann+{A}+2099-01-01 00:00:00.000000 UTC", notebook("first try"))
    past = datetime.datetime(2021, 1, 1, tzinfo=datetime.timezone.utc).timestamp()
    os.utime(older / "nb.ipynb", (past, past))
    hand_in(course, f"ann+{A}+2000-01-01 00:00:00.000000 UTC", notebook("final answer"))
    collect(course, caplog)
    assert collected(course, "ann")["cells"][0]["source"] == "final answer"


def test_a_link_swapped_in_at_the_copy_is_never_followed(course, caplog, at_open):
    """The student replaces the checked notebook by a link to the course's source at the moment the collector
    opens it: nbgrader's copy followed it (a blank got the source's answers); here the open refuses the link."""
    folder = hand_in(course, f"mallory+{A}+{EARLY}")
    (folder / "steal.ipynb").write_text(json.dumps(notebook("blank")))
    hand_in(course, f"honest+{A}+{EARLY}")
    at_open(swap_for_link(folder / "steal.ipynb", course / "source" / A / "nb.ipynb"))
    log = collect(course, caplog)
    assert collected(course, "honest")
    copy = course / "submitted" / "mallory" / A
    assert not copy.exists() or all(SECRET not in p.read_text() for p in copy.iterdir())
    assert "mallory" in log and ("symbolic link" in log or "changed" in log), log


def device(folder: pathlib.Path) -> None:
    """A character device (/dev/null's numbers) in the folder: only root makes one."""
    require([] if os.geteuid() == 0 else ["root"], "kernel")
    os.mknod(folder / "null", stat.S_IFCHR | 0o600, os.makedev(1, 3))


@pytest.mark.parametrize("make, words", [
    (lambda f: os.mkfifo(f / "pipe"), "is a FIFO, not a regular file"),
    (device, "is a character device"),
    (lambda f: (f / "inner").symlink_to("/etc"), "is a symbolic link"),
    (lambda f: os.link(f.parent.parent.parent.parent / "course" / "source" / A / "nb.ipynb", f / "copy.ipynb"),
     "has other names (a hard link)"),
])
def test_special_files_and_second_names_are_refused_without_hanging(course, caplog, make, words):
    folder = hand_in(course, f"mallory+{A}+{EARLY}")
    make(folder)
    hand_in(course, f"honest+{A}+{EARLY}")
    log = collect(course, caplog)
    assert collected(course, "honest") and not collected(course, "mallory")
    assert words in log, log


def test_a_folder_that_changes_while_it_is_collected_is_refused(course, caplog, at_open):
    folder = hand_in(course, f"mallory+{A}+{EARLY}")
    (folder / "answer.ipynb").write_text(json.dumps(notebook()))
    hand_in(course, f"honest+{A}+{EARLY}")

    def add_a_file(path: str) -> bool:
        if os.path.basename(path) != "answer.ipynb":
            return False
        (folder / "late.txt").write_text("added while collected")
        return True
    at_open(add_a_file)
    log = collect(course, caplog)
    assert collected(course, "honest") and not collected(course, "mallory")
    assert "changed while it was read" in log, log


def test_deep_folders_and_deep_json_are_refused_alone(course, caplog):
    from labsupport.grading.handin import MAX_DEPTH
    deep = hand_in(course, f"deep+{A}+{EARLY}")
    inner = deep
    for i in range(MAX_DEPTH + 1):
        inner = inner / f"d{i}"
    inner.mkdir(parents=True)
    nested = hand_in(course, f"nested+{A}+{EARLY}")
    (nested / "nb.ipynb").write_text("[" * 200_000 + "]" * 200_000)
    hand_in(course, f"honest+{A}+{EARLY}")
    log = collect(course, caplog)
    assert collected(course, "honest") and not collected(course, "deep") and not collected(course, "nested")
    assert f"nested deeper than {MAX_DEPTH}" in log and "nested deeper than a notebook is" in log


def test_the_collected_copy_is_clean_and_pages_are_left_out(course, caplog):
    folder = hand_in(course, f"mallory+{A}+{EARLY}", notebook("<img src=x onerror=alert(1)> answer"))
    (folder / "report.html").write_text("<script>alert(1)</script>")
    (folder / "drawing.SVG").write_text("<svg onload='alert(1)'/>")
    (folder / "data.yaml").write_text("kind: Service\n")
    log = collect(course, caplog)
    nb = collected(course, "mallory")
    assert nb["cells"][0]["source"] == "<\u2060img src=x onerror=alert(1)> answer"
    files = sorted(p.name for p in (course / "submitted" / "mallory" / A).iterdir())
    assert files == ["data.yaml", "nb.ipynb", "timestamp.txt"], files
    assert "report.html left out" in log


def test_ids_that_differ_only_in_case_and_the_roster(course, caplog):
    from nbgrader.api import Gradebook
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        gb.add_student("alice")
    hand_in(course, f"alice+{A}+{EARLY}")
    hand_in(course, f"ALICE+{A}+{EARLY}")
    hand_in(course, f"bob+{A}+{EARLY}")
    log = collect(course, caplog)
    assert collected(course, "alice") and collected(course, "bob") and not collected(course, "ALICE")
    assert "'ALICE' differs only in case from 'alice'" in log
    log = collect(course, caplog, roster_only=True, update=True)
    assert "'bob' is not on the course's roster: add the student (nbgrader db student add bob)" in log


def test_an_earlier_copy_is_replaced_only_by_a_newer_hand_in(course, caplog, at_open):
    first = hand_in(course, f"ann+{A}+{EARLY}", notebook("first"))
    collect(course, caplog)
    assert collected(course, "ann")["cells"][0]["source"] == "first"
    # a later hand-in that turns out bad does not remove what was collected before
    bad = hand_in(course, f"ann+{A}+2030-01-01 00:00:00.000000 UTC", notebook("second"))
    (bad / "bad.ipynb").write_text(json.dumps(notebook("bad")))
    at_open(swap_for_link(bad / "bad.ipynb", course / "source" / A / "nb.ipynb"))
    collect(course, caplog, update=True)
    assert collected(course, "ann")["cells"][0]["source"] == "first"
    _SWAPS.clear()
    for path in bad.iterdir():
        path.unlink()
    bad.rmdir()
    later = hand_in(course, f"ann+{A}+{EARLY}x", notebook("third"))
    log = collect(course, caplog)
    assert collected(course, "ann")["cells"][0]["source"] == "first" and "use --update" in log
    collect(course, caplog, update=True)
    assert collected(course, "ann")["cells"][0]["source"] == "third"
    assert first.exists() and later.exists()            # the exchange itself is never changed


# --- with real Unix accounts: the student owns the folder, the instructor collects ---------------------------------
@pytest.fixture
def accounts(tmp_path):
    """Two student accounts (removed afterwards); the test holds the machine's host lock (the classroom tier's)."""
    from labsupport.hub.roster import create_account, delete_account
    require(missing_kernel_requirements("useradd", "runuser"), "classroom")
    tag = secrets.token_hex(3)
    names = [f"labclass-ti{tag}a", f"labclass-ti{tag}b"]
    try:
        for name in names:
            create_account(name, tmp_path / "homes" / name, secrets.token_hex(12))
        yield names
    finally:
        for name in names:
            delete_account(name)


def as_user(user: str, code: str) -> None:
    """Run Python code as a Unix user (the system's Python: every user may run it)."""
    run = subprocess.run(["runuser", "-u", user, "--", "/usr/bin/python3", "-I", "-c", code], capture_output=True,
                         text=True, timeout=60)
    assert run.returncode == 0, run.stderr


@pytest.mark.classroom
def test_with_real_accounts_impersonation_and_swaps_are_refused(course, caplog, accounts, at_open):
    """mallory (a real account) hands in her own work, and a folder named after her classmate; the classmate hands
    in theirs. Collected as root (who may read everything): the classmate's own hand-in is collected, the
    impersonation refused naming mallory; then mallory's own folder is swapped for a link at the copy."""
    import pwd
    mallory, classmate = accounts
    for student, name, text in ((mallory, f"{mallory}+{A}+{EARLY}", "mallory's own"),
                                (mallory, f"{classmate}+{A}+2030-01-01 00:00:00.000000 UTC", "0 for you"),
                                (classmate, f"{classmate}+{A}+{EARLY}", "classmate's honest work")):
        folder = inbound(course) / name
        as_user(student, f"import os, json; os.mkdir({str(folder)!r}); "
                         f"open({str(folder / 'nb.ipynb')!r}, 'w').write(json.dumps({notebook(text)!r}))")
    log = collect(course, caplog, check_owner=True)
    assert collected(course, classmate)["cells"][0]["source"] == "classmate's honest work"
    assert collected(course, mallory)["cells"][0]["source"] == "mallory's own"
    assert (f"the hand-in names student '{classmate}' but belongs to Unix user '{mallory}': refused as "
            "impersonation") in log, log
    uid = pwd.getpwnam(mallory).pw_uid
    second = inbound(course) / f"{mallory}+{A}+later"
    as_user(mallory, f"import os, json; os.mkdir({str(second)!r}); "
                     f"open({str(second / 'nb.ipynb')!r}, 'w').write(json.dumps({notebook('swapped')!r}))")
    os.rename(second / "nb.ipynb", second / "swapped.ipynb")
    at_open(swap_for_link(second / "swapped.ipynb", course / "source" / A / "nb.ipynb", owner=uid))
    log = collect(course, caplog, check_owner=True, update=True)
    assert SECRET not in (course / "submitted" / mallory / A / "nb.ipynb").read_text()
    assert "symbolic link" in log or "changed" in log, log


@pytest.mark.slow
def test_through_nbgrader_the_class_is_collected_and_graded_by_the_servers_time(tmp_path):
    """`nbgrader collect` and a serial `nbgrader autograde`, with the course's zero-points late policy and a due
    date an hour ago: a hand-in under a student id with a line break is refused and the batch completes; a late
    hand-in that claims (by its name and timestamp.txt) to be early gets 0, as an honest late one would."""
    from labsupport.grading.sandbox import problems
    require(problems(), "sandboxed grading")
    one = "01-endpointslices"
    course = Course(tmp_path / "course")
    due = (datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(hours=1)).strftime("%Y-%m-%d %H:%M:%S")
    with open(course.root / "nbgrader_config.py", "a") as config:
        config.write(f'\nc.LateSubmissionPlugin.penalty_method = "zero"\nc.ExchangeCollect.check_owner = False\n')
    course.nbgrader("generate_assignment", one, "--force")
    course.nbgrader("db", "assignment", "add", one, f"--duedate={due} UTC")
    inbox = course.root / "exchange" / "k8s-services" / "inbound"
    inbox.mkdir(parents=True)
    claim = "2000-01-01 00:00:00.000000 UTC"
    for student in ("cheater", "new\nline"):
        folder = inbox / f"{student}+{one}+{claim}"
        folder.mkdir()
        (folder / f"{notebook_name(one)}.ipynb").write_text(json.dumps(course.solved(one)))
        (folder / "timestamp.txt").write_text(claim)
    run = subprocess.run([str(BIN / "nbgrader"), "collect", one], cwd=course.root, env=course.env,
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    assert "'new\\nline' (the name of the hand-in's folder) is refused: it holds a line break" in run.stderr
    assert sorted(p.name for p in (course.root / "submitted").iterdir()) == ["cheater"]
    course.nbgrader("autograde", one)
    from nbgrader.api import Gradebook
    with Gradebook(f"sqlite:///{course.root / 'gradebook.db'}") as gb:
        submission = gb.find_submission(one, "cheater")
        assert submission.total_seconds_late > 0
        assert submission.code_score > 0 and submission.score - submission.late_submission_penalty == 0
