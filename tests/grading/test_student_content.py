"""Student content is data wherever the instructor looks, and the grader is bounded, through the real pipeline.

One serial `nbgrader autograde` of assignment 6 (the written answers the instructor grades by hand): a submission
whose written answer is `<img src=x onerror=…>` (the attack that gave itself full manual marks through the
formgrader's API), with a markdown cell of its own holding a script and a `javascript:` link, outputs of HTML,
JavaScript and a scripted SVG, and widget state that closes its script element; a submission whose answers are
huge (one over the wire's cap, one a check quotes in its failure); beside them the solution, the blank and a
submission filed under a student id that is markup. Then: the autograded notebook is data, the feedback page runs
nothing (and shows the course's tables as tables), the id that is markup never reaches the gradebook, the huge
answers cost the grader no memory and their test outputs stay within the cap, and — in Chromium — the formgrader's
hand-grading page of the attacker runs none of it: no request, no DOM change, no `window` flag.
"""
from __future__ import annotations

import json
import os
import pathlib
import re
import secrets
import subprocess
import sys
import threading
import time
import urllib.request

import pytest

from labsupport.grading.sandbox import problems
from labsupport.testing import require, require_browser
from tests.grading.course import BIN, Course, cell_by_id, notebook_name
from tests.grading.pages import dangers, parsed, risky
from tests.processes import stop_group

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1800)]

REVIEW = "06-review"
ATTACKER, MARKUP_ID = "mallory", "<img src=x onerror=alert(1)>"
ANSWER = ("My answer <img src=x onerror=\"window.owned=1;fetch('/formgrader/api/grade/1',{method:'PUT',"
          "body:JSON.stringify({manual_score:99})})\">")
ADDED = "<script>window.owned=2</script> and [full marks](javascript:window.owned=3)"
OUTPUTS = '''
from IPython.display import HTML, Javascript, SVG, display
display(HTML('<b>html</b><img src=x onerror="window.owned=4"><script>window.owned=5</script>'))
display(Javascript("window.owned = 6"))
display(SVG('<svg xmlns="http://www.w3.org/2000/svg" onload="window.owned=7"><script>window.owned=8</script>'
            '<rect width="10" height="10"/></svg>'))
'''


#: The flood: an answer over the wire's cap, and one (a set of options) that the hidden check quotes when it fails.
FLOOD = {"q4-answers": 'q4_choice = "b"\nq4_name = "n" * (40 * 2**20)',
         "q3-answers": 'q3_true = {"option-" + "z" * 100 + str(i) for i in range(100_000)}'}


def flooded(course: Course) -> dict:
    """The blank release with huge answers."""
    nb = course.release(REVIEW)
    for grade_id, code in FLOOD.items():
        cell_by_id(nb, grade_id)["source"] = code
    return nb


def peak_memory(argv: list[str], course: Course, timeout: float) -> tuple[subprocess.CompletedProcess, int]:
    """Run a command in the course folder; its output and the peak resident memory of its own process, in bytes."""
    process = subprocess.Popen(argv, cwd=course.root, env=course.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True)
    peak, status = 0, pathlib.Path(f"/proc/{process.pid}/status")
    out: list[str] = []
    reader = threading.Thread(target=lambda: out.extend(process.communicate(timeout=timeout)), daemon=True)
    reader.start()
    while reader.is_alive():
        try:
            found = re.search(r"VmHWM:\s+(\d+) kB", status.read_text())
            peak = max(peak, int(found.group(1)) * 1024) if found else peak
        except OSError:
            pass
        reader.join(0.2)
    return subprocess.CompletedProcess(argv, process.returncode, *out), peak


def attacked(course: Course) -> dict:
    """The blank release with every attack in it."""
    nb = course.release(REVIEW)
    cell_by_id(nb, "q1-text")["source"] = ANSWER
    cell_by_id(nb, "q1-numbers")["source"] = OUTPUTS
    position = nb["cells"].index(cell_by_id(nb, "q1-text")) + 1
    nb["cells"].insert(position, {"cell_type": "markdown", "metadata": {"tags": ['x" onmouseover="window.owned=9']},
                                  "source": ADDED})
    nb["metadata"]["widgets"] = {"application/vnd.jupyter.widget-state+json": {
        "state": {}, "version_major": 2, "version_minor": 0, "x": "</script><script>window.owned=10</script>"}}
    return nb


