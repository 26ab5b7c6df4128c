"""Who the caller is and what it may do: every request is authorized as upstream's authorizer sees it (verb,
resource, subresource, namespace, name), and the self-reviews answer from the same rules: SelfSubjectAccessReview
and SelfSubjectRulesReview (`kubectl auth can-i`), SelfSubjectReview (`kubectl auth whoami`).

The lab's kubeconfig holds kind's administrator, bound to cluster-admin: every request is allowed. Another user
named through impersonation (`kubectl auth can-i … --as=NAME`, by the administrator only) has only what every
authenticated user has (the `system:basic-user` and `system:discovery` roles), since the lab creates no RBAC
bindings. A server may also know users of its own with a token each and a `Policy` (a graded cluster's student):
their every request, whatever client made it, is checked against that policy and refused with the API server's
403 when it does not allow it.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from labsupport.errors import BadRequest, Forbidden, NotFound
from labsupport.model.kinds import KindInfo
from labsupport.apiserver.routes import parse_route

ADMIN = "kubernetes-admin"
ADMIN_GROUPS = ("kubeadm:cluster-admins", "system:authenticated")
#: What every authenticated user may do (system:basic-user, system:discovery, system:public-info-viewer).
BASIC_RULES = (
    {"verbs": ["create"], "apiGroups": ["authorization.k8s.io"],
     "resources": ["selfsubjectaccessreviews", "selfsubjectrulesreviews"]},
    {"verbs": ["create"], "apiGroups": ["authentication.k8s.io"], "resources": ["selfsubjectreviews"]},
)
BASIC_NON_RESOURCE = (
    {"verbs": ["get"], "nonResourceURLs": ["/api", "/api/*", "/apis", "/apis/*", "/healthz", "/livez",
                                           "/openapi", "/openapi/*", "/readyz", "/version", "/version/"]},
)
ADMIN_RULES = ({"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]},)
ADMIN_NON_RESOURCE = ({"verbs": ["*"], "nonResourceURLs": ["*"]},)
PATHS = {"/apis/authorization.k8s.io/v1/selfsubjectaccessreviews": "SelfSubjectAccessReview",
         "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews": "SelfSubjectRulesReview",
         "/apis/authentication.k8s.io/v1/selfsubjectreviews": "SelfSubjectReview"}


#: The reviews as discovery lists them: cluster-scoped, create only.
REVIEW_KINDS = (
    KindInfo("SelfSubjectReview", "authentication.k8s.io", "v1", "selfsubjectreviews", namespaced=False,
             verbs=("create",)),
    KindInfo("SelfSubjectAccessReview", "authorization.k8s.io", "v1", "selfsubjectaccessreviews",
             namespaced=False, verbs=("create",)),
    KindInfo("SelfSubjectRulesReview", "authorization.k8s.io", "v1", "selfsubjectrulesreviews", namespaced=False,
             verbs=("create",)),
)


def handles(path: str) -> bool:
    """Whether a request path is one of the self-review endpoints."""
    return path in PATHS


@dataclass(frozen=True)
class Attributes:
    """What one request asks to do, as upstream's authorizer sees it: a verb on a resource (with its subresource,
    namespace and name), or a verb on a non-resource path."""

    verb: str
    resource: str = ""
    group: str = ""
    subresource: str = ""
    namespace: str | None = None
    name: str = ""
    path: str = ""

    @property
    def is_resource(self) -> bool:
        """Whether the request names a resource (rather than a path such as /version)."""
        return bool(self.resource)


class Policy(Protocol):
    """What a user of the server's own may do."""

    def refusal(self, attrs: Attributes) -> str | None:
        """None when the request is allowed; otherwise why not ("" when there is nothing more to say)."""


@dataclass(frozen=True)
class Identity:
    """Who a bearer token stands for, and the policy that limits them (None: cluster-admin)."""

    name: str
    groups: tuple[str, ...]
    policy: Policy | None = None


