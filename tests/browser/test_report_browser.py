"""A real browser opens the class report of a graded batch and finds the histogram and the per-test table."""
from __future__ import annotations

import subprocess

import pytest

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
