"""The class at a glance: one self-contained, offline HTML page from the gradebook and the autograded notebooks.

Everything on it that a student could have shaped (their id, a failure message quoting their answer) is escaped
text, cut to `MAX_MESSAGE` characters, and at most `TOP_MESSAGES` different messages are listed per test, so the page
stays small whatever a class hands in; it carries the course's Content-Security-Policy (no script runs). A student
id outside the grammar of `labsupport.grading.ids` is listed for follow-up with the reason.
"""
from __future__ import annotations

import bisect
import html
import json
import math
import pathlib
import re
from collections import Counter
from dataclasses import dataclass, field

from labsupport.classroom.grade import read_record, submitted_students
from labsupport.classroom.gradebook import GradingError, db_url
from labsupport.grading.ids import RULE, problem
from labsupport.grading.pages import META

#: A course language's own report page (`report-<language>.html.j2`); the page written below otherwise (English).
PAGES = pathlib.Path(__file__).resolve().parent / "templates"
ANSI = re.compile(r"\x1b\[[0-9;]*m")
IPV4 = re.compile(r"\b\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?\b")
TOP_FAILURES = 5
#: The longest failure message or reason the page shows, and the most different messages it lists per test.
MAX_MESSAGE = 300
TOP_MESSAGES = 10
#: The largest autograded notebook read for its failure messages, in bytes.
MAX_NOTEBOOK = 64 * 2**20


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
    odd_ids: dict[str, str] = field(default_factory=dict)             # student id outside the grammar -> why


def failure_message(cell: dict) -> str | None:
    """The first line of a test cell's error, with addresses blanked so the same mistake groups together."""
    for out in cell.get("outputs", []):
        if out.get("output_type") == "error":
            text = f"{out.get('ename', 'Error')}: {ANSI.sub('', str(out.get('evalue', ''))[:100_000])}".strip()
            return shorter(IPV4.sub("<ip>", text.splitlines()[0] if text else ""))
    return None


def shorter(text: str, limit: int = MAX_MESSAGE) -> str:
    """Text cut to `limit` characters, ending with … when cut."""
    return text if len(text) <= limit else text[:limit - 1] + "…"


def read_autograded(path: pathlib.Path) -> dict | None:
    """An autograded notebook as JSON (None when it is larger than `MAX_NOTEBOOK` or not a notebook)."""
    try:
        if path.stat().st_size > MAX_NOTEBOOK:
            return None
        data = json.loads(path.read_text(errors="replace"))
    except (OSError, ValueError, RecursionError):
        return None
    return data if isinstance(data, dict) and isinstance(data.get("cells"), list) else None


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
                results.failed[student] = shorter(f"{outcome.status}: {outcome.message}")
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
                notebook = read_autograded(autograded[nb.name]) or {"cells": []}
                cells = {c.get("metadata", {}).get("nbgrader", {}).get("grade_id"): c
                         for c in notebook["cells"] if isinstance(c, dict)}
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
    for student in {*results.scores, *results.failed, *results.not_submitted}:
        why = problem(student)
        if why is not None:
            results.odd_ids[student] = why
    return results


def score_bins(scores: list[float], top: float) -> list[float]:
    """The histogram's bin edges: one bar per score where scores are whole points (a bar centred on each, so the full
    score is a bar of its own, not the top of the 10-11 bar); otherwise twenty equal bars from 0 to `top`."""
    if top <= 40 and all(float(score).is_integer() for score in scores):
        return [k - 0.5 for k in range(int(math.ceil(top)) + 2)]
    return [i * top / 20 for i in range(21)]


def bin_counts(scores: list[float], bins: list[float]) -> list[int]:
    """How many scores fall in each bin: from its edge up to the next, the last bin holding its top edge too."""
    counts = [0] * (len(bins) - 1)
    for score in scores:
        if bins[0] <= score <= bins[-1]:
            counts[min(bisect.bisect_right(bins, score) - 1, len(counts) - 1)] += 1
    return counts


