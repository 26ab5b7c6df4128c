"""Decoding and field validation (`fieldValidation=Strict|Warn|Ignore`): a value of the wrong JSON type for its field
(`port: "http"`), and fields a type does not declare, found the way the API server's decoder finds them.

The field names and types come from the official Python client's models, which are generated from the same OpenAPI
schema the API server serves. They are read from the client once, into `fields.json` (package data; `python -m
labsupport.apiserver.schema` writes it), so validation is exactly as strict where the client is not installed (a
browser kernel) and `lab.apply` needs no import of it.
"""
from __future__ import annotations

import functools
import json
import pathlib
import re
import sys
from typing import Any

from labsupport.errors import BadRequest

#: Kinds whose client model is not simply `V1<Kind>`.
MODEL_NAMES = {"Event": "CoreV1Event"}


#: Every client model the served kinds reach: {"client": its version, "models": {model: {JSON field: type}}}, the
#: type as the client writes it (`List[V1Container]`, `Dict[str, str]`, `int`, `V1PodSpec`).
FIELDS_PATH = pathlib.Path(__file__).with_name("fields.json")


@functools.lru_cache(maxsize=1)
def _shipped() -> dict[str, dict[str, str]]:
    return json.loads(FIELDS_PATH.read_text(encoding="utf-8"))["models"]


def _fields(model: str) -> dict[str, str] | None:
    """A model's fields ({JSON name: type}), or None when it is not a model of a served kind (a scalar type)."""
    return _shipped().get(model)


def fields_from_client() -> dict:
    """What `fields.json` holds, read from the installed client: every model reachable from a served kind."""
    import kubernetes
    from kubernetes.client import models

    from labsupport.model.kinds import KINDS
    found: dict[str, dict[str, str]] = {}
    todo = [MODEL_NAMES.get(info.kind, f"V1{info.kind}") for info in KINDS]
    while todo:
        name = todo.pop()
        cls = getattr(models, name, None)
        if name in found or cls is None or not hasattr(cls, "openapi_types"):
            continue
        found[name] = {cls.attribute_map[field]: kind for field, kind in cls.openapi_types.items()}
        todo.extend(word for kind in found[name].values() for word in re.findall(r"\w+", kind))
    return {"client": f"kubernetes {kubernetes.__version__}", "models": dict(sorted(found.items()))}


def write_fields(path: pathlib.Path = FIELDS_PATH) -> None:
    """Write `fields.json` from the installed client: one model per line."""
    found = fields_from_client()
    lines = [f"{json.dumps(name)}: {json.dumps(fields, separators=(',', ':'))}"
             for name, fields in found["models"].items()]
    path.write_text(f'{{"client": {json.dumps(found["client"])},\n"models": {{\n' + ",\n".join(lines) + "\n}}\n",
                    encoding="utf-8")


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


#: The integer fields the API declares int64 (every other integer field of the kinds served here is an int32).
INT64_FIELDS = frozenset({"activeDeadlineSeconds", "expirationSeconds", "fsGroup", "observedGeneration", "runAsGroup",
                          "runAsUser", "terminationGracePeriodSeconds", "tolerationSeconds", "generation",
                          "deletionGracePeriodSeconds", "revision"})
#: The JSON value each checked scalar field type takes, and the Go type the decoder names when it is not given one
#: (string fields are left out: many are named Go types, `v1.Protocol`, that the client models do not tell).
SCALARS = {"int": (int, "int32"), "bool": (bool, "bool")}


def _json_kind(value: Any) -> str:
    """A JSON value as Go's decoder describes it in an UnmarshalTypeError."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, str):
        return "string"
    if isinstance(value, (int, float)):
        return "number" if isinstance(value, int) or float(value).is_integer() else f"number {value}"
    return "array" if isinstance(value, list) else "object" if isinstance(value, dict) else "null"


def decode_error(obj: dict) -> str | None:
    """The API server's decoding error for the first integer or boolean field whose JSON value its Go type cannot
    take (`json: cannot unmarshal string into Go struct field ServicePort.spec.ports.port of type int32`), or None."""
    model = MODEL_NAMES.get(obj.get("kind", ""), f"V1{obj.get('kind', '')}")
    return _mistyped(obj, model, []) if _fields(model) is not None else None


def _mistyped(value: Any, type_name: str, stack: list[str]) -> str | None:
    if type_name.startswith("List[") and isinstance(value, list):
        return next(filter(None, (_mistyped(item, type_name[5:-1], stack) for item in value)), None)
    if type_name.startswith("Dict[") and isinstance(value, dict):
        inner = type_name[5:-1].split(", ", 1)[1]
        return next(filter(None, (_mistyped(item, inner, stack) for item in value.values())), None)
    fields = _fields(type_name)
    if fields is None or not isinstance(value, dict):
        return None
    for key, item in value.items():
        kind = fields.get(key)
        if kind is None or item is None:
            continue
        if kind in SCALARS:
            python, go = SCALARS[kind]
            if kind == "int" and key in INT64_FIELDS:
                go = "int64"
            fits = isinstance(item, python) and not (python is int and isinstance(item, bool))
            if python is int and isinstance(item, float) and item.is_integer():
                fits = True
            if not fits:
                struct = re.sub(r"^(?:[A-Z][a-z]+)?V\d+(?:(?:alpha|beta)\d+)?", "", type_name)
                return (f"json: cannot unmarshal {_json_kind(item)} into Go struct field "
                        f"{struct}.{'.'.join([*stack, key])} of type {go}")
        else:
            found = _mistyped(item, kind, [*stack, key])
            if found:
                return found
    return None


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
    mistyped = decode_error(obj)
    if mistyped:
        kind, version = obj.get("kind", ""), str(obj.get("apiVersion", "")).rsplit("/", 1)[-1]
        raise BadRequest(f'{kind} in version "{version}" cannot be handled as a {kind}: {mistyped}')
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


if __name__ == "__main__":
    write_fields()
    sys.stdout.write(f"wrote {FIELDS_PATH}\n")
