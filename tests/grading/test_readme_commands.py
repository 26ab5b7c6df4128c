"""Every command the grading READMEs (grading/README.md and grading/ru/README.md) give in their code blocks runs as
written, in order, on a copy of the course: an instructor who types them meets no command that does not exist.

The walk needs what the README leaves to the class: a `students.csv` to import, one student (alice) who fetches and
submits through the exchange, one (bob) whose submission is placed in `submitted/` by hand. A server command (the
Formgrader's JupyterLab) runs until its Formgrader lists the graded submissions, then stops. Two commands run in a
form that cannot change the project: `build_source.py` in a copy of `grading/`, and the grading test suite, which
this test is part of, is only found where the README says it is. A command both READMEs give runs once. Each
`nbgrader …` runs nbgrader's own entry point with its argv in a fork of a process that imported nbgrader once (as
`labsupport grade` runs it), so the walk does not pay nbgrader's start-up twenty times.
"""
from __future__ import annotations

import json
import os
import pathlib
import secrets
import shlex
import shutil
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

from labsupport.classroom.runner import NbgraderRun, warm_up
from tests.grading.course import BIN, GRADING, ROOT, notebook_name, read, solution_region, source_text
from tests.processes import stop_group

pytestmark = pytest.mark.slow

READMES = [GRADING / "README.md", GRADING / "ru" / "README.md"]
#: What nbgrader prints, with exit code 0, for a subcommand it does not have (or no longer has).
NOT_A_COMMAND = ("No command given", "is no longer a standalone command")
SERVERS = {("jupyter", "lab"), ("jupyter", "server")}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def readme_commands(path: pathlib.Path) -> list[tuple[int, list[str]]]:
    """(line number, argv) of every command in the README's shell code blocks, comments dropped."""
    commands, fence = [], None
    lines = path.read_text().splitlines()
    for number, line in enumerate(lines, 1):
        stripped = line.strip()
        if stripped.startswith("```"):
            fence = None if fence is not None else stripped[3:].strip()
            continue
        if fence in ("bash", "sh", "shell") and stripped and not stripped.startswith("#"):
            commands.append((number, shlex.split(stripped, comments=True)))
    return commands


def test_every_readme_names_its_commands_in_shell_blocks():
    for path in READMES:
        names = {argv[0] for _, argv in readme_commands(path)}
        assert {"nbgrader", "cd"} <= names, f"{path}: no commands found in its ```bash blocks"


