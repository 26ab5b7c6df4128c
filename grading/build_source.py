"""Write the course's source notebooks and rubric sheet from the cell lists in `grading/assignments/`.

    python grading/build_source.py          # rewrite grading/source/*/*.ipynb and grading/RUBRICS.md
    python grading/build_source.py --check  # exit 1 when the stored files differ from what would be written

The notebooks in `source/` are what nbgrader reads (an instructor may also edit them in JupyterLab's nbgrader
toolbar); this script keeps them consistent: every graded cell has a unique id, its points and a lock.
"""
from __future__ import annotations

import argparse
import importlib
import json
import pathlib
import sys
from dataclasses import dataclass, field

HERE = pathlib.Path(__file__).resolve().parent
SOURCE = HERE / "source"
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


def answer(grade_id: str, points: float, question: str, model: str, rubric: str) -> Cell:
    """A manually graded written answer; the model answer and the rubric stay out of the student version."""
    body = "### BEGIN SOLUTION\n" + model.strip("\n") + "\n\n" + "**Rubric.** " + rubric.strip("\n") + \
        "\n### END SOLUTION"
    return Cell("markdown", body, "answer", grade_id, points, rubric=rubric.strip("\n"),
                question=question.strip("\n"))


def graph_cell() -> list[Cell]:
    """The cluster's picture at the end of the work (a live widget; its static SVG shows in the feedback)."""
    return [md("## The cluster now\n\nThe picture below is live while you work; your feedback shows its last "
               "state."),
            locked("graph", "lab.graph()")]


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


def to_json(nb: Notebook) -> dict:
    """The notebook as nbformat 4 JSON, without outputs."""
    ids = [c.grade_id for c in nb.cells if c.grade_id]
    dupes = {i for i in ids if ids.count(i) > 1}
    if dupes:
        raise ValueError(f"{nb.assignment}: duplicate grade ids {sorted(dupes)}")
    cells = []
    for i, cell in enumerate([md(f"# {nb.title}\n\n{GRADING_NOTE}")] + nb.cells):
        item = {"cell_type": cell.kind, "id": f"{cell.grade_id or 'c'}-{i:02d}", "metadata": _metadata(cell),
                "source": cell.source}
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


def rubric_sheet(nbs: list[Notebook]) -> str:
    """RUBRICS.md: every manually graded question with its model answer and rubric, for graders."""
    lines = ["# Rubrics for the manually graded answers", "",
             "Generated by `grading/build_source.py` from the source notebooks; graders keep it open next to the",
             "formgrader. Each answer also holds its model answer in `source/` (stripped from the student version).",
             ""]
    for nb in nbs:
        manual = [c for c in nb.cells if c.role == "answer"]
        if not manual:
            continue
        lines += [f"## {nb.assignment} — {nb.title}", ""]
        for cell in manual:
            model = cell.source.split("### BEGIN SOLUTION\n", 1)[1].split("\n\n**Rubric.**", 1)[0]
            lines += [f"### `{cell.grade_id}` ({cell.points:g} points)", "", cell.question, "",
                      "**Model answer.** " + model, "", "**Rubric.** " + cell.rubric, ""]
    return "\n".join(lines)


def outputs() -> dict[pathlib.Path, str]:
    """Every file this script writes, with its text."""
    nbs = notebooks()
    files = {SOURCE / nb.assignment / f"{nb.name}.ipynb": json.dumps(to_json(nb), indent=1, ensure_ascii=False) + "\n"
             for nb in nbs}
    files[HERE / "RUBRICS.md"] = rubric_sheet(nbs)
    return files


def main(argv: list[str] | None = None) -> int:
    """Write (or with --check, compare) the source notebooks and RUBRICS.md."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only report files that differ")
    args = parser.parse_args(argv)
    differ = []
    for path, text in outputs().items():
        if args.check:
            if not path.exists() or path.read_text() != text:
                differ.append(path)
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    for path in differ:
        print(f"out of date: {path.relative_to(HERE.parent)} (run python grading/build_source.py)")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
