"""What a student sees in the browser, one test per bug that was reported: lesson 00 after Run All, its live
picture's controls, JupyterLab's own chrome, and Validate on a failing check."""
from __future__ import annotations

import nbformat
import pytest

from tests.browser.conftest import ARTIFACTS
from tests.browser.notebook_page import (LIVE, button, control, open_notebook, run_all, shut_down_kernel,
                                        status_line, wait_count)

pytestmark = pytest.mark.browser
PODS = f"{LIVE} svg.cluster-graph g.pod"
RED = "rgb(183, 28, 28)"


@pytest.fixture(scope="module")
def lesson(browser, jupyterlab):
    """Lesson 00 after Run All, in one page the tests of this module share (in order)."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    open_notebook(page, jupyterlab, "00-start-here.ipynb")
    assert not run_all(page)
    page.locator(LIVE).scroll_into_view_if_needed()
    yield page
    page.screenshot(path=str(ARTIFACTS / "browser-student-view.png"), full_page=False)
    shut_down_kernel(page)
    context.close()


def test_no_news_prompt_and_no_instructor_tools(lesson):
    lesson.wait_for_timeout(1500)
    body = lesson.locator("body").inner_text()
    assert "Would you like to get notified" not in body
    assert "Error fetching courses" not in body
    assert lesson.locator("#jp-mainmenu-nbgrader").count() == 0, "the Nbgrader menu (formgrader) is shown"
    assert lesson.locator(".nbgrader-NotebookPanel-CreateAssignment, .nbgrader-CreateAssignmentWidget").count() == 0
    assert lesson.get_by_text("Validate", exact=True).count() >= 1, "Validate must stay"


def test_try_it_read_the_fresh_picture(lesson):
    assert lesson.locator(PODS).count() == 5


def test_replica_box_shows_the_current_count(lesson):
    assert control(lesson, "replicas").locator("input").input_value() == "5"


def test_pod_choices_drop_the_namespace_and_keep_the_suffix(lesson):
    chosen = control(lesson, "pod").locator("select").evaluate("s => s.options[s.selectedIndex].text")
    assert not chosen.startswith("default/") and chosen.startswith("web-") and len(chosen.rsplit("-", 1)[-1]) == 5


def test_labels_line_up_with_their_controls(lesson):
    lefts = [control(lesson, name).bounding_box()["x"] for name in ("workload", "pod", "mode", "service", "source")]
    assert max(lefts) - min(lefts) < 4, f"controls start at {lefts}"
    label = lesson.locator(f"{LIVE} .labsupport-label", has_text="kube-proxy").first.bounding_box()
    toggles = control(lesson, "mode").bounding_box()
    assert abs((label["y"] + label["height"] / 2) - (toggles["y"] + toggles["height"] / 2)) < 6, \
        "the kube-proxy label is not beside its toggles"


def test_break_readiness_without_a_probe_says_nothing_changes(lesson):
    button(lesson, "break readiness").click()
    lesson.wait_for_function(f"document.querySelector('{LIVE} > .widget-html:last-child')"
                             f".innerText.includes('readiness probe')", timeout=20_000)
    text, color, _ = status_line(lesson)
    assert "no readiness probe" in text and "nothing changes" in text and color == RED


def test_a_failed_request_is_red(lesson):
    control(lesson, "url").locator("input").fill("http://no-such-service")
    control(lesson, "url").locator("input").press("Enter")
    button(lesson, "send request").click()
    lesson.wait_for_function(f"document.querySelector('{LIVE} > .widget-html:last-child')"
                             f".innerText.toLowerCase().includes('resolve')", timeout=20_000)
    text, color, _ = status_line(lesson)
    assert color == RED, f"{text!r} is shown in {color}"


def test_switching_the_proxy_mode_clears_the_path(lesson):
    ip = lesson.locator(f"{PODS}.ready").first.locator("text").nth(1).text_content()
    control(lesson, "url").locator("input").fill(f"http://{ip}")
    control(lesson, "url").locator("input").press("Enter")
    button(lesson, "send request").click()
    wait_count(lesson, f"{LIVE} svg.cluster-graph g.trace-step", "n > 0")
    control(lesson, "mode").locator("button", has_text="nftables").click()
    wait_count(lesson, f"{LIVE} svg.cluster-graph g.trace-step", "n === 0")
    assert "nftables" in lesson.locator(f"{LIVE} svg.cluster-graph").first.inner_html()


def test_trace_numbers_do_not_cover_pod_names(lesson):
    ip = lesson.locator(f"{PODS}.ready").nth(1).locator("text").nth(1).text_content()
    control(lesson, "url").locator("input").fill(f"http://{ip}")
    control(lesson, "url").locator("input").press("Enter")
    button(lesson, "send request").click()
    wait_count(lesson, f"{LIVE} svg.cluster-graph g.trace-step", "n > 0")
    overlaps = lesson.evaluate(f"""() => {{
      const boxes = [...document.querySelectorAll('{PODS} text')].map(t => t.getBoundingClientRect());
      const hit = (a, b) => a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom;
      return [...document.querySelectorAll('{LIVE} circle.trace-number')]
        .filter(c => boxes.some(b => hit(c.getBoundingClientRect(), b))).length;
    }}""")
    assert overlaps == 0, f"{overlaps} step number(s) sit on a pod's name"


def test_presenter_mode_fits_three_zones(lesson):
    button(lesson, "presenter").click()
    lesson.wait_for_timeout(1500)
    picture = lesson.locator(f"{LIVE} .labsupport-cluster-graph").first.bounding_box()
    zones = [z.bounding_box() for z in lesson.locator(f"{LIVE} svg.cluster-graph g.zone").all()]
    lesson.screenshot(path=str(ARTIFACTS / "browser-presenter.png"), full_page=False)
    assert len(zones) == 3
    assert all(z["x"] + z["width"] <= picture["x"] + picture["width"] + 1 for z in zones), \
        f"a zone is off screen: {zones} in {picture}"
    button(lesson, "presenter").click()


def test_validate_shows_the_checks_message(page, jupyterlab):
    from tests.grading.test_check_messages import FAILING, notebook
    nbformat.write(notebook(FAILING), jupyterlab.root / "assignment-check.ipynb")
    open_notebook(page, jupyterlab, "assignment-check.ipynb")
    page.get_by_text("Validate", exact=True).first.click()
    dialog = page.locator(".jp-Dialog")
    dialog.wait_for(timeout=120_000)
    page.wait_for_function("document.querySelector('.jp-Dialog') &&"
                           " document.querySelector('.jp-Dialog').innerText.includes('failed')", timeout=120_000)
    text = " ".join(dialog.inner_text().split())
    page.screenshot(path=str(ARTIFACTS / "browser-validate.png"), full_page=False)
    assert "checks.py" not in text, text
    assert "app=web (3 pods)" in text, text
    shut_down_kernel(page)
