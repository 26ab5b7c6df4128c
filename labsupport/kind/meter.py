"""Metering watch traffic on a real cluster: what the API server ships to each watcher of some kinds.

`WatchMeter` holds one real watch per kind, in the lab's namespace, from the moment it starts; every event is
counted with the bytes the API server sent for it (one JSON line of the watch stream), times the number of watchers
the question is about (by default one kube-proxy per node, each watching EndpointSlices). Its fields are those of
the embedded store's meter (`events`, `objects`, `bytes`, `by_kind`), so a lesson reads both alike.
"""
from __future__ import annotations

import json
import threading
from typing import Any, Callable, Iterable, Iterator


def count_events(lines: Iterable[bytes]) -> Iterator[tuple[str, int]]:
    """(kind, size in bytes) of every event in a watch stream's JSON lines; BOOKMARK and ERROR events skipped."""
    for line in lines:
        line = line.strip()
        if not line:
            continue
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if event.get("type") in ("ADDED", "MODIFIED", "DELETED"):
            yield (event.get("object") or {}).get("kind", ""), len(line)


def split_lines(chunks: Iterable[bytes]) -> Iterator[bytes]:
    """The lines of a byte stream that arrives in chunks cut anywhere."""
    buffer = b""
    for chunk in chunks:
        buffer += chunk
        while b"\n" in buffer:
            line, buffer = buffer.split(b"\n", 1)
            yield line
    if buffer:
        yield buffer


class WatchMeter:
    """Counts the watch events of `kinds` as `watchers` subscribers would each receive them, per kind."""

    def __init__(self, kinds: Iterable[str], watchers: int,
                 open_stream: Callable[[str], tuple[Iterable[bytes], Callable[[], None]]]):
        self.kinds = frozenset(kinds)
        self.watchers = watchers
        self.events = 0
        self.objects = 0
        self.bytes = 0
        self.by_kind: dict[str, dict[str, int]] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._closers: list[Callable[[], None]] = []
        self._threads = []
        for kind in sorted(self.kinds):
            chunks, close = open_stream(kind)
            self._closers.append(close)
            thread = threading.Thread(target=self._follow, args=(chunks,), daemon=True,
                                      name=f"labsupport-meter-{kind}")
            self._threads.append(thread)
            thread.start()

    def _follow(self, chunks: Iterable[bytes]) -> None:
        try:
            for kind, size in count_events(split_lines(chunks)):
                if self._stop.is_set():
                    return
                self.record(kind, size)
        except Exception:  # the stream was closed under us by stop(), or the server ended it
            return

    def record(self, kind: str, size: int) -> None:
        """Add one event of `size` bytes, delivered to every watcher."""
        if kind not in self.kinds:
            return
        with self._lock:
            self.events += 1
            self.objects += self.watchers
            self.bytes += size * self.watchers
            per = self.by_kind.setdefault(kind, {"events": 0, "bytes": 0})
            per["events"] += 1
            per["bytes"] += size * self.watchers

    def stop(self) -> "WatchMeter":
        """Stop counting (the watches close); returns the meter, so `meter.stop().bytes` reads the total."""
        if not self._stop.is_set():
            self._stop.set()
            for close in self._closers:
                try:
                    close()
                except Exception:  # already closed by the server
                    pass
        return self

    def __enter__(self) -> "WatchMeter":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def __repr__(self) -> str:
        return f"<WatchMeter {sorted(self.kinds)} x{self.watchers}: {self.events} events, {self.bytes} bytes>"


__all__ = ["WatchMeter", "count_events", "split_lines"]
