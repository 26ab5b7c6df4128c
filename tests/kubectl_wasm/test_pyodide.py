"""`lab.kubectl` in Pyodide (under Node, JSPI on): labsupport runs kubectl.wasm against its in-process API server
and prints what the native kubectl prints on CPython, byte for byte, for the same steps on a lab of the same seed."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.kubectl_wasm.conftest import IN_PYODIDE, ROOT, WASM_DIR, assert_refusals, assert_same_as_native


@pytest.fixture(scope="module")
def in_pyodide(pyodide_dir, pure_site_packages) -> dict:
    """What the lesson's steps printed in Pyodide under Node, and the tab's refusals."""
    run = subprocess.run(["node", "--experimental-wasm-stack-switching", str(Path(__file__).with_name(
        "pyodide_node.mjs")), str(pyodide_dir), str(ROOT), str(pure_site_packages), str(WASM_DIR), IN_PYODIDE],
        capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    return json.loads(run.stdout)


def test_the_lessons_steps_print_what_the_native_kubectl_prints(in_pyodide, native_steps):
    assert_same_as_native(in_pyodide["steps"], native_steps)


def test_a_live_command_gets_one_line_saying_where_it_works(in_pyodide):
    assert_refusals(in_pyodide["refusals"])
