"""The embedded cluster's node names in a kind cluster: `lab-worker` there is `<cluster>-worker` here.

The lessons name nodes as the embedded cluster does (`lab-control-plane`, `lab-worker`, `lab-worker2` …); kind
names the same nodes after the cluster. `node_alias` maps one name, and `rename_nodes` maps every place a manifest
names a node — a pod's `spec.nodeName`, a `kubernetes.io/hostname` node selector or node-affinity term — in Pods
and in the pod templates of workloads, so a manifest written for the embedded cluster lands on the same node here.

>>> node_alias("lab-worker", "labsupport-test", ["labsupport-test-control-plane", "labsupport-test-worker"])
'labsupport-test-worker'
>>> pod = {"kind": "Pod", "spec": {"nodeName": "lab-worker2", "containers": []}}
>>> rename_nodes(pod, lambda n: n.replace("lab-", "kind-", 1))["spec"]["nodeName"]
'kind-worker2'
"""
from __future__ import annotations

from typing import Callable, Iterable

EMBEDDED_NODE_PREFIX = "lab-"
HOSTNAME_LABEL = "kubernetes.io/hostname"


def node_alias(node: str, cluster: str, names: Iterable[str]) -> str | None:
    """The node of kind cluster `cluster` that the embedded cluster calls `node`, when `node` is such a name and
    that node exists (else None: the name is left to mean itself)."""
    names = list(names)
    if node in names or not node.startswith(EMBEDDED_NODE_PREFIX):
        return None
    alias = f"{cluster}-{node[len(EMBEDDED_NODE_PREFIX):]}"
    return alias if alias in names else None


def pod_specs(obj: dict) -> list[dict]:
    """The pod specs inside an object: a Pod's own, a workload's template, a CronJob's job template."""
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return []
    kind = obj.get("kind")
    if kind == "Pod":
        return [spec]
    if kind == "CronJob":
        spec = ((spec.get("jobTemplate") or {}).get("spec")) or {}
    template = spec.get("template")
    inner = template.get("spec") if isinstance(template, dict) else None
    return [inner] if isinstance(inner, dict) else []


def _hostname_terms(spec: dict) -> list[dict]:
    """Every node-selector requirement of a pod spec's node affinity (required and preferred)."""
    affinity = ((spec.get("affinity") or {}).get("nodeAffinity")) or {}
    terms = list(((affinity.get("requiredDuringSchedulingIgnoredDuringExecution") or {}).get("nodeSelectorTerms"))
                 or [])
    terms += [p.get("preference") or {} for p in affinity.get("preferredDuringSchedulingIgnoredDuringExecution")
              or []]
    return [req for term in terms if isinstance(term, dict)
            for req in (term.get("matchExpressions") or []) + (term.get("matchFields") or [])
            if isinstance(req, dict)]


def mentioned_nodes(obj: dict) -> set[str]:
    """The node names an object's pod specs name (nodeName, hostname selector, hostname or name affinity)."""
    found: set[str] = set()
    for spec in pod_specs(obj):
        if isinstance(spec.get("nodeName"), str):
            found.add(spec["nodeName"])
        selector = spec.get("nodeSelector") or {}
        if isinstance(selector.get(HOSTNAME_LABEL), str):
            found.add(selector[HOSTNAME_LABEL])
        for req in _hostname_terms(spec):
            if req.get("key") in (HOSTNAME_LABEL, "metadata.name"):
                found.update(v for v in req.get("values") or [] if isinstance(v, str))
    return found


def rename_nodes(obj: dict, rename: Callable[[str], str]) -> dict:
    """Rewrite, in place, every node name the object's pod specs give (see `mentioned_nodes`) with `rename`."""
    for spec in pod_specs(obj):
        if isinstance(spec.get("nodeName"), str):
            spec["nodeName"] = rename(spec["nodeName"])
        selector = spec.get("nodeSelector") or {}
        if isinstance(selector.get(HOSTNAME_LABEL), str):
            selector[HOSTNAME_LABEL] = rename(selector[HOSTNAME_LABEL])
        for req in _hostname_terms(spec):
            if req.get("key") in (HOSTNAME_LABEL, "metadata.name") and isinstance(req.get("values"), list):
                req["values"] = [rename(v) if isinstance(v, str) else v for v in req["values"]]
    return obj
