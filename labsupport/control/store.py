"""The object store: what etcd plus the API server's storage layer do for the embedded cluster.

Objects are dicts in API JSON shape. Every write gets a new resourceVersion and becomes a watch event
(ADDED / MODIFIED / DELETED) that in-process subscribers see at once and remote watchers can replay from a
resourceVersion. A meter counts the bytes a fan-out to N watchers would ship, so a lesson can measure it.
"""
from __future__ import annotations

import json
import random
from collections import deque
from dataclasses import dataclass, field
from typing import Callable, Iterable

from labsupport.control.clock import VirtualClock, rfc3339
from labsupport.errors import AlreadyExists, APIError, Conflict, NotFound
from labsupport.model.kinds import by_kind
from labsupport.model.meta import generate_name

#: Kinds whose metadata carries a generation that bumps when the spec changes.
GENERATION_KINDS = {"Deployment", "ReplicaSet", "StatefulSet", "DaemonSet", "Pod"}


class Gone(APIError):
    """A watch asked for history the store no longer keeps."""

    code = 410
    reason = "Expired"


@dataclass
class Event:
    """One watch event: its type, the object as written, and the resourceVersion it got."""

    type: str
    object: dict
    rv: int
    old: dict | None = None

    @property
    def kind(self) -> str:
        """The object's kind."""
        return self.object["kind"]


@dataclass
class Meter:
    """Counts what a fan-out of watch events to `watchers` subscribers would ship, per kind."""

    kinds: frozenset
    watchers: int
    store: "Store | None" = None
    events: int = 0
    objects: int = 0
    bytes: int = 0
    by_kind: dict = field(default_factory=dict)

    def stop(self) -> "Meter":
        """Stop counting; returns the meter, so `meter.stop().bytes` reads the total."""
        if self.store is not None:
            self.store.stop_meter(self)
        return self

    def __enter__(self) -> "Meter":
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def record(self, event: Event) -> None:
        """Add one event's delivery to every watcher."""
        if event.kind not in self.kinds:
            return
        size = len(json.dumps({"type": event.type, "object": event.object}, separators=(",", ":")))
        self.events += 1
        self.objects += self.watchers
        self.bytes += size * self.watchers
        per = self.by_kind.setdefault(event.kind, {"events": 0, "bytes": 0})
        per["events"] += 1
        per["bytes"] += size * self.watchers


