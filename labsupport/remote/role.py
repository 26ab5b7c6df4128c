"""The student role of a graded cluster and of a shared class cluster, from one table of rules.

`NAMESPACE_RULES` says, as RBAC PolicyRules say it, what a student may do in a namespace of their own: read the
lab's kinds, write the kinds a user owns (Pods, Services, ConfigMaps, workloads, and their scale), and run
something in a pod (exec, attach, port-forward); never status, never Events, nor the objects the controllers own
(EndpointSlices, Endpoints). Both students are made from it:

* on a shared class cluster, `role_rules()` is the `rules` of the Role in each student's namespace
  (`labsupport class cluster`), and the API server's RBAC authorizer enforces it;
* on a graded cluster, `StudentPolicy` matches every request against the same rules. That cluster is the student's
  alone, so every namespace but the system ones is theirs, and they may read all of it (`CLUSTER_READS`, which a
  shared cluster does not grant). The one policy decides both the lab server's own verbs (`lab.apply`,
  `lab.delete`, `lab.scale`) and every request the API server gets with the student's token, whatever client sends
  it (kubectl in the graded kernel): refusals are the API server's 403.

>>> [r["resources"] for r in role_rules() if r["apiGroups"] == ["discovery.k8s.io"]]
[['endpointslices']]
"""
from __future__ import annotations

from dataclasses import dataclass

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
#: Verbs that change objects.
WRITING_VERBS = ("create", "update", "patch", "delete", "deletecollection")
#: Non-resource paths anyone may read (system:discovery, system:public-info-viewer).
PUBLIC_PATHS = ("/api", "/apis", "/openapi", "/version", "/healthz", "/livez", "/readyz")
#: Pod subresources that run something in a pod or reach it (exec, attach, port-forward).
POD_SESSIONS = frozenset({"exec", "attach", "portforward"})
#: Subresources a student may write along with their object.
WRITABLE_SUBRESOURCES = frozenset({"scale"})
#: The self-reviews (`kubectl auth can-i`, `whoami`) every user may create.
REVIEWS = frozenset({"selfsubjectaccessreviews", "selfsubjectrulesreviews", "selfsubjectreviews"})
_READ = tuple(sorted(READING_VERBS))


@dataclass(frozen=True)
class Rule:
    """Verbs on resources of one API group (a resource may name a subresource: `pods/exec`): an RBAC PolicyRule."""

    group: str
    resources: tuple[str, ...]
    verbs: tuple[str, ...]

    def allows(self, attrs: Attributes) -> bool:
        """Whether this rule grants the request, as RBAC's rule matching decides."""
        resource = attrs.resource + (f"/{attrs.subresource}" if attrs.subresource else "")
        return attrs.group == self.group and resource in self.resources and attrs.verb in self.verbs

    def as_policy_rule(self) -> dict:
        """The rule as a Role's `rules` item."""
        return {"apiGroups": [self.group], "resources": list(self.resources), "verbs": list(self.verbs)}


def _readable(kinds) -> tuple[str, ...]:
    """The resources and subresources of these kinds that a student reads (all but the pod sessions)."""
    return tuple(name for k in kinds
                 for name in (k.plural, *(f"{k.plural}/{s}" for s in k.subresources if s not in POD_SESSIONS)))


def _namespace_rules() -> tuple[Rule, ...]:
    rules: list[Rule] = []
    for group in sorted({k.group for k in KINDS if k.namespaced}):
        kinds = [k for k in KINDS if k.namespaced and k.group == group]
        rules.append(Rule(group, _readable(kinds), _READ))
        writable = [name for k in kinds if k.kind in WRITABLE_KINDS
                    for name in (k.plural, *(f"{k.plural}/{s}" for s in k.subresources if s in WRITABLE_SUBRESOURCES))]
        if writable:
            rules.append(Rule(group, tuple(writable), WRITING_VERBS))
    rules.append(Rule("events.k8s.io", ("events",), _READ))
    # upstream authorizes exec over a websocket as `create` (older servers: `get`); both are granted.
    rules.append(Rule("", tuple(f"pods/{s}" for s in sorted(POD_SESSIONS)), ("create", "get")))
    return tuple(rules)


#: What a student may do in a namespace of their own: the Role of a shared cluster, the policy of a graded one.
NAMESPACE_RULES: tuple[Rule, ...] = _namespace_rules()
#: Reading every kind across the whole cluster: granted on a graded cluster (it is the student's alone), not on a
#: shared one, where a student sees their own namespace only.
CLUSTER_READS: tuple[Rule, ...] = tuple(
    Rule(group, _readable([k for k in KINDS if k.group == group]), _READ)
    for group in sorted({k.group for k in KINDS})) + (Rule("events.k8s.io", ("events",), _READ),)
#: The rules of `NAMESPACE_RULES` that only read: on a graded cluster they hold in every namespace.
NAMESPACE_READS: tuple[Rule, ...] = tuple(r for r in NAMESPACE_RULES if set(r.verbs) <= READING_VERBS)


def role_rules() -> list[dict]:
    """The `rules` of the Role a student gets in their namespace on a shared cluster."""
    return [rule.as_policy_rule() for rule in NAMESPACE_RULES]


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
        info = _KINDS_BY_PLURAL.get((attrs.group, attrs.resource))
        # a namespace named for a cluster-scoped resource (`kubectl auth can-i list nodes -n x`) does not apply
        namespace = None if info is not None and not info.namespaced else attrs.namespace
        reading = attrs.verb in READING_VERBS
        if reading and _granted(CLUSTER_READS if namespace is None else NAMESPACE_READS, attrs):
            return None
        if namespace in SYSTEM_NAMESPACES:
            return f"{namespace} belongs to the cluster"
        if namespace is not None and _granted(NAMESPACE_RULES, attrs):
            return None
        if reading:
            return ""
        if info is None or not info.namespaced or namespace is None:
            return "only objects in the student's namespaces can be written"
        if info.kind not in WRITABLE_KINDS:
            return f"{info.plural} are written by the cluster's controllers"
        if attrs.subresource:
            return f"{attrs.subresource} is written by the cluster"
        return ""


def _granted(rules: tuple[Rule, ...], attrs: Attributes) -> bool:
    return any(rule.allows(attrs) for rule in rules)


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


__all__ = ["Forbidden", "STUDENT", "WRITABLE_KINDS", "SYSTEM_NAMESPACES", "READING_VERBS", "WRITING_VERBS", "POLICY",
           "Rule", "NAMESPACE_RULES", "NAMESPACE_READS", "CLUSTER_READS", "role_rules", "StudentPolicy", "check_write",
           "student_manifest"]