class Walk:
    """The instructor's folders and environment, and how each command of a README runs there."""

    def __init__(self, tmp: pathlib.Path):
        self.tmp = tmp
        self.project = tmp / "project"          # what `cd grading` and `python grading/...` start from
        shutil.copytree(GRADING, self.project / "grading",
                        ignore=shutil.ignore_patterns("release", "submitted", "autograded", "feedback", "exchange",
                                                      "gradebook.db", "reports", ".grading", "__pycache__"))
        self.exchange = tmp / "exchange"
        self.exchange.mkdir()
        os.chmod(self.exchange, 0o777)
        self.cwd = self.project
        self.env = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}", PYTHONPATH=str(ROOT),
                        LABSUPPORT_EXCHANGE=str(self.exchange), JUPYTER_RUNTIME_DIR=str(tmp / "runtime"),
                        JUPYTER_DATA_DIR=str(tmp / "data"), JUPYTER_CONFIG_DIR=str(tmp / "config"))
        # Every student of this walk is this test's own Unix user, where the README's class has one account per
        # student: collect is told not to hold the hand-ins' owner against the student they name (the walk's only
        # setting of its own; tests/grading/test_collect.py proves the check itself).
        (tmp / "config").mkdir()
        (tmp / "config" / "nbgrader_config.py").write_text("c.ExchangeCollect.check_owner = False\n")
        self.done: dict[tuple[str, ...], str] = {}
        self.prepared: set[str] = set()

    def run(self, argv: list[str], where: str, cwd: pathlib.Path | None = None, timeout: float = 900,
            env: dict | None = None) -> str:
        """Run one command; fail with where it comes from, its exit code and output when it fails."""
        cwd, env = cwd or self.cwd, env or self.env
        if argv[0] == "nbgrader":
            log = self.tmp / "nbgrader.log"
            run = NbgraderRun(argv[1:], cwd, env, log)
            if not run.wait(timeout):
                run.stop()
            code, out = run.returncode, log.read_text()
        else:
            program = {"labsupport": str(BIN / "labsupport"), "jupyter": str(BIN / "jupyter"),
                       "python": sys.executable}.get(argv[0], argv[0])
            proc = subprocess.run([program, *argv[1:]], cwd=cwd, env=env, capture_output=True, text=True,
                                  timeout=timeout)
            code, out = proc.returncode, proc.stdout + proc.stderr
        assert code == 0 and not any(n in out for n in NOT_A_COMMAND), \
            f"{where}: `{shlex.join(argv)}` exited {code}:\n{out[-3000:]}"
        return out

    # --- what the README leaves to the class, done just before the command that needs it -------------------------
    def before(self, argv: list[str]) -> None:
        course = self.cwd
        if argv[:4] == ["nbgrader", "db", "student", "import"] and "csv" not in self.prepared:
            (course / argv[4]).write_text("id,first_name,last_name,email\nbob,Bob,Builder,bob@example.org\n")
            self.prepared.add("csv")
        if argv[:2] == ["nbgrader", "collect"] and "submissions" not in self.prepared:
            self.submit_through_the_exchange(course, argv[2], "alice")
            self.place_by_hand(course, argv[2], "bob")
            self.prepared.add("submissions")

    def student_env(self, student: str) -> dict:
        home = self.tmp / "students" / student
        home.mkdir(parents=True, exist_ok=True)
        return dict(self.env, HOME=str(home), JUPYTER_DATA_DIR=str(home / "data"), LABSUPPORT_EXCHANGE="")

    def as_student(self, student: str, *args: str) -> str:
        """A student's nbgrader command as the README names it, in the student's own home."""
        home = self.tmp / "students" / student
        return self.run(["nbgrader", *args, "--course", "k8s-services", f"--Exchange.root={self.exchange}",
                         f"--student={student}"], f"{student}'s nbgrader {args[0]}", cwd=home,
                        env=self.student_env(student))

    def submit_through_the_exchange(self, course: pathlib.Path, assignment: str, student: str) -> None:
        """The student fetches, fills in the reference solution and submits (the README's student commands)."""
        self.student_env(student)
        self.as_student(student, "fetch_assignment", assignment)
        path = self.tmp / "students" / student / assignment / f"{notebook_name(assignment)}.ipynb"
        nb = read(path)
        source = read(course / "source" / assignment / path.name)
        by_id = {c["metadata"].get("nbgrader", {}).get("grade_id"): c for c in source["cells"]}
        for cell in nb["cells"]:
            meta = cell.get("metadata", {}).get("nbgrader", {})
            if meta.get("solution"):
                cell["source"] = solution_region(source_text(by_id[meta["grade_id"]]))
        path.write_text(json.dumps(nb))
        self.as_student(student, "submit", assignment)

    def place_by_hand(self, course: pathlib.Path, assignment: str, student: str) -> None:
        """A submission that came by e-mail: the blank release, copied into submitted/ by hand."""
        folder = course / "submitted" / student / assignment
        folder.mkdir(parents=True)
        name = f"{notebook_name(assignment)}.ipynb"
        shutil.copy(course / "release" / assignment / name, folder / name)

    # --- the commands ---------------------------------------------------------------------------------------------
    def command(self, argv: list[str], where: str) -> None:
        if argv[0] == "source":         # the README's environment: this test's PATH has the project's first
            return
        if argv[0] == "cd":
            self.cwd = (self.project / argv[1]).resolve()
            assert (self.cwd / "nbgrader_config.py").is_file(), f"{where}: `cd {argv[1]}` is not a course folder"
            return
        key = tuple(argv)
        if key in self.done:
            return
        self.before(argv)
        if tuple(argv[:2]) in SERVERS:
            self.formgrader(argv, where)
        elif argv[:3] == ["python", "-m", "pytest"]:     # the suite this test is part of: CI runs it
            paths = [a for a in argv[3:] if not a.startswith("-")]
            assert paths and all(list((ROOT / a).glob("test_*.py")) for a in paths), f"{where}: no tests at {paths}"
        elif argv[:2] == ["python", "grading/build_source.py"]:
            self.done[key] = self.run(argv, where, cwd=self.project)
        else:
            self.done[key] = self.run(argv, where)
        self.done.setdefault(key, "")

    def formgrader(self, argv: list[str], where: str) -> None:
        """Start the server as the README does; its Formgrader must list the course's graded submissions."""
        port, token = free_port(), secrets.token_hex(8)
        extra = [f"--port={port}", f"--IdentityProvider.token={token}"] + (["--allow-root"] if os.geteuid() == 0
                                                                          else [])
        log = open(self.tmp / "formgrader.log", "w")
        server = subprocess.Popen([str(BIN / "jupyter"), *argv[1:], *extra], cwd=self.cwd, env=self.env,
                                  stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        api = f"http://127.0.0.1:{port}/formgrader/api/submitted_notebooks/01-endpointslices/endpointslices"
        try:
            deadline, listed = time.time() + 120, None
            while listed is None:
                try:
                    with urllib.request.urlopen(f"{api}?token={token}", timeout=5) as answer:
                        listed = json.loads(answer.read())
                except OSError:
                    assert server.poll() is None and time.time() < deadline, \
                        f"{where}: `{shlex.join(argv)}` serves no Formgrader:\n" + \
                        (self.tmp / "formgrader.log").read_text()[-3000:]
                    time.sleep(0.5)
            by_student = {n["student"]: n for n in listed}
            assert set(by_student) == {"alice", "bob"}, listed
            assert by_student["alice"]["failed_tests"] is False and by_student["bob"]["failed_tests"] is True
        finally:
            stop_group(server)
            log.close()


@pytest.fixture(scope="module", autouse=True)
def nbgrader_imported():
    """The forkserver that imports nbgrader once, started before the first command needs it."""
    warm_up()


def test_a_subcommand_nbgrader_does_not_have_fails_the_walk(tmp_path):
    """nbgrader answers `nbgrader formgrader` with its list of subcommands and exit code 0: the walk still fails."""
    with pytest.raises(AssertionError, match="No command given"):
        Walk(tmp_path).run(["nbgrader", "formgrader"], "here")


@pytest.mark.timeout(1800)
def test_the_readmes_commands_run_as_written(tmp_path):
    walk = Walk(tmp_path)
    for readme in READMES:
        walk.cwd = walk.project
        for number, argv in readme_commands(readme):
            walk.command(argv, f"{readme.relative_to(ROOT)}:{number}")
    course = walk.project / "grading"
    # what the walk was for: feedback reached the student who submitted through the exchange, the other was named
    walk.as_student("alice", "fetch_feedback", "01-endpointslices")
    fetched = list((tmp_path / "students" / "alice" / "01-endpointslices" / "feedback").rglob("*.html"))
    assert fetched, "alice's feedback was not released"
    released = walk.done[("nbgrader", "release_feedback", "01-endpointslices")]
    assert "Feedback for bob not released" in released, released[-2000:]
    assert (course / "grades.csv").is_file() and (course / "reports" / "01-endpointslices.html").is_file()