class Store:
    """Objects by kind, namespace and name, with resourceVersions, watch history and subscribers."""

    def __init__(self, clock: VirtualClock, rng: random.Random, history: int = 50_000):
        self.clock = clock
        self.rng = rng
        self._name_seed = rng.getrandbits(64)
        self._generated: dict[tuple[str, str, str], int] = {}
        self.rv = 1000
        self._objects: dict[str, dict[tuple[str, str], dict]] = {}
        self._history: deque[Event] = deque(maxlen=history)
        self._subscribers: list[Callable[[Event], None]] = []
        self._meters: list[Meter] = []

    # --- reads ---------------------------------------------------------------------------------------------
    def get(self, kind: str, namespace: str | None, name: str) -> dict:
        """The stored object (treat it as read-only); NotFound with the API server's words otherwise."""
        obj = self._objects.get(kind, {}).get((namespace or "", name))
        if obj is None:
            raise NotFound.of(by_kind(kind).plural, name, group=by_kind(kind).group)
        return obj

    def find(self, kind: str, namespace: str | None, name: str) -> dict | None:
        """The stored object or None."""
        return self._objects.get(kind, {}).get((namespace or "", name))

    def list(self, kind: str, namespace: str | None = None,
             predicate: Callable[[dict], bool] | None = None) -> list[dict]:
        """Stored objects of a kind (in one namespace, or all when namespace is None), sorted by namespace/name."""
        bucket = self._objects.get(kind, {})
        keys = sorted(k for k in bucket if namespace is None or k[0] == namespace)
        items = [bucket[k] for k in keys]
        return [o for o in items if predicate(o)] if predicate else items

    def count(self, kind: str) -> int:
        """How many objects of a kind are stored."""
        return len(self._objects.get(kind, {}))

    def kinds(self) -> list[str]:
        """Kinds that have at least one object."""
        return sorted(k for k, v in self._objects.items() if v)

    # --- writes --------------------------------------------------------------------------------------------
    def _next_rv(self) -> int:
        self.rv += 1
        return self.rv

    def generated_name(self, kind: str, namespace: str, base: str) -> str:
        """The next name for a `generateName` of `base`: random (seeded) from a stream of its own per kind, namespace
        and base, so that the names one base gets do not depend on what else was created between them (in real time,
        the kubelet's events come when they come) and a lab's seed gives its pods the same names on every backend."""
        key = (kind, namespace, base)
        count = self._generated[key] = self._generated.get(key, 0) + 1
        return generate_name(base, random.Random(f"{self._name_seed}/{kind}/{namespace}/{base}/{count}"))

    def new_uid(self) -> str:
        """A random UUID4-shaped uid (seeded)."""
        h = "%032x" % self.rng.getrandbits(128)
        return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{'89ab'[int(h[16], 16) % 4]}{h[17:20]}-{h[20:32]}"

    def create(self, obj: dict) -> dict:
        """Store a new object: name from generateName, uid, creationTimestamp, resourceVersion.

        Stored objects are immutable by convention: the store copies the top level and metadata of what it is
        given; callers hand over nested parts and must not change them afterwards (copy with `clone` first)."""
        obj = dict(obj)
        obj["metadata"] = dict(obj.get("metadata") or {})
        meta = obj["metadata"]
        kind = obj["kind"]
        info = by_kind(kind)
        ns = meta.get("namespace", "") if info.namespaced else ""
        if info.namespaced:
            meta["namespace"] = ns or "default"
            ns = meta["namespace"]
        else:
            meta.pop("namespace", None)
        bucket = self._objects.setdefault(kind, {})
        if not meta.get("name") and meta.get("generateName"):
            for _ in range(50):
                candidate = self.generated_name(kind, ns, meta["generateName"])
                if (ns, candidate) not in bucket:
                    meta["name"] = candidate
                    break
        name = meta["name"]
        if (ns, name) in bucket:
            raise AlreadyExists.of(info.plural, name, group=info.group)
        meta["uid"] = self.new_uid()
        meta["creationTimestamp"] = rfc3339(self.clock.now)
        if kind in GENERATION_KINDS:
            meta["generation"] = 1
        meta["resourceVersion"] = str(self._next_rv())
        bucket[(ns, name)] = obj
        self._emit(Event("ADDED", obj, self.rv))
        return obj

    def update(self, obj: dict, *, check_version: bool = True) -> dict:
        """Replace a stored object; a stale resourceVersion is a Conflict. Returns the stored object.

        Like `create`, it copies only the top level and metadata: nested parts are handed over."""
        obj = dict(obj)
        obj["metadata"] = dict(obj.get("metadata") or {})
        kind = obj["kind"]
        info = by_kind(kind)
        meta = obj["metadata"]
        ns = meta.get("namespace", "") if info.namespaced else ""
        name = meta.get("name", "")
        old = self.find(kind, ns, name)
        if old is None:
            raise NotFound.of(info.plural, name, group=info.group)
        given = meta.get("resourceVersion")
        if check_version and given and given != old["metadata"]["resourceVersion"]:
            raise Conflict.stale(info.plural, name, group=info.group)
        for key in ("uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "generation"):
            if key in old["metadata"] and key not in meta:
                meta[key] = old["metadata"][key]
        if kind in GENERATION_KINDS and old.get("spec") != obj.get("spec"):
            meta["generation"] = old["metadata"].get("generation", 1) + 1
        if obj == old:
            return old
        meta["resourceVersion"] = str(self._next_rv())
        self._objects[kind][(ns, name)] = obj
        self._emit(Event("MODIFIED", obj, self.rv, old))
        return obj

    def remove(self, kind: str, namespace: str | None, name: str) -> dict:
        """Delete an object outright (after any graceful deletion is over); emits DELETED."""
        info = by_kind(kind)
        ns = (namespace or "") if info.namespaced else ""
        old = self._objects.get(kind, {}).pop((ns, name), None)
        if old is None:
            raise NotFound.of(info.plural, name, group=info.group)
        final = dict(old)
        final["metadata"] = dict(old["metadata"], resourceVersion=str(self._next_rv()))
        self._emit(Event("DELETED", final, self.rv, old))
        return final

    # --- watch ---------------------------------------------------------------------------------------------
    def subscribe(self, callback: Callable[[Event], None]) -> Callable[[], None]:
        """Call `callback(event)` for every write from now on; returns an unsubscribe function."""
        self._subscribers.append(callback)
        return lambda: self._subscribers.remove(callback) if callback in self._subscribers else None

    def events_since(self, rv: int, kinds: Iterable[str] | None = None) -> list[Event]:
        """Events after resourceVersion `rv` (Gone when that history has been compacted away)."""
        if self._history and rv < self._history[0].rv - 1 and len(self._history) == self._history.maxlen:
            raise Gone(f"too old resource version: {rv} ({self._history[0].rv - 1})")
        wanted = set(kinds) if kinds else None
        return [e for e in self._history if e.rv > rv and (wanted is None or e.kind in wanted)]

    def meter(self, kinds: Iterable[str], watchers: int) -> Meter:
        """Start counting what `watchers` subscribers to `kinds` would receive; `stop_meter` ends it."""
        m = Meter(frozenset(kinds), watchers, self)
        self._meters.append(m)
        return m

    def stop_meter(self, meter: Meter) -> None:
        """Stop counting into a meter."""
        if meter in self._meters:
            self._meters.remove(meter)

    def _emit(self, event: Event) -> None:
        self._history.append(event)
        for m in self._meters:
            m.record(event)
        for callback in list(self._subscribers):
            callback(event)
