"""Feedback pages wrap a failed test's message: the course adds the style sheet after nbconvert's own CSS."""
from __future__ import annotations

import nbformat
from nbconvert.preprocessors import CSSHTMLHeaderPreprocessor
from traitlets.config import Config

from labsupport.grading.course_config import configure
from labsupport.grading.feedback_style import WRAP_CSS, WrapFailureMessages


def test_feedback_runs_the_wrapping_style_after_the_page_css():
    c = Config()
    configure(c, "/tmp/course")
    chain = list(c.GenerateFeedback.preprocessors)
    assert WrapFailureMessages in chain
    assert chain.index(WrapFailureMessages) > chain.index(CSSHTMLHeaderPreprocessor)


def test_the_style_sheet_wraps_error_output_and_leaves_the_notebook_alone():
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("1")])
    before = nbformat.writes(nb)
    out, resources = WrapFailureMessages().preprocess(nb, {"inlining": {"css": ["body {}"]}})
    assert resources["inlining"]["css"] == ["body {}", WRAP_CSS]
    assert "output_error pre" in WRAP_CSS and "pre-wrap" in WRAP_CSS
    assert nbformat.writes(out) == before
