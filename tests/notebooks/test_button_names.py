"""A lesson (and its edition's guide, README.md) names the picture's buttons exactly as the picture shows them in its
language.

The labels are read from the widget itself: a ClusterGraph is built in each language and every button, toggle,
option and row label of its controls is collected. In a lesson, a span set off as *emphasis*, «quotes» or
`code` names a control when its text is a button of the picture in any language, or when a word like "press",
"button", «кнопкой», «нажми» stands right beside it; such a span must be one of the labels of the lesson's own
language. A failure lists file, cell and line of every span that is not.
"""
from __future__ import annotations

import html
import io
import re
import tokenize
from dataclasses import dataclass

import ipywidgets as widgets
import nbformat
import pytest

from labsupport import Lab
from labsupport.i18n import LANGUAGES, VARIABLE
from labsupport.widgets import ClusterGraph
from tests.notebooks.editions import EDITIONS, ROOT, lesson_params, require_lesson

#: A span a lesson may name a control with: *emphasis* (not **bold**), «quotes», `code`.
SPAN = re.compile(r"(?<![*\w])\*(?=[^\s*])([^*]{1,40}?)(?<=\S)\*(?![*\w])|«([^»\n]{1,40})»|`([^`\n]{1,40})`")
#: A word right before a span that makes it the name of a control ("press *x*", «нажми «x»», «кнопкой «x»»).
CONTROL_BEFORE = re.compile(r"(\b(press|click|toggle)\w*|кнопк\w*|нажм\w*|нажать|нажав|жми|ручк\w*|"
                            r"переключател\w*)\s+((the|on|на)\s+)?$", re.I)
#: A word right after a span that makes it the name of a control ("the *x* button", "*x* control").
CONTROL_AFTER = re.compile(r"\s+(buttons?\b|controls?\b(?![- ]plane)|toggle\b|drop-?down\b|кнопк)", re.I)
FENCE = re.compile(r"```.*?```", re.S)


@dataclass(frozen=True)
class Controls:
    """What one language's picture shows on its controls."""

    buttons: frozenset[str]   # what can be pressed: buttons, toggle buttons
    labels: frozenset[str]    # every text of the controls: buttons, options, row labels


def _texts(box: widgets.Widget) -> tuple[set[str], set[str]]:
    buttons, labels = set(), set()
    for child in getattr(box, "children", ()):
        inner_buttons, inner_labels = _texts(child)
        buttons |= inner_buttons
        labels |= inner_labels
    if isinstance(box, (widgets.Button, widgets.ToggleButton)):
        buttons.add(box.description)
    if isinstance(box, widgets.ToggleButtons):
        labels |= {str(label) for label in box._options_labels}
    if isinstance(box, widgets.HTML) and "labsupport-label" in box._dom_classes:
        labels.add(html.unescape(re.sub(r"<[^>]+>", "", box.value)))
    return buttons, buttons | labels


@pytest.fixture(scope="module")
def controls() -> dict[str, Controls]:
    """Each language's controls, read from a ClusterGraph built with that language chosen."""
    out = {}
    with Lab(seed=0) as lab, pytest.MonkeyPatch.context() as patch:
        for language in LANGUAGES:
            patch.setenv(VARIABLE, language)
            buttons, labels = _texts(ClusterGraph(lab, live=False).controls)
            out[language] = Controls(frozenset(buttons), frozenset(labels))
    return out


def normal(text: str) -> str:
    """A span's text as the widget would show it: one space between words."""
    return " ".join(text.split())


def named_controls(text: str, buttons: frozenset[str]) -> list[tuple[int, str]]:
    """(line, text) of every span of `text` that names a control: a button's label, or set beside a control word."""
    out = []
    for match in SPAN.finditer(text):
        span = normal(next(group for group in match.groups() if group is not None))
        if span in buttons or CONTROL_BEFORE.search(text, 0, match.start()) or \
                CONTROL_AFTER.match(text, match.end()):
            out.append((text.count("\n", 0, match.start()) + 1, span))
    return out


def lesson_texts(nb: nbformat.NotebookNode) -> list[tuple[str, str]]:
    """(cell id, text) of every markdown cell (without fenced code) and of every code cell's comments."""
    out = []
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            out.append((cell.get("id", "?"), FENCE.sub(lambda m: "\n" * m.group(0).count("\n"), cell.source)))
        elif cell.cell_type == "code":
            lines = ["" if line.lstrip().startswith(("%", "!")) else line for line in cell.source.splitlines()]
            comments = ["" for _ in lines]
            for tok in tokenize.generate_tokens(io.StringIO("\n".join(lines) + "\n").readline):
                if tok.type == tokenize.COMMENT:
                    comments[tok.start[0] - 1] = tok.string
            out.append((cell.get("id", "?"), "\n".join(comments)))
    return out


def test_the_picture_has_buttons_in_every_language(controls):
    for language, shown in controls.items():
        assert len(shown.buttons) >= 8, f"{language}: only {sorted(shown.buttons)} read from the picture"
    assert controls["en"].buttons != controls["ru"].buttons


def test_a_span_names_a_control_by_its_label_or_a_control_word():
    buttons = frozenset({"scale", "advance 5 s", "масштабировать", "+5 с"})
    text = ("Press *break readiness*, then *advance 5 s* twice; a *different* pod, the `lab-control-plane` node.\n"
            "Нажми «масштаб», потом «+5 с». Поле `nodePort` и `lab.scale(5)` — не кнопки.\n"
            "The *eTP*  toggle, the *advance\n5 s* button, the *scale* control; кнопкой *break readiness*.")
    assert named_controls(text, buttons) == [(1, "break readiness"), (1, "advance 5 s"), (2, "масштаб"),
                                             (2, "+5 с"), (3, "eTP"), (3, "advance 5 s"), (4, "scale"),
                                             (4, "break readiness")]


def misnamed(texts: list[tuple[str, str]], language: str, controls: dict[str, Controls]) -> list[str]:
    """`place, line N: 'span'` for every control the texts name by something `language`'s picture does not show."""
    every_button = frozenset().union(*(shown.buttons for shown in controls.values()))
    own = controls[language].labels
    return [f"{place}, line {line}: {span!r}" for place, text in texts
            for line, span in named_controls(text, every_button) if span not in own]


@pytest.mark.parametrize("edition, path", lesson_params(*EDITIONS))
def test_a_lesson_names_buttons_as_its_picture_shows_them(controls, edition, path):
    require_lesson(path)
    texts = [(f"{path.relative_to(ROOT)}, cell {cell_id}", text)
             for cell_id, text in lesson_texts(nbformat.read(path, as_version=4))]
    wrong = misnamed(texts, edition.language, controls)
    assert not wrong, (f"buttons named otherwise than the {edition.language} picture shows them "
                       f"({', '.join(sorted(controls[edition.language].labels))}):\n" + "\n".join(wrong))


@pytest.mark.parametrize("edition", EDITIONS, ids=lambda e: e.language)
def test_an_editions_guide_names_buttons_as_its_picture_shows_them(controls, edition):
    path = edition.folder / "README.md"
    require_lesson(path)
    text = FENCE.sub(lambda m: "\n" * m.group(0).count("\n"), path.read_text())
    wrong = misnamed([(str(path.relative_to(ROOT)), text)], edition.language, controls)
    assert not wrong, f"buttons named otherwise than the {edition.language} picture shows them:\n" + "\n".join(wrong)
