"""JSON-shaped Kubernetes objects: a fast deep copy, and what `kubectl apply` writes over a stored object."""
from __future__ import annotations

import json
from typing import Any


def clone(obj: Any) -> Any:
    """A deep copy of a JSON-shaped value (several times faster than copy.deepcopy)."""
    if isinstance(obj, dict):
        return {k: clone(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [clone(v) for v in obj]
    return obj


LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


def merge_for_apply(current: dict, manifest: dict) -> dict:
    """What `kubectl apply` of a whole manifest writes over an existing object: the manifest's fields, plus what
    the server set and the manifest leaves out (clusterIP, allocated nodePorts, replicas set by `scale`)."""
    new = clone(manifest)
    meta = new.setdefault("metadata", {})
    meta["resourceVersion"] = current["metadata"]["resourceVersion"]
    kind = current["kind"]
    spec, old_spec = new.setdefault("spec", {}), current.get("spec", {})
    if kind == "Service":
        for key in ("clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy", "healthCheckNodePort"):
            if key not in spec and key in old_spec:
                if key == "healthCheckNodePort" and not (spec.get("type") == "LoadBalancer" and
                                                         spec.get("externalTrafficPolicy") == "Local"):
                    continue
                spec[key] = old_spec[key]
        if spec.get("type") in ("NodePort", "LoadBalancer"):
            old_ports = old_spec.get("ports") or []
            for port in spec.get("ports") or []:
                if "nodePort" in port:
                    continue
                match = next((p for p in old_ports if p.get("nodePort") and (
                    (port.get("name") and p.get("name") == port.get("name")) or
                    (p.get("port") == port.get("port") and p.get("protocol", "TCP") == port.get("protocol", "TCP")))),
                    None)
                if match:
                    port["nodePort"] = match["nodePort"]
    if kind in ("Deployment", "StatefulSet", "ReplicaSet") and "replicas" not in spec and "replicas" in old_spec:
        last = json.loads(current["metadata"].get("annotations", {}).get(LAST_APPLIED, "{}") or "{}")
        if "replicas" not in last.get("spec", {}):
            spec["replicas"] = old_spec["replicas"]
    return new


__all__ = ["clone", "merge_for_apply", "LAST_APPLIED"]
