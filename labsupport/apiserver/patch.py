"""PATCH bodies as the API server applies them: JSON patch, JSON merge patch, strategic merge patch and apply.

JSON Patch (RFC 6902) is the `jsonpatch` library's. JSON merge patch (RFC 7386) stays here: `jsonpatch` has none,
and the RFC's whole algorithm is the ten lines of `json_merge_patch`. Strategic merge patch and server-side apply
are Kubernetes' own and have no Python library.
"""
from __future__ import annotations

from typing import Any

import jsonpatch

from labsupport.model.objects import clone
from labsupport.errors import APIError, BadRequest

#: List fields whose elements strategic merge patch matches by a key (upstream's patchMergeKey tags).
MERGE_KEYS = {
    "containers": "name", "initContainers": "name", "ephemeralContainers": "name", "env": "name",
    "volumes": "name", "volumeMounts": "mountPath", "volumeDevices": "devicePath", "imagePullSecrets": "name",
    "hostAliases": "ip", "conditions": "type", "ownerReferences": "uid", "topologySpreadConstraints": "topologyKey",
    "resourceClaims": "name", "readinessGates": "conditionType", "containerStatuses": "name",
    "podIPs": "ip", "hostIPs": "ip", "addresses": "type",
}
#: Primitive lists that strategic merge patch merges as sets rather than replacing.
SET_LISTS = {"finalizers"}


#: What the API server answers (422, reason Invalid) to any JSON patch that does not apply.
PATCH_REFUSED = "the server rejected our request due to an error in our request"


class UnprocessableEntity(APIError):
    """A patch that cannot be applied (a failed `test`, a missing path)."""

    code = 422
    reason = "Invalid"


def merge_key(field: str, items: list) -> str | None:
    """The key strategic merge patch matches elements of list `field` by (None: the list is atomic)."""
    if field == "ports":
        sample = next((i for i in items if isinstance(i, dict)), {})
        return "containerPort" if "containerPort" in sample else "port"
    return MERGE_KEYS.get(field)


def json_merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386: maps merge recursively, null deletes, anything else replaces."""
    if not isinstance(patch, dict):
        return clone(patch)
    out = clone(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = json_merge_patch(out.get(key), value)
    return out


def strategic_merge_patch(target: Any, patch: Any) -> Any:
    """Kubernetes' strategic merge patch with its directives ($patch, $retainKeys, $setElementOrder, …)."""
    if not isinstance(patch, dict):
        return clone(patch)
    if not isinstance(target, dict):
        target = {}
    directive = patch.get("$patch")
    if directive == "replace":
        return {k: clone(v) for k, v in patch.items() if k != "$patch"}
    if directive == "delete":
        return None
    out = clone(target)
    orders: dict[str, list] = {}
    retain = patch.get("$retainKeys")
    for key, value in patch.items():
        if key in ("$patch", "$retainKeys"):
            continue
        if key.startswith("$setElementOrder/"):
            orders[key.split("/", 1)[1]] = value or []
            continue
        if key.startswith("$deleteFromPrimitiveList/"):
            field = key.split("/", 1)[1]
            if isinstance(out.get(field), list):
                out[field] = [v for v in out[field] if v not in (value or [])]
            continue
        if value is None:
            out.pop(key, None)
        elif isinstance(value, dict):
            merged = strategic_merge_patch(out.get(key), value)
            if merged is None:
                out.pop(key, None)
            else:
                out[key] = merged
        elif isinstance(value, list):
            out[key] = _merge_list(key, out.get(key), value)
        else:
            out[key] = value
    for field, order in orders.items():
        if isinstance(out.get(field), list):
            out[field] = _reorder(field, out[field], order)
    if isinstance(retain, list):
        out = {k: v for k, v in out.items() if k in retain}
    return out


