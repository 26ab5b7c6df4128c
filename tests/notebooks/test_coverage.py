"""The series covers the source lesson: every concept, command, pitfall, exercise and question of the checklist."""
from __future__ import annotations

import pathlib

import nbformat
import pytest

from tests.notebooks.lesson_checklist import CHECKLIST

NOTEBOOKS = pathlib.Path(__file__).resolve().parents[2] / "notebooks"


def series_text() -> str:
    parts = []
    for path in sorted(NOTEBOOKS.glob("[0-9][0-9]-*.ipynb")):
        parts.extend(c.source for c in nbformat.read(path, as_version=4).cells)
    return "\n".join(parts).lower()


TEXT = series_text()
ITEMS = [(group, name, phrases) for group, items in CHECKLIST.items() for name, phrases in items.items()]


@pytest.mark.parametrize("group,name,phrases", ITEMS, ids=[f"{g}:{n}" for g, n, _ in ITEMS])
def test_checklist_item_is_covered(group, name, phrases):
    missing = [p for p in phrases if p.lower() not in TEXT]
    assert not missing, f"{group} / {name}: the series never says {missing}"


def test_checklist_has_every_exercise_and_question():
    assert len(CHECKLIST["exercises"]) == 5
    assert len(CHECKLIST["questions"]) == 4
