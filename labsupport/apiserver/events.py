"""events.k8s.io/v1 Events, the API components such as kube-proxy report through: the same objects as core/v1
Events, stored once and shown in either shape (as upstream converts between the two versions)."""
from __future__ import annotations

import contextlib
import random
from typing import Any, Iterator

from labsupport.apiserver.routes import Route
from labsupport.model.objects import clone
from labsupport.errors import MethodNotAllowed, NotFound
from labsupport.model.kinds import by_kind

PREFIX = "/apis/events.k8s.io/v1"
API_VERSION = "events.k8s.io/v1"

# events.k8s.io/v1 field -> core/v1 field, for the fields whose names differ
RENAMED = {"regarding": "involvedObject", "note": "message", "reportingController": "reportingComponent",
           "deprecatedSource": "source", "deprecatedFirstTimestamp": "firstTimestamp",
           "deprecatedLastTimestamp": "lastTimestamp", "deprecatedCount": "count"}
SHARED = ("metadata", "eventTime", "series", "reportingInstance", "action", "reason", "related", "type")


def to_core(event: dict) -> dict:
    """An events.k8s.io/v1 Event as the core/v1 Event it is stored as."""
    out: dict[str, Any] = {"apiVersion": "v1", "kind": "Event"}
    for name in SHARED:
        if name in event:
            out[name] = clone(event[name])
    for new, old in RENAMED.items():
        if new in event:
            out[old] = clone(event[new])
    return out


def from_core(event: dict) -> dict:
    """A stored core/v1 Event in the events.k8s.io/v1 shape."""
    out: dict[str, Any] = {"apiVersion": API_VERSION, "kind": "Event"}
    for name in SHARED:
        if name in event:
            out[name] = clone(event[name])
    for new, old in RENAMED.items():
        if old in event:
            out[new] = clone(event[old])
    return out


@contextlib.contextmanager
def unseeded(store: Any) -> Iterator[None]:
    """Objects made in the body take their uids from a fresh generator, not the cluster's seeded one: what
    outside programs write at wall-clock moments (their Events) must not change a seeded lab's names and uids."""
    seeded = store.rng
    store.rng = random.Random()
    try:
        yield
    finally:
        store.rng = seeded


def parse_path(path: str) -> tuple[str | None, str | None]:
    """(namespace, name) of an events.k8s.io/v1 path; NotFound for anything but events."""
    parts = path[len(PREFIX):].strip("/").split("/")
    if parts == ["events"]:
        return None, None
    if len(parts) in (3, 4) and parts[0] == "namespaces" and parts[2] == "events":
        return parts[1], parts[3] if len(parts) == 4 else None
    raise NotFound("the server could not find the requested resource")


class EventsV1:
    """The events.k8s.io/v1 verbs of the request handler: create, get, list and patch, over core Events."""

    api: Any

    def _events_v1(self, method: str, path: str) -> None:
        ns, name = parse_path(path)
        core = Route(by_kind("Event", "v1"), ns, name, None)
        cluster = self.api.cluster
        if method == "POST" and name is None and ns is not None:
            obj = self._check_object(core, to_core(self._parse_body()))
            with cluster.lock, unseeded(cluster.store):
                created = cluster.create(clone(obj), dry_run=self._dry_run())
            return self._send_json(from_core(created), 201)
        if method == "GET" and name is not None:
            with cluster.lock:
                return self._send_json(from_core(cluster.get("Event", ns, name)))
        if method == "GET" and self.query.get("watch") not in ("true", "1"):
            with cluster.lock:
                items = [from_core(o) for o in cluster.list("Event", ns)]
                rv = str(cluster.store.rv)
            return self._send_json({"kind": "EventList", "apiVersion": API_VERSION,
                                    "metadata": {"resourceVersion": rv}, "items": items})
        if method == "PATCH" and name is not None:
            with cluster.lock:
                current = cluster.get("Event", ns, name)
                patched = from_core(current)
                body = self._parse_body()
                for key, value in (body or {}).items():
                    if key != "metadata":
                        patched[key] = value
                updated = to_core(patched)
                updated["metadata"] = current["metadata"]
                stored = cluster.replace(updated)
            return self._send_json(from_core(stored))
        raise MethodNotAllowed("the server does not allow this method on the requested resource")
