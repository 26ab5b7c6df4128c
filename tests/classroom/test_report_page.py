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
