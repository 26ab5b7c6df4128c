"""Write both courses' source notebooks and rubric sheets from the cell lists in `grading/assignments/`.

    python grading/build_source.py          # rewrite grading/source/, grading/RUBRICS.md and the same in grading/ru/
    python grading/build_source.py --check  # exit 1 when the stored files differ from what would be written

The notebooks in `source/` are what nbgrader reads (an instructor may also edit them in JupyterLab's nbgrader
toolbar); this script keeps them consistent: every graded cell has a unique id, its points and a lock.

The English cell lists (`assignments/aNN.py`) are the one source of both courses. The Russian course (`ru/`) is
built from them with the translations in `assignments/ru/aNN.py`: each English text (a markdown cell, a title, a
written answer's question, model answer and rubric) is looked up by its fingerprint, each English fragment of a
code cell (a comment, a message, a print) by its text, so code cells differ only in their strings and comments.
An English text without its Russian, or a translation whose English is gone, fails the build and names the
assignment and the cell.
"""
from __future__ import annotations

import argparse
import hashlib
import importlib
import io
import json
import pathlib
import re
import sys
import tokenize
from dataclasses import dataclass, field

HERE = pathlib.Path(__file__).resolve().parent
SOURCE = HERE / "source"
#: Each language's course folder (the English course is this folder; the others are built from it).
COURSES = {"en": HERE, "ru": HERE / "ru"}
#: The line a translated notebook's setup cell starts with: what labsupport prints is then in its language.
LANGUAGE_LINE = "%env LABSUPPORT_LANG={language}"
ASSIGNMENTS = ("01-endpointslices", "02-dns", "03-nodeport-source-ip", "04-kube-proxy-rules",
               "05-troubleshooting", "06-review")

SETUP = '''import os
from labsupport import Lab, checks

# The autograder always runs this on the embedded "sim" cluster with seed 0.
lab = Lab(backend=os.environ.get("LABSUPPORT_BACKEND", "sim"), seed=0, proxy_mode="iptables")
lab'''

PASSED = 'print("checks passed")'

GRADING_NOTE = """*How this notebook is graded.* Cells marked "YOUR CODE HERE" are yours; the cells after them are tests
that the autograder runs again (some with extra hidden checks), on the embedded `sim` cluster with a fixed seed, so
your work grades the same everywhere. A test that fails says what is wrong and where to look: run it, read it, fix
your cell, and rerun from the top (Kernel ▸ Restart Kernel and Run All Cells…) before you submit."""


@dataclass
class Cell:
    """One notebook cell and its nbgrader role."""

    kind: str           # markdown | code
    source: str
    role: str = "plain"  # plain | locked | solution | tests | answer
    grade_id: str = ""
    points: float = 0
    rubric: str = ""    # manually graded answers: how to grade (goes to RUBRICS.md, not to students)
    question: str = ""  # manually graded answers: the question, for RUBRICS.md
    model: str = ""     # manually graded answers: the model answer


@dataclass
class Notebook:
    """One assignment's notebook."""

    assignment: str
    name: str
    title: str
    cells: list[Cell] = field(default_factory=list)


def md(text: str) -> Cell:
    """Instructions (markdown)."""
    return Cell("markdown", text.strip("\n"))


def code(text: str) -> Cell:
    """A plain code cell the student may change (an exploration aid)."""
    return Cell("code", text.strip("\n"))


def locked(grade_id: str, text: str) -> Cell:
    """A read-only code cell; nbgrader restores it before grading."""
    return Cell("code", text.strip("\n"), "locked", grade_id)


def setup() -> Cell:
    """The first cell of every notebook: the Lab, on `sim` with seed 0 when autograded."""
    return locked("setup", SETUP)


TASK_NOTE = """## Your task

Some names and numbers in this assignment are yours alone: the cell below shows them on a card. Where the text
says *your* port, *your* node or *your* count, it means the value on the card; write it as `task.<name>` in your
code (for example `task.service_port`), so your code says what it means."""


