"""The classroom tier's one class: a term made once for every module that needs it (classterm.py), taken down
after the last of them (also when the term fails)."""
from __future__ import annotations

import pathlib
import shutil
import subprocess
import tempfile
import time

import pytest

from labsupport.hub.roster import class_accounts
from labsupport.testing import chromium_path, require
from tests.classroom.classterm import ARTIFACTS, BIN, Term, missing


@pytest.fixture(scope="session")
def term():
    """One term, in a class made for it and taken down after it."""
    require(missing(), "classroom")
    directory = pathlib.Path(tempfile.mkdtemp(prefix="labsupport-class-"))
    directory.chmod(0o755)
    from playwright.sync_api import sync_playwright

    from tests.browser.conftest import CHROMIUM_ARGS
    began = time.monotonic()
    done = Term(directory / "class")
    try:
        # The browser is closed once the term has run: Playwright's event loop would stay in this thread and stop
        # every later test that runs one of its own (asyncio.run).
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
            try:
                done.start(browser)
            finally:
                browser.close()
        yield done
    finally:
        print("classroom term, seconds per step:", {k: round(v, 1) for k, v in done.seconds.items()})
        ARTIFACTS.mkdir(exist_ok=True)
        if (directory / "class" / "hub" / "hub.log").exists():
            shutil.copy(directory / "class" / "hub" / "hub.log", ARTIFACTS / "classroom-hub.log")
        down = subprocess.run([str(BIN / "labsupport"), "class", "down", "--state-dir", str(directory / "class")],
                              capture_output=True, text=True, timeout=300)
        shutil.rmtree(directory, ignore_errors=True)
        print(f"classroom term: {time.monotonic() - began:.0f} s in all")
        assert down.returncode == 0, down.stderr
        assert class_accounts() == [], "class down left accounts"
