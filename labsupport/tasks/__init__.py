"""Per-student variants: each student's task of an assignment, drawn from a seed of (course, assignment, student).

The student is the one the grader names while autograding (LABSUPPORT_STUDENT, set by the course's kernel
manager), else the JupyterHub user (JUPYTERHUB_USER); without either (a laptop) the task is the default one,
with the values the lesson text was written with. The course id of the seed is LABSUPPORT_COURSE_ID, else
`k8s-services`, in both editions of the course: the Russian course's own nbgrader id (`k8s-services-ru`) does not
change the seed, so a student draws the same task in either language and needs no other setting.

>>> draw("02-dns", None).values == draw("02-dns", None).values
True
>>> draw("06-review", "alice").student
'alice'
"""
from __future__ import annotations

import hashlib
import html
import json
import os
import pathlib
import random
from dataclasses import dataclass

from labsupport.errors import LabError
from labsupport.i18n import tr
from labsupport.tasks.catalog import CATALOG

DEFAULT_COURSE_ID = "k8s-services"
STUDENT_ENV = "LABSUPPORT_STUDENT"


class UnknownAssignment(LabError):
    """No variants are defined for this assignment id."""


@dataclass(frozen=True)
class Task:
    """One student's values for one assignment; `task.service_port`, `task["service_port"]`."""

    assignment: str
    student: str | None
    values: dict

    def __getattr__(self, name: str):
        values = self.__dict__.get("values", {})
        if name in values:
            return values[name]
        raise AttributeError(tr("the task of {assignment} has no value {name!r}; it has {names}",
                                assignment=self.__dict__.get("assignment"), name=name,
                                names=", ".join(sorted(values))))

    def __getitem__(self, name: str):
        return self.values[name]

    def __repr__(self) -> str:
        who = self.student or tr("default (no student id)")
        return f"Task({self.assignment}, student={who}: {json.dumps(self.values)})"

    def _repr_html_(self) -> str:
        """A card with the student's own values, shown as the output of the task cell."""
        who = html.escape(self.student) if self.student else tr("the default task (no student id here)")
        rows = "".join(f"<tr><td><code>task.{html.escape(k)}</code></td><td><b>{html.escape(str(v))}</b></td></tr>"
                       for k, v in self.values.items())
        head = tr("<b>Your task</b> for {assignment}: {who}", assignment=html.escape(self.assignment), who=who)
        return (f"<div class='labsupport-task' style='border:1px solid #326ce5;border-radius:6px;padding:8px 12px;"
                f"display:inline-block'><div>{head}</div><table>{rows}</table></div>")


def current_course_id() -> str:
    """The course id the seeds are derived from."""
    return os.environ.get("LABSUPPORT_COURSE_ID") or DEFAULT_COURSE_ID


def student_identity() -> str | None:
    """Who is working: the student the grader names, else the JupyterHub user, else None."""
    return os.environ.get(STUDENT_ENV) or os.environ.get("JUPYTERHUB_USER") or None


def seed(course: str, assignment: str, student: str) -> int:
    """The variant seed of (course id, assignment, student id)."""
    digest = hashlib.sha256("\0".join((course, assignment, student)).encode()).digest()
    return int.from_bytes(digest[:8], "big")


def draw(assignment: str, student: str | None, *, course_id: str | None = None) -> Task:
    """The task of `student` (None: the default task) for `assignment`."""
    if assignment not in CATALOG:
        raise UnknownAssignment(tr("no variants for assignment {assignment!r}: known are {known}",
                                   assignment=assignment, known=", ".join(CATALOG)))
    space = CATALOG[assignment]
    if student is None:
        return Task(assignment, None, {name: default for name, (default, _) in space.items()})
    rng = random.Random(seed(course_id or current_course_id(), assignment, student))
    return Task(assignment, student, {name: rng.choice(choices) for name, (_, choices) in space.items()})


def grading_env(kernel_cwd: str | os.PathLike | None) -> dict[str, str]:
    """The variables a grading kernel needs to draw the graded student's task, from the folder nbgrader runs
    the notebook in (`…/autograded/<student>/<assignment>`); empty when it is not such a folder."""
    if not kernel_cwd:
        return {}
    parts = pathlib.Path(kernel_cwd).resolve().parts
    if len(parts) >= 3 and parts[-3] == "autograded":
        return {STUDENT_ENV: parts[-2]}
    return {}
