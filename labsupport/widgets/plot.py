"""The drawing under the lessons' charts and the class report's histogram: a frame with a linear or logarithmic scale
on each axis, "nice" ticks, gridlines, lines with markers, bars and text, written out as one SVG document.

The project draws these itself, so a chart is the same in CPython and in the browser, where there is no plotting
library. Every text is escaped, nothing is fetched and nothing runs; each drawn value carries a class (`ytick`,
`xtick`, `bar-name`, `bar-value`, `note`, `legend-entry` …), so a test reads back what the chart shows.

>>> nice_ticks(-14.5, 524.5)
[0.0, 100.0, 200.0, 300.0, 400.0, 500.0]
>>> decade_ticks(1e7, 1.35e10)
[10000000.0, 100000000.0, 1000000000.0, 10000000000.0]
>>> tick_labels([0, 2.5, 5], language="ru"), tick_labels([1e3, 1e4], language="ru")
(['0,0', '2,5', '5,0'], ['1000', '10 000'])
>>> plot = Plot(Scale(0, 3), Scale(0, 5), title="a < b & c", xlabel="x", ylabel="y", width=300, height=200)
>>> plot.bar(0.5, 1.5, 4, "#326ce5")
>>> svg = plot.svg()
>>> "a &lt; b &amp; c" in svg and '<rect class="bar"' in svg and "<script" not in svg
True
"""
from __future__ import annotations

import html
import math
from dataclasses import dataclass
from typing import Iterable, Sequence

from labsupport import formats
from labsupport.widgets.scene import text_width

#: The fonts the SVG asks for, the one `text_width` measures first.
FONT = "DejaVu Sans, Helvetica, Arial, sans-serif"
#: Font sizes, in the SVG's user units (pixels at full size).
TITLE_SIZE, LABEL_SIZE, TICK_SIZE, NOTE_SIZE = 15.0, 13.0, 12.0, 11.0
#: A line of text's height, per unit of font size.
LEADING = 1.2
#: Space kept free at the canvas's edges, and how far a tick mark sticks out of the frame.
PAD, TICK_LENGTH = 8.0, 4.0
INK, GRID, FRAME = "#212121", "#e0e0e0", "#424242"


def nice_ticks(low: float, high: float, most: int = 8, integer: bool = False) -> list[float]:
    """Ticks from `low` to `high`, at most `most`, as close together as that allows: 1, 2, 2.5 or 5 times a power of
    ten apart (whole numbers only, when `integer`)."""
    if high <= low:
        return [low]
    power = math.floor(math.log10((high - low) / most))
    for exponent in range(power, power + 3):
        for multiple in (1, 2, 2.5, 5):
            step = multiple * 10.0 ** exponent
            if integer and (step < 1 or not step.is_integer()):
                continue
            first, last = math.ceil(low / step - 1e-9), math.floor(high / step + 1e-9)
            if last - first + 1 <= most:
                return [round(k * step, 12) + 0.0 for k in range(first, last + 1)]
    return [low, high]


def decade_ticks(low: float, high: float, most: int = 8) -> list[float]:
    """Ticks on a log scale from `low` to `high`: the powers of ten (every second, third … when there are more than
    `most`); 1, 2 and 5 times them when fewer than two powers fall inside; evenly spaced ticks when even those don't."""
    first, last = math.floor(math.log10(low)), math.ceil(math.log10(high))
    for multiples in (("1",), ("1", "2", "5")):
        candidates = [float(f"{multiple}e{exponent}") for exponent in range(first, last + 1) for multiple in multiples]
        ticks = [value for value in candidates if low * (1 - 1e-9) <= value <= high * (1 + 1e-9)]
        if len(ticks) >= 2:
            every = math.ceil(len(ticks) / most)
            return ticks[::every]
    return nice_ticks(low, high, most)


