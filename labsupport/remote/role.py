"""The student role of a graded cluster: what a namespace-scoped Role in a real class would allow.

A student reads everything, and writes only namespaced objects of the kinds a user owns (Pods, Services,
ConfigMaps, workloads, and their scale), only in their own namespaces: never status, never Nodes, Namespaces,
Events, nor the objects the controllers own (EndpointSlices, Endpoints), never another identity. The one policy
decides both the lab server's own verbs (`lab.apply`, `lab.delete`, `lab.scale`) and every request the API server
gets with the student's token, whatever client sends it (kubectl in the graded kernel): refusals are the API
server's 403.
"""
from __future__ import annotations

from labsupport.apiserver.authz import Attributes, forbidden
from labsupport.errors import APIError, Forbidden
from labsupport.model.kinds import KINDS, by_kind, resolve

#: The user who is graded; the name a refusal shows.
STUDENT = "student"
#: Kinds a student may create, change and delete.
WRITABLE_KINDS = frozenset({"Pod", "Service", "ConfigMap", "Deployment", "ReplicaSet", "StatefulSet", "DaemonSet"})
#: Namespaces that belong to the cluster, not to the student.
SYSTEM_NAMESPACES = frozenset({"kube-system", "kube-public", "kube-node-lease"})
#: Verbs that only read.
READING_VERBS = frozenset({"get", "list", "watch"})
#: Non-resource paths anyone may read (system:discovery, system:public-info-viewer).
PUBLIC_PATHS = ("/api", "/apis", "/openapi", "/version", "/healthz", "/livez", "/readyz")
#: Pod subresources that run something in a pod or reach it (exec, attach, port-forward).
POD_SESSIONS = frozenset({"exec", "attach", "portforward"})
#: The self-reviews (`kubectl auth can-i`, `whoami`) every user may create.
REVIEWS = frozenset({"selfsubjectaccessreviews", "selfsubjectrulesreviews", "selfsubjectreviews"})
_KINDS_BY_PLURAL = {(info.group, info.plural): info for info in KINDS}


class StudentPolicy:
    """The student role as an authorization policy (`labsupport.apiserver.authz.Policy`)."""

    def refusal(self, attrs: Attributes) -> str | None:
        """None when the student may make this request; otherwise why not."""
        if not attrs.is_resource:
            public = attrs.path in PUBLIC_PATHS or any(attrs.path.startswith(p + "/") for p in PUBLIC_PATHS)
            return None if attrs.verb in ("get", "head") and public else ""
        if attrs.resource in REVIEWS:
            return None if attrs.verb == "create" else ""
        if attrs.verb == "impersonate":
            return ""
        if attrs.verb in READING_VERBS and attrs.subresource not in POD_SESSIONS:
            return None
        if attrs.namespace in SYSTEM_NAMESPACES:
            return f"{attrs.namespace} belongs to the cluster"
        if attrs.resource == "pods" and attrs.subresource in POD_SESSIONS:
            return None
        info = _KINDS_BY_PLURAL.get((attrs.group, attrs.resource))
        if info is None or not info.namespaced:
            return "only objects in the student's namespaces can be written"
        if info.kind not in WRITABLE_KINDS:
            return f"{info.plural} are written by the cluster's controllers"
        if attrs.subresource not in ("", "scale"):
            return f"{attrs.subresource} is written by the cluster"
        return None


POLICY = StudentPolicy()


def check_write(verb: str, kind: str, name: str, namespace: str | None, api_version: str | None = None) -> None:
    """Refuse a write the student role does not allow, with the API server's 403."""
    info = by_kind(kind, api_version) if api_version is not None else resolve(kind)
    attrs = Attributes(verb, info.plural, info.group, namespace=(namespace or "default") if info.namespaced else None,
                       name=name)
    why = POLICY.refusal(attrs)
    if why is not None:
        raise forbidden(STUDENT, attrs, why)


def student_manifest(obj: dict) -> dict:
    """The object a student's write may store: checked against the role, its status dropped (the API server
    ignores status on a write to the main resource; only the status subresource sets it)."""
    if not isinstance(obj, dict):
        raise APIError("an object must be a mapping")
    meta = obj.get("metadata") or {}
    check_write("create", obj.get("kind", ""), meta.get("name", "") or meta.get("generateName", ""),
                meta.get("namespace"), obj.get("apiVersion"))
    return {k: v for k, v in obj.items() if k != "status"}


__all__ = ["Forbidden", "STUDENT", "WRITABLE_KINDS", "SYSTEM_NAMESPACES", "READING_VERBS", "POLICY",
           "StudentPolicy", "check_write", "student_manifest"]
