"""One term of one assignment in a real class on this machine, shared by the classroom tier's modules (one class for
the whole tier): `labsupport class up --students 5` (JupyterHub, its proxy from npm, real Unix accounts, the
class's exchange service), and then, in order:

* the instructor generates and releases as their Unix user, with their hub token;
* three students log in, fetch, work, validate and submit in their own servers: one in Chromium through the hub's
  login page (and the assignment list), two through the hub's REST API with their own tokens — one solves it, one
  leaves it blank, one solves half; the blank one then tries to hand in as the solver (`nbgrader submit --student`
  and a request of their own to the service);
* the fifth account only attacks: hands in a blank notebook, then a link to the course's source, a file that is
  no notebook and one over the cap, and lists the exchange's store;
* the instructor sets the due date (now) and a late policy of zero; the fourth student hands in a full solution
  late, with a forged `timestamp.txt`;
* the fifth account's stored hand-in is changed on disk (what collect must refuse alone); the instructor collects,
  grades with `labsupport grade` (sandboxed, parallel), looks at the formgrader in Chromium, generates and
  releases feedback; each student fetches theirs;
* a kernel of the solver's server prints a mark while a classmate subscribes to everything they can reach, and the
  same probe against a kernel started over TCP (as kernels were before) shows what it would have caught.

Needs root, node and npm, Chromium, bubblewrap, and a Python the class's accounts may run (not one under /root):
skipped without them on a laptop, failed under CI.
"""
from __future__ import annotations

import base64
import copy
import datetime
import json
import os
import pathlib
import pwd
import secrets
import subprocess
import sys
import tempfile
import time
import traceback
import uuid

from labsupport.hub.client import HubClient, MemberServer, request
from labsupport.hub.proxy_install import missing_node
from labsupport.hub.service import account_env, run_as, unreachable_python
from labsupport.hub.state import ClassState, read_state
from labsupport.testing import chromium_path, missing_kernel_requirements
from tests.grading.course import cell_by_id, solution_region, source_text

ASSIGNMENT = "01-endpointslices"
NOTEBOOK = f"{ASSIGNMENT}/endpointslices.ipynb"
BIN = pathlib.Path(sys.executable).parent
HERE = pathlib.Path(__file__).resolve().parent
ARTIFACTS = HERE.parents[1] / "test-artifacts"
#: What each student does: every solution cell, none, or the first two of four.
SOLVED, BLANK, HALF = "labclass-s01", "labclass-s02", "labclass-s03"
STUDENTS = (SOLVED, BLANK, HALF)
#: The fourth solves it all but hands in after the due date, with a forged timestamp.txt.
LATE = "labclass-s04"
#: The fifth account never works the assignment: it attacks the exchange.
INTRUDER = "labclass-s05"
HALF_CELLS = ("deploy", "read-addresses")
FORGED = "2000-01-01 00:00:00.000000 UTC"
#: Records every Content-Security-Policy violation a page reports (JupyterLab must work without one).
CSP_WATCH = ("window.__csp = []; document.addEventListener('securitypolicyviolation', "
             "e => window.__csp.push(e.effectiveDirective + ' ' + e.blockedURI));")
#: An inline event handler: it runs only where the page's CSP allows inline script.
INLINE_HANDLER = ("() => new Promise(done => { const img = document.createElement('img'); "
                  "img.setAttribute('onerror', 'window.__inline_ran = true'); img.src = 'data:,not-an-image'; "
                  "document.body.appendChild(img); setTimeout(() => done(window.__inline_ran === true), 1000); })")


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


