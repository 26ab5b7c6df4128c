"""One rooted exception hierarchy, with the Kubernetes API server's own messages and Status objects."""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Iterable


class LabError(Exception):
    """Root of every error this package raises."""

    def _render_traceback_(self) -> list[str]:
        """How IPython shows it in a notebook: the student's own line and the message, without this package's
        frames (the walk from `lab.curl(...)` down to where the API server's answer was raised)."""
        from labsupport.check_display import render_traceback
        return render_traceback(self)


class BackendUnavailable(LabError):
    """A backend cannot run on this machine; the message says why and what to do instead."""


class ProxyModeUnavailable(BackendUnavailable):
    """This cluster cannot run kube-proxy in `mode` (the kernel lacks what the mode needs); kube-proxy keeps its
    mode. `reason` is the short cause, the message adds the way out."""

    def __init__(self, mode: str, reason: str, message: str):
        self.mode = mode
        self.reason = reason
        super().__init__(message)


class UnknownProxyMode(LabError, ValueError):
    """A kube-proxy mode that does not exist; the message names the valid ones."""

    def __init__(self, mode: object, modes: Iterable[str]):
        self.mode = mode
        self.modes = tuple(sorted(modes))
        super().__init__(f"unknown proxy mode {mode!r}: choose one of {', '.join(self.modes)}")


class ClockLimit(LabError, ValueError):
    """The virtual clock cannot move that far: not a finite number of seconds, or past a graded cluster's end."""


class APIError(LabError):
    """An error the Kubernetes API server would return, with its HTTP code and Status reason."""

    code = 500
    reason = "InternalError"

    def __init__(self, message: str, *, kind: str = "", name: str = "", group: str = "",
                 causes: list[dict] | None = None):
        super().__init__(message)
        self.message = message
        self.kind = kind
        self.name = name
        self.group = group
        self.causes = causes or []

    def status(self) -> dict:
        """The Status object a real API server sends for this error."""
        details: dict[str, Any] = {}
        if self.name:
            details["name"] = self.name
        if self.group:
            details["group"] = self.group
        if self.kind:
            details["kind"] = self.kind
        if self.causes:
            details["causes"] = self.causes
        status = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                  "message": self.server_message(), "reason": self.reason, "code": self.code}
        if details:
            status["details"] = details
        return status

    def server_message(self) -> str:
        """The message as the server puts it in the Status (kubectl may reword it)."""
        return self.message

    def kubectl_text(self) -> str:
        """The line kubectl prints for this error."""
        return f"Error from server ({self.reason}): {self.message}"


class NotFound(APIError):
    """The object does not exist: `services "web" not found`."""

    code = 404
    reason = "NotFound"

    @classmethod
    def of(cls, resource: str, name: str, kind: str = "", group: str = "") -> "NotFound":
        """The error for a missing object, given its plural resource name."""
        qualified = f"{resource}.{group}" if group else resource
        return cls(f'{qualified} "{name}" not found', kind=resource, name=name, group=group)


class Forbidden(APIError):
    """The caller may not make this request: `pods "x" is forbidden: User "student" cannot …`."""

    code = 403
    reason = "Forbidden"


class AlreadyExists(APIError):
    """An object with that name exists: `services "web" already exists`."""

    code = 409
    reason = "AlreadyExists"

    @classmethod
    def of(cls, resource: str, name: str, group: str = "") -> "AlreadyExists":
        """The error for a duplicate create, given the plural resource name."""
        qualified = f"{resource}.{group}" if group else resource
        return cls(f'{qualified} "{name}" already exists', kind=resource, name=name, group=group)


class Conflict(APIError):
    """A write carried a stale resourceVersion."""

    code = 409
    reason = "Conflict"

    @classmethod
    def stale(cls, resource: str, name: str, group: str = "") -> "Conflict":
        """The optimistic-concurrency error kubectl shows on a stale resourceVersion."""
        qualified = f"{resource}.{group}" if group else resource
        return cls(f'Operation cannot be fulfilled on {qualified} "{name}": the object has been modified; '
                   "please apply your changes to the latest version and try again", kind=resource, name=name,
                   group=group)


class BadRequest(APIError):
    """A request the server cannot even read (malformed body, unknown kind)."""

    code = 400
    reason = "BadRequest"


class MethodNotAllowed(APIError):
    """The resource does not support that verb."""

    code = 405
    reason = "MethodNotAllowed"


class InternalError(APIError):
    """`Internal error occurred: …` — how the server reports, e.g., a healthCheckNodePort clash."""

    code = 500
    reason = "InternalError"

    def __init__(self, detail: str, **kw):
        super().__init__(f"Internal error occurred: {detail}", **kw)


