"""One term of one assignment in a real class on this machine: `labsupport class up --students 4` (JupyterHub, its
proxy from npm, real Unix accounts, nbgrader's exchange), the instructor releases, three students log in, fetch,
work, validate and submit in their own servers (one solves it, one leaves it blank, one gets half of it), the
instructor collects, grades with `labsupport grade` (sandboxed, parallel), returns feedback, and each student reads
their own; the fourth student only puts a link to the course's source into the exchange, which collect refuses.
A browser logs in through the hub's login page as one student and as the instructor; the other students
use the hub's REST API with their own tokens. Nobody can read a classmate's work or the course's source/.

Needs root, node and npm, Chromium, bubblewrap, and a Python the class's accounts may run (not one under /root):
skipped without them on a laptop, failed under CI.
"""
from __future__ import annotations

import copy
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import time

import pytest

from labsupport.hub.client import HubClient, HubRequestError, MemberServer
from labsupport.hub.proxy_install import missing_node
from labsupport.hub.roster import class_accounts
from labsupport.hub.service import run_as, unreachable_python
from labsupport.hub.state import ClassState, read_state
from labsupport.testing import chromium_path, missing_kernel_requirements, require
from tests.browser.conftest import CHROMIUM_ARGS
from tests.grading.course import cell_by_id, solution_region, source_text

pytestmark = [pytest.mark.classroom, pytest.mark.slow, pytest.mark.timeout(1500)]

ASSIGNMENT = "01-endpointslices"
NOTEBOOK = f"{ASSIGNMENT}/endpointslices.ipynb"
BIN = pathlib.Path(sys.executable).parent
ARTIFACTS = pathlib.Path(__file__).resolve().parents[2] / "test-artifacts"
#: What each student does: every solution cell, none, or the first two of four.
SOLVED, BLANK, HALF = "labclass-s01", "labclass-s02", "labclass-s03"
STUDENTS = (SOLVED, BLANK, HALF)
#: The fourth account never works the assignment: it puts a link to the course's source in the exchange.
INTRUDER = "labclass-s04"
HALF_CELLS = ("deploy", "read-addresses")


def missing() -> list[str]:
    """What the classroom tier lacks on this machine."""
    problems = missing_kernel_requirements("useradd", "runuser", "bwrap")
    if missing_node():
        problems.append("node and npm (apt-get install nodejs npm)")
    if not chromium_path():
        problems.append("Chromium (apt-get install chromium)")
    folder = unreachable_python()
    if folder:
        problems.append(f"a Python other users may run ({folder} is closed: make the venv with PYTHON=/usr/bin/python3)")
    return problems


def answered(fetched: dict, source: dict, cells: tuple[str, ...] | None) -> dict:
    """The fetched notebook with the reference answer typed into `cells` (every solution cell when None)."""
    nb = copy.deepcopy(fetched)
    for cell in nb["cells"]:
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if meta.get("solution") and (cells is None or meta["grade_id"] in cells):
            cell["source"] = solution_region(source_text(cell_by_id(source, meta["grade_id"])))
    return nb


def instructor(state: ClassState, *argv: str, timeout: float = 900) -> subprocess.CompletedProcess:
    """Run a command as the instructor's Unix user in the course folder; fails with its output when it fails."""
    proc = run_as(state, state.instructor, list(argv), cwd=state.course, timeout=timeout)
    assert proc.returncode == 0, f"{' '.join(argv)} exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}"
    return proc