def task(assignment: str) -> list[Cell]:
    """The student's own values for the assignment (drawn by `lab.task`), shown as a card after the setup."""
    return [md(TASK_NOTE), locked("task", f'task = lab.task("{assignment}")\ntask')]


def solution(grade_id: str, text: str, after: str = "") -> Cell:
    """A cell the student writes; `text` is the reference solution, `after` stays in the student version."""
    body = "### BEGIN SOLUTION\n" + text.strip("\n") + "\n### END SOLUTION"
    if after:
        body += "\n" + after.strip("\n")
    return Cell("code", body, "solution", grade_id)


def tests(grade_id: str, points: float, text: str, hidden: str = "") -> Cell:
    """An autograded test cell worth `points`; `hidden` checks run only when grading."""
    body = text.strip("\n")
    if hidden:
        body += "\n### BEGIN HIDDEN TESTS\n" + hidden.strip("\n") + "\n### END HIDDEN TESTS"
    # A last line that prints, so a check's return value is not echoed into the notebook and the feedback.
    body += "\n" + PASSED
    return Cell("code", body.strip("\n"), "tests", grade_id, points)


RUBRIC_LABEL = "Rubric."


def answer(grade_id: str, points: float, question: str, model: str, rubric: str, label: str = RUBRIC_LABEL) -> Cell:
    """A manually graded written answer; the model answer and the rubric stay out of the student version."""
    model, rubric = model.strip("\n"), rubric.strip("\n")
    body = f"### BEGIN SOLUTION\n{model}\n\n**{label}** {rubric}\n### END SOLUTION"
    return Cell("markdown", body, "answer", grade_id, points, rubric=rubric, question=question.strip("\n"),
                model=model)


GRAPH_NOTE = "## The cluster now\n\nThe picture below is live while you work; your feedback shows its last state."


def graph_cell() -> list[Cell]:
    """The cluster's picture at the end of the work (a live widget; its static SVG shows in the feedback)."""
    return [md(GRAPH_NOTE), locked("graph", "lab.graph()")]


def _metadata(cell: Cell) -> dict:
    if cell.role == "plain":
        return {}
    flags = {"locked": dict(grade=False, solution=False, locked=True),
             "solution": dict(grade=False, solution=True, locked=False),
             "tests": dict(grade=True, solution=False, locked=True),
             "answer": dict(grade=True, solution=True, locked=False)}[cell.role]
    meta = {**flags, "grade_id": cell.grade_id, "schema_version": 3, "task": False}
    if cell.role in ("tests", "answer"):
        meta["points"] = cell.points
    return {"nbgrader": dict(sorted(meta.items()))}


def cell_ids(nb: Notebook) -> list[str]:
    """The notebook id of each of `nb.cells` (the title cell, first in the notebook, is `c-00`)."""
    return [f"{cell.grade_id or 'c'}-{i:02d}" for i, cell in enumerate(nb.cells, start=1)]


