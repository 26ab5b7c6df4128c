"""The Russian edition is a twin of the English one: same lessons, same cells in the same order, the same code once
strings and comments are set aside, and Russian text; it is stored clean and runs like the English one."""
from __future__ import annotations

import pathlib

import nbformat
import pytest

from tests.notebooks import editions
from tests.notebooks.editions import LANGUAGE_LINE, code_shape, is_russian, require_edition, require_lesson

NOTEBOOKS = pathlib.Path(__file__).resolve().parents[2] / "notebooks"
RUSSIAN = NOTEBOOKS / "ru"
LESSONS = sorted(NOTEBOOKS.glob("[0-9][0-9]-*.ipynb"))


def twin(path: pathlib.Path) -> pathlib.Path:
    return RUSSIAN / path.name


@pytest.fixture(autouse=True)
def russian_edition_present(request):
    """Until notebooks/ru/ holds the lessons, their checks skip with the reason (and fail under CI)."""
    if request.node.name.startswith("test_the_shape_ignores"):
        return
    path = getattr(request.node, "callspec", None) and request.node.callspec.params.get("path")
    if path is not None:
        require_lesson(twin(path))
    else:
        require_edition(editions.RUSSIAN)


def test_every_lesson_has_a_russian_twin():
    missing = [p.name for p in LESSONS if not twin(p).exists()]
    extra = sorted({p.name for p in RUSSIAN.glob("*.ipynb")} - {p.name for p in LESSONS})
    assert not missing and not extra, f"missing Russian twins: {missing}; Russian lessons without an original: {extra}"
    assert (RUSSIAN / "README.md").exists(), "notebooks/ru/README.md is missing"


@pytest.mark.parametrize("path", LESSONS, ids=lambda p: p.stem)
def test_same_cells_in_the_same_order(path):
    en, ru = nbformat.read(path, as_version=4), nbformat.read(twin(path), as_version=4)
    assert [c.cell_type for c in ru.cells] == [c.cell_type for c in en.cells], \
        f"{path.name}: the Russian twin's cells differ in number or type from the English lesson's"
    for i, (a, b) in enumerate(zip(en.cells, ru.cells)):
        if a.cell_type == "code":
            assert code_shape(b.source) == code_shape(a.source), \
                f"{path.name}, cell {i}: the code differs (beyond strings and comments):\n{a.source}\n---\n{b.source}"


@pytest.mark.parametrize("path", LESSONS, ids=lambda p: p.stem)
def test_the_first_code_cell_chooses_russian(path):
    ru = nbformat.read(twin(path), as_version=4)
    first = next(c for c in ru.cells if c.cell_type == "code")
    assert first.source.splitlines()[0].strip() == LANGUAGE_LINE, \
        f"{path.name}: the first code cell should start with {LANGUAGE_LINE!r}"


@pytest.mark.parametrize("path", LESSONS, ids=lambda p: p.stem)
def test_markdown_is_russian(path):
    ru = nbformat.read(twin(path), as_version=4)
    english = [c.source[:120] for c in ru.cells if c.cell_type == "markdown" and not is_russian(c.source)]
    assert not english, f"{path.name}: markdown cells still in English: {english}"


@pytest.mark.parametrize("path", LESSONS, ids=lambda p: p.stem)
def test_stored_without_outputs(path):
    ru = nbformat.read(twin(path), as_version=4)
    nbformat.validate(ru)
    assert all(c.outputs == [] and c.execution_count is None for c in ru.cells if c.cell_type == "code"), \
        f"{path.name}: the Russian twin was saved with outputs"


def test_the_shape_ignores_strings_and_comments_only():
    assert code_shape('print("hello")  # a note') == code_shape(f'{LANGUAGE_LINE}\nprint("привет")  # заметка')
    assert code_shape("lab.scale('web', 3)") != code_shape("lab.scale('web', 4)")
    assert is_russian("Под живёт недолго: его IP меняется, а ClusterIP Service остаётся.")
    assert not is_russian("A Pod is mortal: its IP changes, while the Service's ClusterIP stays.")
