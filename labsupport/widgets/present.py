"""Presenter mode: larger type and step-by-step reveal for an instructor, one switch away.

`presenter(on=True)` switches every live view already on screen and every view made afterwards.

>>> from labsupport.widgets.present import presenter, presenting
>>> presenter(on=True); presenting()
True
>>> presenter(on=False); presenting()
False
"""
from __future__ import annotations

import weakref
from typing import Any

_STATE = {"on": False, "scale": 1.4}
_VIEWS: "weakref.WeakSet[Any]" = weakref.WeakSet()


def presenter(on: bool = True, scale: float = 1.4) -> None:
    """Switch presenter mode for every view on screen and every view made from now on."""
    _STATE["on"] = bool(on)
    _STATE["scale"] = float(scale)
    for view in list(_VIEWS):
        if view.lab.closed:
            _VIEWS.discard(view)        # its cluster is gone: nothing to redraw
            continue
        view.set_present(bool(on))


def presenting() -> bool:
    """Whether presenter mode is on."""
    return _STATE["on"]


def type_scale(present: bool | None = None) -> float:
    """How much larger text and boxes are drawn: the presenter scale when presenting, else 1."""
    on = presenting() if present is None else present
    return _STATE["scale"] if on else 1.0


def register(view: Any) -> None:
    """Let `presenter()` reach a view (held weakly)."""
    _VIEWS.add(view)
