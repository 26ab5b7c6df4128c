"""Field ownership (managedFields): which manager set which field, and server-side apply's conflicts.

A field is a path of `f:<name>` segments, with `k:{"name":"nginx"}` for an element of a keyed list (containers by
name, ports by port …); other lists are owned whole. Writers own the fields they changed; an apply owns what its
configuration names. An apply that would change a field someone else owns is a conflict unless forced.
"""
from __future__ import annotations

import json
import threading
from typing import Any

from labsupport.apiserver.patch import merge_key
from labsupport.errors import APIError

Path = tuple[str, ...]
#: Metadata the server sets; nobody owns it.
SERVER_METADATA = {"name", "namespace", "uid", "resourceVersion", "creationTimestamp", "generation", "managedFields",
                   "deletionTimestamp", "deletionGracePeriodSeconds", "selfLink", "generateName"}


class ApplyConflict(APIError):
    """Server-side apply would overwrite fields another manager owns."""

    code = 409
    reason = "Conflict"


def leaves(obj: Any, prefix: Path = ()) -> dict[Path, Any]:
    """Every owned field path of an object with its value."""
    out: dict[Path, Any] = {}
    if isinstance(obj, dict):
        if not obj and prefix:
            out[prefix] = {}
        for key, value in obj.items():
            if not prefix and key in ("apiVersion", "kind", "status"):
                continue
            if prefix == ("f:metadata",) and key in SERVER_METADATA:
                continue
            out.update(leaves(value, prefix + (f"f:{key}",)))
        return out
    if isinstance(obj, list) and obj and all(isinstance(i, dict) for i in obj) and prefix:
        key = merge_key(prefix[-1][2:], obj)
        if key is not None and all(key in i for i in obj):
            for item in obj:
                out.update(leaves(item, prefix + (f'k:{{"{key}":{json.dumps(item[key], separators=(",", ":"))}}}',)))
            return out
    out[prefix] = obj
    return out


def path_text(path: Path) -> str:
    """A field path as conflicts print it: `.spec.template.spec.containers[name="nginx"].image`."""
    text = ""
    for seg in path:
        if seg.startswith("f:"):
            text += "." + seg[2:]
        else:
            key, value = next(iter(json.loads(seg[2:]).items()))
            text += f"[{key}={json.dumps(value)}]"
    return text


def fields_tree(paths: list[Path]) -> dict:
    """A managedFields `fieldsV1` tree for a set of paths."""
    tree: dict = {}
    for path in paths:
        node = tree
        for seg in path:
            node = node.setdefault(seg, {})
            if seg.startswith("k:"):
                node.setdefault(".", {})
    return tree


