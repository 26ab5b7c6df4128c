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
    wrap = [i for i, p in enumerate(chain) if issubclass(p, WrapFailureMessages)]
    assert wrap and wrap[0] > chain.index(CSSHTMLHeaderPreprocessor)


def test_generate_feedback_sets_up_its_preprocessors_without_a_warning(caplog):
    """The HTML exporter gives each preprocessor its display_data_priority; each takes it (five warnings before)."""
    from nbconvert import HTMLExporter
    c = Config()
    configure(c, "/tmp/course")
    exporter = HTMLExporter(config=c)
    with caplog.at_level("WARNING"):
        for preprocessor in c.GenerateFeedback.preprocessors:
            preprocessor(parent=exporter)
    assert not [r.getMessage() for r in caplog.records if "not recognized" in r.getMessage()]


def test_the_style_sheet_wraps_error_output_and_leaves_the_notebook_alone():
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("1")])
    before = nbformat.writes(nb)
    out, resources = WrapFailureMessages().preprocess(nb, {"inlining": {"css": ["body {}"]}})
    assert resources["inlining"]["css"] == ["body {}", WRAP_CSS]
    assert "output_error pre" in WRAP_CSS and "pre-wrap" in WRAP_CSS
    assert nbformat.writes(out) == before
