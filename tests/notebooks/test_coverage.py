"""The series covers the source lesson: every concept, command, pitfall, exercise and question of the checklist,
in the English edition (`notebooks/`) and in the Russian one (`notebooks/ru/`, in the source lesson's wording)."""
from __future__ import annotations

import nbformat
import pytest

from tests.notebooks.editions import ENGLISH, RUSSIAN, Edition, lessons, require_edition
from tests.notebooks.lesson_checklist import CHECKLIST, CHECKLIST_RU

PHRASES = {ENGLISH.language: CHECKLIST, RUSSIAN.language: CHECKLIST_RU}


def series_text(edition: Edition = ENGLISH) -> str:
    parts = []
    for path in lessons(edition):
        if path.exists():
            parts.extend(c.source for c in nbformat.read(path, as_version=4).cells)
    return "\n".join(parts).lower()


TEXT = {e.language: series_text(e) for e in (ENGLISH, RUSSIAN)}
ITEMS = [pytest.param(edition, group, name, phrases,
                      id=f"{group}:{name}" if edition is ENGLISH else f"{edition.language}-{group}:{name}")
         for edition in (ENGLISH, RUSSIAN)
         for group, items in PHRASES[edition.language].items() for name, phrases in items.items()]


@pytest.mark.parametrize("edition,group,name,phrases", ITEMS)
def test_checklist_item_is_covered(edition, group, name, phrases):
    require_edition(edition)
    missing = [p for p in phrases if p.lower() not in TEXT[edition.language]]
    assert not missing, f"{group} / {name}: the {edition.language} series never says {missing}"


def test_checklist_has_every_exercise_and_question():
    assert len(CHECKLIST["exercises"]) == 5
    assert len(CHECKLIST["questions"]) == 4


def test_the_russian_checklist_has_the_same_items():
    assert {g: list(items) for g, items in CHECKLIST_RU.items()} == {g: list(items) for g, items in CHECKLIST.items()}
    thin = [name for items in CHECKLIST_RU.values() for name, phrases in items.items() if not phrases]
    assert not thin, f"Russian checklist items without a phrase: {thin}"
