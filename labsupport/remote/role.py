"""The student role of a graded cluster: what a namespace-scoped Role in a real class would allow.

A student writes only namespaced objects of the kinds a user owns (Pods, Services, ConfigMaps, workloads), only in
their own namespaces, never status, never Nodes, Namespaces, Events, nor the objects the controllers own
(EndpointSlices, Endpoints); kubectl runs only its reading commands. Refusals are the API server's 403.
"""
from __future__ import annotations

import shlex

from labsupport.errors import APIError
from labsupport.model.kinds import KindInfo, by_kind, resolve

#: The user who grades; the name a refusal shows.
STUDENT = "student"
#: Kinds a student may create, change and delete.
WRITABLE_KINDS = frozenset({"Pod", "Service", "ConfigMap", "Deployment", "ReplicaSet", "StatefulSet", "DaemonSet"})
#: Namespaces that belong to the cluster, not to the student.
SYSTEM_NAMESPACES = frozenset({"kube-system", "kube-public", "kube-node-lease"})
#: kubectl commands that only read.
READING_COMMANDS = frozenset({"get", "describe", "explain", "api-resources", "api-versions", "version", "logs",
                              "cluster-info", "events", "top", "wait", "auth", "options", "help"})


class Forbidden(APIError):
    """The role does not allow the request: `pods "x" is forbidden: User "student" cannot …`."""

    code = 403
    reason = "Forbidden"


def forbidden(verb: str, info: KindInfo, name: str, namespace: str | None, why: str = "") -> Forbidden:
    """The API server's refusal of one request."""
    where = f' in the namespace "{namespace}"' if namespace else " at the cluster scope"
    subject = f'{info.resource} "{name}"' if name else info.resource
    message = (f'{subject} is forbidden: User "{STUDENT}" cannot {verb} resource "{info.plural}" in API group '
               f'"{info.group}"{where}' + (f": {why}" if why else ""))
    return Forbidden(message, kind=info.plural, name=name, group=info.group)


def check_write(verb: str, kind: str, name: str, namespace: str | None, api_version: str | None = None) -> None:
    """Refuse a write the student role does not allow."""
    info = by_kind(kind, api_version) if api_version is not None else resolve(kind)
    ns = (namespace or "default") if info.namespaced else None
    if not info.namespaced:
        raise forbidden(verb, info, name, None, "only objects in the student's namespaces can be written")
    if info.kind not in WRITABLE_KINDS:
        raise forbidden(verb, info, name, ns, f"{info.plural} are written by the cluster's controllers")
    if ns in SYSTEM_NAMESPACES:
        raise forbidden(verb, info, name, ns, f"{ns} belongs to the cluster")


def student_manifest(obj: dict) -> dict:
    """The object a student's write may store: checked against the role, its status dropped (the API server
    ignores status on a write to the main resource; only the status subresource sets it)."""
    if not isinstance(obj, dict):
        raise APIError("an object must be a mapping")
    meta = obj.get("metadata") or {}
    check_write("create", obj.get("kind", ""), meta.get("name", "") or meta.get("generateName", ""),
                meta.get("namespace"), obj.get("apiVersion"))
    return {k: v for k, v in obj.items() if k != "status"}


def check_kubectl(command: str | list[str]) -> list[str]:
    """The kubectl arguments, if the student role may run them; writes go through `lab.apply` and friends."""
    args = shlex.split(command) if isinstance(command, str) else [str(a) for a in command]
    if args and args[0] == "kubectl":
        args = args[1:]
    verb = next((a for a in args if not a.startswith("-")), "")
    if verb not in READING_COMMANDS:
        raise Forbidden(f'User "{STUDENT}" cannot run "kubectl {verb}" on the graded cluster: kubectl may only '
                        f"read here ({', '.join(sorted(READING_COMMANDS))}); change objects with lab.apply, "
                        "lab.delete or lab.scale")
    if any(a.startswith("--kubeconfig") or a.startswith("--server") or a.startswith("--token")
           or a in ("-s",) for a in args):
        raise Forbidden(f'User "{STUDENT}" cannot point kubectl at another server or identity while graded')
    return args


__all__ = ["Forbidden", "STUDENT", "WRITABLE_KINDS", "SYSTEM_NAMESPACES", "READING_COMMANDS", "forbidden",
           "check_write", "student_manifest", "check_kubectl"]
