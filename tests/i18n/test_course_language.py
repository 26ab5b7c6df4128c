"""The Russian course speaks Russian around the notebook too: the lab server a graded notebook talks to answers in
the course's language, whatever the grader's shell says; the feedback page and the class report say their own words
in Russian."""
from __future__ import annotations

import os
import pathlib
import re

import nbformat

from labsupport.grading.execute import LabServerProcess
from labsupport.grading.sandbox import socket_base
from labsupport.i18n import VARIABLE


def test_the_lab_server_speaks_the_course_language(monkeypatch, tmp_path):
    monkeypatch.setenv(VARIABLE, "en")          # the grader's own shell
    folder = tmp_path if len(str(tmp_path)) < 60 else socket_base()
    server = LabServerProcess(os.path.join(folder, "student.sock"), seed=0, proxy_mode="iptables", language="ru")
    try:
        assert "<b>Стенд</b> — бэкенд <code>sim</code>, режим kube-proxy <code>iptables</code>" in \
            server.grader.summary_html()
    finally:
        server.grader.close()
        server.stop()


# --- the feedback page ------------------------------------------------------------------------------------------------
#: What nbgrader's own feedback page says around a student's cells.
ENGLISH_CHROME = ("Score", "Test cell", "Grade cell", "Student's answer", "Student's task", "Written response",
                  "Coding free-response", "Comments", "Late submission penalty", "(Top)")


def feedback_page(language: str) -> str:
    """The feedback page `nbgrader generate_feedback` writes in a course of `language`, for a small graded notebook:
    a solution, a test that lost half a point, a written answer with the grader's comment, a late penalty."""
    from nbconvert.exporters import HTMLExporter
    from nbgrader.converters import GenerateFeedback
    from nbgrader.coursedir import CourseDirectory
    from traitlets.config import Config

    from labsupport.grading.course_config import configure
    c = Config()
    configure(c, "/srv/course", language=language)
    app = GenerateFeedback(coursedir=CourseDirectory(config=c), config=c)
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("# Задание"),
        nbformat.v4.new_code_cell("answer = 1", metadata={"nbgrader": {"solution": True, "grade": False,
                                                                        "grade_id": "solution", "locked": False}}),
        nbformat.v4.new_code_cell("assert answer", metadata={"nbgrader": {"solution": False, "grade": True,
                                                                           "grade_id": "answer-test", "points": 2,
                                                                           "score": 1.5, "locked": True}}),
        nbformat.v4.new_markdown_cell("ответ", metadata={"nbgrader": {"solution": True, "grade": True, "points": 3,
                                                                      "grade_id": "written", "score": 3,
                                                                      "comment": "хорошо", "locked": False}})])
    exporter = HTMLExporter(parent=app, config=app.config)
    page, _ = exporter.from_notebook_node(nb, resources={"nbgrader": {"notebook": "dns", "score": 4.5, "max_score": 5,
                                                                      "late_penalty": 0.5}})
    return page


def words(page: str) -> str:
    """A page's text without its styles, scripts and tags."""
    return re.sub(r"\s+", " ", re.sub(r"<(style|script)\b.*?</\1>|<[^>]+>", " ", page, flags=re.S))


def test_the_russian_feedback_page_has_no_english_chrome():
    text = words(feedback_page("ru"))
    for said in ("dns (баллы: 4,5 из 5)", "Тест (баллы: 1,5 из 2)", "Письменный ответ (баллы: 3 из 3)", "Твой ответ",
                 "Тест answer-test Баллы: 1,5 из 2", "Комментарий проверяющего: хорошо",
                 "Штраф за опоздание (баллы: −0,5)", "(наверх)"):
        assert said in text, f"{said!r} not in the page: {text}"
    assert not [w for w in ENGLISH_CHROME if w in text], text


def test_the_english_feedback_page_stays_nbgraders():
    text = words(feedback_page("en"))
    assert "dns (Score: 4.5 / 5.0)" in text and "Student's answer" in text and "Test cell" in text


def test_the_russian_page_is_for_feedback_only_the_formgrader_keeps_its_own():
    from traitlets.config import Config

    from labsupport.grading.course_config import configure
    c = Config()
    configure(c, "/srv/course", language="ru")
    assert "template_name" not in c.HTMLExporter and c.GenerateFeedback.HTMLExporter.template_name == "feedback-ru"


# --- the class report -------------------------------------------------------------------------------------------------
def class_results():
    from collections import Counter

    from labsupport.classroom.report import ClassResults, TestStats
    tests = {"dns-test": TestStats("dns-test", "dns", 2, passed=1, graded=2,
                                   failures=Counter({"CheckFailed: nslookup вернул 10.96.0.7": 1})),
             "pod-back-test": TestStats("pod-back-test", "dns", 3, passed=2, graded=2)}
    return ClassResults("02-dns", max_score=5, scores={"bob": 2.5, "alice": 5.0}, tests=tests,
                        failed={"dave": "timed out: 600 s",
                                "erin": "no autograded notebook (grading failed or never ran)"},
                        not_submitted=["carol"], seconds={"alice": 20.0, "bob": 31.25})


def rows(page: str, table_id: str) -> list[list[str]]:
    table = re.search(rf"<table id='{table_id}'>.*?</table>", page, re.S)
    assert table, f"no table #{table_id}"
    return [re.findall(r"<td[^>]*>(.*?)</td>", row) for row in re.findall(r"<tr>(.*?)</tr>", table.group(0))[1:]]


def test_each_course_folder_says_its_language():
    from labsupport.classroom.report import course_language
    root = pathlib.Path(__file__).resolve().parents[2] / "grading"
    assert (course_language(root), course_language(root / "ru"), course_language(root / "source")) == ("en", "ru", "en")


def test_the_russian_class_report_is_russian():
    from labsupport.classroom.report import render_page
    page = render_page(class_results(), "ru")
    text = words(page)
    for said in ("02-dns: отчёт по группе", "Проверено работ: 2, средний балл автопроверки — 3,8 из 5",
                 "Распределение баллов", "Тесты, на которых чаще всего ошибаются", "dns-test: не прошли 1 из 2",
                 "Всего на проверку ушло 51 с, в среднем 25,6 с на работу", "Кому нужно внимание"):
        assert said in text, f"{said!r} not in {text}"
    english = ["class report", "Score distribution", "Students to follow up", "not submitted", "failed to grade",
               "pass rate", "<th>student</th>", "<th>score</th>", "autograded score", ">students<"]
    assert not [w for w in english if w in page], [w for w in english if w in page]
    assert rows(page, "per-student") == [
        ["alice", "5 из 5", "100%"], ["bob", "2,5 из 5", "50%"], ["carol", "—", "работа не сдана"],
        ["dave", "—", "проверить не удалось: проверка не уложилась во время: 600 s"],
        ["erin", "—", "проверить не удалось: нет проверенного ноутбука (проверка упала или не запускалась)"]]
    assert rows(page, "per-test")[0] == ["dns-test", "dns", "2", "1 из 2", "50%"]
    assert "баллы автопроверки (из 5)" in page and "студентов" in page       # the histogram's axes


def test_a_language_without_its_own_report_gets_the_english_one():
    from labsupport.classroom.report import render, render_page
    assert render_page(class_results(), "en") is None and "class report" in render(class_results())