def log_in(browser, state: ClassState, user: str, path: str = "/lab"):
    """A browser page logged in to the hub as `user` through its login page, on their server's `path`."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    page.goto(f"{state.url}/hub/login")
    page.fill("input[name=username]", user)
    page.fill("input[name=password]", state.password)
    page.click("input[type=submit]")
    page.wait_for_url(f"**/user/{user}/lab**", timeout=240_000)
    page.wait_for_selector("#jp-main-dock-panel", timeout=120_000)
    return page


class AssignmentPanel:
    """nbgrader's assignment list in a student's JupyterLab (menu Nbgrader > Assignment List), used by clicking."""

    def __init__(self, page):
        self.page = page
        page.click("div.lm-MenuBar-itemLabel:text-is('Nbgrader')")
        page.click("text=Assignment List")

    def fetch(self) -> None:
        self.page.click("#released_assignments_list button:text-is('Fetch')", timeout=120_000)
        self.page.wait_for_selector("#fetched_assignments_list button:text-is('Submit')", timeout=120_000)

    def validate(self) -> str:
        """Validate the fetched notebook; the text of the dialog that answers."""
        self.page.click("#fetched_assignments_list a.assignment-notebooks-link")
        self.page.click("#fetched_assignments_list button:text-is('Validate')")
        text = self.page.wait_for_selector(".jp-Dialog-content", timeout=600_000).inner_text()
        self.page.click(".jp-Dialog-button.jp-mod-accept")
        return text

    def submit(self) -> None:
        self.page.click("#fetched_assignments_list button:text-is('Submit')")
        self.page.wait_for_selector("#submitted_assignments_list button:text-is('Fetch Feedback')", timeout=120_000)

    def fetch_feedback(self) -> None:
        self.page.click("#submitted_assignments_list button:text-is('Fetch Feedback')")
        self.page.wait_for_selector("#submitted_assignments_list a:has-text('view feedback')", timeout=120_000)


class Term:
    """The class, and what happened in its term."""

    def __init__(self, directory: pathlib.Path, browser):
        began = time.monotonic()
        self.up = subprocess.run([str(BIN / "labsupport"), "class", "up", "--students", "4", "--state-dir",
                                  str(directory)], capture_output=True, text=True, timeout=600)
        assert self.up.returncode == 0, self.up.stdout + self.up.stderr
        self.state = read_state(directory)
        self.seconds = {"class up": time.monotonic() - began}
        self.hub = HubClient(self.state)
        self.pages = {}
        self.run(browser)

    def plant_a_link(self) -> None:
        """The fourth account submits, as their Unix user, a link to the course's source instead of a notebook."""
        state = self.state
        inbound = state.exchange / state.course_id / "inbound"
        name = f"{INTRUDER}+{ASSIGNMENT}+2099-01-01 00:00:00.000000 UTC+planted"
        planted = run_as(state, INTRUDER, ["ln", "-s", str(state.course / "source" / ASSIGNMENT), str(inbound / name)])
        assert planted.returncode == 0, planted.stderr

    def clock(self, name: str, began: float) -> None:
        self.seconds[name] = time.monotonic() - began

    def run(self, browser) -> None:
        state, hub = self.state, self.hub
        began = time.monotonic()
        instructor(state, "nbgrader", "generate_assignment", ASSIGNMENT, "--force")
        instructor(state, "nbgrader", "release_assignment", ASSIGNMENT)
        self.clock("release", began)

        began = time.monotonic()
        self.pages[SOLVED] = log_in(browser, state, SOLVED)
        for student in (BLANK, HALF):
            hub.start_server(student)
        self.clock("students' servers", began)
        self.servers = {s: MemberServer(state, s, hub.token(s)) for s in STUDENTS}

        source = _read_json(state.course / "source" / NOTEBOOK)
        self.validated = {}
        began = time.monotonic()
        for student, cells in ((SOLVED, None), (BLANK, ()), (HALF, HALF_CELLS)):
            server = self.servers[student]
            if student == SOLVED:
                panel = AssignmentPanel(self.pages[SOLVED])
                panel.fetch()
            else:
                server.assignments("fetch", ASSIGNMENT)
            fetched = server.contents(NOTEBOOK)["content"]
            server.save_notebook(NOTEBOOK, answered(fetched, source, cells))
            if student == SOLVED:
                self.validated_in_browser = panel.validate()
                panel.submit()
            else:
                self.validated[student] = server.validate(NOTEBOOK)
                server.assignments("submit", ASSIGNMENT)
        self.clock("fetch, work, validate, submit (3 students)", began)

        began = time.monotonic()
        self.plant_a_link()
        self.collect = instructor(state, "nbgrader", "collect", ASSIGNMENT)
        self.grade = instructor(state, "labsupport", "grade", ASSIGNMENT, "--workers", "2")
        self.clock("collect and grade", began)
        began = time.monotonic()
        self.pages[state.instructor] = log_in(browser, state, state.instructor)
        self.pages[state.instructor].goto(f"{state.url}/user/{state.instructor}/formgrader/manage_submissions/"
                                          f"{ASSIGNMENT}")
        self.pages[state.instructor].wait_for_selector(f"text={SOLVED}", timeout=60_000)
        self.formgrader = self.pages[state.instructor].inner_text("body")
        instructor(state, "nbgrader", "generate_feedback", ASSIGNMENT)
        instructor(state, "nbgrader", "release_feedback", ASSIGNMENT)
        self.feedback = {}
        for student, server in self.servers.items():
            if student == SOLVED:
                panel.fetch_feedback()
            else:
                server.assignments("fetch_feedback", ASSIGNMENT)
            (stamp,) = [c["name"] for c in server.contents(f"{ASSIGNMENT}/feedback")["content"]]
            path = f"{ASSIGNMENT}/feedback/{stamp}/endpointslices.html"
            self.feedback[student] = server.contents(path)["content"]
            if student == SOLVED:
                page = self.pages[SOLVED]
                page.goto(f"{state.url}/user/{SOLVED}/files/{path}")
                self.feedback_in_browser = page.inner_text("body")
        self.clock("feedback", began)


