"""The class report page from collected results, without a gradebook: the student table and the follow-up list."""
from __future__ import annotations

import re

from labsupport.classroom.report import ClassResults, render


def _rows(page: str, table_id: str) -> list[list[str]]:
    table = re.search(rf"<table id='{table_id}'>.*?</table>", page, re.S)
    assert table, f"no table #{table_id}"
    return [re.findall(r"<td[^>]*>(.*?)</td>", row) for row in re.findall(r"<tr>(.*?)</tr>", table.group(0))[1:]]


def test_every_student_has_a_row_with_the_score_or_why_not():
    results = ClassResults("a1", max_score=8, scores={"bob": 2.0, "alice": 8.0}, failed={"dave": "timed out: 600 s"},
                           not_submitted=["carol"])
    rows = _rows(render(results), "per-student")
    assert rows == [["alice", "8 / 8", "100%"], ["bob", "2 / 8", "25%"], ["carol", "—", "not submitted"],
                    ["dave", "—", "failed to grade: timed out: 600 s"]]


def test_nobody_to_follow_up_says_none_instead_of_an_empty_table():
    page = render(ClassResults("a1", max_score=8, scores={"alice": 8.0}))
    assert "<table id='follow-up'>" not in page
    assert re.search(r"<p id='follow-up'>None\b", page)


def test_students_to_follow_up_are_listed():
    page = render(ClassResults("a1", max_score=8, scores={"alice": 8.0}, not_submitted=["carol"]))
    assert _rows(page, "follow-up") == [["carol", "not submitted"]]


def test_a_full_score_is_a_bar_of_its_own():
    """11/11 is not counted in the same bar as 10/11: the histogram has one bar per score, each bar's id its index."""
    page = render(ClassResults("a1", max_score=11, scores={"a": 11.0, "b": 11.0, "c": 10.0, "d": 0.0}))
    bars = sorted(int(n) for n in re.findall(r'id="score-bar-(\d+)"', page))
    assert bars == [0, 10, 11], bars


def test_the_histogram_counts_students_in_whole_numbers():
    """Each bar is as tall as its number of students, on an axis of whole numbers."""
    from tests.widgets import drawn
    page = render(ClassResults("a1", max_score=11, scores={"a": 11.0, "b": 11.0, "c": 10.0}))
    svg = re.search(r"<svg.*?</svg>", page, re.S).group(0)
    assert [tick.text for tick in drawn.texts(svg, "ytick")] == ["0", "1", "2"]
    heights = {int(n): float(h) for n, h in re.findall(r'id="score-bar-(\d+)"[^>]* height="([\d.]+)"', svg)}
    assert heights.keys() == {10, 11} and abs(heights[11] - 2 * heights[10]) < 0.2, heights
    assert drawn.texts(svg, "xlabel")[0].text == "autograded score (of 11)"
def test_the_page_runs_no_script_and_stays_small_whatever_the_class_hands_in():
    """200 students whose answers make every failure message different and 300 KB long (a check quotes the answer),
    ids that are markup and formulas: the page keeps a bounded size, shows them as text, runs nothing."""
    from collections import Counter

    from labsupport.classroom.report import MAX_MESSAGE, TOP_MESSAGES, TestStats
    stats = TestStats("t1", "nb", 2.0, passed=0, graded=200,
                      failures=Counter({f"AssertionError: got {i:03d}" + "x" * 300_000: 1 for i in range(200)}))
    odd = "<img src=x onerror=alert(1)>"
    results = ClassResults("a1", max_score=2, scores={f"s{i:03d}": 0.0 for i in range(200)} | {odd: 0.0},
                           tests={"t1": stats}, failed={"=HYPERLINK(1)": "failed: " + "y" * 100_000},
                           odd_ids={odd: "it holds markup characters (< > & quotes)"})
    page = render(results)
    assert len(page) < 512 * 1024, len(page)
    head = page[:page.index("</head>")]
    assert '<meta http-equiv="Content-Security-Policy"' in head and "script-src 'none'" in head
    assert "<img" not in page and "&lt;img src=x onerror=alert(1)&gt;" in page
    shown = _rows(page, "follow-up")
    assert ["&lt;img src=x onerror=alert(1)&gt;",
            "an id outside the grammar: it holds markup characters (&lt; &gt; &amp; quotes) (an id is 1 to 64 "
            "characters: letters a-z and A-Z, digits and . _ @ + -, starting with a letter, a digit or _)"] in shown
    rows = re.findall(r"<tr><td>(\d+)</td><td>(.*?)</td></tr>", page)
    assert len(rows) == TOP_MESSAGES + 1 and rows[-1] == ("190", "190 other messages"), rows[-1]
    assert all(len(text) <= MAX_MESSAGE + len("<code></code>") + 10 for _, text in rows)
