"""How feedback pages look: a failed test's message wraps inside its box instead of running off its right edge.

nbgrader's feedback template draws an error output as one `<pre>` line per message line; a check's message is one
long line (its hint at the end), so without this the page cut it at the box edge. `WrapFailureMessages` runs after
`CSSHTMLHeaderPreprocessor` and adds one style sheet to the page's inline CSS; the notebook itself is not changed.
"""
from __future__ import annotations

from nbgrader.preprocessors import NbGraderPreprocessor

#: Error and stderr outputs wrap at the box's edge, breaking a long word (a URL, a selector) only when it must.
WRAP_CSS = """
div.output_subarea.output_error pre, div.output_subarea.output_stderr pre {
    white-space: pre-wrap;
    overflow-wrap: anywhere;
}
"""


class WrapFailureMessages(NbGraderPreprocessor):
    """Add the style sheet that wraps failure messages to the feedback page (the notebook stays as it is)."""

    def preprocess(self, nb, resources):
        """Append WRAP_CSS to the inline CSS the HTML template writes into the page's head."""
        inlining = resources.setdefault("inlining", {})
        inlining["css"] = list(inlining.get("css") or []) + [WRAP_CSS]
        return nb, resources


__all__ = ["WrapFailureMessages", "WRAP_CSS"]
