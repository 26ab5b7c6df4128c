"""What the feedback HTML a student gets back may show: scores and messages, never hidden tests, never live markup.

nbgrader's feedback renders every output and written answer as HTML. A submission's outputs come from the student's
own kernel, so they are the student's markup: the course renders the feedback with nbconvert's HTML sanitizer on
(`HTMLExporter.sanitize_html`), which keeps text, tables and code but drops scripts, event handlers and frames. The
cluster's picture is an SVG drawing inside such an output: `PicturesAsImages` moves it to an `image/svg+xml` output,
which the feedback shows as an image (where no script of it can run) instead of losing it to the sanitizer.
`StudentMarkupAsText` does for a written answer what the sanitizer does for outputs (nbgrader's own feedback page
renders markdown unsanitized). `ShortTestErrors` cuts a failed test's traceback to its message, which would
otherwise quote the hidden test's code.
"""
from __future__ import annotations

import re
from typing import Any

from nbconvert.filters.strings import clean_html
from nbformat.notebooknode import NotebookNode
from nbgrader.preprocessors import NbGraderPreprocessor

from labsupport.grading.execute import is_test_cell

_SVG = re.compile(r"<svg\b.*?</svg>", re.DOTALL | re.IGNORECASE)
_TAG = re.compile(r"<\s*[a-zA-Z!/?]")


class ShortTestErrors(NbGraderPreprocessor):
    """In feedback, a failed test shows its message only: a traceback would quote the (hidden) test's code."""

    def preprocess_cell(self, cell, resources, index):
        """Cut a failed test cell's traceback down to its last line."""
        if is_test_cell(cell):
            for output in cell.get("outputs", []):
                if output.get("output_type") == "error":
                    output["traceback"] = [f"\x1b[0;31m{output['ename']}\x1b[0m: {output['evalue']}"]
        return cell, resources


class StudentMarkupAsText(NbGraderPreprocessor):
    """A written answer's own HTML (markdown lets raw tags through, and nbgrader's feedback page renders it as it
    is) is kept as text: the allowed tags of nbconvert's sanitizer stay, anything else is escaped."""

    def preprocess_cell(self, cell: NotebookNode, resources: Any, index: int):
        """Sanitize the source of a student's markdown answer that holds a tag."""
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if cell.get("cell_type") == "markdown" and meta.get("solution") and _TAG.search(cell.source or ""):
            cell.source = clean_html(cell.source)
        return cell, resources


class PicturesAsImages(NbGraderPreprocessor):
    """Move the one SVG drawing of an HTML output (the cluster's static picture) into an image output."""

    def preprocess_cell(self, cell: NotebookNode, resources: Any, index: int):
        """Rewrite each output whose HTML holds exactly one SVG drawing."""
        for output in cell.get("outputs", []):
            data = output.get("data") or {}
            html = data.get("text/html")
            if isinstance(html, list):
                html = "".join(html)
            if not isinstance(html, str):
                continue
            drawings = _SVG.findall(html)
            if len(drawings) == 1:
                svg = drawings[0]
                if "xmlns=" not in svg[:200]:
                    svg = svg.replace("<svg", '<svg xmlns="http://www.w3.org/2000/svg"', 1)
                output["data"] = NotebookNode({"image/svg+xml": svg,
                                               "text/plain": data.get("text/plain", "")})
        return cell, resources


__all__ = ["ShortTestErrors", "PicturesAsImages", "StudentMarkupAsText"]
