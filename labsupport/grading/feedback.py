"""What the feedback HTML a student gets back may show: scores and messages, never hidden tests, never live markup.

The autograded notebook a feedback page is made from is clean already (`labsupport.grading.intake`: the student's
markup is text, their outputs plain data); the page adds two walls of its own. It is rendered with the HTML
sanitizer on (`HTMLExporter.sanitize_html`), and the sanitizer is `page_html`, which keeps what markdown and the
course's outputs are made of — paragraphs, headings, lists, code, tables with their header cells — and escapes
every other tag (nbconvert's own sanitizer also escaped `<p>`, `<th>` and `<tbody>`, so tables and headings showed as
tag soup); links go only to http, https, mail or the page itself, images only from `data:` URLs. And the page
(`FeedbackPage`) carries a Content-Security-Policy that runs no script at all (`labsupport.grading.pages`).
`CleanFeedback` cleans a notebook autograded before intake cleaned (the same cleaning, idempotent). The cluster's
picture is an SVG drawing: `PicturesAsImages` moves one still inside an HTML output to an `image/svg+xml` output, which
the page shows as an image (where no script of it could run). `ShortTestErrors` cuts a failed test's traceback to its
message, which would otherwise quote the hidden test's code.
"""
from __future__ import annotations

import pathlib
import re
from typing import Any

from nbconvert.exporters import HTMLExporter
from nbformat.notebooknode import NotebookNode
from nbgrader.preprocessors import NbGraderPreprocessor

from labsupport.grading.execute import is_test_cell
from labsupport.grading.intake import CleanSubmission
from labsupport.grading.pages import with_policy

#: The feedback pages of the course languages that have their own (`feedback-<language>/`); nbgrader's otherwise.
PAGES = pathlib.Path(__file__).resolve().parent / "templates"
_SVG = re.compile(r"<svg\b.*?</svg>", re.DOTALL | re.IGNORECASE)

#: The tags a feedback page keeps: what markdown, highlighted code and the course's outputs are made of.
PAGE_TAGS = frozenset({"p", "br", "hr", "div", "span", "pre", "code", "b", "strong", "i", "em", "u", "s", "del",
                       "sub", "sup", "small", "ul", "ol", "li", "dl", "dt", "dd", "h1", "h2", "h3", "h4", "h5",
                       "h6", "blockquote", "kbd", "samp", "var", "abbr", "table", "thead", "tbody", "tfoot", "tr",
                       "th", "td", "caption", "colgroup", "col", "a", "img"})
_ALIGN = re.compile(r"\s*text-align\s*:\s*(left|right|center)\s*;?\s*")
_IMAGE_URL = re.compile(r"data:image/(png|jpeg|gif|svg\+xml);base64,[A-Za-z0-9+/=\s]*")


def _page_attribute(tag: str, name: str, value: str) -> bool:
    """Whether a feedback page keeps this attribute (bleach asks for each one)."""
    if name in ("class", "id", "title"):
        return True
    if tag == "a" and name == "href":
        return value.startswith("#") or re.match(r"(https?|mailto):", value, re.IGNORECASE) is not None
    if tag == "img":
        return name in ("alt", "width", "height") or name == "src" and _IMAGE_URL.fullmatch(value) is not None
    if tag in ("th", "td"):
        return name in ("colspan", "rowspan", "align") or name == "style" and _ALIGN.fullmatch(value) is not None
    return False


def page_html(element: Any) -> str:
    """The sanitizer of a feedback page (nbconvert's `clean_html` filter): `PAGE_TAGS` kept, every other tag
    escaped (so it shows as text), attributes only where `_page_attribute` allows them."""
    import bleach
    text = element.decode() if isinstance(element, bytes) else str(element)
    return bleach.clean(text, tags=PAGE_TAGS, attributes=_page_attribute,
                        protocols=["http", "https", "mailto", "data"], strip=False, strip_comments=True)


class FeedbackPage(HTMLExporter):
    """nbconvert's HTML exporter whose pages carry the course's Content-Security-Policy (no script runs)."""

    def from_notebook_node(self, nb: NotebookNode, resources: Any = None, **kw: Any):
        """The page, with the policy first in its head."""
        output, resources = super().from_notebook_node(nb, resources, **kw)
        return with_policy(output), resources


class ShortTestErrors(NbGraderPreprocessor):
    """In feedback, a failed test shows its message only: a traceback would quote the (hidden) test's code."""

    def preprocess_cell(self, cell, resources, index):
        """Cut a failed test cell's traceback down to its last line."""
        if is_test_cell(cell):
            for output in cell.get("outputs", []):
                if output.get("output_type") == "error":
                    output["traceback"] = [f"\x1b[0;31m{output['ename']}\x1b[0m: {output['evalue']}"]
        return cell, resources


class CleanFeedback(CleanSubmission):
    """Intake's cleaning again, for a notebook autograded before intake cleaned (a clean one comes out unchanged)."""


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


def use_feedback_page(c: Any, language: str) -> None:
    """Give `nbgrader generate_feedback` the page of the course's language where there is one (it extends
    nbgrader's own page, whose words it replaces); for its exporter only, so the formgrader keeps its own pages."""
    name = f"feedback-{language}"
    if (PAGES / name / "index.html.j2").is_file():
        from nbgrader.converters import generate_feedback
        formgrader = pathlib.Path(generate_feedback.__file__).resolve().parents[1] / "server_extensions" / "formgrader"
        c.GenerateFeedback.HTMLExporter.template_name = name
        c.GenerateFeedback.HTMLExporter.extra_template_basedirs = [str(PAGES)]
        # nbgrader's page (`feedback/index.html.j2`) and the stylesheet it includes, as nbgrader itself finds them
        c.GenerateFeedback.HTMLExporter.extra_template_paths = [
            str(formgrader / "templates"), str(formgrader / "static" / "node_modules" / "bootstrap" / "dist" / "css")]


__all__ = ["ShortTestErrors", "PicturesAsImages", "CleanFeedback", "FeedbackPage", "page_html", "PAGE_TAGS",
           "use_feedback_page"]