def to_json(nb: Notebook, note: str = GRADING_NOTE) -> dict:
    """The notebook as nbformat 4 JSON, without outputs; `note` (how it is graded) follows the title."""
    ids = [c.grade_id for c in nb.cells if c.grade_id]
    dupes = {i for i in ids if ids.count(i) > 1}
    if dupes:
        raise ValueError(f"{nb.assignment}: duplicate grade ids {sorted(dupes)}")
    cells = []
    for cell, cell_id in zip([md(f"# {nb.title}\n\n{note}")] + nb.cells, ["c-00"] + cell_ids(nb)):
        item = {"cell_type": cell.kind, "id": cell_id, "metadata": _metadata(cell), "source": cell.source}
        if cell.kind == "code":
            item.update(execution_count=None, outputs=[])
        cells.append(item)
    return {"cells": cells, "metadata": {
        "kernelspec": {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"},
        "language_info": {"name": "python"}}, "nbformat": 4, "nbformat_minor": 5}


def notebooks() -> list[Notebook]:
    """Every assignment's notebook, in course order."""
    sys.path.insert(0, str(HERE.parent))
    out = []
    for name in ASSIGNMENTS:
        module = importlib.import_module(f"grading.assignments.a{name[:2]}")
        out.append(module.notebook())
    return out


RUBRICS_HEAD = """# Rubrics for the manually graded answers

Generated by `grading/build_source.py` from the source notebooks; graders keep it open next to the
formgrader. Each answer also holds its model answer in `source/` (stripped from the student version)."""
MODEL_LABEL = "Model answer."
POINTS = "points"


@dataclass(frozen=True)
class Words:
    """The texts around the cells that build_source writes itself, in one language."""

    grading_note: str = GRADING_NOTE
    rubrics_head: str = RUBRICS_HEAD
    model: str = MODEL_LABEL
    rubric: str = RUBRIC_LABEL
    points: str = POINTS    # one form, or one|few|many (see points_phrase)


def points_phrase(points: float, word: str) -> str:
    """`points` with its word: `word` is one form ("points"), or the three forms one|few|many of a language that
    declines the word after a number as Russian does ("балл|балла|баллов": 1 балл, 3 балла, 5 баллов, 21 балл; a
    fraction takes the second form, 1.5 балла)."""
    forms = word.split("|")
    if len(forms) == 1:
        return f"{points:g} {word}"
    if len(forms) != 3:
        raise ValueError(f"the word for points must be one form or three (one|few|many), not {word!r}")
    one, few, many = forms
    if points != int(points):
        return f"{points:g} {few}"
    n = int(points)
    if n % 10 == 1 and n % 100 != 11:
        return f"{n} {one}"
    if 2 <= n % 10 <= 4 and not 12 <= n % 100 <= 14:
        return f"{n} {few}"
    return f"{n} {many}"


def rubric_sheet(nbs: list[Notebook], words: Words = Words()) -> str:
    """RUBRICS.md: every manually graded question with its model answer and rubric, for graders."""
    lines = [words.rubrics_head, ""]
    for nb in nbs:
        manual = [c for c in nb.cells if c.role == "answer"]
        if not manual:
            continue
        lines += [f"## {nb.assignment} — {nb.title}", ""]
        for cell in manual:
            lines += [f"### `{cell.grade_id}` ({points_phrase(cell.points, words.points)})", "", cell.question, "",
                      f"**{words.model}** {cell.model}", "", f"**{words.rubric}** {cell.rubric}", ""]
    return "\n".join(lines)


# --- translations ------------------------------------------------------------------------------------------------
def fingerprint(text: str) -> str:
    """The key of an English text in a translation: the first 8 hex digits of its SHA-256 (surrounding blank lines
    do not count)."""
    return hashlib.sha256(text.strip("\n").encode()).hexdigest()[:8]


@dataclass
class Translation:
    """One notebook's text in another language.

    `text`: fingerprint of an English text → its translation (a markdown cell, the title, a written answer's
    question, model answer or rubric); `code`: an English fragment of code cells (a comment, a message, a print,
    found as written) → its translation; `keep`: strings of code that stay as they are (what Kubernetes prints).
    """

    text: dict[str, str] = field(default_factory=dict)
    code: dict[str, str] = field(default_factory=dict)
    keep: tuple[str, ...] = ()


#: Words of English prose: a code string or comment holding one of them (and two words) is a text to translate.
ENGLISH_WORDS = re.compile(r"\b(the|a|an|is|are|be|of|to|and|or|not|no|its|it|your|you|should|from|that|this|"
                           r"with|for|what|must|has|does|was|which|cannot|per|on|in|by|one|got|expected)\b")


def is_prose(token: str) -> bool:
    """Whether a string literal or comment of code is English prose (a message to translate)."""
    words = re.findall(r"[A-Za-z][A-Za-z']+|\b[aA]\b", token)
    return len(words) >= 2 and bool(ENGLISH_WORDS.search(token)) and not re.search(r"[А-Яа-яЁё]", token)


def text_tokens(source: str) -> list[tokenize.TokenInfo]:
    """The tokens of a code cell (IPython's `%` lines dropped), without layout."""
    lines = [line for line in source.splitlines() if not line.startswith("%")]
    skip = (tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER)
    return [t for t in tokenize.generate_tokens(io.StringIO("\n".join(lines) + "\n").readline) if t.type not in skip]


class Translator:
    """Turns one English notebook into another language, keeping what it could not translate as problems."""

    def __init__(self, assignment: str, language: str, own: Translation, common: Translation, path: str):
        self.assignment, self.language, self.own, self.common, self.path = assignment, language, own, common, path
        self.problems: list[str] = []
        self.used_text: set[str] = set()
        self.used_code: set[str] = set()

    def text(self, english: str, where: str) -> str:
        """The translation of an English text (the English itself, and a problem, when there is none)."""
        key = fingerprint(english)
        for source in (self.own, self.common):
            if key in source.text:
                self.used_text.add(key)
                return source.text[key].strip("\n")
        first = english.strip().splitlines()[0][:70] if english.strip() else ""
        self.problems.append(f"{self.assignment}, cell {where}: no {self.language} translation of the text "
                             f"{key} ({first!r}…): add {key!r} to {self.path}")
        return english

    def code(self, english: str, where: str) -> str:
        """A code cell with its strings and comments translated; the code itself must stay as it is."""
        fragments = {**self.common.code, **self.own.code}
        out = english
        for fragment in sorted(fragments, key=len, reverse=True):
            if fragment in out:
                out = out.replace(fragment, fragments[fragment])
                self.used_code.add(fragment)
        before, after = text_tokens(english), text_tokens(out)
        kinds = (tokenize.STRING, tokenize.COMMENT)
        if [(t.type, t.string if t.type not in kinds else "") for t in before] != \
                [(t.type, t.string if t.type not in kinds else "") for t in after]:
            self.problems.append(f"{self.assignment}, cell {where}: the {self.language} translation changes the "
                                 "code, not only its strings and comments (see the code fragments of "
                                 f"{self.path})")
            return out
        keep = set(self.own.keep) | set(self.common.keep)
        for a, b in zip(before, after):
            if a.type in kinds and a.string == b.string and is_prose(a.string) and \
                    not any(k in a.string for k in keep):
                self.problems.append(f"{self.assignment}, cell {where}: no {self.language} translation of the "
                                     f"code text {a.string[:80]!r} (a code fragment, or `keep` if it stays)")
        return out

    def stale(self) -> list[str]:
        """Translations of this notebook that no English text or code of it uses any longer."""
        return ([f"{self.path}: the translation {key!r} matches no English text of {self.assignment} (its English "
                 "changed or is gone)" for key in self.own.text if key not in self.used_text] +
                [f"{self.path}: the code fragment {fragment[:60]!r} is in no code cell of {self.assignment}"
                 for fragment in self.own.code if fragment not in self.used_code])


def translate(nb: Notebook, translator: Translator) -> Notebook:
    """The notebook in the translator's language: same cells, ids and points; translated text."""
    cells = []
    for cell, where in zip(nb.cells, cell_ids(nb)):
        if cell.role == "answer":
            question, model, rubric = (translator.text(t, where) for t in (cell.question, cell.model, cell.rubric))
            new = answer(cell.grade_id, cell.points, question, model, rubric,
                         label=translator.text(RUBRIC_LABEL, where))
        elif cell.kind == "markdown":
            new = Cell("markdown", translator.text(cell.source, where), cell.role, cell.grade_id, cell.points)
        else:
            source = translator.code(cell.source, where)
            if cell.grade_id == "setup":
                source = LANGUAGE_LINE.format(language=translator.language) + "\n" + source
            new = Cell("code", source, cell.role, cell.grade_id, cell.points)
        cells.append(new)
    return Notebook(nb.assignment, nb.name, translator.text(nb.title, "c-00"), cells)


def translations(language: str) -> tuple[Translation, dict[str, Translation], list[str]]:
    """A language's common translation, each assignment's own, and the assignments that have none."""
    sys.path.insert(0, str(HERE.parent))
    package = importlib.import_module(f"grading.assignments.{language}")
    own, missing = {}, []
    for name in ASSIGNMENTS:
        try:
            module = importlib.import_module(f"grading.assignments.{language}.a{name[:2]}")
        except ModuleNotFoundError:
            missing.append(f"{name}: no {language} translation (grading/assignments/{language}/a{name[:2]}.py)")
            continue
        own[name] = module.TRANSLATION
    return package.COMMON, own, missing


def translated_course(language: str, nbs: list[Notebook]) -> tuple[list[Notebook], Words, list[str]]:
    """The notebooks and words of the course in `language`, and every translation problem (empty: complete)."""
    common, own, problems = translations(language)
    out, used_text, used_code = [], set(), set()
    path = f"grading/assignments/{language}/__init__.py"
    words_translator = Translator("every notebook", language, Translation(), common, path)
    for nb in nbs:
        if nb.assignment not in own:
            continue
        translator = Translator(nb.assignment, language, own[nb.assignment], common,
                                f"grading/assignments/{language}/a{nb.assignment[:2]}.py")
        out.append(translate(nb, translator))
        problems += translator.problems + translator.stale()
        used_text |= translator.used_text
        used_code |= translator.used_code
    words = Words(*(words_translator.text(t, "(around the cells)") for t in
                    (GRADING_NOTE, RUBRICS_HEAD, MODEL_LABEL, RUBRIC_LABEL, POINTS)))
    problems += words_translator.problems
    used_text |= words_translator.used_text
    problems += [f"{path}: the common translation {key!r} matches no English text (its English changed or is gone)"
                 for key in common.text if key not in used_text]
    problems += [f"{path}: the common code fragment {fragment[:60]!r} is in no code cell"
                 for fragment in common.code if fragment not in used_code]
    return out, words, problems


def course_files(folder: pathlib.Path, nbs: list[Notebook], words: Words) -> dict[pathlib.Path, str]:
    """The files of one course folder: its source notebooks and RUBRICS.md."""
    files = {folder / "source" / nb.assignment / f"{nb.name}.ipynb":
             json.dumps(to_json(nb, words.grading_note), indent=1, ensure_ascii=False) + "\n" for nb in nbs}
    files[folder / "RUBRICS.md"] = rubric_sheet(nbs, words)
    return files


def outputs() -> tuple[dict[pathlib.Path, str], list[str]]:
    """Every file this script writes, with its text, and the translation problems (a course with problems is not
    written)."""
    nbs = notebooks()
    files = course_files(COURSES["en"], nbs, Words())
    problems = []
    for language, folder in COURSES.items():
        if language == "en":
            continue
        translated, words, found = translated_course(language, nbs)
        problems += found
        if not found:
            files.update(course_files(folder, translated, words))
    return files, problems


def main(argv: list[str] | None = None) -> int:
    """Write (or with --check, compare) both courses' source notebooks and RUBRICS.md."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only report files that differ")
    args = parser.parse_args(argv)
    files, problems = outputs()
    differ = []
    for path, text in files.items():
        if args.check:
            if not path.exists() or path.read_text() != text:
                differ.append(path)
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    for problem in problems:
        print(f"translation: {problem}")
    for path in differ:
        print(f"out of date: {path.relative_to(HERE.parent)} (run python grading/build_source.py)")
    return 1 if differ or problems else 0


if __name__ == "__main__":
    sys.exit(main())
