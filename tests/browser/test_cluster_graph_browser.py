"""A real browser: JupyterLab runs a lesson, the ClusterGraph shows its pods, and the widget's delete button works.

Screenshots are kept in test-artifacts/ (git-ignored).
"""
from __future__ import annotations

import os
import pathlib
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.request

import nbformat
import pytest

from labsupport.testing import require_browser

pytestmark = pytest.mark.browser

ROOT = pathlib.Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts"
CHROMIUM_ARGS = ["--no-sandbox", "--headless", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
LESSON = "00-start-here.ipynb"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def lesson_up_to_the_graph(source: pathlib.Path, target: pathlib.Path) -> None:
    """Copy a lesson, keeping its cells up to the one that shows the cluster picture."""
    nb = nbformat.read(source, as_version=4)
    cut = next(i for i, c in enumerate(nb.cells) if c.cell_type == "code" and "lab.graph()" in c.source)
    nb.cells = nb.cells[:cut + 1]
    nbformat.write(nb, target)


@pytest.fixture
def jupyterlab(tmp_path):
    """JupyterLab on 127.0.0.1 with a token, serving a temporary copy of notebooks/; yields its base URL."""
    require_browser()
    shutil.copytree(ROOT / "notebooks", tmp_path / "notebooks")
    lesson_up_to_the_graph(ROOT / "notebooks" / LESSON, tmp_path / "notebooks" / LESSON)
    port, token = free_port(), secrets.token_hex(16)
    env = dict(os.environ, JUPYTER_CONFIG_DIR=str(tmp_path / "config"), JUPYTER_RUNTIME_DIR=str(tmp_path / "runtime"),
               LABSUPPORT_BACKEND="sim", PYTHONPATH=str(ROOT))
    log = open(tmp_path / "jupyterlab.log", "w")
    server = subprocess.Popen(
        [sys.executable, "-m", "jupyterlab", "--no-browser", "--allow-root", "--ip=127.0.0.1", f"--port={port}",
         f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={tmp_path / 'notebooks'}",
         "--LabApp.expose_app_in_browser=True", "--LabApp.news_url=", "--ServerApp.open_browser=False"],
        stdout=log, stderr=subprocess.STDOUT, env=env, cwd=tmp_path)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + 60
        while True:
            try:
                with urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=2):
                    break
            except OSError:
                if server.poll() is not None or time.time() > deadline:
                    log.flush()
                    pytest.fail("JupyterLab did not start:\n" + (tmp_path / "jupyterlab.log").read_text()[-3000:])
                time.sleep(0.3)
        yield base, token
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
        log.close()
        ARTIFACTS.mkdir(exist_ok=True)
        shutil.copy(tmp_path / "jupyterlab.log", ARTIFACTS / "browser-jupyterlab.log")


def test_lesson_runs_and_the_graph_follows_a_deleted_pod(jupyterlab):
    chromium = require_browser()
    from playwright.sync_api import sync_playwright
    base, token = jupyterlab
    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium if os.path.exists(chromium) else "/usr/bin/chromium",
                                    args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        try:
            page.goto(f"{base}/lab/tree/{LESSON}?token={token}&reset", timeout=60_000)
            page.wait_for_function("window.jupyterapp && window.jupyterapp.shell.currentWidget"
                                   " && window.jupyterapp.shell.currentWidget.sessionContext"
                                   " && window.jupyterapp.shell.currentWidget.sessionContext.session"
                                   " && window.jupyterapp.shell.currentWidget.sessionContext.session.kernel",
                                   timeout=60_000)
            page.wait_for_timeout(1000)
            page.evaluate("window.jupyterapp.commands.execute('notebook:run-all-cells')")
            pods = page.locator("svg.cluster-graph g.pod")
            pods.first.wait_for(timeout=90_000)
            page.wait_for_function("document.querySelectorAll('svg.cluster-graph g.pod').length === 3",
                                   timeout=60_000)
            page.locator("svg.cluster-graph").first.scroll_into_view_if_needed()
            page.screenshot(path=str(ARTIFACTS / "browser-1-three-pods.png"), full_page=True)
            assert pods.count() == 3
            assert page.locator("svg.cluster-graph g.pod.ready").count() == 3

            page.locator(".labsupport-controls button", has_text="delete pod").first.click()
            page.wait_for_function(
                "document.querySelectorAll('svg.cluster-graph g.pod.terminating').length === 1", timeout=30_000)
            page.screenshot(path=str(ARTIFACTS / "browser-2-terminating.png"), full_page=True)
            terminating = page.locator("svg.cluster-graph g.pod.terminating")
            assert terminating.count() == 1
            assert terminating.first.get_attribute("data-state") == "terminating"
        except Exception:
            page.screenshot(path=str(ARTIFACTS / "browser-failure.png"), full_page=True)
            raise
        finally:
            browser.close()
