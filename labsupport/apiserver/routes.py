"""What a request path names, the server's limits, and the Status errors only the HTTP layer raises."""
from __future__ import annotations

from typing import Any
from urllib.parse import unquote

from labsupport.errors import APIError, NotFound
from labsupport.model.kinds import KindInfo, by_resource
from labsupport.model.selectors import matches_fields

MAX_BODY = 3 * 1024 * 1024
DRAIN_LIMIT = 64 * 1024 * 1024
ENDPOINTS_WARNING = '299 - "v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1 EndpointSlice"'
IDLE_STEP = 0.03
DEFAULT_WATCH_SECONDS = 1800
BOOKMARK_SECONDS = 5.0


class TooLarge(APIError):
    """The request body is over the server's limit."""

    code = 413
    reason = "RequestEntityTooLarge"


class Unauthorized(APIError):
    """No valid bearer token."""

    code = 401
    reason = "Unauthorized"


class NotAcceptable(APIError):
    """A representation the server does not produce."""

    code = 406
    reason = "NotAcceptable"


class UnsupportedMediaType(APIError):
    """A PATCH body of a type the server does not apply."""

    code = 415
    reason = "UnsupportedMediaType"


def status_success(details: dict | None = None) -> dict:
    """A Status reporting success."""
    out = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success"}
    if details:
        out["details"] = details
    return out


class Route:
    """What a request path names: a discovery document, a collection, an object or a subresource."""

    def __init__(self, info: KindInfo, namespace: str | None, name: str | None, sub: str | None):
        self.info = info
        self.namespace = namespace
        self.name = name
        self.sub = sub


def parse_route(path: str) -> Route | None:
    """Resolve /api/v1/... and /apis/<group>/<version>/... to a resource route (None: not a resource path)."""
    parts = [unquote(p) for p in path.strip("/").split("/")]
    if parts[0] == "api" and len(parts) >= 3:
        group, version, rest = "", parts[1], parts[2:]
    elif parts[0] == "apis" and len(parts) >= 4:
        group, version, rest = parts[1], parts[2], parts[3:]
    else:
        return None
    namespace = None
    if rest[0] == "namespaces" and len(rest) >= 3 and by_resource(group, version, rest[2]) is not None:
        namespace, rest = rest[1], rest[2:]
    info = by_resource(group, version, rest[0])
    if info is None:
        raise NotFound("the server could not find the requested resource")
    if namespace is not None and not info.namespaced:
        raise NotFound("the server could not find the requested resource")
    name = rest[1] if len(rest) >= 2 else None
    sub = rest[2] if len(rest) >= 3 else None
    if len(rest) > 3 or (sub is not None and sub not in info.subresources):
        raise NotFound("the server could not find the requested resource")
    return Route(info, namespace, name, sub)


def selected(obj: dict, label_sel: Any, field_sel: Any) -> bool:
    """Whether an object passes a request's label and field selectors (None passes everything)."""
    if label_sel is not None and not label_sel.matches(obj["metadata"].get("labels") or {}):
        return False
    if field_sel is not None and not matches_fields(field_sel, obj):
        return False
    return True
