"""A real browser: a lesson's first cells run in JupyterLab, the ClusterGraph shows its pods, and its delete button
works. Screenshots are kept in test-artifacts/ (git-ignored)."""
from __future__ import annotations

import pytest

from tests.browser.conftest import ARTIFACTS
from tests.browser.notebook_page import LIVE, button, open_notebook, run_all

pytestmark = pytest.mark.browser


def test_lesson_runs_and_the_graph_follows_a_deleted_pod(page, jupyterlab):
    open_notebook(page, jupyterlab, "00-up-to-the-picture.ipynb")
    assert not run_all(page)
    pods = page.locator(f"{LIVE} svg.cluster-graph g.pod")
    page.wait_for_function(f"document.querySelectorAll('{LIVE} svg.cluster-graph g.pod').length === 3",
                           timeout=60_000)
    page.locator(LIVE).scroll_into_view_if_needed()
    page.screenshot(path=str(ARTIFACTS / "browser-1-three-pods.png"), full_page=True)
    assert pods.count() == 3
    assert page.locator(f"{LIVE} svg.cluster-graph g.pod.ready").count() == 3

    button(page, "delete pod").click()
    page.wait_for_function(
        f"document.querySelectorAll('{LIVE} svg.cluster-graph g.pod.terminating').length === 1", timeout=30_000)
    page.screenshot(path=str(ARTIFACTS / "browser-2-terminating.png"), full_page=True)
    terminating = page.locator(f"{LIVE} svg.cluster-graph g.pod.terminating")
    assert terminating.count() == 1
    assert terminating.first.get_attribute("data-state") == "terminating"


def test_a_saved_lesson_reopened_without_its_kernel_shows_the_picture(page, jupyterlab):
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    from tests.browser.notebook_page import shut_down_kernel
    open_notebook(page, jupyterlab, "00-up-to-the-picture.ipynb")
    assert not run_all(page)
    page.wait_for_function(f"document.querySelectorAll('{LIVE} svg.cluster-graph g.pod').length === 3",
                           timeout=60_000)
    # the command's promise settles once the file (with the widgets' state) is written
    page.evaluate("async () => { await window.jupyterapp.commands.execute('docmanager:save'); }")
    shut_down_kernel(page)
    page.wait_for_timeout(1000)
    page.goto(jupyterlab.url("00-up-to-the-picture.ipynb").replace("&reset", ""), timeout=90_000)
    page.wait_for_function("window.jupyterapp && window.jupyterapp.shell.currentWidget"
                           " && window.jupyterapp.shell.currentWidget.content", timeout=90_000)
    try:    # the saved picture is drawn from the widgets' saved state, with no kernel: as soon as the page has it
        page.wait_for_function("document.querySelectorAll('svg.cluster-graph g.pod').length === 3", timeout=60_000)
    except PlaywrightTimeout:
        pass    # the assertions below say what is missing
    page.screenshot(path=str(ARTIFACTS / "browser-3-reopened.png"), full_page=True)
    assert "Error displaying widget" not in page.locator("body").inner_text()
    assert page.locator("svg.cluster-graph g.pod").count() == 3, "the saved notebook lost its picture"
