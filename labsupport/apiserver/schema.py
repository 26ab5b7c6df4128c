"""Field validation (`fieldValidation=Strict|Warn|Ignore`): fields a type does not declare, found the way the API
server's strict decoder finds them.

The field names and types come from the official Python client's models (a dependency of this package), which
are generated from the same OpenAPI schema the API server serves.
"""
from __future__ import annotations

import functools
from typing import Any

from labsupport.errors import BadRequest

#: Kinds whose client model is not simply `V1<Kind>`.
MODEL_NAMES = {"Event": "CoreV1Event"}


@functools.lru_cache(maxsize=None)
def _fields(model: str) -> dict[str, str] | None:
    try:
        from kubernetes.client import models
    except ImportError:
        return None
    cls = getattr(models, model, None)
    if cls is None or not hasattr(cls, "openapi_types"):
        return None
    return {cls.attribute_map[name]: kind for name, kind in cls.openapi_types.items()}


def unknown_fields(obj: dict, *, prune: bool = False, tolerated: frozenset = frozenset()) -> list[str]:
    """The paths of fields in an object that its kind does not declare (`spec.replica`); `prune` removes them.
    Paths in `tolerated` (already in the stored object) are left alone."""
    model = MODEL_NAMES.get(obj.get("kind", ""), f"V1{obj.get('kind', '')}")
    if _fields(model) is None:
        return []
    out: list[str] = []
    _walk(obj, model, "", out, prune, tolerated)
    return out


def _walk(value: Any, type_name: str, path: str, out: list[str], prune: bool = False,
          tolerated: frozenset = frozenset()) -> None:
    if type_name.startswith("List[") and isinstance(value, list):
        inner = type_name[5:-1]
        for i, item in enumerate(value):
            _walk(item, inner, f"{path}[{i}]", out, prune, tolerated)
        return
    if type_name.startswith("Dict[") and isinstance(value, dict):
        inner = type_name[5:-1].split(", ", 1)[1]
        for key, item in value.items():
            _walk(item, inner, f"{path}[{key}]", out, prune, tolerated)
        return
    fields = _fields(type_name)
    if fields is None or not isinstance(value, dict):
        return
    for key, item in list(value.items()):
        where = f"{path}.{key}" if path else key
        if key not in fields:
            if where in tolerated:
                continue
            out.append(where)
            if prune:
                del value[key]
        else:
            _walk(item, fields[key], where, out, prune, tolerated)


def warning_text(header: str) -> str:
    """What kubectl prints after "Warning: " for one Warning header (`299 - "unknown field \\"x\\""`)."""
    text = header.split(" - ", 1)[-1]
    if len(text) >= 2 and text[0] == text[-1] == '"':
        text = text[1:-1].replace('\\"', '"')
    return text


def check_fields(obj: dict, mode: str | None, warnings: list[str], *, apply: bool = False,
                 stored: dict | None = None) -> None:
    """Apply a request's fieldValidation to an object: refuse (Strict), or drop unknown fields with a warning
    (Warn, the default) or silently (Ignore), as the API server's decoder does."""
    mode = mode or "Warn"
    if mode not in ("Strict", "Warn", "Ignore"):
        raise BadRequest(f'fieldValidation: Unsupported value: "{mode}": supported values: "Ignore", "Strict", '
                         f'"Warn"')
    tolerated = frozenset(unknown_fields(stored)) if stored else frozenset()
    unknown = unknown_fields(obj, prune=mode != "Strict", tolerated=tolerated)
    if not unknown or mode == "Ignore":
        return
    if mode == "Strict" and apply:
        meta = obj.get("metadata") or {}
        where = f"{meta.get('namespace')}/{meta.get('name')}" if meta.get("namespace") else meta.get("name")
        group_version = str(obj.get("apiVersion", ""))
        raise BadRequest(f"failed to create typed patch object ({where}; {group_version}, Kind={obj.get('kind')}): "
                         f".{unknown[0]}: field not declared in schema")
    if mode == "Strict":
        kind, version = obj.get("kind", ""), str(obj.get("apiVersion", "")).rsplit("/", 1)[-1]
        listed = ", ".join(f'unknown field "{u}"' for u in unknown)
        raise BadRequest(f'{kind} in version "{version}" cannot be handled as a {kind}: strict decoding error: '
                         f"{listed}")
    for u in unknown:
        warnings.append(f'299 - "unknown field \\"{u}\\""')
