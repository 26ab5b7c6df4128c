"""The Russian course (grading/ru/) is the twin of the English one: the same assignments and notebooks, the same cells
with the same ids, points and locks, the same code once strings and comments are set aside, and Russian prose; and
build_source refuses a translation that is missing, stale, or changes code, naming the assignment and the cell."""
from __future__ import annotations

import json

import pytest

from grading import build_source
from grading.build_source import Notebook, Translation, Translator, fingerprint, md, setup, translate
from tests.grading.course import COURSES, source_text
from tests.notebooks.editions import LANGUAGE_LINE, code_shape, is_russian

ENGLISH, RUSSIAN = COURSES["en"], COURSES["ru"]


def notebook(folder, assignment: str) -> tuple[str, dict]:
    """The name and JSON of an assignment's one source notebook in a course folder."""
    (path,) = (folder / "source" / assignment).glob("*.ipynb")
    return path.name, json.loads(path.read_text())


@pytest.mark.parametrize("assignment", build_source.ASSIGNMENTS)
def test_same_notebook_cells_ids_and_points(assignment):
    (en_name, en), (ru_name, ru) = notebook(ENGLISH, assignment), notebook(RUSSIAN, assignment)
    assert ru_name == en_name
    assert [(c["id"], c["cell_type"], c["metadata"]) for c in ru["cells"]] == \
        [(c["id"], c["cell_type"], c["metadata"]) for c in en["cells"]], \
        f"{assignment}: the Russian notebook's cells, ids or nbgrader metadata (grade ids, points, locks) differ"
    assert ru["metadata"] == en["metadata"]


@pytest.mark.parametrize("assignment", build_source.ASSIGNMENTS)
def test_same_code_beyond_strings_and_comments(assignment):
    (_, en), (_, ru) = notebook(ENGLISH, assignment), notebook(RUSSIAN, assignment)
    for a, b in zip(en["cells"], ru["cells"]):
        if a["cell_type"] == "code":
            assert code_shape(source_text(b)) == code_shape(source_text(a)), \
                f"{assignment}, cell {a['id']}: the code differs beyond strings and comments"
    first = next(c for c in ru["cells"] if c["cell_type"] == "code")
    assert source_text(first).splitlines()[0] == LANGUAGE_LINE


@pytest.mark.parametrize("assignment", build_source.ASSIGNMENTS)
def test_markdown_and_messages_are_russian(assignment):
    _, ru = notebook(RUSSIAN, assignment)
    english = [c["id"] for c in ru["cells"] if c["cell_type"] == "markdown" and not is_russian(source_text(c))]
    assert not english, f"{assignment}: markdown cells still in English: {english}"
    tests_text = "\n".join(source_text(c) for c in ru["cells"] if c["metadata"].get("nbgrader", {}).get("grade"))
    assert 'print("checks passed")' not in tests_text


def test_rubrics_are_russian():
    text = (RUSSIAN / "RUBRICS.md").read_text()
    assert text.startswith("# Критерии оценки") and is_russian(text)


# --- what build_source refuses ------------------------------------------------------------------------------------
INTRO = "A Service does not know its pods: it has a label selector."
CHECK = 'assert isinstance(x, int), "x should be a whole number"'


def english() -> Notebook:
    """A small English notebook: a title, an intro, the setup and one test cell."""
    return Notebook("01-endpointslices", "endpointslices", "Assignment 1: a Service",
                    [md(INTRO), setup(), build_source.tests("x-test", 1, CHECK)])


def problems(translation: Translation) -> list[str]:
    """What building the Russian notebook from `english()` reports (with the course's common translation)."""
    common, _, _ = build_source.translations("ru")
    translator = Translator("01-endpointslices", "ru", translation, common, "grading/assignments/ru/a01.py")
    translate(english(), translator)
    return translator.problems + translator.stale()


def complete() -> Translation:
    """A full translation of `english()`."""
    return Translation(text={fingerprint("Assignment 1: a Service"): "Задание 1: Service",
                             fingerprint(INTRO): "Service не знает своих подов: у него есть label selector."},
                       code={'"x should be a whole number"': '"x должен быть целым числом"'})


def test_a_complete_translation_builds():
    assert problems(complete()) == []
    common, _, _ = build_source.translations("ru")
    nb = translate(english(), Translator("01-endpointslices", "ru", complete(), common, "a01.py"))
    assert nb.cells[1].source.startswith(LANGUAGE_LINE + "\n")
    assert '"x должен быть целым числом"' in nb.cells[2].source and "проверки пройдены" in nb.cells[2].source


def test_a_missing_text_names_the_assignment_the_cell_and_the_key():
    translation = complete()
    del translation.text[fingerprint(INTRO)]
    (problem,) = problems(translation)
    assert problem.startswith("01-endpointslices, cell c-01: no ru translation")
    assert fingerprint(INTRO) in problem and "A Service does not know" in problem


def test_a_stale_text_is_reported_as_stale():
    translation = complete()
    translation.text["0badf00d"] = "Текст, английский оригинал которого исчез."
    (problem,) = problems(translation)
    assert "grading/assignments/ru/a01.py" in problem and "'0badf00d' matches no English text" in problem


def test_an_untranslated_message_in_code_names_its_cell():
    translation = complete()
    translation.code.clear()
    (problem,) = problems(translation)
    assert problem.startswith("01-endpointslices, cell x-test-03: no ru translation of the code text")
    assert "x should be a whole number" in problem


def test_a_translation_that_changes_code_is_refused():
    translation = complete()
    translation.code["isinstance(x, int)"] = "isinstance(x, float)"
    assert any("x-test-03: the ru translation changes the code" in p for p in problems(translation))


def test_a_code_fragment_found_nowhere_is_stale():
    translation = complete()
    translation.code['"no such message"'] = '"нет такого сообщения"'
    (problem,) = problems(translation)
    assert "code fragment '\"no such message\"' is in no code cell of 01-endpointslices" in problem


def test_check_fails_and_names_the_problem(monkeypatch, capsys):
    def broken(language):
        common, own, missing = original(language)
        return common, {**own, "02-dns": Translation()}, missing

    original = build_source.translations
    monkeypatch.setattr(build_source, "translations", broken)
    assert build_source.main(["--check"]) == 1
    out = capsys.readouterr().out
    assert "translation: 02-dns, cell c-01: no ru translation of the text" in out


@pytest.mark.parametrize("points, phrase", [(1, "1 балл"), (3, "3 балла"), (5, "5 баллов"), (11, "11 баллов"),
                                            (21, "21 балл"), (22, "22 балла"), (1.5, "1.5 балла")])
def test_points_are_declined_after_the_number(points, phrase):
    assert build_source.points_phrase(points, "балл|балла|баллов") == phrase
    assert build_source.points_phrase(points, "points") == f"{points:g} points"


def test_rubrics_give_the_points_in_full_words():
    text = (RUSSIAN / "RUBRICS.md").read_text()
    assert "### `explain-drop` (3 балла)" in text and "### `q1-text` (2 балла)" in text
    assert " б.)" not in text