def go_repr(value: Any) -> str:
    """Render a value the way the API server's field errors print it (Go's %#v for common types)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, (list, tuple)):
        if all(isinstance(v, str) for v in value):
            return "[]string{" + ", ".join(json.dumps(v) for v in value) + "}"
        return "[]interface {}{" + ", ".join(go_repr(v) for v in value) + "}"
    if value is None:
        return "null"
    if isinstance(value, dict):
        return "map[string]interface {}{" + ", ".join(f"{json.dumps(k)}:{go_repr(v)}" for k, v in value.items()) + "}"
    return str(value)


@dataclass(frozen=True)
class FieldError:
    """One field's complaint, as in k8s.io/apimachinery/pkg/util/validation/field."""

    type: str          # "Invalid value", "Required value", "Forbidden", "Unsupported value", "Duplicate value", ...
    field: str         # "spec.ports[0].nodePort"
    value: Any = None
    detail: str = ""

    _REASONS = {"Invalid value": "FieldValueInvalid", "Required value": "FieldValueRequired",
                "Forbidden": "FieldValueForbidden", "Unsupported value": "FieldValueNotSupported",
                "Duplicate value": "FieldValueDuplicate", "Too long": "FieldValueTooLong",
                "Too many": "FieldValueTooMany", "Internal error": "InternalError",
                "Not found": "FieldValueNotFound"}

    @classmethod
    def invalid(cls, field: str, value: Any, detail: str) -> "FieldError":
        """`<field>: Invalid value: <value>: <detail>`."""
        return cls("Invalid value", field, value, detail)

    @classmethod
    def required(cls, field: str, detail: str = "") -> "FieldError":
        """`<field>: Required value[: detail]`."""
        return cls("Required value", field, None, detail)

    @classmethod
    def forbidden(cls, field: str, detail: str) -> "FieldError":
        """`<field>: Forbidden: <detail>`."""
        return cls("Forbidden", field, None, detail)

    @classmethod
    def unsupported(cls, field: str, value: Any, supported: list[str]) -> "FieldError":
        """`<field>: Unsupported value: "x": supported values: "a", "b"`."""
        return cls("Unsupported value", field, value, "supported values: " + ", ".join(json.dumps(s) for s in supported))

    @classmethod
    def duplicate(cls, field: str, value: Any) -> "FieldError":
        """`<field>: Duplicate value: <value>`."""
        return cls("Duplicate value", field, value, "")

    def body(self) -> str:
        """The message without the field path, as the Status cause carries it."""
        if self.type in ("Required value", "Forbidden", "Internal error", "Too many"):
            return f"{self.type}: {self.detail}" if self.detail else self.type
        text = f"{self.type}: {go_repr(self.value)}"
        return f"{text}: {self.detail}" if self.detail else text

    def __str__(self) -> str:
        return f"{self.field}: {self.body()}"

    def cause(self) -> dict:
        """The Status cause dict for this error."""
        return {"reason": self._REASONS.get(self.type, "FieldValueInvalid"), "message": self.body(), "field": self.field}


class Invalid(APIError):
    """The API server refused an object: `The Service "web" is invalid: spec.ports[0].nodePort: …`.

    `str(err)` is what kubectl prints (one error inline, several as a bulleted list); `err.errors` the field
    errors; `server_message()` the Status message, which qualifies the kind with its group (`Deployment.apps`).
    """

    code = 422
    reason = "Invalid"

    def __init__(self, kind: str, name: str, errors: list[FieldError] | list[str], group: str = ""):
        self.errors = list(errors)
        texts = [str(e) for e in self.errors]
        if len(texts) == 1:
            shown = texts[0]
        else:
            shown = "\n" + "\n".join(f"* {t}" for t in texts)
        self.qualified_kind = f"{kind}.{group}" if group else kind
        super().__init__(f'The {kind} "{name}" is invalid: {shown}', kind=kind, name=name, group=group,
                         causes=[e.cause() if isinstance(e, FieldError) else {"message": str(e)} for e in self.errors])

    def server_message(self) -> str:
        texts = [str(e) for e in self.errors]
        joined = texts[0] if len(texts) == 1 else "[" + ", ".join(texts) + "]"
        return f'{self.qualified_kind} "{self.name}" is invalid: {joined}'

    def kubectl_text(self) -> str:
        return self.message


def from_status(status: dict) -> APIError:
    """Turn a Status object from a server back into the matching exception."""
    reason = status.get("reason", "")
    message = status.get("message", "")
    details = status.get("details") or {}
    if reason == "Invalid":
        causes = details.get("causes") or []
        errs = [f"{c.get('field', '')}: {c.get('message', '')}" if c.get("field") else c.get("message", "")
                for c in causes]
        return Invalid(details.get("kind", "").capitalize() or "Object", details.get("name", ""), errs)
    for cls in (NotFound, AlreadyExists, Conflict, BadRequest, MethodNotAllowed):
        if cls.reason == reason:
            return cls(message, kind=details.get("kind", ""), name=details.get("name", ""))
    err = APIError(message, kind=details.get("kind", ""), name=details.get("name", ""))
    err.code = status.get("code", 500)
    err.reason = reason or "InternalError"
    return err
