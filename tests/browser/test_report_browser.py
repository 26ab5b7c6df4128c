"""A real browser opens the class report of a graded batch (histogram, per-test and per-student tables, follow-up)
and a student's feedback page (a failure message wraps inside its box). Screenshots go to test-artifacts/."""
from __future__ import annotations

import subprocess

import pytest

from tests.browser.conftest import ARTIFACTS
from tests.grading.course import BIN, Course

pytestmark = [pytest.mark.browser, pytest.mark.slow]

ASSIGNMENT = "01-endpointslices"


def test_report_opens_with_histogram_and_test_table(tmp_path, page):
    course = Course(tmp_path / "course")
    course.nbgrader("generate_assignment", ASSIGNMENT, "--force")
    course.submit(ASSIGNMENT, "alice", course.solved(ASSIGNMENT))
    course.submit(ASSIGNMENT, "bob", course.release(ASSIGNMENT))
    for args in (["grade", ASSIGNMENT, "--workers", "2"], ["report", ASSIGNMENT, "-o", "report.html"]):
        proc = subprocess.run([str(BIN / "labsupport"), *args], cwd=course.root, env=course.env,
                              capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, proc.stdout + proc.stderr
    report = course.root / "report.html"

    requests = []
    page.on("request", lambda r: requests.append(r.url))
    page.goto(report.as_uri())
    histogram = page.locator("#score-histogram svg")
    assert histogram.count() == 1 and histogram.bounding_box()["height"] > 50
    # one full and one blank submission: a bar at 0 and a bar at the maximum, both drawn
    bars = page.locator("#score-histogram svg [id^=score-bar-]")
    assert bars.count() == 2
    assert all(bars.nth(i).bounding_box()["height"] > 5 for i in range(2))
    rows = page.locator("#per-test tbody tr")
    assert rows.count() == 7
    first = rows.nth(0).inner_text()
    assert "deploy-test" in first and "1 / 2" in first and "50%" in first
    assert "no Deployment" in page.locator("table.failures").first.inner_text()
    assert all(url.startswith("file:") for url in requests), requests
    students = page.locator("#per-student tbody tr")
    cells = [students.nth(i).inner_text().split("\t") for i in range(students.count())]
    most = cells[0][1].split(" / ")[1]
    assert [c[:2] for c in cells] == [["alice", f"{most} / {most}"], ["bob", f"0 / {most}"]]
    assert cells[0][2] == "100%" and cells[1][2] == "0%"
    follow_up = page.locator("#follow-up")
    assert follow_up.evaluate("e => e.tagName") == "P" and follow_up.inner_text().startswith("None")
    assert follow_up.bounding_box()["height"] > 5
    page.locator("#per-student").scroll_into_view_if_needed()
    page.screenshot(path=str(ARTIFACTS / "browser-report-students.png"), full_page=True)

    # bob's feedback: each failure message wraps inside its output box, its end (the hint) on screen
    course.nbgrader("generate_feedback", ASSIGNMENT, "--student", "bob", "--force")
    feedback = next((course.root / "feedback" / "bob" / ASSIGNMENT).glob("*.html"))
    page.set_viewport_size({"width": 1000, "height": 900})
    page.goto(feedback.as_uri())
    errors = page.locator("div.output_error pre")
    assert errors.count() >= 1
    page.screenshot(path=str(ARTIFACTS / "browser-feedback-wrapped.png"), full_page=True)
    for i in range(errors.count()):
        pre = errors.nth(i)
        box, text = pre.bounding_box(), pre.inner_text()
        assert pre.evaluate("e => e.scrollWidth <= e.clientWidth + 1"), f"cut at the box edge: {text[:80]}"
        assert box["x"] + box["width"] <= 1000, box
        if len(text) > 150:
            assert box["height"] > 30, f"a long message on one line: {text[:80]}"