@pytest.fixture(scope="module")
def course(tmp_path_factory) -> Course:
    """The batch autograded serially, feedback generated."""
    require(problems(), "sandboxed grading")
    course = Course(tmp_path_factory.mktemp("content") / "course")
    course.nbgrader("generate_assignment", REVIEW, "--force")
    course.submit(REVIEW, ATTACKER, attacked(course))
    course.submit(REVIEW, "solution", course.solved(REVIEW))
    course.submit(REVIEW, "blank", course.release(REVIEW))
    course.submit(REVIEW, MARKUP_ID, course.solved(REVIEW))
    course.submit(REVIEW, "flood", flooded(course))
    course.graded, course.peak = peak_memory([str(BIN / "nbgrader"), "autograde", REVIEW], course, 1500)
    course.nbgrader("generate_feedback", REVIEW, "--force")
    return course


def test_the_batch_completes_and_the_markup_id_never_reaches_the_gradebook(course):
    from nbgrader.api import Gradebook
    log = course.graded.stdout + course.graded.stderr
    failing = {m.grade_id: course.errors(REVIEW, "solution", m.grade_id)[-500:]
               for m in course.marks(REVIEW, "solution").values() if m.kind == "test" and m.auto != m.max}
    assert not failing, (failing, log[-3000:])
    assert course.auto_total(REVIEW, "blank")[0] == 0
    assert "student id '<img src=x onerror=alert(1)>' (the folder in submitted/) is refused: it holds markup" in log
    with Gradebook(f"sqlite:///{course.root / 'gradebook.db'}") as gb:
        assert sorted(s.id for s in gb.students) == ["blank", "flood", ATTACKER, "solution"]
    assert not (course.root / "autograded" / MARKUP_ID).exists()


def test_the_autograded_notebook_is_data(course):
    log = course.graded.stdout + course.graded.stderr
    assert (course.root / "autograded" / ATTACKER / REVIEW).is_dir(), log[-6000:]
    nb = course.autograded(REVIEW, ATTACKER)
    text = json.dumps(nb)
    answer = "".join(cell_by_id(nb, "q1-text")["source"])
    assert answer.replace("\u2060", "") == ANSWER and "<img" not in answer
    added = next("".join(c["source"]) for c in nb["cells"] if "window.owned=2" in "".join(c["source"]))
    assert "<script" not in added and "](javascript" not in added
    for cell in nb["cells"]:
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            assert set(data) <= {"text/plain", "text/html", "image/svg+xml", "image/png"}, data.keys()
            html = "".join(data.get("text/html", "")) + "".join(data.get("image/svg+xml", ""))
            assert "onerror" not in html and "<script" not in html and "onload" not in html, html
    assert "widgets" not in nb["metadata"] and "onmouseover" not in text


def test_the_feedback_page_runs_nothing_and_shows_tables(course):
    page = course.feedback(REVIEW, ATTACKER)
    head = page[:page.index("</head>")]
    policy = re.search(r'<meta http-equiv="Content-Security-Policy" content="([^"]+)">', head)
    assert policy and "script-src 'none'" in policy.group(1) and head.index(policy.group(0)) < head.find("<script")
    found = dangers(page, risky(course.feedback(REVIEW, "blank")))
    assert not found, found
    assert "window.owned" not in "".join(attrs.get("onerror", "") for _, attrs in parsed(page).tags)
    solution = course.feedback(REVIEW, "solution")
    assert "<table>" in solution and "<td>" in solution
    for escaped in ("&lt;th&gt;", "&lt;tbody&gt;", "&lt;table&gt;", "&lt;p&gt;", "&lt;td&gt;"):
        assert escaped not in solution, escaped


