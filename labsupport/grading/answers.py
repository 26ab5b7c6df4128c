"""A student's answer variables as plain data: written in the graded kernel, read back by the grader.

Only JSON-like values travel (None, booleans, numbers, strings, lists, tuples, sets, dicts with string keys), plus
the lab's own results (by content, checked by the grader against what the lab server served), open keep-alive
connections (by their id on the server) and modules and classes of the standard library or labsupport (by name,
imported afresh by the grader). Anything else arrives as "unsupported" and fails the test that uses it.
"""
from __future__ import annotations

import dataclasses
import json
import math
import sys
import types
from typing import Any

from labsupport.remote import wire

#: The deepest nesting of an answer.
MAX_DEPTH = 40


def to_plain(value: Any, depth: int = 0) -> Any:
    """One value in its plain form (see the module docstring)."""
    if depth > MAX_DEPTH:
        return {"__unsupported__": f"a value nested deeper than {MAX_DEPTH} levels"}
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else {"__float__": repr(value)}
    if isinstance(value, list):
        return [to_plain(v, depth + 1) for v in value]
    if isinstance(value, tuple):
        return {"__tuple__": [to_plain(v, depth + 1) for v in value]}
    if isinstance(value, (set, frozenset)):
        return {"__set__": [to_plain(v, depth + 1) for v in value]}
    if isinstance(value, dict):
        if not all(isinstance(k, str) for k in value):
            return {"__unsupported__": "a dict with keys that are not strings"}
        return {"__dict__": {k: to_plain(v, depth + 1) for k, v in value.items()}}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        try:
            return {"__record__": wire.encode(value)}
        except wire.WireError:
            pass
    if type(value).__name__ == "RemoteConnection" and isinstance(getattr(value, "key", None), int):
        return {"__connection__": value.key}
    if isinstance(value, types.ModuleType):
        return {"__module__": value.__name__}
    if isinstance(value, type):
        module = getattr(value, "__module__", "") or ""
        if module.split(".")[0] == "labsupport" or module.split(".")[0] in sys.stdlib_module_names:
            return {"__object__": [module, value.__qualname__]}
        return {"__unsupported__": "a class"}
    if isinstance(value, (types.FunctionType, types.BuiltinFunctionType, types.MethodType)):
        return {"__unsupported__": "a function"}
    return {"__unsupported__": type(value).__name__}


def dump(names: list[str], namespace: dict) -> str:
    """The named variables of a namespace as one JSON text; a missing name is marked missing."""
    out = {}
    for name in names:
        if name in namespace:
            out[name] = to_plain(namespace[name])
        else:
            out[name] = {"__missing__": True}
    return json.dumps(out)


def expression(names: list[str]) -> str:
    """The Python expression the grader asks the kernel to evaluate (as a user expression)."""
    return f"__import__('labsupport.grading.answers', fromlist=['dump']).dump({names!r}, globals())"


__all__ = ["to_plain", "dump", "expression", "MAX_DEPTH"]