def tick_labels(ticks: Sequence[float], language: str | None = None) -> list[str]:
    """The ticks' values as the language writes numbers, all with as many decimals as the finest of them needs."""
    places = next((p for p in range(10) if all(abs(round(t, p) - t) <= 1e-9 * max(1.0, abs(t)) for t in ticks)), 10)
    return [formats.number(t, places, language) for t in ticks]


@dataclass(frozen=True)
class Scale:
    """The data limits along one axis, linear or logarithmic (a log scale's limits are above zero)."""

    low: float
    high: float
    log: bool = False

    @classmethod
    def around(cls, values: Iterable[float], *, log: bool = False, margin: float = 0.05) -> Scale:
        """A scale holding `values` with `margin` of their span free at each end (on a log scale, of the decades they
        span, and only the values above zero count)."""
        shown = [float(v) for v in values if math.isfinite(v) and (v > 0 or not log)]
        if not shown:
            return cls(1.0, 10.0, log=True) if log else cls(0.0, 1.0)
        if log:
            low, high = math.log10(min(shown)), math.log10(max(shown))
            span = high - low or 1.0
            return cls(10 ** (low - margin * span), 10 ** (high + margin * span), log=True)
        low, high = min(shown), max(shown)
        span = high - low or abs(low) or 1.0
        return cls(low - margin * span, high + margin * span)

    def fraction(self, value: float) -> float:
        """Where `value` falls between the limits: 0 at `low`, 1 at `high`."""
        if self.log:
            bottom = math.log10(self.low)
            return (math.log10(value) - bottom) / (math.log10(self.high) - bottom)
        return (value - self.low) / (self.high - self.low)

    def ticks(self, most: int = 8, integer: bool = False) -> list[float]:
        """The ticks along this scale: powers of ten on a log scale, nice round steps on a linear one."""
        return decade_ticks(self.low, self.high, most) if self.log else nice_ticks(self.low, self.high, most, integer)


def wrap(text: str, size: float, room: float) -> list[str]:
    """`text` in lines no wider than `room` at `size`, broken at spaces, its own line breaks kept (a word wider than
    `room` gets a line of its own)."""
    if not text:
        return []
    lines = []
    for paragraph in text.split("\n"):
        line = ""
        for word in paragraph.split(" "):
            longer = f"{line} {word}" if line else word
            if line and text_width(longer, size) > room:
                lines.append(line)
                line = word
            else:
                line = longer
        lines.append(line)
    return lines


def _esc(text: str) -> str:
    return html.escape(str(text), quote=True)


def _text(x: float, y: float, lines: Sequence[str], size: float, *, cls: str, anchor: str = "middle",
          transform: str = "") -> str:
    """A text element with its first line's baseline at y, the lines below one another."""
    turned = f' transform="{transform}"' if transform else ""
    if len(lines) == 1:
        body = _esc(lines[0])
    else:
        body = "".join(f'<tspan x="{x:.1f}" dy="{0 if i == 0 else size * LEADING:.1f}">{_esc(line)}</tspan>'
                       for i, line in enumerate(lines))
    return (f'<text class="{cls}" x="{x:.1f}" y="{y:.1f}" font-size="{size:g}" fill="{INK}" '
            f'text-anchor="{anchor}"{turned}>{body}</text>')


