"""Who the caller is and what it may do: SelfSubjectAccessReview and SelfSubjectRulesReview
(`kubectl auth can-i`), SelfSubjectReview (`kubectl auth whoami`).

The lab's kubeconfig holds kind's administrator, bound to cluster-admin: every request is allowed. Another user
named through impersonation (`kubectl auth can-i … --as=NAME`) has only what every authenticated user has (the
`system:basic-user` and `system:discovery` roles), since the lab creates no RBAC bindings.
"""
from __future__ import annotations

from labsupport.errors import BadRequest, NotFound
from labsupport.model.kinds import KindInfo

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


def user_of(headers) -> tuple[str, tuple[str, ...]]:
    """The user a request acts as: the administrator, or whom it impersonates."""
    name = headers.get("Impersonate-User")
    if not name:
        return ADMIN, ADMIN_GROUPS
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


def review(path: str, body: dict, headers) -> dict:
    """The answer to one self-review (a create): the request echoed back with its status filled in."""
    kind = PATHS.get(path)
    if kind is None:
        raise NotFound("the server could not find the requested resource")
    group = path.split("/")[2]
    if body.get("kind") not in (None, kind):
        raise BadRequest(f"the kind in the data ({body.get('kind')}) does not match the expected kind ({kind})")
    user, groups = user_of(headers)
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
        allowed = _allowed(user, groups, spec)
        status: dict = {"allowed": allowed}
        if allowed and _is_admin(user, groups):
            status["reason"] = 'RBAC: allowed by ClusterRoleBinding "kubeadm:cluster-admins" of ClusterRole ' \
                               '"cluster-admin" to Group "kubeadm:cluster-admins"'
        out["status"] = status
        return out
    admin = _is_admin(user, groups)
    out["status"] = {"resourceRules": [dict(r) for r in (ADMIN_RULES if admin else ()) + BASIC_RULES],
                     "nonResourceRules": [dict(r) for r in (ADMIN_NON_RESOURCE if admin else ()) +
                                          BASIC_NON_RESOURCE],
                     "incomplete": False}
    return out
