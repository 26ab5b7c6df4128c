"""Watch requests: a chunked stream of events from a resourceVersion, with selectors, tables and bookmarks."""
from __future__ import annotations

import json
import time
from typing import Any

from labsupport.apiserver import eventtime, tables
from labsupport.apiserver.routes import BOOKMARK_SECONDS, DEFAULT_WATCH_SECONDS, IDLE_STEP, Route, selected
from labsupport.control.store import Gone
from labsupport.errors import BadRequest


def go_duration(text: str) -> float:
    """Seconds in a Go duration string (`32s`, `1m0s`, `8m7s`, `1h`, `500ms`); 0 for anything else."""
    units = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001, "us": 1e-6, "µs": 1e-6, "ns": 1e-9}
    total, number, i = 0.0, "", 0
    text = text.strip()
    while i < len(text):
        ch = text[i]
        if ch.isdigit() or ch == ".":
            number += ch
            i += 1
            continue
        unit = next((u for u in ("ms", "us", "µs", "ns", "h", "m", "s") if text.startswith(u, i)), None)
        if unit is None or not number:
            return 0.0
        try:
            total += float(number) * units[unit]
        except ValueError:
            return 0.0
        number, i = "", i + len(unit)
    return 0.0 if number else total


class Watching:
    """The watch verb of the request handler."""

    api: Any
    query: dict

    def _watch(self, route: Route) -> None:
        api, cluster = self.api, self.api.cluster
        label_sel, field_sel = self._selectors(route)
        ns = self._namespace(route)
        as_table = self._wants_table()
        include = self.query.get("includeObject", "Metadata")
        try:
            timeout = float(self.query.get("timeoutSeconds") or 0)
        except ValueError as e:
            raise BadRequest("timeoutSeconds must be a number") from e
        if timeout < 0:
            raise BadRequest("timeoutSeconds must not be negative")
        request_timeout = go_duration(self.query.get("timeout") or "")
        if request_timeout and (not timeout or request_timeout < timeout):
            timeout = request_timeout  # `kubectl get -w --request-timeout=1m` watches one minute of cluster time
        rv_text = self.query.get("resourceVersion", "")
        initial_events = self.query.get("sendInitialEvents") == "true"
        bookmarks = self.query.get("allowWatchBookmarks") in ("true", "1")
        with cluster.lock:
            watcher = api.register(route.info.kind, self._agent())
            try:
                if rv_text in ("", "0") or initial_events:
                    backlog = [("ADDED", o, None) for o in cluster.list(route.info.kind, ns)]
                    start_rv = cluster.store.rv
                else:
                    try:
                        start_rv = int(rv_text)
                    except ValueError as e:
                        raise BadRequest(f"invalid resource version: {rv_text}") from e
                    backlog = [(e.type, e.object, e.old) for e in cluster.store.events_since(start_rv,
                                                                                              [route.info.kind])]
                    # events already replayed must not come twice through the queue
                    watcher.queue.clear()
                listed_rv = cluster.store.rv   # what the list or the replay brings the client up to
            except Gone as e:
                api.unregister(watcher)
                self._start_stream("application/json")
                self._send_event("ERROR", e.status())
                return self._end_stream()
            except Exception:
                api.unregister(watcher)
                raise
            now_virtual = cluster.clock.now
        limit = now_virtual + timeout if timeout else None
        wall_end = time.monotonic() + (timeout or DEFAULT_WATCH_SECONDS)
        state = {"columns": True}

        def emit(kind: str, obj: dict, old: dict | None) -> None:
            if ns is not None and obj["metadata"].get("namespace") != ns:
                return
            now_match = selected(obj, label_sel, field_sel)
            old_match = old is not None and selected(old, label_sel, field_sel)
            if kind == "MODIFIED" and now_match != old_match:
                kind = "ADDED" if now_match else "DELETED"
            elif not now_match and not (kind == "DELETED" and old_match):
                return
            if as_table:
                payload = tables.table(route.info.kind, [api.decorate(obj)], cluster.clock.now, include=include,
                                       with_columns=state["columns"])
                state["columns"] = False
            else:
                payload = eventtime.for_client(api.decorate(obj), cluster.clock.now)
            self._send_event(kind, payload)

        try:
            self._start_stream("application/json")
            for kind, obj, old in backlog:
                emit(kind, obj, old)
            if initial_events:
                self._send_event("BOOKMARK", {"kind": route.info.kind, "apiVersion": route.info.api_version,
                                              "metadata": {"resourceVersion": str(start_rv),
                                                           "annotations": {"k8s.io/initial-events-end": "true"}}})
            seen = start_rv
            api.mark_handled(watcher, listed_rv)
            last_sent = time.monotonic()
            while not api.stopping and time.monotonic() < wall_end:
                events = api.next_events(watcher, IDLE_STEP)
                for event in events:
                    if event.rv <= seen:
                        continue
                    seen = event.rv
                    emit(event.type, event.object, event.old)
                    last_sent = time.monotonic()
                if events:
                    api.mark_handled(watcher, seen)
                    continue
                if bookmarks and time.monotonic() - last_sent > BOOKMARK_SECONDS:
                    self._send_event("BOOKMARK", {"kind": route.info.kind, "apiVersion": route.info.api_version,
                                                  "metadata": {"resourceVersion": str(max(seen, start_rv))}})
                    last_sent = time.monotonic()
                if self._client_gone():
                    break
                if limit is not None and cluster.clock.now >= limit:
                    break
                api.wait_idle(limit)
            self._end_stream()
        except OSError:
            self.close_connection = True
        finally:
            api.unregister(watcher)

    def _send_event(self, kind: str, obj: dict) -> None:
        self._chunk(json.dumps({"type": kind, "object": obj}, separators=(",", ":")).encode() + b"\n")

    # --- writes --------------------------------------------------------------------------------------------