class Plot:
    """One chart being drawn: a frame on a `width`×`height` canvas, placed by the room its title, axis labels and
    tick labels take; marks drawn into it at data coordinates; the whole written out by `svg`.

    `categories` names the positions 0, 1, 2 … of the x axis in place of numbers (a bar chart's bars), each name's
    lines below one another; `grid` says which axes' ticks get gridlines ("xy", "y" or "").
    """

    def __init__(self, x: Scale, y: Scale, *, title: str = "", xlabel: str = "", ylabel: str = "",
                 categories: Sequence[str] | None = None, grid: str = "xy", integer_y: bool = False,
                 width: float = 750, height: float = 400, language: str | None = None):
        self.x, self.y, self.grid = x, y, grid
        self.width, self.height = width, height
        self.title = title
        self.title_lines = wrap(title, TITLE_SIZE, width - 2 * PAD)
        self.xlabel_lines = wrap(xlabel, LABEL_SIZE, width - 2 * PAD)
        self.ylabel = ylabel
        self.yticks = y.ticks(max(3, min(8, int((height - 120) / 35))), integer_y)
        self.ytick_labels = tick_labels(self.yticks, language)
        if categories is None:
            self.xticks = x.ticks(8)
            self.xtick_lines = [[label] for label in tick_labels(self.xticks, language)]
            self.xtick_class = "xtick"
        else:
            self.xticks = [float(i) for i in range(len(categories))]
            self.xtick_lines = [name.split("\n") for name in categories]
            self.xtick_class = "bar-name"
        self.xtick_widths = [max(text_width(line, TICK_SIZE) for line in lines) for lines in self.xtick_lines]
        self._place_frame()
        self.marks: list[str] = []
        self.series: list[tuple[str, str, list[tuple[float, float]]]] = []
        self.texts: list[tuple[float, float, float, float]] = []

    def _place_frame(self) -> None:
        """Set the frame's edges (left, top, right, bottom, in pixels): inside the canvas, room left for every label."""
        ylabel_room = LABEL_SIZE * LEADING + 6 if self.ylabel else 0
        ytick_room = max((text_width(label, TICK_SIZE) for label in self.ytick_labels), default=0)
        left = PAD + ylabel_room + ytick_room + 3 + TICK_LENGTH
        right = PAD
        title_room = len(self.title_lines) * TITLE_SIZE * LEADING + 6 if self.title_lines else TICK_SIZE / 2
        xtick_room = TICK_LENGTH + 4 + max((len(lines) for lines in self.xtick_lines), default=1) * TICK_SIZE * LEADING
        xlabel_room = len(self.xlabel_lines) * LABEL_SIZE * LEADING + 6 if self.xlabel_lines else 0
        for _ in range(4):          # the x ticks' labels stay on the canvas: widen the margins they stick out of
            span = self.width - left - right
            centres = [left + self.x.fraction(t) * span for t in self.xticks]
            left += max([0.0] + [PAD - (c - w / 2) for c, w in zip(centres, self.xtick_widths)])
            right += max([0.0] + [c + w / 2 - (self.width - PAD) for c, w in zip(centres, self.xtick_widths)])
        self.left, self.right = left, self.width - right
        self.top = PAD + title_room
        self.bottom = self.height - PAD - xtick_room - xlabel_room

    def px(self, x: float) -> float:
        """The pixel column of data x."""
        return self.left + self.x.fraction(x) * (self.right - self.left)

    def py(self, y: float) -> float:
        """The pixel row of data y (the frame's bottom for a value a log scale cannot show)."""
        if self.y.log and y <= 0:
            return self.bottom
        return self.bottom - self.y.fraction(y) * (self.bottom - self.top)

    def category_spans(self) -> list[tuple[float, float]]:
        """Where each x tick's label reaches, left and right, in pixels (a bar chart: where its names are drawn)."""
        return [(self.px(t) - w / 2, self.px(t) + w / 2) for t, w in zip(self.xticks, self.xtick_widths)]

    def line(self, xs: Sequence[float], ys: Sequence[float], color: str, *, name: str) -> None:
        """A series: a line through its points, a marker on each, `name` in its tooltip and the legend."""
        points = [(self.px(x), self.py(y)) for x, y in zip(xs, ys) if not self.y.log or y > 0]
        path = " ".join(f"{x:.1f},{y:.1f}" for x, y in points)
        markers = "".join(f'<circle class="marker" cx="{x:.1f}" cy="{y:.1f}" r="3.5" fill="{color}"/>'
                          for x, y in points)
        self.marks.append(f'<g class="series"><title>{_esc(name)}</title>'
                          f'<polyline class="line" points="{path}" fill="none" stroke="{color}" stroke-width="2" '
                          f'stroke-linejoin="round"/>{markers}</g>')
        self.series.append((name, color, points))

    def bar(self, x0: float, x1: float, value: float, color: str, *, ident: str = "", edge: str = "none") -> None:
        """A bar from x0 to x1, from zero (a log scale: the frame's bottom) up to `value`; `ident` is its SVG id."""
        base = self.bottom if self.y.log else min(max(self.py(0), self.top), self.bottom)
        top = self.py(value)
        named = f' id="{_esc(ident)}"' if ident else ""
        self.marks.append(f'<rect class="bar"{named} x="{self.px(x0):.1f}" y="{min(base, top):.1f}" '
                          f'width="{self.px(x1) - self.px(x0):.1f}" height="{abs(base - top):.1f}" fill="{color}" '
                          f'stroke="{edge}"/>')

    def text(self, x: float, y: float, text: str, *, cls: str, size: float = TICK_SIZE, anchor: str = "middle",
             dx: float = 0.0, dy: float = 0.0) -> None:
        """`text` with its baseline at the data point (x, y), moved by (dx, dy) pixels (the legend keeps off it)."""
        at, baseline = self.px(x) + dx, self.py(y) + dy
        width = text_width(text, size)
        left = at - width * {"start": 0.0, "middle": 0.5, "end": 1.0}[anchor]
        self.texts.append((left, baseline - size, left + width, baseline + size * 0.25))
        self.marks.append(_text(at, baseline, [text], size, cls=cls, anchor=anchor))

    def note(self, x: float, y: float, text: str) -> None:
        """A note ending just left of the point (x, y): above the point, or below it where above would leave the
        frame."""
        above = self.py(y) - 11 - NOTE_SIZE >= self.top + 2
        self.text(x, y, text, cls="note", size=NOTE_SIZE, anchor="end", dx=-14, dy=-11 if above else NOTE_SIZE + 8)

    def legend(self) -> None:
        """A box naming each line, where in the frame the lines and texts cross it least: a corner, the middle of a
        side or the centre (the upper right first, when several are free)."""
        if not self.series:
            return
        row = TICK_SIZE * 1.5
        width = 44 + max(text_width(name, TICK_SIZE) for name, _, _ in self.series) + 8
        height = 8 + row * len(self.series)
        inset = 8
        left, centre, right = self.left + inset, (self.left + self.right - width) / 2, self.right - inset - width
        top, middle, bottom = self.top + inset, (self.top + self.bottom - height) / 2, self.bottom - inset - height
        places = [(right, top), (left, top), (left, bottom), (right, bottom), (left, middle), (right, middle),
                  (centre, bottom), (centre, top), (centre, middle)]
        samples = [(x0 + (x1 - x0) * k / 16, y0 + (y1 - y0) * k / 16)
                   for _, _, points in self.series for (x0, y0), (x1, y1) in zip(points, points[1:])
                   for k in range(17)] + [p for _, _, points in self.series for p in points]

        def crossed(place: tuple[float, float]) -> int:
            x, y = place
            lines = sum(x <= px <= x + width and y <= py <= y + height for px, py in samples)
            texts = sum(x0 < x + width and x < x1 and y0 < y + height and y < y1 for x0, y0, x1, y1 in self.texts)
            return lines + 20 * texts

        x, y = min(places, key=crossed)
        parts = [f'<g class="legend"><rect x="{x:.1f}" y="{y:.1f}" width="{width:.1f}" height="{height:.1f}" '
                 f'fill="#ffffff" fill-opacity="0.85" stroke="#cccccc" rx="3"/>']
        for i, (name, color, _) in enumerate(self.series):
            middle = y + 4 + row * (i + 0.5)
            parts.append(f'<line x1="{x + 8:.1f}" y1="{middle:.1f}" x2="{x + 36:.1f}" y2="{middle:.1f}" '
                         f'stroke="{color}" stroke-width="2"/><circle cx="{x + 22:.1f}" cy="{middle:.1f}" r="3.5" '
                         f'fill="{color}"/>')
            parts.append(_text(x + 44, middle + TICK_SIZE * 0.35, [name], TICK_SIZE, cls="legend-entry",
                               anchor="start"))
        self.marks.append("".join(parts) + "</g>")

    def svg(self) -> str:
        """The chart as one SVG document, sized to fit its container (no script, nothing fetched, text escaped)."""
        w, h = self.width, self.height
        out = [f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" width="{w:g}" height="{h:g}" '
               f'viewBox="0 0 {w:g} {h:g}" style="max-width:100%;height:auto" font-family="{FONT}">']
        if self.title:
            out.append(f"<title>{_esc(self.title)}</title>")
        out.append(f'<rect class="background" width="{w:g}" height="{h:g}" fill="#ffffff"/>')
        if "y" in self.grid:
            out += [f'<line class="grid" x1="{self.left:.1f}" y1="{self.py(t):.1f}" x2="{self.right:.1f}" '
                    f'y2="{self.py(t):.1f}" stroke="{GRID}"/>' for t in self.yticks]
        if "x" in self.grid and self.xtick_class == "xtick":
            out += [f'<line class="grid" x1="{self.px(t):.1f}" y1="{self.top:.1f}" x2="{self.px(t):.1f}" '
                    f'y2="{self.bottom:.1f}" stroke="{GRID}"/>' for t in self.xticks]
        out += self.marks
        out.append(f'<rect class="frame" x="{self.left:.1f}" y="{self.top:.1f}" width="{self.right - self.left:.1f}" '
                   f'height="{self.bottom - self.top:.1f}" fill="none" stroke="{FRAME}"/>')
        for tick, label in zip(self.yticks, self.ytick_labels):
            y = self.py(tick)
            out.append(f'<line x1="{self.left - TICK_LENGTH:.1f}" y1="{y:.1f}" x2="{self.left:.1f}" y2="{y:.1f}" '
                       f'stroke="{FRAME}"/>')
            out.append(_text(self.left - TICK_LENGTH - 3, y + TICK_SIZE * 0.35, [label], TICK_SIZE, cls="ytick",
                             anchor="end"))
        for tick, lines in zip(self.xticks, self.xtick_lines):
            x = self.px(tick)
            out.append(f'<line x1="{x:.1f}" y1="{self.bottom:.1f}" x2="{x:.1f}" y2="{self.bottom + TICK_LENGTH:.1f}" '
                       f'stroke="{FRAME}"/>')
            out.append(_text(x, self.bottom + TICK_LENGTH + 3 + TICK_SIZE, lines, TICK_SIZE, cls=self.xtick_class))
        middle = (self.left + self.right) / 2
        if self.xlabel_lines:
            lines = max((len(lines) for lines in self.xtick_lines), default=1)
            baseline = self.bottom + TICK_LENGTH + 4 + lines * TICK_SIZE * LEADING + 6 + LABEL_SIZE
            out.append(_text(middle, baseline, self.xlabel_lines, LABEL_SIZE, cls="xlabel"))
        if self.ylabel:
            x, y = PAD + LABEL_SIZE * 0.9, (self.top + self.bottom) / 2
            out.append(_text(x, y, [self.ylabel], LABEL_SIZE, cls="ylabel", transform=f"rotate(-90 {x:.1f} {y:.1f})"))
        if self.title_lines:
            widest = max(text_width(line, TITLE_SIZE) for line in self.title_lines)
            centre = min(max(middle, PAD + widest / 2), w - PAD - widest / 2)
            out.append(_text(centre, PAD + TITLE_SIZE, self.title_lines, TITLE_SIZE, cls="title"))
        out.append("</svg>")
        return "".join(out)


__all__ = ["Plot", "Scale", "nice_ticks", "decade_ticks", "tick_labels", "wrap", "FONT"]
