"""PATCH bodies as the API server applies them: JSON patch, JSON merge patch, strategic merge patch and apply."""
from __future__ import annotations

from typing import Any

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


def _pointer(path: str) -> list[str]:
    if path == "":
        return []
    if not path.startswith("/"):
        raise UnprocessableEntity(f"invalid JSON pointer: {path!r}")
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def _walk(doc: Any, parts: list[str]) -> Any:
    cur = doc
    for part in parts:
        if isinstance(cur, dict) and part in cur:
            cur = cur[part]
        elif isinstance(cur, list) and part.isdigit() and int(part) < len(cur):
            cur = cur[int(part)]
        else:
            raise UnprocessableEntity(f"the server rejected our request due to an error in our request: "
                                      f"doc is missing path: \"/{'/'.join(parts)}\"")
    return cur


def json_patch(doc: Any, operations: Any) -> Any:
    """RFC 6902 JSON patch (add, remove, replace, move, copy, test)."""
    if not isinstance(operations, list):
        raise BadRequest("json: cannot unmarshal object into Go value of type jsonpatch.Patch")
    doc = clone(doc)
    for op in operations:
        if not isinstance(op, dict) or "op" not in op or "path" not in op:
            raise BadRequest("invalid JSON patch operation")
        name, parts = op["op"], _pointer(op["path"])
        if name == "test":
            if _walk(doc, parts) != op.get("value"):
                raise UnprocessableEntity(f"testing value {op['path']} failed: test failed")
            continue
        if name in ("move", "copy"):
            value = clone(_walk(doc, _pointer(op.get("from", ""))))
            if name == "move":
                doc = _remove(doc, _pointer(op.get("from", "")))
            doc = _add(doc, parts, value)
        elif name == "add":
            doc = _add(doc, parts, clone(op.get("value")))
        elif name == "remove":
            doc = _remove(doc, parts)
        elif name == "replace":
            _walk(doc, parts)
            doc = _remove(doc, parts)
            doc = _add(doc, parts, clone(op.get("value")))
        else:
            raise BadRequest(f"Unexpected kind: {name}")
    return doc


def _add(doc: Any, parts: list[str], value: Any) -> Any:
    if not parts:
        return value
    parent = _walk(doc, parts[:-1])
    last = parts[-1]
    if isinstance(parent, dict):
        parent[last] = value
    elif isinstance(parent, list):
        if last == "-":
            parent.append(value)
        elif last.isdigit() and int(last) <= len(parent):
            parent.insert(int(last), value)
        else:
            raise UnprocessableEntity(f"add operation does not apply: index {last} out of range")
    else:
        raise UnprocessableEntity("add operation does not apply: parent is not a container")
    return doc


def _remove(doc: Any, parts: list[str]) -> Any:
    if not parts:
        return None
    parent = _walk(doc, parts[:-1])
    last = parts[-1]
    if isinstance(parent, dict) and last in parent:
        del parent[last]
    elif isinstance(parent, list) and last.isdigit() and int(last) < len(parent):
        parent.pop(int(last))
    else:
        raise UnprocessableEntity(f"the server rejected our request due to an error in our request: "
                                  f"remove operation does not apply: doc is missing path: \"{'/' + '/'.join(parts)}\"")
    return doc


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