class FieldOwners:
    """Field ownership of every object the server wrote, by uid (thread-safe)."""

    def __init__(self) -> None:
        self._owners: dict[str, dict[Path, tuple[str, str, str, str]]] = {}
        self._times: dict[tuple[str, ...], str] = {}
        self._lock = threading.Lock()

    def record_update(self, obj: dict, old: dict | None, submitted: dict, manager: str, when: str,
                      subresource: str = "") -> None:
        """A create/update/patch by `manager`: it owns the fields it sent whose values changed."""
        new_leaves, old_leaves = leaves(obj), leaves(old) if old else {}
        sent = leaves(submitted)
        changed = [p for p, v in new_leaves.items() if p in sent and old_leaves.get(p, object()) != v]
        self._own(obj, changed, (manager, "Update", obj.get("apiVersion", ""), subresource), when)

    def record_paths(self, obj: dict, paths: list[Path], manager: str, when: str, subresource: str) -> None:
        """An update through a subresource (scale) owning the given paths."""
        self._own(obj, paths, (manager, "Update", obj.get("apiVersion", ""), subresource), when)

    def record_apply(self, obj: dict, applied: dict, manager: str, when: str) -> None:
        """An apply: the manager owns exactly what its configuration names, and gives up what it no longer does."""
        uid = obj["metadata"]["uid"]
        paths = list(leaves(applied))
        with self._lock:
            owners = self._owners.setdefault(uid, {})
            for path, owner in list(owners.items()):
                if owner[:2] == (manager, "Apply") and path not in paths:
                    del owners[path]
        self._own(obj, paths, (manager, "Apply", obj.get("apiVersion", ""), ""), when)

    def previous_apply(self, uid: str, manager: str) -> list[Path]:
        """The paths a manager's last apply owned."""
        with self._lock:
            return [p for p, owner in self._owners.get(uid, {}).items() if owner[:2] == (manager, "Apply")]

    def conflicts(self, current: dict, applied: dict, manager: str) -> list[tuple[tuple[str, str, str, str], Path]]:
        """(owner, path) for each field the apply would change that another manager owns; an owner is
        (manager, operation, apiVersion, subresource)."""
        uid = current["metadata"]["uid"]
        now = leaves(current)
        with self._lock:
            owners = dict(self._owners.get(uid, {}))
        out = []
        for path, value in leaves(applied).items():
            owner = owners.get(path)
            if owner and (owner[0], owner[1], owner[3]) != (manager, "Apply", "") and path in now and \
                    now[path] != value:
                out.append((owner, path))
        return out

    def managed_fields(self, obj: dict) -> list[dict]:
        """The object's managedFields entries, one per (manager, operation)."""
        uid = obj.get("metadata", {}).get("uid", "")
        with self._lock:
            owners = dict(self._owners.get(uid, {}))
            grouped: dict[tuple[str, str, str, str], list[Path]] = {}
            for path, who in owners.items():
                grouped.setdefault(who, []).append(path)
            times = {who: self._times.get((uid,) + who, "") for who in grouped}
        out = []
        for who, paths in sorted(grouped.items(), key=lambda kv: times[kv[0]]):
            entry = {"manager": who[0], "operation": who[1], "apiVersion": who[2], "time": times[who],
                     "fieldsType": "FieldsV1", "fieldsV1": fields_tree(paths)}
            if who[3]:
                entry["subresource"] = who[3]
            out.append(entry)
        return out

    def _own(self, obj: dict, paths: list[Path], who: tuple[str, str, str, str], when: str) -> None:
        if not paths:
            return
        uid = obj["metadata"]["uid"]
        with self._lock:
            owners = self._owners.setdefault(uid, {})
            for path in paths:
                owners[path] = who
                for other in [p for p in owners if p[:len(path)] == path and p != path]:
                    owners[other] = who
            self._times[(uid,) + who] = when

    def forget(self, uid: str) -> None:
        """Drop what is known about a deleted object."""
        with self._lock:
            self._owners.pop(uid, None)


def _who(owner: tuple[str, str, str, str]) -> str:
    manager, _, version, subresource = owner
    text = f'"{manager}"'
    if subresource:
        text += f' with subresource "{subresource}"'
    return f"{text} using {version}"


def conflict_error(conflicts: list[tuple[tuple[str, str, str, str], Path]]) -> ApplyConflict:
    """The 409 a real server answers, worded as structured-merge-diff words it."""
    if len(conflicts) == 1:
        owner, path = conflicts[0]
        body = f"conflict with {_who(owner)}: {path_text(path)}"
    else:
        lines = []
        for owner in sorted({c[0] for c in conflicts}):
            lines.append(f"conflicts with {_who(owner)}:")
            lines.extend(f"- {path_text(p)}" for o, p in conflicts if o == owner)
        body = "\n".join(lines)
    count = f"{len(conflicts)} conflict" + ("s" if len(conflicts) > 1 else "")
    causes = [{"reason": "FieldManagerConflict", "message": f"conflict with {_who(o)}", "field": path_text(p)}
              for o, p in conflicts]
    return ApplyConflict(f"Apply failed with {count}: {body}", causes=causes)
