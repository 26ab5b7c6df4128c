"""Reading manifests: YAML text (multi-document), a dict, or a list of either — with errors that say where."""
from __future__ import annotations

from typing import Any, Iterable

import yaml

from labsupport.errors import BadRequest


def load_manifests(manifest: Any) -> list[dict]:
    """Every object in a manifest. `List` objects are unpacked; empty documents are skipped."""
    if isinstance(manifest, dict):
        docs: Iterable[Any] = [manifest]
    elif isinstance(manifest, (list, tuple)):
        docs = []
        for item in manifest:
            docs.extend(load_manifests(item))
        return docs
    elif isinstance(manifest, str):
        try:
            docs = list(yaml.safe_load_all(manifest))
        except yaml.YAMLError as e:
            mark = getattr(e, "problem_mark", None)
            where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
            problem = getattr(e, "problem", None) or str(e)
            raise BadRequest(f"error parsing manifest{where}: {problem}") from e
    else:
        raise BadRequest(f"a manifest must be YAML text, a dict or a list, not {type(manifest).__name__}")
    out: list[dict] = []
    for index, doc in enumerate(docs):
        if doc is None:
            continue
        if not isinstance(doc, dict):
            raise BadRequest(f"document {index + 1} of the manifest is a {type(doc).__name__}, not an object "
                             f"(did you indent it under a key?)")
        if doc.get("kind") == "List" or (doc.get("kind", "").endswith("List") and "items" in doc):
            out.extend(load_manifests(doc.get("items") or []))
            continue
        for key in ("apiVersion", "kind"):
            if not doc.get(key):
                name = (doc.get("metadata") or {}).get("name", "?")
                raise BadRequest(f"document {index + 1} of the manifest (name {name!r}) has no {key}")
        out.append(doc)
    return out
