"""What a chart draws, read back from its SVG: the texts of one class, where each stands and how far it reaches, and
the frame's edges."""
from __future__ import annotations

from dataclasses import dataclass
from xml.etree import ElementTree

from labsupport.widgets.scene import text_width

SVG = "{http://www.w3.org/2000/svg}"


@dataclass(frozen=True)
class DrawnText:
    """One text element: its lines, its anchor point (the first line's baseline) and font size."""

    lines: list[str]
    x: float
    y: float
    size: float
    anchor: str

    @property
    def text(self) -> str:
        """The lines as one string, one line under another."""
        return "\n".join(self.lines)

    def span(self) -> tuple[float, float]:
        """How far the widest line reaches, left and right."""
        width = max(text_width(line, self.size) for line in self.lines)
        left = self.x - width * {"start": 0.0, "middle": 0.5, "end": 1.0}[self.anchor]
        return left, left + width


def texts(svg: str, cls: str) -> list[DrawnText]:
    """Every text element of class `cls`, in drawing order."""
    found = []
    for element in ElementTree.fromstring(svg).iter(f"{SVG}text"):
        if cls in element.get("class", "").split():
            spans = element.findall(f"{SVG}tspan")
            lines = [span.text or "" for span in spans] if spans else [element.text or ""]
            found.append(DrawnText(lines, float(element.get("x")), float(element.get("y")),
                                   float(element.get("font-size")), element.get("text-anchor", "start")))
    return found


def frame(svg: str) -> tuple[float, float, float, float]:
    """The frame's left, top, right and bottom edges."""
    (rect,) = [r for r in ElementTree.fromstring(svg).iter(f"{SVG}rect") if r.get("class") == "frame"]
    x, y, width, height = (float(rect.get(k)) for k in ("x", "y", "width", "height"))
    return x, y, x + width, y + height
