"""What a student reads in Russian addresses them as the source lesson does, with «ты»: the catalog of labsupport's
messages, the Russian course's notebooks and rubrics, the stubs nbgrader puts in a student's cells, and the Russian
READMEs."""
from __future__ import annotations

import json
import pathlib
import re

import pytest

from labsupport.grading.course_config import STUBS
from labsupport.locale import ru

ROOT = pathlib.Path(__file__).resolve().parents[2]
COURSE = ROOT / "grading" / "ru"
#: «Вы» and its forms, and an imperative in the plural (запустите, выберите, добавьте).
PLURAL_YOU = re.compile(r"(?<![а-яё])(вы|вас|вам|вами|ваш[а-яё]*|[а-яё]+(?:ите|йте))(?![а-яё])", re.I)
#: Words that end like a plural imperative and are not one.
NOT_IMPERATIVE = {"лимите", "сайте", "байте", "бите", "кредите", "обите"}


def plural_you(text: str) -> list[str]:
    """Every word of `text` that addresses the reader with «вы»."""
    return [m.group(0) for m in PLURAL_YOU.finditer(text) if m.group(0).lower() not in NOT_IMPERATIVE]


def course_texts() -> list[tuple[str, str]]:
    """(place, text) of every cell of the Russian course's source notebooks, and of its rubrics."""
    out = [("grading/ru/RUBRICS.md", (COURSE / "RUBRICS.md").read_text())]
    for path in sorted((COURSE / "source").glob("*/*.ipynb")):
        for cell in json.loads(path.read_text())["cells"]:
            out.append((f"{path.relative_to(ROOT)}, cell {cell['id']}", "".join(cell["source"])))
    return out


def test_the_pattern_finds_the_plural_and_spares_the_singular():
    assert plural_you("Запустите ячейку и посмотрите на ваш под; вы увидите IP.") == \
        ["Запустите", "посмотрите", "ваш", "вы", "увидите"]
    assert plural_you("Запусти ячейку и посмотри на свой под; в лимите и на сайте ты увидишь IP.") == []


@pytest.mark.parametrize("english", sorted(ru.MESSAGES))
def test_a_message_says_ty(english):
    assert not plural_you(ru.MESSAGES[english]), f"«вы» in the Russian of {english!r}: {ru.MESSAGES[english]!r}"


def test_the_russian_course_says_ty():
    found = [f"{place}: {', '.join(words)}" for place, text in course_texts() if (words := plural_you(text))]
    assert course_texts() and not found, "«вы» in the Russian course:\n" + "\n".join(found)


@pytest.mark.parametrize("name", ["README.ru.md", "grading/ru/README.md"])
def test_the_russian_readmes_say_ty(name):
    assert not plural_you((ROOT / name).read_text()), f"«вы» in {name}: {plural_you((ROOT / name).read_text())}"


def test_the_stubs_in_a_students_cells_say_ty():
    assert not plural_you(" ".join(STUBS["ru"])), STUBS["ru"]
