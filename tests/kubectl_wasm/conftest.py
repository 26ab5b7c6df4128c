"""The kubectl-wasm tier: kubectl built for WebAssembly (make kubectl-wasm), run under Node, in Pyodide under Node
and in Pyodide in Chromium, always set beside the native kubectl. Under CI a missing tool or build fails the tier."""
from __future__ import annotations

import importlib.util
import shutil
import subprocess
from pathlib import Path

import pytest

from labsupport import Lab
from labsupport.testing import require
from tests.kubectl_wasm import steps

ROOT = Path(__file__).resolve().parents[2]
WASM_DIR = ROOT / "build" / "kubectl-wasm"
#: The Pyodide the browser edition ships (npm's package: the core, no wheels).
PYODIDE = "314.0.6"
PYODIDE_DIR = ROOT / "build" / "pyodide-node"
#: What `Lab()` and `lab.kubectl` import besides the standard library (all pure Python).
PURE = ["yaml", "networkx", "dnslib", "jsonpatch", "jsonpointer", "websockets"]

#: Python for Pyodide: the lesson's steps, then a command a tab cannot run, in both languages; JSON out.
IN_PYODIDE = """
import json, os, time
from labsupport import Lab
from tests.kubectl_wasm import steps
lab = Lab(seed=0)
started = time.monotonic()
out = {"steps": steps.take(lab), "refusals": {}}
out["seconds"] = time.monotonic() - started
for lang in ("en", "ru"):
    os.environ["LABSUPPORT_LANG"] = lang
    result = lab.kubectl("exec -it web -- sh", show=False)
    out["refusals"][lang] = [result.stdout, result.stderr, result.returncode]
json.dumps(out)
"""


def require_tier(*tools: str) -> None:
    """Skip (fail under CI) unless the tools and kubectl.wasm are here."""
    problems = [f"{tool} (apt-get install nodejs npm)" for tool in tools if shutil.which(tool) is None]
    if not (WASM_DIR / "kubectl.wasm").is_file():
        problems.append("build/kubectl-wasm/kubectl.wasm (make kubectl-wasm)")
    require(problems, "kubectl-wasm")


@pytest.fixture(scope="session")
def pyodide_dir() -> Path:
    """Pyodide's npm package, unpacked once into build/pyodide-node/."""
    require_tier("node", "npm")
    package = PYODIDE_DIR / f"pyodide-{PYODIDE}"
    if not (package / "pyodide.mjs").is_file():
        PYODIDE_DIR.mkdir(parents=True, exist_ok=True)
        packed = subprocess.run(["npm", "pack", f"pyodide@{PYODIDE}"], cwd=PYODIDE_DIR, capture_output=True,
                                text=True)
        if packed.returncode:
            pytest.fail(f"npm pack pyodide@{PYODIDE} failed: {packed.stderr.strip()}", pytrace=False)
        from lite.build import unpack_npm
        unpack_npm(PYODIDE_DIR / packed.stdout.strip().splitlines()[-1], package)
    return package


@pytest.fixture(scope="session")
def pure_site_packages() -> Path:
    """labsupport's pure dependencies, copied from this venv into build/pyodide-node/site-packages/ (the site
    ships them as wheels; the venv's other packages are built for CPython and must not shadow anything)."""
    target = PYODIDE_DIR / "site-packages"
    for name in PURE:
        source = Path(importlib.util.find_spec(name).origin)
        if source.name == "__init__.py":
            if not (target / name).is_dir():
                shutil.copytree(source.parent, target / name, ignore=shutil.ignore_patterns("*.so", "__pycache__"))
        elif not (target / source.name).is_file():
            target.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, target / source.name)
    return target


@pytest.fixture(scope="session")
def native_steps() -> list[dict]:
    """What the native kubectl prints for the lesson's steps on CPython."""
    with Lab(backend="sim", seed=0) as lab:
        return steps.take(lab)


def assert_same_as_native(got: list[dict], native: list[dict]) -> None:
    """Every step printed the same stdout and stderr and exited the same way."""
    assert [r["command"] for r in got] == [r["command"] for r in native]
    for mine, theirs in zip(got, native):
        assert mine == theirs, mine["command"]
    watch = next(r for r in got if " -w" in r["command"])
    assert len(watch["stdout"].splitlines()) == 5, "a header and the 4 rows asked for"


def assert_refusals(refusals: dict) -> None:
    """`kubectl exec -it` in a tab: one line saying where it works, in English and Russian, exit code 1."""
    out, err, code = refusals["en"]
    assert (out, code) == ("", 1)
    assert err == ("`kubectl exec -it` needs a terminal or a live connection to a container, which a browser tab "
                   "cannot give: run it in the course's JupyterLab (`make lab`) or in a terminal beside it\n")
    assert refusals["ru"][1].startswith("`kubectl exec -it` нужен терминал")