def log_in(browser, state: ClassState, user: str, path: str = "/lab"):
    """A browser page logged in to the hub as `user` through its login page, on their server's `path`; every CSP
    violation the pages report is kept in `window.__csp`."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    context.add_init_script(CSP_WATCH)
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


def raw_request(method: str, url: str, token: str, body: bytes | None = None) -> tuple[int, dict | str, dict]:
    """One request with `token`, whatever its status: the status, the answer (decoded JSON, else its text) and the
    headers (their names in lower case, as the hub's proxy passes them)."""
    import urllib.error
    import urllib.request
    req = urllib.request.Request(url, data=body, method=method, headers={"Authorization": f"token {token}",
                                                                        "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=300) as answer:
            status, text, headers = answer.status, answer.read().decode(errors="replace"), answer.headers
    except urllib.error.HTTPError as e:
        status, text, headers = e.code, e.read().decode(errors="replace"), e.headers
    headers = {name.lower(): value for name, value in headers.items()}
    try:
        return status, json.loads(text), headers
    except ValueError:
        return status, text, headers


def execute(server: MemberServer, kernel: str, code: str, wait_for: str, timeout: float = 60) -> None:
    """Send `code` to a kernel of `server` over its websocket (as JupyterLab does) and return once its output
    shows `wait_for` (the code goes on running)."""
    from websockets.sync.client import connect
    url = server.base.replace("http://", "ws://") + f"/api/kernels/{kernel}/channels"
    session = uuid.uuid4().hex
    message = {"header": {"msg_id": uuid.uuid4().hex, "username": server.user, "session": session,
                          "msg_type": "execute_request", "version": "5.3",
                          "date": datetime.datetime.now(datetime.timezone.utc).isoformat()},
               "parent_header": {}, "metadata": {}, "channel": "shell", "buffers": [],
               "content": {"code": code, "silent": False, "store_history": False, "user_expressions": {},
                           "allow_stdin": False, "stop_on_error": True}}
    with connect(url, additional_headers={"Authorization": f"token {server.token}"}, open_timeout=60) as ws:
        ws.send(json.dumps(message))
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            reply = json.loads(ws.recv(timeout=max(1.0, deadline - time.monotonic())))
            if reply.get("msg_type") == "stream" and wait_for in reply["content"].get("text", ""):
                return
    raise AssertionError(f"the kernel's output never showed {wait_for!r}")


class Term:
    """The class, and what happened in its term."""

    def __init__(self, directory: pathlib.Path):
        self.directory = directory
        self.seconds: dict[str, float] = {}
        self.failures: dict[str, str] = {}
        self.pages = {}

    def start(self, browser) -> None:
        """Make the class and run the term."""
        began = time.monotonic()
        self.up = subprocess.run([str(BIN / "labsupport"), "class", "up", "--students", "5", "--state-dir",
                                  str(self.directory)], capture_output=True, text=True, timeout=600)
        assert self.up.returncode == 0, self.up.stdout + self.up.stderr
        self.state = read_state(self.directory)
        self.seconds["class up"] = time.monotonic() - began
        self.hub = HubClient(self.state)
        self.tokens = {user: self.hub.token(user) for user in (self.state.instructor, *self.state.students)}
        self.exchange = f"{self.state.url}/services/exchange/api/courses/{self.state.course_id}/assignments"
        self.run(browser)

    # --- acting as a member --------------------------------------------------------------------------------
    def as_member(self, account: str, *argv: str, cwd: pathlib.Path | None = None) -> subprocess.CompletedProcess:
        """Run a command as `account` in a shell with their hub token and the class's configuration for their
        role, as a terminal of their server has."""
        role = "instructor" if account == self.state.instructor else "student"
        env = {"JUPYTERHUB_API_TOKEN": self.tokens[account],
               "JUPYTER_CONFIG_PATH": str(pathlib.Path(self.state.directory) / "config" / role)}
        return run_as(self.state, account, list(argv), cwd=cwd, env=env)

    def instructor(self, *argv: str) -> subprocess.CompletedProcess:
        """Run a command as the instructor in the course folder; fails with its output when it fails."""
        proc = self.as_member(self.state.instructor, *argv, cwd=self.state.course)
        assert proc.returncode == 0, f"{' '.join(argv)} exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}"
        return proc

    def write_as(self, account: str, path: pathlib.Path, data: bytes) -> None:
        """Write a file into a member's home as that member would (owned by them)."""
        path.write_bytes(data)
        entry = pwd.getpwnam(account)
        os.chown(path, entry.pw_uid, entry.pw_gid)

    def clock(self, name: str, began: float) -> None:
        self.seconds[name] = time.monotonic() - began

    def receipts(self, student: str) -> list[dict]:
        """Every hand-in of `student`, as the service lists them to the instructor."""
        return request("GET", f"{self.exchange}/{ASSIGNMENT}/submissions?student={student}",
                       self.tokens[self.state.instructor])["submissions"]

    # --- the term --------------------------------------------------------------------------------------------
    def run(self, browser) -> None:
        state, hub = self.state, self.hub
        began = time.monotonic()
        self.instructor("nbgrader", "generate_assignment", ASSIGNMENT, "--force")
        self.instructor("nbgrader", "release_assignment", ASSIGNMENT)
        self.clock("release", began)

        began = time.monotonic()
        self.pages[SOLVED] = log_in(browser, state, SOLVED)
        for student in (BLANK, HALF):
            hub.start_server(student)
        self.clock("students' servers", began)
        self.servers = {s: MemberServer(state, s, self.tokens[s]) for s in STUDENTS}

        self.source = json.loads((state.course / "source" / NOTEBOOK).read_text())
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
            server.save_notebook(NOTEBOOK, answered(fetched, self.source, cells))
            if student == SOLVED:
                self.validated_in_browser = panel.validate()
                panel.submit()
            else:
                self.validated[student] = server.validate(NOTEBOOK)
                server.assignments("submit", ASSIGNMENT)
        self.clock("fetch, work, validate, submit (3 students)", began)

        began = time.monotonic()
        self.impersonate()
        self.intrude()
        self.clock("attacks on the exchange", began)

        began = time.monotonic()
        self.due = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
        self.instructor("nbgrader", "db", "assignment", "add", ASSIGNMENT, f"--duedate={self.due.isoformat()}")
        with open(state.course / "nbgrader_config.py", "a") as config:
            config.write("c.LateSubmissionPlugin.penalty_method = 'zero'\n")
        self.hand_in_late()
        self.clock("a late hand-in", began)

        began = time.monotonic()
        self.tamper()
        self.collect = self.instructor("nbgrader", "collect", ASSIGNMENT)
        self.grade = self.instructor("labsupport", "grade", ASSIGNMENT, "--workers", "2")
        self.clock("collect and grade", began)

        began = time.monotonic()
        teacher = self.pages[state.instructor] = log_in(browser, state, state.instructor)
        teacher.goto(f"{state.url}/user/{state.instructor}/formgrader/manage_submissions/{ASSIGNMENT}")
        teacher.wait_for_selector(f"text={SOLVED}", timeout=60_000)
        self.formgrader = teacher.inner_text("body")
        self.instructor("nbgrader", "generate_feedback", ASSIGNMENT)
        self.instructor("nbgrader", "release_feedback", ASSIGNMENT)
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
        late = self.as_member(LATE, "nbgrader", "fetch_feedback", ASSIGNMENT)
        assert late.returncode == 0, late.stderr
        (self.late_feedback,) = (state.home(LATE) / ASSIGNMENT / "feedback").glob("*/endpointslices.html")
        self.clock("feedback", began)

        # The probes come last and each keeps its own failure, for the tests that read it, so one broken probe
        # does not take the term's other results with it.
        for name, probe in (("pages", lambda: self.probe_pages(browser)), ("kernels", self.probe_kernels)):
            began = time.monotonic()
            try:
                probe()
            except Exception:
                self.failures[name] = traceback.format_exc()
            self.clock(f"{name} probe", began)

    def impersonate(self) -> None:
        """The blank student, with their own token, hands in as the solver: through nbgrader and by hand."""
        self.impersonation = self.as_member(BLANK, "nbgrader", "submit", ASSIGNMENT, "--student", SOLVED)
        body = json.dumps({"files": [{"path": "endpointslices.ipynb", "content": base64.b64encode(
            json.dumps(answered(self.source, self.source, None)).encode()).decode()}], "student": SOLVED})
        self.impersonation_by_hand = raw_request("POST", f"{self.exchange}/{ASSIGNMENT}/submissions",
                                                 self.tokens[BLANK], body.encode())[:2]

    def intrude(self) -> None:
        """The fifth account hands in a blank notebook, then a link, a file that is no notebook, one too big."""
        state, home = self.state, self.state.home(INTRUDER)
        fetched = self.as_member(INTRUDER, "nbgrader", "fetch_assignment", ASSIGNMENT)
        assert fetched.returncode == 0, fetched.stderr
        good = self.as_member(INTRUDER, "nbgrader", "submit", ASSIGNMENT)
        assert good.returncode == 0, good.stderr
        notebook = home / NOTEBOOK
        notebook.unlink()
        linked = run_as(state, INTRUDER, ["ln", "-s", str(state.course / "source" / NOTEBOOK), str(notebook)])
        assert linked.returncode == 0, linked.stderr
        self.link_submit = self.as_member(INTRUDER, "nbgrader", "submit", ASSIGNMENT)
        token = self.tokens[INTRUDER]
        url = f"{self.exchange}/{ASSIGNMENT}/submissions"

        def bundle(data: bytes) -> bytes:
            return json.dumps({"files": [{"path": "endpointslices.ipynb",
                                          "content": base64.b64encode(data).decode()}]}).encode()
        garbage = b"\x7fELF\x02\x01\x01" + secrets.token_bytes(64)
        self.not_a_notebook = raw_request("POST", url, token, bundle(garbage))[:2]
        big = {"cells": [{"cell_type": "code", "source": "x = 1", "metadata": {}, "outputs": [],
                          "execution_count": None}], "metadata": {}, "nbformat": 4, "nbformat_minor": 5,
               "padding": "a" * (25 * 2**20)}
        self.too_big = raw_request("POST", url, token, bundle(json.dumps(big).encode()))[:2]
        self.store_listing = run_as(state, INTRUDER, ["ls", str(state.exchange)])

    def hand_in_late(self) -> None:
        """The fourth student solves it all and hands it in after the due date, with a forged timestamp.txt."""
        home = self.state.home(LATE)
        fetched = self.as_member(LATE, "nbgrader", "fetch_assignment", ASSIGNMENT)
        assert fetched.returncode == 0, fetched.stderr
        notebook = json.loads((home / NOTEBOOK).read_text())
        self.write_as(LATE, home / NOTEBOOK, json.dumps(answered(notebook, self.source, None)).encode())
        self.write_as(LATE, home / ASSIGNMENT / "timestamp.txt", FORGED.encode())
        self.late_submit = self.as_member(LATE, "nbgrader", "submit", ASSIGNMENT)
        assert self.late_submit.returncode == 0, self.late_submit.stderr

    def tamper(self) -> None:
        """The fifth account's one stored hand-in is changed behind the service's back: collect must refuse it
        alone."""
        (receipt,) = self.receipts(INTRUDER)
        stored = self.state.exchange / self.state.course_id / "handins" / ASSIGNMENT / INTRUDER / receipt["id"]
        path = stored / "files" / "endpointslices.ipynb"
        path.write_bytes(path.read_bytes().replace(b"YOUR CODE HERE", b"changed on disk"))

    def probe_pages(self, browser) -> None:
        """What a student's pages let run, and who reaches whose server and the formgrader."""
        state = self.state
        page = self.pages[SOLVED]
        page.goto(f"{state.url}/user/{SOLVED}/lab")
        page.wait_for_selector("#jp-main-dock-panel", timeout=120_000)
        page.wait_for_timeout(2000)
        self.csp_violations = page.evaluate("() => window.__csp")
        self.inline_ran = {SOLVED: page.evaluate(INLINE_HANDLER)}
        teacher = self.pages[state.instructor]
        teacher.goto(f"{state.url}/user/{state.instructor}/lab")
        teacher.wait_for_selector("#jp-main-dock-panel", timeout=120_000)
        self.inline_ran[state.instructor] = teacher.evaluate(INLINE_HANDLER)
        self.headers = {user: raw_request("GET", f"{state.url}/user/{user}/lab", self.tokens[user])[2]
                        for user in (SOLVED, state.instructor)}
        self.reach = {}
        for who, whose, path in ((BLANK, state.instructor, "/formgrader/"),
                                 (BLANK, BLANK, "/formgrader/"),
                                 (state.instructor, state.instructor, "/formgrader/"),
                                 (state.instructor, SOLVED, "/api/contents"),
                                 (BLANK, SOLVED, "/api/contents"),
                                 (SOLVED, SOLVED, "/api/contents")):
            self.reach[(who, whose, path)] = raw_request("GET", f"{state.url}/user/{whose}{path}",
                                                         self.tokens[who])[0]

    def probe_kernels(self) -> None:
        """A mark printed by a kernel of the solver's server (over Unix sockets), and by a kernel the half student
        starts over TCP as kernels were before: what the blank student's probe receives from each."""
        state = self.state
        server = self.servers[SOLVED]
        kernel = server.call("POST", "/api/kernels", {"name": "python3"})["id"]
        mark = f"MARK-{secrets.token_hex(6)}"
        execute(server, kernel, f"import time\nfor i in range(900):\n    print({mark!r}, flush=True)\n"
                                f"    time.sleep(0.1)\n", wait_for=mark)
        runtime = state.runtime(SOLVED)
        self.kernel_connection = json.loads((runtime / f"kernel-{kernel}.json").read_text())
        self.hub_kernel_probe = self.probe(pwd.getpwnam(SOLVED).pw_uid, mark, runtime)
        server.call("DELETE", f"/api/kernels/{kernel}")

        tcp_mark = f"MARK-{secrets.token_hex(6)}"
        # The control: a kernel started over TCP on 127.0.0.1, as every kernel of a class was before; it prints
        # until the probe is done (its script reads a line, or the end of its input), then its script shuts it down.
        printing = f"import time\nfor i in range(900):\n    print({tcp_mark!r}, flush=True)\n    time.sleep(0.1)\n"
        code = ("import sys\nfrom jupyter_client.manager import KernelManager\n"
                "km = KernelManager(kernel_name='python3', transport='tcp')\nkm.start_kernel()\n"
                "kc = km.client()\nkc.start_channels()\nkc.wait_for_ready(timeout=300)\n"
                f"kc.execute({printing!r})\n"
                "print('ready', flush=True)\nsys.stdin.readline()\nkc.stop_channels()\n"
                "km.shutdown_kernel(now=True)\n")
        env = account_env(state, HALF)
        with tempfile.TemporaryFile("w+") as errors:
            victim = subprocess.Popen(["runuser", "-u", HALF, "--", "env", "-i",
                                       *(f"{k}={v}" for k, v in env.items()), sys.executable, "-c", code],
                                      cwd=state.home(HALF), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                      stderr=errors, text=True)
            try:
                started = victim.stdout.readline().strip() == "ready"
                errors.seek(0)
                assert started, f"the TCP kernel of the control did not start: {errors.read()[-2000:]}"
                self.tcp_kernel_probe = self.probe(pwd.getpwnam(HALF).pw_uid, tcp_mark, state.runtime(HALF))
            finally:
                victim.stdin.close()
                victim.wait(timeout=120)

    def probe(self, uid: int, mark: str, runtime: pathlib.Path) -> dict:
        """The blank student's probe (kernel_probe.py, as their Unix user) against `uid`'s kernels."""
        proc = run_as(self.state, BLANK, [sys.executable, str(HERE / "kernel_probe.py"), str(uid), mark, "10",
                                          str(runtime)], cwd=self.state.home(BLANK))
        assert proc.returncode == 0, proc.stderr
        return json.loads(proc.stdout.strip().splitlines()[-1])