ADMIN_IDENTITY = Identity(ADMIN, ADMIN_GROUPS)
#: HTTP methods and the verbs they are authorized as (on a named object; see `attributes`).
_OBJECT_VERBS = {"GET": "get", "HEAD": "get", "PUT": "update", "PATCH": "patch", "DELETE": "delete",
                 "POST": "create"}
_COLLECTION_VERBS = {"GET": "list", "HEAD": "list", "POST": "create", "DELETE": "deletecollection",
                     "PUT": "update", "PATCH": "patch"}


def attributes(method: str, path: str, query: dict) -> Attributes:
    """The authorizer's view of one request (upstream's RequestInfo): resource paths by their route, the rest by
    path."""
    path = path.rstrip("/") or "/"
    parts = path.strip("/").split("/")
    resource = (parts[0] == "api" and len(parts) >= 3) or (parts[0] == "apis" and len(parts) >= 4)
    if path in PATHS:
        kind = PATHS[path]
        info = next(k for k in REVIEW_KINDS if k.kind == kind)
        return Attributes("create", info.plural, info.group)
    if not resource:
        return Attributes({"GET": "get", "HEAD": "head", "POST": "post", "PUT": "put", "PATCH": "patch",
                           "DELETE": "delete"}.get(method, method.lower()), path=path)
    if parts[:3] == ["apis", "events.k8s.io", "v1"]:
        rest = parts[3:]
        namespace = rest[1] if rest[:1] == ["namespaces"] and len(rest) >= 3 else None
        name = rest[3] if namespace is not None and len(rest) >= 4 else ""
        verbs = _OBJECT_VERBS if name else _COLLECTION_VERBS
        verb = "watch" if method == "GET" and query.get("watch") in ("true", "1") else verbs.get(method, "")
        return Attributes(verb, "events", "events.k8s.io", namespace=namespace, name=name)
    try:
        route = parse_route(path)
    except NotFound:
        route = None
    if route is None:
        return Attributes(method.lower(), path=path)
    namespace = route.namespace if route.info.namespaced else None
    if route.name is None:
        verb = "watch" if method == "GET" and query.get("watch") in ("true", "1") else _COLLECTION_VERBS.get(method, "")
    else:
        verb = _OBJECT_VERBS.get(method, "")
    if route.sub in ("exec", "attach", "portforward"):
        verb = "create"           # also over a websocket's GET, as upstream authorizes them
    return Attributes(verb, route.info.plural, route.info.group, route.sub or "", namespace, route.name or "")


def forbidden(user: str, attrs: Attributes, why: str = "") -> Forbidden:
    """The API server's 403 for one request, worded as upstream words it."""
    suffix = f": {why}" if why else ""
    if not attrs.is_resource:
        return Forbidden(f'forbidden: User "{user}" cannot {attrs.verb} path "{attrs.path}"{suffix}')
    resource = attrs.resource + (f"/{attrs.subresource}" if attrs.subresource else "")
    subject = f'{attrs.resource}{"." + attrs.group if attrs.group else ""}'
    subject += f' "{attrs.name}"' if attrs.name else ""
    where = f' in the namespace "{attrs.namespace}"' if attrs.namespace else " at the cluster scope"
    return Forbidden(f'{subject} is forbidden: User "{user}" cannot {attrs.verb} resource "{resource}" in API '
                     f'group "{attrs.group}"{where}{suffix}', kind=attrs.resource, name=attrs.name,
                     group=attrs.group)


def authorize(identity: Identity, attrs: Attributes, headers) -> None:
    """Refuse (403) a request its identity may not make; a user with a policy may not impersonate anyone."""
    if identity.policy is None:
        return
    impersonated = headers.get("Impersonate-User") or headers.get("Impersonate-Group") \
        or headers.get("Impersonate-Uid")
    if impersonated:
        raise forbidden(identity.name, Attributes("impersonate", "users", name=headers.get("Impersonate-User") or ""))
    why = identity.policy.refusal(attrs)
    if why is not None:
        raise forbidden(identity.name, attrs, why)


