"""Presenter mode: larger type and step-by-step reveal for an instructor, one switch away.

>>> from labsupport.widgets.present import presenter, presenting
>>> presenter(on=True); presenting()
True
>>> presenter(on=False); presenting()
False
"""
from __future__ import annotations

_STATE = {"on": False, "scale": 1.4}


def presenter(on: bool = True, scale: float = 1.4) -> None:
    """Switch presenter mode for every widget made from now on (larger type, one trace hop at a time)."""
    _STATE["on"] = bool(on)
    _STATE["scale"] = float(scale)


def presenting() -> bool:
    """Whether presenter mode is on."""
    return _STATE["on"]


def type_scale(present: bool | None = None) -> float:
    """How much larger text and boxes are drawn: the presenter scale when presenting, else 1."""
    on = presenting() if present is None else present
    return _STATE["scale"] if on else 1.0