def histogram_svg(scores: list[float], max_score: float, xlabel: str | None = None, ylabel: str = "students",
                  language: str = "en") -> str:
    """The score distribution as an inline SVG element, its numbers written as `language` writes them (drawn by
    `labsupport.widgets.plot`: no files, no network); each bar's id is score-bar-<its bin>, so the page can be checked
    for its bars."""
    from labsupport.widgets.plot import Plot, Scale
    top = max(max_score, max(scores, default=0), 1)
    bins = score_bins(scores, top)
    counts = bin_counts(scores, bins)
    plot = Plot(Scale(bins[0], bins[-1]), Scale(0, max(counts) * 1.05 or 1),
                xlabel=xlabel or f"autograded score (of {max_score:g})", ylabel=ylabel, grid="", integer_y=True,
                width=640, height=320, language=language)
    for i, count in enumerate(counts):
        if count:
            plot.bar(bins[i], bins[i + 1], count, "#326ce5", ident=f"score-bar-{i}", edge="#ffffff")
    return plot.svg()


def render(results: ClassResults) -> str:
    """The report page as HTML text."""
    e = html.escape
    scores = list(results.scores.values())
    mean = sum(scores) / len(scores) if scores else 0.0
    parts = [f"<!DOCTYPE html><html lang='en'><head>{META}<meta charset='utf-8'>"
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
        common = stats.failures.most_common()
        for message, count in common[:TOP_MESSAGES]:
            parts.append(f"<tr><td>{count}</td><td><code>{e(shorter(message))}</code></td></tr>")
        if len(common) > TOP_MESSAGES:
            rest = common[TOP_MESSAGES:]
            parts.append(f"<tr><td>{sum(n for _, n in rest)}</td><td>{len(rest)} other messages</td></tr>")
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
    if not results.failed and not results.not_submitted and not results.odd_ids:
        parts.append("<p id='follow-up'>None: every student submitted and was graded.</p>")
    else:
        parts.append("<table id='follow-up'><thead><tr><th>student</th><th>status</th></tr></thead><tbody>")
        for student, why in sorted(results.failed.items()):
            parts.append(f"<tr><td>{e(shorter(student))}</td><td>failed to grade: {e(shorter(why))}</td></tr>")
        for student in results.not_submitted:
            parts.append(f"<tr><td>{e(shorter(student))}</td><td>not submitted</td></tr>")
        for student, why in sorted(results.odd_ids.items()):
            parts.append(f"<tr><td>{e(shorter(student))}</td><td>an id outside the grammar: {e(why)} ({e(RULE)})"
                         "</td></tr>")
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
    body = "".join(f"<tr><td>{e(shorter(student))}</td><td class='score'>{e(score)}</td><td>{e(shorter(note))}</td>"
                   "</tr>" for student, score, note in sorted(rows))
    return ("<table id='per-student'><thead><tr><th>student</th><th>score</th><th>note</th></tr></thead>"
            f"<tbody>{body}</tbody></table>")


def course_language(course: pathlib.Path) -> str:
    """The language the course grades in, as its `nbgrader_config.py` configures it (en without one)."""
    path = pathlib.Path(course) / "nbgrader_config.py"
    if not path.is_file():
        return "en"
    from traitlets.config.loader import PyFileConfigLoader
    return PyFileConfigLoader(path.name, str(path.parent)).load_config().GradedExecute.get("language") or "en"


def render_page(results: ClassResults, language: str) -> str | None:
    """The report page in a course language that has its own template (None for one without): the facts `render`
    shows, the template's words. The template gets the results, the scores and their mean, the tests most students
    fail, `histogram(xlabel, ylabel)`, `number(value, decimals)` in that language and the CSS."""
    template = PAGES / f"report-{language}.html.j2"
    if not template.is_file():
        return None
    import jinja2
    from markupsafe import Markup

    from labsupport.formats import number
    scores = list(results.scores.values())
    hardest = sorted((s for s in results.tests.values() if s.failures), key=lambda s: (s.pass_rate, s.grade_id))
    pages = jinja2.Environment(loader=jinja2.FileSystemLoader(str(PAGES)), autoescape=True,
                               undefined=jinja2.StrictUndefined)
    return pages.get_template(template.name).render(
        results=results, scores=scores, mean=sum(scores) / len(scores) if scores else 0.0,
        hardest=hardest[:TOP_FAILURES], css=Markup(CSS),
        histogram=lambda xlabel, ylabel: Markup(histogram_svg(scores, results.max_score, xlabel, ylabel, language)),
        number=lambda value, decimals=0: number(value, decimals, language))


def write_report(course: pathlib.Path, assignment: str, output: pathlib.Path) -> pathlib.Path:
    """Write the assignment's report to `output` (one HTML file, nothing fetched from elsewhere), in the course's
    language where it has its own page."""
    results = collect(course, assignment)
    text = render_page(results, course_language(course)) or render(results)
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
