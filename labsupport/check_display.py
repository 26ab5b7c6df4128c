"""How an error of this package looks in a notebook: its message under the student's own line of code.

IPython (JupyterLab, and the kernels nbgrader's Validate and autograde run) asks an exception for
`_render_traceback_()` before formatting it. A failed check, and every other LabError (an object the API server
refuses or does not find, a pod a request cannot start from), answers with the traceback cut before the first frame
inside labsupport: the cell, the line that called labsupport, then the message — no walk through the package's
code. The cell still fails, so nbgrader still counts the test as failed.
"""
from __future__ import annotations

import pathlib
import textwrap
import traceback
from types import TracebackType

PACKAGE = pathlib.Path(__file__).resolve().parent
#: Message lines stay this short, so that nbgrader's Validate (which cuts lines at 90 columns) shows all of it.
WIDTH = 84


def _inside_package(tb: TracebackType) -> bool:
    try:
        return pathlib.Path(tb.tb_frame.f_code.co_filename).resolve().is_relative_to(PACKAGE)
    except (OSError, ValueError):
        return False


def outside_frames(tb: TracebackType | None) -> TracebackType | None:
    """The traceback cut before its first frame inside labsupport (the caller's frames stay)."""
    if tb is None or _inside_package(tb):
        return tb
    last = tb
    while last.tb_next is not None and not _inside_package(last.tb_next):
        last = last.tb_next
    last.tb_next = None
    return tb


def render_traceback(error: BaseException) -> list[str]:
    """The structured traceback IPython shows for `error`: the caller's frames and the message."""
    tb = outside_frames(error.__traceback__)
    try:
        from IPython import get_ipython
        shell = get_ipython()
    except ImportError:
        shell = None
    if shell is not None:
        frames = shell.InteractiveTB.structured_traceback(type(error), error, tb)[:-1]
    else:
        frames = "".join(traceback.format_exception(type(error), error, tb)).splitlines()[:-1]
    return frames + [wrapped_message(error)]


def wrapped_message(error: BaseException) -> str:
    """`Name: message`, wrapped at WIDTH columns (paragraphs and line breaks of the message kept)."""
    lines: list[str] = []
    for paragraph in f"{type(error).__name__}: {error}".splitlines() or [""]:
        lines.extend(textwrap.wrap(paragraph, WIDTH, subsequent_indent="    ", break_on_hyphens=False,
                                   break_long_words=False) or [""])
    return "\n".join(lines)


__all__ = ["render_traceback", "outside_frames", "wrapped_message"]