def _read_json(path: pathlib.Path) -> dict:
    import json
    return json.loads(path.read_text())


@pytest.fixture(scope="module")
def term():
    """One term, in a class made for it and taken down after it (also when the term fails)."""
    require(missing(), "classroom")
    directory = pathlib.Path(tempfile.mkdtemp(prefix="labsupport-class-"))
    directory.chmod(0o755)
    chromium = chromium_path()
    from playwright.sync_api import sync_playwright
    began = time.monotonic()
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
            try:
                done = Term(directory / "class", browser)
                yield done
            finally:
                browser.close()
    finally:
        down = subprocess.run([str(BIN / "labsupport"), "class", "down", "--state-dir", str(directory / "class")],
                              capture_output=True, text=True, timeout=300)
        ARTIFACTS.mkdir(exist_ok=True)
        if (directory / "class" / "hub" / "hub.log").exists():
            shutil.copy(directory / "class" / "hub" / "hub.log", ARTIFACTS / "classroom-hub.log")
        shutil.rmtree(directory, ignore_errors=True)
        print(f"classroom term: {time.monotonic() - began:.0f} s in all")
        assert down.returncode == 0, down.stderr
        assert class_accounts() == [], "class down left accounts"


def test_the_class_is_real_unix_accounts_and_a_hub_on_loopback(term):
    import pwd
    for account in term.state.accounts:
        entry = pwd.getpwnam(account)
        assert entry.pw_uid != 0 and pathlib.Path(entry.pw_dir).stat().st_mode & 0o077 == 0
    assert term.state.url.startswith("http://127.0.0.1:")
    for user in (term.state.instructor, *STUDENTS):
        pid = term.hub.server_pid(user)
        assert os.stat(f"/proc/{pid}").st_uid == pwd.getpwnam(user).pw_uid, f"{user}'s server runs as someone else"


def test_validate_tells_each_student_how_they_did(term):
    assert "Success! Your notebook passes all the tests." in term.validated_in_browser, term.validated_in_browser
    for student in (BLANK, HALF):
        assert term.validated[student]["success"] and term.validated[student]["value"]["failed"], student
    assert len(term.validated[BLANK]["value"]["failed"]) > len(term.validated[HALF]["value"]["failed"])