def test_huge_answers_cost_the_grader_nothing_and_their_outputs_stay_within_the_cap(course):
    """40 MiB of answer is dropped on the wire, with a message; a set of 100 000 options that the hidden check quotes
    in its failure keeps the test's output within the output cap (it was 83 times the cap); the grader's own
    process never held either (its peak stays where grading a class puts it)."""
    nb = course.autograded(REVIEW, "flood")
    assert "did not hand over the answers" in course.errors(REVIEW, "flood", "q4-name-test")
    quoted = sum(len(json.dumps(o)) for o in cell_by_id(nb, "q3-test")["outputs"])
    assert quoted <= 200_000 + 2_000, quoted
    assert "more characters" in course.errors(REVIEW, "flood", "q3-test")
    marks = course.marks(REVIEW, "flood")
    assert marks["q4-name-test"].auto == 0 and marks["q3-test"].auto == 0
    assert course.peak < 400 * 2**20, f"the grader's process peaked at {course.peak / 2**20:.0f} MiB"
    print(f"the grader's process peaked at {course.peak / 2**20:.0f} MiB")


def formgrader(course: Course):
    """nbgrader's formgrader (a Jupyter server with its extension) on the course folder: (base URL, token, process)."""
    from tests.browser.conftest import free_port
    port, token = free_port(), secrets.token_hex(16)
    env = dict(course.env, JUPYTER_CONFIG_DIR=str(course.root.parent / "jupyter-config"),
               JUPYTER_RUNTIME_DIR=str(course.root.parent / "jupyter-runtime"),
               JUPYTER_DATA_DIR=str(course.root.parent / "jupyter-data"))
    log = open(course.root.parent / "formgrader.log", "w")
    process = subprocess.Popen(
        [sys.executable, "-m", "jupyter_server", "--no-browser", "--ip=127.0.0.1", f"--port={port}",
         f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={course.root}",
         "--ServerApp.jpserver_extensions={'nbgrader.server_extensions.formgrader': True}",
         *(["--allow-root"] if os.geteuid() == 0 else [])],
        cwd=course.root, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while True:
        try:
            urllib.request.urlopen(f"{base}/formgrader/?token={token}", timeout=5).close()
            return base, token, process
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                process.kill()
                raise AssertionError("the formgrader did not start:\n" +
                                     (course.root.parent / "formgrader.log").read_text()[-3000:])
            time.sleep(0.5)


@pytest.mark.browser
def test_the_formgrader_runs_no_script_of_the_students(course):
    """The hand-grading page of the attacker's notebook, in Chromium: the answer is on the page as text, the
    formgrader's own scripts run (its score inputs are there), and nothing of the student's ran."""
    chromium = require_browser()
    from nbgrader.api import Gradebook
    from playwright.sync_api import sync_playwright
    from tests.browser.conftest import ARTIFACTS, CHROMIUM_ARGS
    with Gradebook(f"sqlite:///{course.root / 'gradebook.db'}") as gb:
        submission = gb.find_submission_notebook(notebook_name(REVIEW), REVIEW, ATTACKER).id
    base, token, process = formgrader(course)
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
            page = browser.new_page()
            requests: list[tuple[str, str]] = []
            page.on("request", lambda r: requests.append((r.method, r.url)))
            page.route(re.compile(r"^https?://(?!127\.0\.0\.1)"), lambda route: route.abort())
            page.goto(f"{base}/formgrader/submissions/{submission}/?token={token}", wait_until="domcontentloaded")
            page.wait_for_selector("input.score", timeout=60_000)
            page.wait_for_timeout(1500)            # the page's own requests (its grades) have gone out
            answer = page.locator(".text_cell_render", has_text="My answer").first
            shown = answer.inner_text()
            flags = page.evaluate("() => [window.owned, document.querySelectorAll('#notebook img').length,"
                                  " [...document.querySelectorAll('#notebook img')].map(i => i.src)]")
            ARTIFACTS.mkdir(exist_ok=True)
            page.screenshot(path=str(ARTIFACTS / "formgrader-student-markup.png"), full_page=True)
            browser.close()
    finally:
        stop_group(process)
    owned, images, sources = flags
    assert owned is None, f"a script of the student's ran: window.owned = {owned}"
    assert all(src.startswith("data:image/") for src in sources), sources
    assert "<img src=x onerror=" in shown.replace("\u2060", ""), shown
    assert any("/formgrader/api/" in url for _, url in requests), "the formgrader's own scripts did not run"
    assert not [(m, u) for m, u in requests if m != "GET" or u.rstrip("/").endswith("/x")
                or "javascript" in u], requests
