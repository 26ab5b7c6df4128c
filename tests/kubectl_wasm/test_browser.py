"""`lab.kubectl` in Chromium: Pyodide in a module worker (as in a JupyterLite kernel), labsupport and kubectl.wasm
served on loopback, every other request aborted. The lesson's steps print what the native kubectl prints."""
from __future__ import annotations

import io
import json
import threading
import time
import zipfile
from functools import partial
from http.server import ThreadingHTTPServer
from pathlib import Path

import pytest

from labsupport.testing import require_browser
from lite.serve import SiteHandler
from tests.kubectl_wasm.conftest import (IN_PYODIDE, ROOT, WASM_DIR, assert_refusals, assert_same_as_native)

PAGE = Path(__file__).with_name("page")
#: Three runs of one command, after the steps: the first kubectl of a kernel compiles kubectl.wasm, later ones not.
TIMED = """
import json, time
times = []
for _ in range(3):
    started = time.monotonic()
    result = lab.kubectl("get pods -o wide", show=False)
    assert result.returncode == 0, result.stderr
    times.append(time.monotonic() - started)
json.dumps(times)
"""
FIRST = """
import time
from labsupport import Lab
lab = Lab(seed=0)
started = time.monotonic()
first = lab.kubectl("get nodes", show=False)
assert first.returncode == 0, first.stderr
str(time.monotonic() - started)
"""


def python_zip(pure_site_packages: Path) -> bytes:
    """labsupport, its pure dependencies and the steps module, as one zip for the worker to unpack."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as z:
        for folder, prefix in ((ROOT / "labsupport", "labsupport"), (pure_site_packages, "")):
            for path in sorted(folder.rglob("*")):
                if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".so":
                    z.write(path, str(Path(prefix) / path.relative_to(folder)))
        for name in ("tests/__init__.py", "tests/kubectl_wasm/__init__.py", "tests/kubectl_wasm/steps.py"):
            z.write(ROOT / name, name)
    return buffer.getvalue()


class _Site(SiteHandler):
    """The page, Pyodide, kubectl.wasm and the Python zip, with the headers and types the built site is served with."""

    mounts: dict[str, Path] = {}
    bundle: bytes = b""

    def end_headers(self) -> None:
        self.send_header("Cache-Control", "no-store")
        super().end_headers()

    def translate_path(self, path: str) -> str:
        path = path.split("?", 1)[0].lstrip("/")
        for prefix, folder in self.mounts.items():
            if path.startswith(prefix + "/"):
                return str(folder / path[len(prefix) + 1:])
        return str(PAGE / path)

    def do_GET(self) -> None:
        if self.path.split("?", 1)[0] == "/python.zip":
            self.send_response(200)
            self.send_header("Content-Type", "application/zip")
            self.send_header("Content-Length", str(len(self.bundle)))
            self.end_headers()
            self.wfile.write(self.bundle)
            return
        super().do_GET()


@pytest.fixture(scope="module")
def tab(pyodide_dir, pure_site_packages):
    """The page open in headless Chromium, its worker's Pyodide ready; yields (run(code) -> text, blocked URLs)."""
    chromium = require_browser()
    handler = type("Site", (_Site,), {"mounts": {"pyodide": pyodide_dir, "kubectl": WASM_DIR},
                                      "bundle": python_zip(pure_site_packages)})
    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(handler))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    from lite.tab import browser_page
    try:
        with browser_page(base, chromium) as (page, blocked, _):
            page.goto(base + "/index.html")
            page.wait_for_function("window.messages.length > 0", timeout=300_000)
            ready = page.evaluate("window.messages[0]")
            assert ready.get("ready") and ready["jspi"], ready

            def run(code: str, timeout_s: float = 600) -> str:
                seen = page.evaluate("window.messages.length")
                page.evaluate("(code) => window.runPython(code)", code)
                page.wait_for_function(f"window.messages.length > {seen}", timeout=timeout_s * 1000)
                message = page.evaluate(f"window.messages[{seen}]")
                assert message["ok"], message["error"]
                return message["out"]

            yield run, blocked
    finally:
        server.shutdown()   # also when the page never became ready


def test_kubectl_in_a_tab_prints_what_the_native_kubectl_prints(tab, native_steps):
    run, blocked = tab
    started = time.monotonic()
    first = float(run(FIRST))
    got = json.loads(run(IN_PYODIDE))
    times = json.loads(run(TIMED))
    print(f"\n[kubectl-wasm] in Chromium: first kubectl of the tab {first:.1f} s (fetch and compile included), "
          f"the lesson's {len(got['steps'])} steps {got['seconds']:.1f} s, then `get pods -o wide` "
          + ", ".join(f"{t:.2f}" for t in times) + f" s; {time.monotonic() - started:.0f} s in all")
    assert_same_as_native(got["steps"], native_steps)
    assert_refusals(got["refusals"])
    assert blocked == [], f"requests that tried to leave loopback: {blocked}"
