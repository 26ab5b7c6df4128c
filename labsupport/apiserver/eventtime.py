"""Event times as a client on the wall clock must see them.

kubectl computes the ages `describe` prints from its own clock (`time.Since`), while the server's tables
(`get events`) count on the cluster's virtual clock. So the times of Events served as objects are moved by the
distance between the two clocks: both then show the same age. Tables keep the cluster's own times.
"""
from __future__ import annotations

import math
import time

from labsupport.control.clock import parse_rfc3339, rfc3339

#: Event fields that hold a time (`series.lastObservedTime` is nested).
TIME_FIELDS = ("firstTimestamp", "lastTimestamp")
MICRO_FIELDS = ("eventTime",)


def _moved(text: str | None, offset: float, micro: bool = False) -> str | None:
    if not text:
        return text
    return rfc3339(parse_rfc3339(text) + offset, nano=micro)


def for_client(obj: dict, virtual_now: float, wall_now: float | None = None) -> dict:
    """The object as served: an Event's times moved onto the wall clock; anything else unchanged."""
    if obj.get("kind") != "Event":
        return obj
    # whole seconds, rounded down: the times print to the second, so a client never sees an event younger than it is
    offset = float(math.floor((time.time() if wall_now is None else wall_now) - virtual_now))
    out = dict(obj)
    for key in TIME_FIELDS:
        if out.get(key):
            out[key] = _moved(out[key], offset)
    for key in MICRO_FIELDS:
        if out.get(key):
            out[key] = _micro(out[key], offset)
    series = out.get("series")
    if isinstance(series, dict) and series.get("lastObservedTime"):
        out["series"] = dict(series, lastObservedTime=_micro(series["lastObservedTime"], offset))
    meta = out.get("metadata") or {}
    if meta.get("creationTimestamp"):
        out["metadata"] = dict(meta, creationTimestamp=_moved(meta["creationTimestamp"], offset))
    return out


def _micro(text: str, offset: float) -> str:
    """A MicroTime (`2026-01-01T00:00:05.123456Z`) moved by `offset` seconds."""
    moved = rfc3339(parse_rfc3339(text) + offset, nano=True)
    return moved[:-4] + "Z"  # six fraction digits, as MicroTime prints
