"""The text names JupyterLab 4's menus as JupyterLab 4 spells them."""
from __future__ import annotations

import pathlib
import re

import nbformat
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted(ROOT.glob("notebooks/*.ipynb")) + sorted(ROOT.glob("grading/source/*/*.ipynb"))
#: Menu names of the classic Notebook and JupyterLab 3 that JupyterLab 4 no longer shows.
OLD_NAMES = re.compile(r"Restart (&|and) Run All(?! Cells)|Restart (&|and) Clear Output|Cell ▸ Run All|"
                       r"Kernel → Restart(?! Kernel)|Restart & ", re.I)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.parent.name + "/" + p.stem)
def test_menu_names_are_jupyterlab_4s(path):
    nb = nbformat.read(path, as_version=4)
    text = "\n".join(c.source for c in nb.cells)
    old = OLD_NAMES.search(text)
    assert old is None, f"{path.name} names an old menu item: {old.group(0)!r} (JupyterLab 4: 'Restart Kernel and Run All Cells…')"


def test_the_assignment_preamble_names_the_menu_item():
    text = (ROOT / "grading" / "build_source.py").read_text()
    assert "Kernel ▸ Restart Kernel and Run All Cells…" in text and not OLD_NAMES.search(text)
