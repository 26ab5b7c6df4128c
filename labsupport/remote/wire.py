"""What travels between a lab server and its clients: JSON lines, result types by name, errors by class.

Only plain JSON values, the result types of `labsupport.results` (and the few records they hold) and this
package's errors cross the socket; anything else is refused, so neither side can make the other build an object
of its choosing.
"""
from __future__ import annotations

import dataclasses
import json
from typing import Any

from labsupport import errors
from labsupport.apps import ExecResult
from labsupport.dataplane.netfilter import Hit
from labsupport.kubectl import KubectlResult
from labsupport.results import ClusterSnapshot, CurlResult, Hop, NslookupAnswer, ProxyStatus, Trace

#: The record types that may cross the socket, by name.
RECORDS: dict[str, type] = {cls.__name__: cls for cls in (
    CurlResult, Hop, Hit, Trace, NslookupAnswer, ProxyStatus, ClusterSnapshot, ExecResult, KubectlResult)}

#: The errors a reply may carry, rebuilt on the other side with the same class and message.
ERRORS: dict[str, type] = {cls.__name__: cls for cls in (
    errors.LabError, errors.BackendUnavailable, errors.APIError, errors.NotFound, errors.AlreadyExists,
    errors.Conflict, errors.BadRequest, errors.MethodNotAllowed, errors.InternalError, errors.Invalid,
    errors.Forbidden, errors.ClockLimit, TimeoutError, ValueError, KeyError, TypeError)}

#: The largest message either side reads, in bytes.
MAX_MESSAGE = 64 * 1024 * 1024


class WireError(errors.LabError):
    """A message that is not what the lab protocol allows."""


def encode(value: Any) -> Any:
    """A JSON-ready form of a value: plain JSON stays as it is, records carry their type's name."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, dict):
        if not all(isinstance(k, str) for k in value):
            raise WireError("only dicts with string keys can be sent to or from the lab")
        return {k: encode(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [encode(v) for v in value]
    if dataclasses.is_dataclass(value) and type(value).__name__ in RECORDS \
            and RECORDS[type(value).__name__] is type(value):
        fields = {f.name: encode(getattr(value, f.name)) for f in dataclasses.fields(value)}
        return {"__record__": type(value).__name__, "fields": fields}
    raise WireError(f"a {type(value).__name__} cannot be sent to or from the lab")


def decode(value: Any) -> Any:
    """The inverse of `encode`: records are rebuilt from the allowed types only."""
    if isinstance(value, list):
        return [decode(v) for v in value]
    if isinstance(value, dict):
        if "__record__" in value:
            cls = RECORDS.get(value["__record__"])
            if cls is None or not isinstance(value.get("fields"), dict):
                raise WireError(f"unknown record type {value.get('__record__')!r}")
            return cls(**{k: decode(v) for k, v in value["fields"].items()})
        return {k: decode(v) for k, v in value.items()}
    return value


def encode_error(exc: BaseException) -> dict:
    """An error as a reply carries it."""
    name = type(exc).__name__
    if isinstance(exc, errors.Invalid):
        return {"type": "Invalid", "kind": exc.kind, "name": exc.name, "group": exc.group,
                "errors": [str(e) for e in exc.errors]}
    if isinstance(exc, errors.APIError):
        cls = next((c for c in type(exc).__mro__ if c.__name__ in ERRORS), errors.APIError)
        return {"type": cls.__name__, "message": exc.message, "kind": exc.kind, "name": exc.name,
                "group": exc.group, "code": exc.code, "reason": exc.reason}
    if name in ERRORS:
        return {"type": name, "message": str(exc.args[0]) if exc.args else ""}
    return {"type": "LabError", "message": f"{name}: {exc}"}


def decode_error(data: dict) -> BaseException:
    """The exception a reply's error stands for."""
    cls = ERRORS.get(data.get("type", ""), errors.LabError)
    if cls is errors.Invalid:
        return errors.Invalid(data.get("kind", ""), data.get("name", ""), list(data.get("errors") or []),
                              data.get("group", ""))
    if issubclass(cls, errors.APIError):
        err = errors.APIError.__new__(cls)         # the message as sent, not rebuilt by the class's constructor
        errors.APIError.__init__(err, data.get("message", ""), kind=data.get("kind", ""), name=data.get("name", ""),
                                 group=data.get("group", ""))
        if cls is errors.APIError:
            err.code = data.get("code", 500)
            err.reason = data.get("reason", "InternalError")
        return err
    return cls(data.get("message", ""))


def dumps(message: dict) -> bytes:
    """One message as a line of JSON."""
    return json.dumps(message, separators=(",", ":")).encode() + b"\n"


class MessageTooLarge(WireError):
    """A message over the reader's limit: refused, and skipped to its end so the next one can be read."""


def read_message(stream, limit: int = MAX_MESSAGE) -> dict | None:
    """The next message from a binary stream (None at its end); refuses lines over `limit` bytes (skipping the rest
    of such a line, never holding it) or malformed."""
    line = stream.readline(limit + 1)
    if not line:
        return None
    if len(line) > limit:
        while not line.endswith(b"\n"):
            line = stream.readline(65536)
            if not line:
                break
        raise MessageTooLarge(f"a message longer than {limit} bytes")
    try:
        message = json.loads(line)
    except ValueError as e:
        raise WireError(f"a message that is not JSON: {e}") from e
    if not isinstance(message, dict):
        raise WireError("a message that is not a JSON object")
    return message


__all__ = ["RECORDS", "ERRORS", "WireError", "encode", "decode", "encode_error", "decode_error", "dumps",
           "read_message"]
