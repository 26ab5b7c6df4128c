"""The browser edition's tier: the site `make lite` built, served on loopback, driven in headless Chromium with every
request that would leave loopback aborted (and recorded: one is a failure). Under CI a missing site or browser fails
the tier."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Iterator

import pytest

from labsupport.testing import chromium_path, require
from lite import serve, tab as driver

ROOT = Path(__file__).resolve().parents[2]
SITE = serve.SITE


def require_site() -> str:
    """Chromium's path; skip (fail under CI) unless the site and Chromium are here."""
    problems = []
    if not (SITE / "index.html").is_file():
        problems.append("build/lite/ (make lite)")
    chromium = chromium_path()
    if not chromium:
        problems.append("Chromium (apt-get install chromium)")
    require(problems, "browser edition (lite)")
    return chromium or ""


@pytest.fixture(scope="session")
def tab() -> Iterator[driver.Tab]:
    """Chromium on the served site's lab page, the app started; one for the whole tier (each lesson gets its own
    kernel)."""
    chromium = require_site()
    with driver.served(SITE) as base, driver.tab(base, chromium) as opened:
        print(f"\n[lite] the app in {opened.started_in:.1f} s")
        yield opened


def errors(cells: list[dict]) -> list[str]:
    """Every error output, and every code cell that did not run, as lines a failure shows."""
    out = []
    for cell in cells:
        if cell["count"] is None:
            out.append(f"cell {cell['index']} did not run: {cell['source'][:80]!r}")
        for output in cell["outputs"]:
            if output.get("output_type") == "error":
                out.append(f"cell {cell['index']}: {output['ename']}: {output['evalue'][:300]}\n"
                           f"  {cell['source'][:200]!r}")
    return out


def dumps(value) -> str:
    return json.dumps(value, ensure_ascii=False)[:2000]
