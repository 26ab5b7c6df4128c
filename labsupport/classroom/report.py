"""The class at a glance: one self-contained, offline HTML page from the gradebook and the autograded notebooks."""
from __future__ import annotations

import html
import io
import json
import pathlib
import re
from collections import Counter
from dataclasses import dataclass, field

from labsupport.classroom.grade import read_record, submitted_students
from labsupport.classroom.gradebook import GradingError, db_url

ANSI = re.compile(r"\x1b\[[0-9;]*m")
IPV4 = re.compile(r"\b\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?\b")
TOP_FAILURES = 5


@dataclass
class TestStats:
    """One autograded test cell across the class."""

    grade_id: str
    notebook: str
    points: float
    passed: int = 0
    graded: int = 0
    failures: Counter = field(default_factory=Counter)     # message (addresses blanked) -> students

    @property
    def pass_rate(self) -> float:
        """The share of graded submissions that got this test's full points."""
        return self.passed / self.graded if self.graded else 0.0


@dataclass
class ClassResults:
    """What the report shows, read from a course folder."""

    assignment: str
    max_score: float = 0.0
    scores: dict[str, float] = field(default_factory=dict)           # student -> autograded score
    tests: dict[str, TestStats] = field(default_factory=dict)
    not_submitted: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)              # student -> why
    seconds: dict[str, float] = field(default_factory=dict)           # student -> grading seconds


def failure_message(cell: dict) -> str | None:
    """The first line of a test cell's error, with addresses blanked so the same mistake groups together."""
    for out in cell.get("outputs", []):
        if out.get("output_type") == "error":
            text = f"{out.get('ename', 'Error')}: {ANSI.sub('', out.get('evalue', ''))}".strip()
            return IPV4.sub("<ip>", text.splitlines()[0] if text else "")
    return None


def collect(course: pathlib.Path, assignment: str) -> ClassResults:
    """Read one assignment's marks, failures and grading times from a course folder."""
    from nbgrader.api import Gradebook, MissingEntry
    course = pathlib.Path(course)
    path = course / "gradebook.db"
    if not path.exists():
        raise GradingError(f"{course}: no gradebook.db here; run this in the course folder")
    results = ClassResults(assignment)
    record = read_record(course, assignment)
    with Gradebook(db_url(path)) as gb:
        try:
            target = gb.find_assignment(assignment)
        except MissingEntry:
            raise GradingError(f"{path}: no assignment {assignment!r} in the gradebook") from None
        results.max_score = target.max_code_score
        for nb in target.notebooks:
            for cell in nb.grade_cells:
                if cell.cell_type == "code":
                    results.tests[cell.name] = TestStats(cell.name, nb.name, cell.max_score)
        submitted = {sub.student.id: sub for sub in target.submissions}
        results.not_submitted = sorted(s.id for s in gb.students
                                       if s.id not in submitted and s.id not in submitted_students(course, assignment))
        for student, sub in sorted(submitted.items()):
            outcome = record.get(student)
            if outcome and outcome.status in ("failed", "timed out"):
                results.failed[student] = f"{outcome.status}: {outcome.message}"
                continue
            autograded = {nb.name: course / "autograded" / student / assignment / f"{nb.name}.ipynb"
                          for nb in sub.notebooks}
            if not all(p.exists() for p in autograded.values()):
                results.failed[student] = "no autograded notebook (grading failed or never ran)"
                continue
            results.scores[student] = sub.code_score
            if outcome:
                results.seconds[student] = outcome.seconds
            for nb in sub.notebooks:
                cells = {c.get("metadata", {}).get("nbgrader", {}).get("grade_id"): c
                         for c in json.loads(autograded[nb.name].read_text())["cells"]}
                for grade in nb.grades:
                    stats = results.tests.get(grade.name)
                    if stats is None:
                        continue
                    stats.graded += 1
                    if (grade.score or 0) >= grade.max_score:
                        stats.passed += 1
                    else:
                        stats.failures[failure_message(cells.get(grade.name, {})) or "no error shown"] += 1
    for student in submitted_students(course, assignment):
        if student not in submitted and student not in results.failed:
            results.failed[student] = "submitted but not graded yet (run labsupport grade)"
    return results


def histogram_svg(scores: list[float], max_score: float) -> str:
    """The score distribution as an inline SVG element (matplotlib, no files, no network)."""
    import matplotlib
    matplotlib.use("Agg")
    from matplotlib.figure import Figure
    fig = Figure(figsize=(6.4, 3.2))
    ax = fig.subplots()
    top = max(max_score, max(scores, default=0), 1)
    bins = [i * top / min(20, max(int(top), 1)) for i in range(min(20, max(int(top), 1)) + 1)]
    counts, _, bars = ax.hist(scores, bins=bins, color="#326ce5", edgecolor="white")
    for i, (count, bar) in enumerate(zip(counts, bars)):
        if count:
            bar.set_gid(f"score-bar-{i}")   # the SVG element's id: the page can be checked for its bars
    ax.set_xlabel(f"autograded score (of {max_score:g})")
    ax.set_ylabel("students")
    ax.set_xlim(0, top)
    ax.yaxis.get_major_locator().set_params(integer=True)
    fig.tight_layout()
    buf = io.StringIO()
    fig.savefig(buf, format="svg")
    svg = buf.getvalue()
    return svg[svg.index("<svg"):]


