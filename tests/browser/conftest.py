"""The browser tier's one JupyterLab (the student's, as `make lab` starts it) and one Chromium, shared by its tests.

JupyterLab serves a temporary copy of notebooks/ on 127.0.0.1 with a token; screenshots and the server's log are
kept in test-artifacts/ (git-ignored).
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
from tests.processes import stop_group

ROOT = pathlib.Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts"
CHROMIUM_ARGS = ["--no-sandbox", "--headless", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-dev-shm-usage"]


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


class Server:
    """A running JupyterLab: its base URL, token and the folder it serves."""

    def __init__(self, base: str, token: str, root: pathlib.Path):
        self.base, self.token, self.root = base, token, root

    def url(self, notebook: str) -> str:
        return f"{self.base}/lab/tree/{notebook}?token={self.token}&reset"


@pytest.fixture(scope="package")
def jupyterlab(tmp_path_factory):
    """The student's JupyterLab (`python -m labsupport.student_lab`, as `make lab` runs it) for the whole tier."""
    require_browser()
    tmp = tmp_path_factory.mktemp("browser")
    served = tmp / "notebooks"
    shutil.copytree(ROOT / "notebooks", served)
    lesson_up_to_the_graph(ROOT / "notebooks" / "00-start-here.ipynb", served / "00-up-to-the-picture.ipynb")
    port, token = free_port(), secrets.token_hex(16)
    env = dict(os.environ, JUPYTER_CONFIG_DIR=str(tmp / "config"), JUPYTER_RUNTIME_DIR=str(tmp / "runtime"),
               JUPYTER_DATA_DIR=str(tmp / "data"), LABSUPPORT_BACKEND="sim", PYTHONPATH=str(ROOT),
               LABSUPPORT_EXCHANGE=str(tmp / "no-exchange"))
    log_path = tmp / "jupyterlab.log"
    log = open(log_path, "w")
    server = subprocess.Popen(
        [sys.executable, "-m", "labsupport.student_lab", "--no-browser", "--ip=127.0.0.1", f"--port={port}",
         f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={served}",
         "--LabApp.expose_app_in_browser=True", "--ServerApp.open_browser=False"],
        stdout=log, stderr=subprocess.STDOUT, env=env, cwd=tmp, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + 90
        while True:
            try:
                urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=2).close()
                break
            except OSError:
                if server.poll() is not None or time.time() > deadline:
                    log.flush()
                    pytest.fail("JupyterLab did not start:\n" + log_path.read_text()[-3000:])
                time.sleep(0.3)
        yield Server(base, token, served)
    finally:
        stop_group(server)
        log.close()
        ARTIFACTS.mkdir(exist_ok=True)
        shutil.copy(log_path, ARTIFACTS / "browser-jupyterlab.log")


@pytest.fixture(scope="package")
def browser(jupyterlab):
    """One headless Chromium for the tier."""
    chromium = require_browser()
    from playwright.sync_api import sync_playwright
    with sync_playwright() as p:
        launched = p.chromium.launch(executable_path=chromium if os.path.exists(chromium) else "/usr/bin/chromium",
                                     args=CHROMIUM_ARGS)
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture
def page(browser, request):
    """A fresh page; a screenshot of it is kept when the test fails."""
    ARTIFACTS.mkdir(exist_ok=True)
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    yield page
    failed = getattr(request.node, "rep_call", None)
    if failed is not None and failed.failed:
        page.screenshot(path=str(ARTIFACTS / f"browser-failure-{request.node.name}.png"), full_page=True)
    context.close()


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.when == "call":
        item.rep_call = report
