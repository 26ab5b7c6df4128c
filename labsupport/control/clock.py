"""The embedded cluster's virtual clock: time moves only when asked, so a seeded lab replays exactly."""
from __future__ import annotations

import heapq
import itertools
import time as _time
from datetime import datetime, timezone
from typing import Callable

#: 2026-01-01T00:00:00Z — every embedded cluster starts here, so timestamps repeat from run to run.
EPOCH = 1767225600.0


def rfc3339(seconds: float, *, nano: bool = False) -> str:
    """Seconds since the Unix epoch as the API server prints them (`2026-01-01T00:00:05Z`)."""
    moment = datetime.fromtimestamp(seconds, tz=timezone.utc)
    if nano:
        return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond:06d}000Z"
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_rfc3339(text: str) -> float:
    """The inverse of `rfc3339` (also accepts fractional seconds)."""
    text = text.rstrip("Z")
    if "." in text:
        base, frac = text.split(".", 1)
        return datetime.strptime(base, "%Y-%m-%dT%H:%M:%S").replace(tzinfo=timezone.utc).timestamp() + float("0." + frac)
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%S").replace(tzinfo=timezone.utc).timestamp()


class Timer:
    """A scheduled callback; `cancel()` stops it from firing."""

    __slots__ = ("when", "callback", "cancelled", "label")

    def __init__(self, when: float, callback: Callable[[], None], label: str = ""):
        self.when = when
        self.callback = callback
        self.cancelled = False
        self.label = label

    def cancel(self) -> None:
        """Do not fire."""
        self.cancelled = True


class VirtualClock:
    """Time as the embedded cluster sees it.

    Timers fire in time order while `advance` moves the clock. Timers that fall within one `tick` of each other
    fire as one batch before the cluster settles, the way controllers batch work arriving within moments.
    """

    def __init__(self, start: float = EPOCH, tick: float = 0.1):
        self.now = start
        self.start = start
        self.tick = tick
        self._heap: list[tuple[float, int, Timer]] = []
        self._seq = itertools.count()
        self._follow_wall: float | None = None
        #: The latest time the clock may reach (None: no end); a graded cluster has one.
        self.horizon: float | None = None

    def elapsed(self) -> float:
        """Seconds since the cluster started."""
        return self.now - self.start

    def at(self, when: float, callback: Callable[[], None], label: str = "") -> Timer:
        """Run `callback` when the clock reaches `when` (never in the past)."""
        timer = Timer(max(when, self.now), callback, label)
        heapq.heappush(self._heap, (timer.when, next(self._seq), timer))
        return timer

    def after(self, delay: float, callback: Callable[[], None], label: str = "") -> Timer:
        """Run `callback` `delay` seconds from now."""
        return self.at(self.now + max(0.0, delay), callback, label)

    def next_due(self) -> float | None:
        """When the next live timer fires, or None."""
        while self._heap and self._heap[0][2].cancelled:
            heapq.heappop(self._heap)
        return self._heap[0][0] if self._heap else None

    def run_until(self, target: float, settle: Callable[[], None]) -> None:
        """Fire every timer due up to `target` in batches of one tick, calling `settle` after each batch."""
        while True:
            due = self.next_due()
            if due is None or due > target:
                break
            batch_end = min(target, due + self.tick)
            while True:
                due = self.next_due()
                if due is None or due > batch_end:
                    break
                _, _, timer = heapq.heappop(self._heap)
                self.now = max(self.now, timer.when)
                timer.callback()
            settle()
        self.now = max(self.now, target)
        settle()

    def follow_wall_time(self, on: bool = True) -> None:
        """Let the clock follow wall time (for a live demo): each `catch_up()` moves it by the real time elapsed."""
        self._follow_wall = _time.monotonic() if on else None

    def wall_delta(self) -> float:
        """Real seconds elapsed since the last catch-up when following wall time, else 0."""
        if self._follow_wall is None:
            return 0.0
        now = _time.monotonic()
        delta, self._follow_wall = now - self._follow_wall, now
        return delta