def render(results: ClassResults) -> str:
    """The report page as HTML text."""
    e = html.escape
    scores = list(results.scores.values())
    mean = sum(scores) / len(scores) if scores else 0.0
    parts = [f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
             f"<title>{e(results.assignment)}: class report</title><style>{CSS}</style></head><body>",
             f"<h1>{e(results.assignment)}: class report</h1>",
             f"<p class='summary'>{len(scores)} graded, mean {mean:.1f} of {results.max_score:g} autograded points; "
             f"{len(results.failed)} failed to grade; {len(results.not_submitted)} not submitted.</p>",
             "<h2>Score distribution</h2>",
             f"<figure id='score-histogram'>{histogram_svg(scores, results.max_score)}</figure>",
             "<h2>Tests</h2>",
             "<table id='per-test'><thead><tr><th>test</th><th>notebook</th><th>points</th><th>passed</th>"
             "<th>pass rate</th></tr></thead><tbody>"]
    for stats in results.tests.values():
        parts.append(f"<tr><td>{e(stats.grade_id)}</td><td>{e(stats.notebook)}</td><td>{stats.points:g}</td>"
                     f"<td>{stats.passed} / {stats.graded}</td><td>{stats.pass_rate:.0%}</td></tr>")
    parts.append("</tbody></table>")
    hardest = sorted((s for s in results.tests.values() if s.failures), key=lambda s: (s.pass_rate, s.grade_id))
    parts.append("<h2>The tests most students fail</h2>")
    if not hardest:
        parts.append("<p>No test failed.</p>")
    for stats in hardest[:TOP_FAILURES]:
        parts.append(f"<h3>{e(stats.grade_id)}: {stats.graded - stats.passed} of {stats.graded} failed</h3>"
                     "<table class='failures'><thead><tr><th>students</th><th>message</th></tr></thead><tbody>")
        for message, count in stats.failures.most_common():
            parts.append(f"<tr><td>{count}</td><td><code>{e(message)}</code></td></tr>")
        parts.append("</tbody></table>")
    parts.append("<h2>Grading time</h2>")
    if results.seconds:
        total = sum(results.seconds.values())
        parts.append(f"<p id='grading-time'>{total:.0f} s of grading for {len(results.seconds)} submission(s), "
                     f"{total / len(results.seconds):.1f} s each on average, "
                     f"{max(results.seconds.values()):.1f} s at most.</p>")
    else:
        parts.append("<p id='grading-time'>Not recorded: these submissions were not graded with "
                     "<code>labsupport grade</code>.</p>")
    parts.append("<h2>Students</h2>")
    parts.append(student_table(results))
    parts.append("<h2>Students to follow up</h2>")
    if not results.failed and not results.not_submitted:
        parts.append("<p id='follow-up'>None: every student submitted and was graded.</p>")
    else:
        parts.append("<table id='follow-up'><thead><tr><th>student</th><th>status</th></tr></thead><tbody>")
        for student, why in sorted(results.failed.items()):
            parts.append(f"<tr><td>{e(student)}</td><td>failed to grade: {e(why)}</td></tr>")
        for student in results.not_submitted:
            parts.append(f"<tr><td>{e(student)}</td><td>not submitted</td></tr>")
        parts.append("</tbody></table>")
    parts.append("</body></html>")
    return "\n".join(parts)


def student_table(results: ClassResults) -> str:
    """Every student's autograded score (or why there is none), one row each, sorted by name."""
    e = html.escape
    rows = [(student, f"{score:g} / {results.max_score:g}",
             f"{score / results.max_score:.0%}" if results.max_score else "")
            for student, score in results.scores.items()]
    rows += [(student, "—", f"failed to grade: {why}") for student, why in results.failed.items()]
    rows += [(student, "—", "not submitted") for student in results.not_submitted]
    body = "".join(f"<tr><td>{e(student)}</td><td class='score'>{e(score)}</td><td>{e(note)}</td></tr>"
                   for student, score, note in sorted(rows))
    return ("<table id='per-student'><thead><tr><th>student</th><th>score</th><th>note</th></tr></thead>"
            f"<tbody>{body}</tbody></table>")


def write_report(course: pathlib.Path, assignment: str, output: pathlib.Path) -> pathlib.Path:
    """Write the assignment's report to `output` (one HTML file, nothing fetched from elsewhere)."""
    text = render(collect(course, assignment))
    output = pathlib.Path(output)
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(text)
    return output


CSS = """
body { font-family: system-ui, sans-serif; max-width: 60rem; margin: 2rem auto; color: #222; }
table { border-collapse: collapse; margin: 0.5rem 0 1.5rem; }
th, td { border-bottom: 1px solid #ddd; padding: 0.25rem 0.75rem; text-align: left; vertical-align: top; }
figure { margin: 0; } figure svg { max-width: 100%; height: auto; }
code { white-space: pre-wrap; }
"""