def user_of(headers, identity: Identity = ADMIN_IDENTITY) -> tuple[str, tuple[str, ...]]:
    """The user a request acts as: its identity, or whom the administrator impersonates."""
    name = headers.get("Impersonate-User")
    if not name or identity.policy is not None:
        return identity.name, identity.groups
    groups = tuple(headers.get_all("Impersonate-Group") or ()) if hasattr(headers, "get_all") else ()
    return name, (*groups, "system:authenticated")


def _is_admin(user: str, groups: tuple[str, ...]) -> bool:
    return user == ADMIN or "system:masters" in groups or "kubeadm:cluster-admins" in groups


def _matches(rule: dict, key: str, value: str) -> bool:
    allowed = rule.get(key) or []
    return "*" in allowed or value in allowed


def _allowed(user: str, groups: tuple[str, ...], attrs: dict) -> bool:
    if _is_admin(user, groups):
        return True
    if "nonResourceAttributes" in attrs:
        path = attrs["nonResourceAttributes"].get("path", "")
        verb = attrs["nonResourceAttributes"].get("verb", "")
        return any(verb in r["verbs"] and any(path == u or (u.endswith("*") and path.startswith(u[:-1]))
                                              for u in r["nonResourceURLs"]) for r in BASIC_NON_RESOURCE)
    res = attrs.get("resourceAttributes") or {}
    return any(_matches(r, "verbs", res.get("verb", "")) and _matches(r, "apiGroups", res.get("group", "")) and
               _matches(r, "resources", res.get("resource", "")) for r in BASIC_RULES)


def review(path: str, body: dict, headers, identity: Identity = ADMIN_IDENTITY) -> dict:
    """The answer to one self-review (a create): the request echoed back with its status filled in."""
    kind = PATHS.get(path)
    if kind is None:
        raise NotFound("the server could not find the requested resource")
    group = path.split("/")[2]
    if body.get("kind") not in (None, kind):
        raise BadRequest(f"the kind in the data ({body.get('kind')}) does not match the expected kind ({kind})")
    user, groups = user_of(headers, identity)
    out = {"kind": kind, "apiVersion": f"{group}/v1", "metadata": {"creationTimestamp": None},
           "spec": body.get("spec") or {}}
    if kind == "SelfSubjectReview":
        out.pop("spec")
        out["status"] = {"userInfo": {"username": user, "groups": list(groups)}}
        return out
    spec = out["spec"]
    if kind == "SelfSubjectAccessReview":
        if not spec.get("resourceAttributes") and not spec.get("nonResourceAttributes"):
            raise BadRequest(f'{kind}.authorization.k8s.io "" is invalid: spec.resourceAttributes: Invalid value: '
                             f'"null": exactly one of nonResourceAttributes or resourceAttributes must be specified')
        allowed = _allowed(user, groups, spec) if identity.policy is None else \
            identity.policy.refusal(_review_attributes(spec)) is None
        status: dict = {"allowed": allowed}
        if allowed and identity.policy is None and _is_admin(user, groups):
            status["reason"] = 'RBAC: allowed by ClusterRoleBinding "kubeadm:cluster-admins" of ClusterRole ' \
                               '"cluster-admin" to Group "kubeadm:cluster-admins"'
        out["status"] = status
        return out
    admin = identity.policy is None and _is_admin(user, groups)
    out["status"] = {"resourceRules": [dict(r) for r in (ADMIN_RULES if admin else ()) + BASIC_RULES],
                     "nonResourceRules": [dict(r) for r in (ADMIN_NON_RESOURCE if admin else ()) +
                                          BASIC_NON_RESOURCE],
                     "incomplete": False}
    return out


def _review_attributes(spec: dict) -> Attributes:
    """A SelfSubjectAccessReview's question as request attributes."""
    if spec.get("nonResourceAttributes"):
        attrs = spec["nonResourceAttributes"]
        return Attributes(attrs.get("verb", ""), path=attrs.get("path", ""))
    attrs = spec.get("resourceAttributes") or {}
    return Attributes(attrs.get("verb", ""), attrs.get("resource", ""), attrs.get("group", ""),
                      attrs.get("subresource", ""), attrs.get("namespace") or None, attrs.get("name", ""))
