"""The browser edition (`make lite`'s site) against its targets, in one run:

- the site on disk, and the bytes of a cold first visit as a static host would send them gzip-compressed (each
  file fetched, compressed at gzip's level 6): the lab page, a lesson opened and run to its first picture;
  target ≤ 20 MB without kubectl, and what the first `lab.kubectl` adds (kubectl.wasm);
- time to the first picture on a cold visit (a fresh browser: page load, Pyodide, the lesson's cells up to the
  picture drawn); target ≤ 10 s on this machine;
- Pyodide in the tab against CPython here, the same code: `Lab()`, 100 `lab.curl`s, lesson 01's Run All.

Run: python bench/bench_lite.py [--quick]   (needs `make lite` and Chromium)
"""
from __future__ import annotations

import argparse
import gzip
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from labsupport.testing import chromium_path  # noqa: E402
from lite import serve, tab as driver  # noqa: E402
from tests.kubectl_wasm.steps import WEB  # noqa: E402

#: The cold visit's lesson: lesson 01 draws its picture in its first cell, before any kubectl (lesson 00 runs
#: kubectl first, so its picture waits for kubectl.wasm to be fetched and compiled).
LESSON = "01-pods-are-mortal.ipynb"
TIMED = "01-pods-are-mortal.ipynb"
#: The same code timed in the tab and on CPython: Lab(), then 100 requests through a Service (the kubectl-wasm
#: tier's Deployment and Service, `tests.kubectl_wasm.steps.WEB`).
WORK = """
import json as _json, time as _time
from labsupport import Lab as _Lab
_t0 = _time.perf_counter()
_lab = _Lab(seed=0)
_t1 = _time.perf_counter()
_lab.apply(WEB)
_lab.wait(lambda l: sum(p["status"].get("phase") == "Running" for p in l.get("pods")) == 3)
_url = "http://" + _lab.get("service", "web")["spec"]["clusterIP"]   # a node resolves no Service name
_node = "node/" + _lab.get("nodes")[0]["metadata"]["name"]
_t2 = _time.perf_counter()
for _ in range(100):
    assert _lab.curl(_url, source=_node).ok
_t3 = _time.perf_counter()
_lab.close()
print(_json.dumps({"Lab()": _t1 - _t0, "100 curls": _t3 - _t2}))
""".replace("WEB", repr(WEB))
#: The first picture of the lesson, drawn in the page (the live widget's SVG).
PICTURE = "document.querySelector('svg.cluster-graph') !== null"


def gzip_size(path: Path) -> int:
    return len(gzip.compress(path.read_bytes(), compresslevel=6))


def site_file(base: str, url: str) -> Path | None:
    """The file a response of the site came from (None: not a file of the site, e.g. the contents API)."""
    relative = url[len(base) + 1:].split("?", 1)[0].split("#", 1)[0]
    path = serve.SITE / relative
    if path.is_dir():
        path = path / "index.html"
    return path if path.is_file() else None


def cold_visit(base: str, chromium: str) -> dict:
    """A fresh browser: the lab page, the lesson opened and run until its first picture is drawn, then one
    `lab.kubectl`; bytes fetched (gzip) before and for kubectl, and the seconds to the picture."""
    fetched: dict[str, Path] = {}

    def seen(response) -> None:
        path = site_file(base, response.url)
        if path is not None:
            fetched.setdefault(response.url.split("?", 1)[0], path)

    started = time.monotonic()
    with driver.tab(base, chromium, on_response=seen) as tab:
        tab.open(LESSON)
        tab.page.evaluate("() => { window.jupyterapp.commands.execute('notebook:run-all-cells'); }")
        tab.page.wait_for_function(PICTURE, timeout=300_000, polling=100)
        picture = time.monotonic() - started
        before = dict(fetched)
        tab.execute("lab.kubectl('get pods', show=False)")
        kubectl = {url: path for url, path in fetched.items() if url not in before}
        blocked = list(tab.blocked)
        tab.close_all()
    return {"picture": picture, "first_visit_gzip": sum(gzip_size(p) for p in before.values()),
            "first_visit_files": len(before), "kubectl_gzip": sum(gzip_size(p) for p in kubectl.values()),
            "blocked": blocked}


def in_tab(base: str, chromium: str) -> dict:
    """WORK and lesson 01's Run All in the tab (after a warm-up run of WORK)."""
    with driver.tab(base, chromium) as tab:
        tab.open(TIMED)
        tab.execute(WORK)
        timed = json.loads(tab.execute(WORK).strip().splitlines()[-1])
        tab.close_all()
        tab.open(TIMED)
        timed["Run All (lesson 01)"] = tab.run_all()["seconds"]
        tab.close_all()
    return timed


def on_cpython() -> dict:
    """WORK and lesson 01's Run All on this CPython (a kernel, as a notebook runs it)."""
    import contextlib
    import io

    import nbformat
    from nbclient import NotebookClient
    for _ in range(2):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(compile(WORK, "<work>", "exec"), {})
    timed = json.loads(out.getvalue().strip().splitlines()[-1])
    nb = nbformat.read(ROOT / "notebooks" / TIMED, as_version=4)
    client = NotebookClient(nb, kernel_name="python3", timeout=300)
    with client.setup_kernel():
        started = time.monotonic()
        for index, cell in enumerate(nb.cells):
            client.execute_cell(cell, index)
        timed["Run All (lesson 01)"] = time.monotonic() - started
    return timed


def mb(n: float) -> str:
    return f"{n / 1e6:.1f} MB"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true", help="(the same run: it takes about a minute)")
    parser.parse_args(argv)
    chromium = chromium_path()
    if not (serve.SITE / "index.html").is_file() or not chromium:
        print("bench_lite: needs build/lite/ (make lite) and Chromium (apt-get install chromium)")
        return 1
    files = [p for p in serve.SITE.rglob("*") if p.is_file()]
    wasm = [p for p in files if "static/kubectl" in str(p)]
    print(f"site on disk: {mb(sum(p.stat().st_size for p in files))} in {len(files)} files "
          f"({mb(sum(p.stat().st_size for p in wasm))} of it kubectl for WebAssembly)")
    with driver.served() as base:
        cold = cold_visit(base, chromium)
        tab = in_tab(base, chromium)
    print(f"cold first visit (the lab, {LESSON} run to its picture): {mb(cold['first_visit_gzip'])} gzip in "
          f"{cold['first_visit_files']} files (target ≤ 20 MB); the first lab.kubectl adds "
          f"{mb(cold['kubectl_gzip'])} gzip")
    print(f"first picture on a cold visit: {cold['picture']:.1f} s (target ≤ 10 s)")
    cpython = on_cpython()
    print(f"{'':24}{'Pyodide (tab)':>16}{'CPython':>12}{'ratio':>8}")
    for key in cpython:
        print(f"{key:24}{tab[key]:>14.3f} s{cpython[key]:>10.3f} s{tab[key] / cpython[key]:>7.1f}×")
    if cold["blocked"]:
        print(f"requests that tried to leave the site: {cold['blocked']}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