def test_the_gradebook_has_each_students_marks(term):
    from nbgrader.api import Gradebook
    totals = {}
    with Gradebook(f"sqlite:///{term.state.course / 'gradebook.db'}") as gb:
        for student in STUDENTS:
            sub = gb.find_submission_notebook("endpointslices", ASSIGNMENT, student)
            tests = [g for g in sub.grades if g.cell.cell_type == "code"]
            totals[student] = (sum(g.auto_score or 0 for g in tests), sum(g.max_score for g in tests))
    score, maximum = totals[SOLVED]
    assert score == maximum > 0, totals
    assert totals[BLANK][0] == 0, totals
    assert 0 < totals[HALF][0] < maximum, totals
    assert "3 graded" in term.grade.stdout, term.grade.stdout


def headline(score: float, maximum: float) -> str:
    """The first line of a notebook's feedback, as nbgrader writes it."""
    return f"endpointslices (Score: {round(float(score), 2)} / {round(float(maximum), 2)})"


def test_each_student_reads_their_own_feedback(term):
    from nbgrader.api import Gradebook
    seen = {}
    with Gradebook(f"sqlite:///{term.state.course / 'gradebook.db'}") as gb:
        for student in STUDENTS:
            sub = gb.find_submission_notebook("endpointslices", ASSIGNMENT, student)
            seen[student] = headline(sub.score, sub.max_score)
            assert seen[student] in term.feedback[student], student
    assert len(set(seen.values())) == 3, seen
    assert seen[SOLVED] in term.feedback_in_browser


def test_the_instructor_sees_the_submissions_in_the_formgrader(term):
    for student in STUDENTS:
        assert student in term.formgrader


def test_a_link_put_in_the_exchange_is_not_collected(term):
    assert "Not collected" in term.collect.stderr, term.collect.stderr
    assert not os.path.lexists(term.state.course / "submitted" / INTRUDER)
    from nbgrader.api import Gradebook, MissingEntry
    with Gradebook(f"sqlite:///{term.state.course / 'gradebook.db'}") as gb:
        with pytest.raises(MissingEntry):
            gb.find_submission(ASSIGNMENT, INTRUDER)


def test_a_student_cannot_read_a_classmates_work_or_the_source(term):
    state = term.state
    peer = state.home(SOLVED) / NOTEBOOK
    denied = [state.course / "source" / NOTEBOOK, state.course / "submitted" / SOLVED / NOTEBOOK,
              state.course / "gradebook.db", peer]
    for path in denied:
        assert path.exists(), path
        proc = run_as(state, BLANK, ["cat", str(path)])
        assert proc.returncode != 0 and "Permission denied" in proc.stderr, (path, proc.stdout[:200])
    proc = run_as(state, BLANK, ["ls", str(state.exchange / state.course_id / "inbound")])
    assert proc.returncode != 0 and "Permission denied" in proc.stderr
    # Through the student's own Jupyter server: out of their folder, through a link they made, or on another's server.
    own = term.servers[BLANK]
    assert run_as(state, BLANK, ["ln", "-s", str(state.home(SOLVED)), "peek"]).returncode == 0
    assert run_as(state, BLANK, ["ln", "-s", str(state.course / "source"), "source"]).returncode == 0
    for path in ("../" + SOLVED, "peek/" + NOTEBOOK, "source/" + NOTEBOOK, "source"):
        with pytest.raises(HubRequestError) as refused:
            own.contents(path)
        assert refused.value.status >= 400 and "\"cells\"" not in str(refused.value), (path, refused.value)
    intruder = MemberServer(state, SOLVED, own.token)
    with pytest.raises(HubRequestError) as refused:
        intruder.contents(NOTEBOOK)
    assert refused.value.status == 403
