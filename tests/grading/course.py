"""A throwaway copy of an nbgrader course, driven through nbgrader's own command line.

`Course` copies a course folder (the English grading/ or the Russian grading/ru/) into a temporary folder,
generates student versions, writes submissions (the reference solution, the blank release, a plausible wrong answer,
a tampered test cell, a runaway loop), autogrades them in one batch and reads the marks back from the gradebook.
"""
from __future__ import annotations

import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass

ROOT = pathlib.Path(__file__).resolve().parents[2]
GRADING = ROOT / "grading"
#: Each language's course folder.
COURSES = {"en": GRADING, "ru": GRADING / "ru"}
BIN = pathlib.Path(sys.executable).parent
BEGIN, END = "### BEGIN SOLUTION", "### END SOLUTION"


def notebook_name(assignment: str) -> str:
    """The one notebook of an assignment."""
    (path,) = (GRADING / "source" / assignment).glob("*.ipynb")
    return path.stem


def read(path: pathlib.Path) -> dict:
    """A notebook as JSON."""
    return json.loads(path.read_text())


def source_text(cell: dict) -> str:
    """A cell's source as one string."""
    src = cell["source"]
    return "".join(src) if isinstance(src, list) else src


def cell_by_id(nb: dict, grade_id: str) -> dict:
    """The cell with this nbgrader grade id."""
    for cell in nb["cells"]:
        if cell.get("metadata", {}).get("nbgrader", {}).get("grade_id") == grade_id:
            return cell
    raise KeyError(grade_id)


def solution_region(text: str) -> str:
    """What the student writes in a solution cell: the region between the markers, plus what follows it."""
    head, _, rest = text.partition(BEGIN + "\n")
    body, _, tail = rest.partition(END)
    return head + body + tail.lstrip("\n")


@dataclass
class Mark:
    """One graded cell's result."""

    grade_id: str
    auto: float | None
    max: float
    kind: str       # "test" (autograded code) or "manual"


class Course:
    """A temporary nbgrader course made from a course folder (default: the English grading/)."""

    def __init__(self, root: pathlib.Path, cell_timeout: int = 20, folder: pathlib.Path = GRADING):
        self.root = root
        self.language = next((lang for lang, path in COURSES.items() if path == folder), "en")
        root.mkdir(parents=True, exist_ok=True)
        shutil.copy(folder / "nbgrader_config.py", root / "nbgrader_config.py")
        shutil.copytree(folder / "source", root / "source")
        self.env = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
                        LABSUPPORT_CELL_TIMEOUT=str(cell_timeout), LABSUPPORT_EXCHANGE=str(root / "exchange"),
                        PYTHONPATH=str(ROOT))
        # A grader's shell may point elsewhere; grading must not care.
        self.env["LABSUPPORT_BACKEND"] = "kind"
        self.env["LABSUPPORT_PROXY_MODE"] = "ipvs"

    def nbgrader(self, *args: str, timeout: float = 900) -> subprocess.CompletedProcess:
        """Run an nbgrader command in the course folder; fails with its output when it fails."""
        proc = subprocess.run([str(BIN / "nbgrader"), *args], cwd=self.root, env=self.env, capture_output=True,
                              text=True, timeout=timeout)
        if proc.returncode != 0:
            raise AssertionError(f"nbgrader {' '.join(args)} exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}")
        return proc

    # --- notebooks -----------------------------------------------------------------------------------------
    def source(self, assignment: str) -> dict:
        """The instructor's notebook (with solutions and hidden tests)."""
        return read(self.root / "source" / assignment / f"{notebook_name(assignment)}.ipynb")

    def release(self, assignment: str) -> dict:
        """The generated student version."""
        return read(self.root / "release" / assignment / f"{notebook_name(assignment)}.ipynb")

    def solved(self, assignment: str) -> dict:
        """The student version with every solution cell filled from the reference solution."""
        nb, src = self.release(assignment), self.source(assignment)
        for cell in nb["cells"]:
            meta = cell.get("metadata", {}).get("nbgrader", {})
            if meta.get("solution"):
                cell["source"] = solution_region(source_text(cell_by_id(src, meta["grade_id"])))
        return nb

    def submit(self, assignment: str, student: str, nb: dict) -> None:
        """Place a submission where `nbgrader collect` would put it."""
        folder = self.root / "submitted" / student / assignment
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{notebook_name(assignment)}.ipynb").write_text(json.dumps(nb))

    def autograded(self, assignment: str, student: str) -> dict:
        """The notebook as the autograder left it (with outputs)."""
        return read(self.root / "autograded" / student / assignment / f"{notebook_name(assignment)}.ipynb")

    def feedback(self, assignment: str, student: str) -> str:
        """The feedback HTML of a student."""
        return (self.root / "feedback" / student / assignment / f"{notebook_name(assignment)}.html").read_text()

    # --- marks ---------------------------------------------------------------------------------------------
    def marks(self, assignment: str, student: str) -> dict[str, Mark]:
        """Every graded cell's marks from the gradebook."""
        from nbgrader.api import Gradebook
        out = {}
        with Gradebook(f"sqlite:///{self.root / 'gradebook.db'}") as gb:
            sub = gb.find_submission_notebook(notebook_name(assignment), assignment, student)
            for grade in sub.grades:
                kind = "test" if grade.cell.cell_type == "code" else "manual"
                out[grade.name] = Mark(grade.name, grade.auto_score, grade.max_score, kind)
        return out

    def auto_total(self, assignment: str, student: str) -> tuple[float, float]:
        """(autograded score, autograded maximum) of a submission."""
        marks = [m for m in self.marks(assignment, student).values() if m.kind == "test"]
        return sum(m.auto or 0 for m in marks), sum(m.max for m in marks)

    def errors(self, assignment: str, student: str, grade_id: str) -> str:
        """The error text a cell of the autograded notebook shows (empty when it passed)."""
        cell = cell_by_id(self.autograded(assignment, student), grade_id)
        texts = []
        for out in cell.get("outputs", []):
            if out.get("output_type") == "error":
                texts.append(f"{out['ename']}: {out['evalue']}")
                texts.extend(re.sub(r"\x1b\[[0-9;]*m", "", t) for t in out.get("traceback", []))
        return "\n".join(texts)
