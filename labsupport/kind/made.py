"""What a lab made on a real cluster, remembered so that closing the lab removes it (as a `sim` lab leaves nothing).

A lab on `kind` or `kube` works in a namespace that outlives it (a student's own, on a shared cluster), so the next
lesson would meet this one's objects: a Deployment of the same name with other pods, a `dnsutils` pod that already
exists. `MadeObjects` remembers every object the lab applied or created (its verbs, and what `lab.kubectl` says it
created), forgets what the lab deleted, and `remove()` deletes the rest: workloads and Services first, then their
pods and the lab's own pods at once (grace period 0), so a lesson run right after starts clean.

>>> made_by_kubectl('pod/dnsutils created\\nservice/web-np2 exposed\\ndeployment.apps/web configured\\n')
[('pod', 'dnsutils'), ('service', 'web-np2'), ('deployment.apps', 'web')]
>>> deleted_by_kubectl('pod "dnsutils" deleted from lab-ann namespace\\n')
[('pod', 'dnsutils')]
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable

#: What kubectl prints for an object it made or changed (`pod/dnsutils created`, `deployment.apps/web configured`).
_MADE = re.compile(r"^(\S+?)/(\S+) (created|configured|serverside-applied|exposed)\b", re.M)
#: What kubectl prints for an object it deleted (`pod "web-0" deleted`, `… deleted from NS namespace`).
_DELETED = re.compile(r'^(\S+) "(\S+)" deleted\b', re.M)
#: The kinds whose pods the lab's close removes at once with them (their pods would terminate for a grace period).
WORKLOADS = frozenset({"Deployment", "ReplicaSet", "StatefulSet", "DaemonSet", "Job"})


def made_by_kubectl(output: str) -> list[tuple[str, str]]:
    """(resource as kubectl names it, name) of each object kubectl says it made or changed."""
    return [(m.group(1), m.group(2)) for m in _MADE.finditer(output)]


def deleted_by_kubectl(output: str) -> list[tuple[str, str]]:
    """(resource, name) of each object kubectl says it deleted."""
    return [(m.group(1), m.group(2)) for m in _DELETED.finditer(output)]


@dataclass
class Made:
    """One object the lab made: where it lives in the API, and for a workload the label selector of its pods."""

    kind: str
    path: str
    namespace: str | None
    pods: str | None = None


@dataclass
class MadeObjects:
    """The objects a lab made, in the order it made them."""

    objects: dict[str, Made] = field(default_factory=dict)

    def remember(self, obj: dict, path: str) -> None:
        """Note an object the lab applied or created (as the server stored it; `path` is its URL path)."""
        meta = obj.get("metadata") or {}
        selector = ((obj.get("spec") or {}).get("selector") or {}).get("matchLabels") if obj.get("kind") in WORKLOADS \
            else None
        pods = ",".join(f"{k}={v}" for k, v in sorted(selector.items())) if selector else None
        self.objects.pop(path, None)
        self.objects[path] = Made(obj.get("kind", ""), path, meta.get("namespace"), pods)

    def forget(self, path: str) -> None:
        """The lab deleted this object itself."""
        self.objects.pop(path, None)

    def remove(self, call: Callable[..., object]) -> list[str]:
        """Delete everything remembered, newest first, then the pods of its workloads and its own pods without a
        grace period; `call(method, path, body=…, query=…)` is the API. Returns the paths deleted. An object already
        gone or a refusal is passed over; a cluster out of reach (BackendUnavailable) stops it."""
        from labsupport.errors import APIError
        background = {"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Background"}
        now = {**background, "gracePeriodSeconds": 0}
        done = []
        made = list(reversed(self.objects.values()))
        self.objects.clear()
        for item in made:
            try:
                call("DELETE", item.path, body=now if item.kind == "Pod" else background)
                done.append(item.path)
            except APIError:
                continue
        for item in made:
            if item.pods and item.namespace:
                try:
                    call("DELETE", f"/api/v1/namespaces/{item.namespace}/pods", body=now,
                         query=[("labelSelector", item.pods)])
                except APIError:
                    continue
        return done


__all__ = ["made_by_kubectl", "deleted_by_kubectl", "Made", "MadeObjects", "WORKLOADS"]
