"""The OpenAPI v2 document in the protobuf form kubectl asks for (gnostic's `openapi_v2.Document`): the
definitions with their types, references, required fields, descriptions and `x-kubernetes-*` extensions."""
from __future__ import annotations

import json

import yaml

#: What kubectl sends in Accept for /openapi/v2.
V2_PROTOBUF = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        low = n & 0x7F
        n >>= 7
        if n:
            out.append(low | 0x80)
        else:
            out.append(low)
            return bytes(out)


def _bytes(field: int, payload: bytes) -> bytes:
    return _varint(field << 3 | 2) + _varint(len(payload)) + payload


def _string(field: int, text: str) -> bytes:
    return _bytes(field, text.encode())


def _bool(field: int, value: bool) -> bytes:
    return _varint(field << 3) + _varint(1 if value else 0) if value else b""


def _any(value) -> bytes:
    """gnostic's Any: the value as YAML text (field 2)."""
    return _string(2, yaml.safe_dump(value, default_flow_style=True).strip())


def _named_any(name: str, value) -> bytes:
    return _string(1, name) + _bytes(2, _any(value))


def encode_schema(schema: dict) -> bytes:
    """One Schema message."""
    out = bytearray()
    if "$ref" in schema:
        out += _string(1, schema["$ref"])
    if "format" in schema:
        out += _string(2, schema["format"])
    if "description" in schema:
        out += _string(4, schema["description"])
    if schema.get("uniqueItems"):
        out += _bool(16, True)
    for name in schema.get("required", ()):
        out += _string(19, name)
    if isinstance(schema.get("additionalProperties"), dict):
        out += _bytes(21, _bytes(1, encode_schema(schema["additionalProperties"])))
    if "type" in schema:
        types = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        out += _bytes(22, b"".join(_string(1, t) for t in types))
    if "items" in schema:
        out += _bytes(23, _bytes(1, encode_schema(schema["items"])))
    for part in schema.get("allOf", ()):
        out += _bytes(24, encode_schema(part))
    if "properties" in schema:
        out += _bytes(25, b"".join(_bytes(1, _string(1, k) + _bytes(2, encode_schema(v)))
                                   for k, v in schema["properties"].items()))
    for key, value in schema.items():
        if key.startswith("x-"):
            out += _bytes(31, _named_any(key, value))
    return bytes(out)


def encode_document(text: str) -> bytes:
    """The v2 document (JSON text) as a gnostic Document message."""
    doc = json.loads(text)
    info = doc.get("info", {})
    out = bytearray(_string(1, doc.get("swagger", "2.0")))
    out += _bytes(2, _string(1, info.get("title", "")) + _string(2, info.get("version", "")))
    definitions = b"".join(_bytes(1, _string(1, name) + _bytes(2, encode_schema(schema)))
                           for name, schema in doc.get("definitions", {}).items())
    out += _bytes(9, definitions)
    return bytes(out)