def _merge_list(field: str, current: Any, patch: list) -> list:
    current = current if isinstance(current, list) else []
    if any(isinstance(p, dict) and p.get("$patch") == "replace" for p in patch):
        return [clone(p) for p in patch if not (isinstance(p, dict) and p.get("$patch") == "replace")]
    if field in SET_LISTS and all(not isinstance(p, (dict, list)) for p in patch):
        out = list(current)
        for p in patch:
            if p not in out:
                out.append(p)
        return out
    key = merge_key(field, patch) if patch and all(isinstance(p, dict) for p in patch) else None
    if key is None:
        return [clone(p) for p in patch if not (isinstance(p, dict) and p.get("$patch") == "delete")]
    out = [clone(c) for c in current]
    for item in patch:
        if key not in item:
            raise BadRequest(f"map: {item} does not contain declared merge key: {key}")
        index = next((i for i, c in enumerate(out) if isinstance(c, dict) and c.get(key) == item[key]), None)
        if item.get("$patch") == "delete":
            if index is not None:
                out.pop(index)
            continue
        if index is None:
            out.append(strategic_merge_patch({}, item))
        else:
            out[index] = strategic_merge_patch(out[index], item)
    return out


def _reorder(field: str, items: list, order: list) -> list:
    if not order:
        return items
    if all(isinstance(o, dict) for o in order):
        key = merge_key(field, order)
        if key is None:
            return items
        rank = {o.get(key): i for i, o in enumerate(order)}
        return sorted(items, key=lambda it: rank.get(it.get(key) if isinstance(it, dict) else None, len(rank)))
    rank = {o: i for i, o in enumerate(order)}
    return sorted(items, key=lambda it: rank.get(it, len(rank)))


def json_patch(doc: Any, operations: Any) -> Any:
    """RFC 6902 JSON Patch (add, remove, replace, move, copy, test), applied by `jsonpatch`.

    Refusals read as the API server's: a body that is no list of operations is a 400 with the Go decoder's words;
    a patch that does not apply (a failed `test`, a missing path, an unknown op) is a 422 whose message, like the
    server's, does not say which operation failed.
    """
    if operations is None:      # Go decodes `null` into an empty patch
        return clone(doc)
    if not isinstance(operations, list):
        raise BadRequest(f"json: cannot unmarshal {_go_type(operations)} into Go value of type jsonpatch.Patch")
    for op in operations:
        if not isinstance(op, dict):
            raise BadRequest(f"json: cannot unmarshal {_go_type(op)} into Go value of type jsonpatch.Operation")
    # The server's library reads a missing "value" as null; `jsonpatch` refuses it, so say null outright.
    operations = [{"value": None, **op} if op.get("op") in ("add", "replace", "test") else op for op in operations]
    try:
        return clone(jsonpatch.JsonPatch(operations).apply(doc, in_place=False))
    except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException) as e:
        raise UnprocessableEntity(PATCH_REFUSED) from e


def _go_type(value: Any) -> str:
    """How Go's JSON decoder names a JSON value's type in its errors."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    return {dict: "object", list: "array", str: "string"}.get(type(value), "value")


# --- server-side apply ---------------------------------------------------------------------------------------
def apply_patch(current: dict | None, applied: dict, previous: dict | None) -> dict:
    """Server-side apply: merge `applied` into `current`, dropping fields this manager set before and dropped now."""
    if current is None:
        return clone(applied)
    out = clone(current)
    if previous:
        out = _drop_removed(out, previous, applied)
    return _apply_merge(out, applied)


def _apply_merge(target: Any, applied: Any, field: str = "") -> Any:
    if isinstance(applied, dict):
        out = clone(target) if isinstance(target, dict) else {}
        for key, value in applied.items():
            out[key] = _apply_merge(out.get(key), value, key)
        return out
    if isinstance(applied, list) and applied and all(isinstance(i, dict) for i in applied) and \
            isinstance(target, list):
        key = merge_key(field, applied)
        if key is None:
            return clone(applied)
        out = []
        for item in applied:
            old = next((t for t in target if isinstance(t, dict) and t.get(key) == item.get(key)), None)
            out.append(_apply_merge(old, item, ""))
        return out
    return clone(applied)


def _drop_removed(target: Any, previous: Any, applied: Any) -> Any:
    if not isinstance(target, dict) or not isinstance(previous, dict):
        return target
    applied = applied if isinstance(applied, dict) else {}
    for key, old in previous.items():
        if key not in applied:
            if key not in ("apiVersion", "kind", "metadata"):
                target.pop(key, None)
        elif isinstance(old, dict):
            target[key] = _drop_removed(target.get(key), old, applied[key])
    return target
