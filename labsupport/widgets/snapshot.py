"""Snapshot: a view's picture at the moment a cell ran, which later changes of the cluster leave as it was.

A lesson shows a snapshot wherever the text explains one moment, and keeps the live view for the place where the
student is asked to interact.

>>> shot = Snapshot("<svg></svg>", "<ClusterGraph pods={}>")
>>> shot._repr_mimebundle_()["text/html"]
'<svg></svg>'
"""
from __future__ import annotations

from typing import Any


class Snapshot:
    """A static picture (HTML) of a view, taken once; it displays the same in JupyterLab, exports and feedback."""

    def __init__(self, html: str, text: str = ""):
        self.html = html
        self.text = text

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict:
        """The picture as `text/html`, with a one-line `text/plain` for places that show no HTML."""
        return {"text/html": self.html, "text/plain": self.text or "<snapshot>"}

    def __repr__(self) -> str:
        return self.text or "<snapshot>"


__all__ = ["Snapshot"]
