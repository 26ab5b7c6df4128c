"""Progress of long kind steps (creating a cluster, loading images): a widget in a notebook, a bar in a terminal.

kind prints one line per step (` ✓ Ensuring node image …`, ` ✓ Preparing nodes …`); each finished step moves
the bar, and every line lands in the log under it. The titles and the lab's own words are in the student's
language (`tr`); kind's lines are kind's.
"""
from __future__ import annotations

import sys
from typing import TextIO

from labsupport.i18n import tr

# The steps `kind create cluster` reports, in order (the last only with --wait).
KIND_CREATE_STEPS = ("Ensuring node image", "Preparing nodes", "Writing configuration", "Starting control-plane",
                     "Installing CNI", "Installing StorageClass", "Joining worker nodes", "Waiting")


def in_notebook() -> bool:
    """Whether we run inside a Jupyter kernel (where widgets display)."""
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    shell = get_ipython()
    return shell is not None and "IPKernelApp" in getattr(shell, "config", {})


class Progress:
    """Collects the lines of a long step and shows how far it got; subclasses decide where it shows."""

    def __init__(self, title: str, total: int):
        self.title = title
        self.total = max(total, 1)
        self.done = 0
        self.lines: list[str] = []
        self.failed = False
        self.finished = False

    def line(self, text: str) -> None:
        """One line of the tool's output; a line that completes a step (`✓`) moves the bar."""
        text = text.rstrip()
        if not text:
            return
        self.lines.append(text)
        if text.lstrip().startswith(("✓", "✗")):
            self.done = min(self.done + 1, self.total)
        if text.lstrip().startswith("✗"):
            self.failed = True
        self.show(text)

    def step(self, text: str) -> None:
        """A step of our own finished (an image loaded)."""
        self.lines.append(text)
        self.done = min(self.done + 1, self.total)
        self.show(text)

    def finish(self, ok: bool = True) -> None:
        """The whole job ended."""
        self.failed = self.failed or not ok
        self.finished = True
        if ok:
            self.done = self.total
        self.show(tr("done") if ok else tr("failed"))

    def show(self, text: str) -> None:
        """Display the current state (nothing here; see the subclasses)."""


class TerminalProgress(Progress):
    """A text bar on stderr: `[#####-----] 4/8 Starting control-plane`."""

    def __init__(self, title: str, total: int, stream: TextIO | None = None, width: int = 24):
        super().__init__(title, total)
        self.stream = stream or sys.stderr
        self.width = width
        self.stream.write(f"{title}\n")

    def bar(self) -> str:
        """The bar as text."""
        filled = int(self.width * self.done / self.total)
        return f"[{'#' * filled}{'-' * (self.width - filled)}] {self.done}/{self.total}"

    def show(self, text: str) -> None:
        """Redraw the bar on the same line."""
        self.stream.write(f"\r{self.bar()} {text.strip()[:60]:<60}")
        if self.finished:
            self.stream.write("\n")
        self.stream.flush()


class WidgetProgress(Progress):
    """An ipywidgets box: title, progress bar, and the tool's output in a scrolling log."""

    def __init__(self, title: str, total: int):
        super().__init__(title, total)
        import ipywidgets as widgets
        from IPython.display import display
        self.bar = widgets.IntProgress(value=0, min=0, max=self.total, description="", bar_style="info",
                                       layout=widgets.Layout(width="60%"))
        self.label = widgets.HTML(f"<b>{title}</b>")
        self.log = widgets.Textarea(value="", disabled=True, layout=widgets.Layout(width="100%", height="10em"))
        self.box = widgets.VBox([self.label, self.bar, self.log])
        display(self.box)

    def show(self, text: str) -> None:
        """Update the widgets."""
        self.bar.value = self.done
        self.log.value = "\n".join(self.lines[-200:])
        if self.failed:
            self.bar.bar_style = "danger"
        elif self.finished:
            self.bar.bar_style = "success"


def make_progress(title: str, total: int, kind: str | None = None) -> Progress:
    """A widget in a notebook, a terminal bar otherwise; `kind` "quiet" collects lines and shows nothing."""
    if kind == "quiet":
        return Progress(title, total)
    if kind == "widget" or (kind is None and in_notebook()):
        try:
            return WidgetProgress(title, total)
        except ImportError:
            pass
    return TerminalProgress(title, total)
