"""The scheduler: binds each pending pod to a node, or leaves it Pending with the scheduler's reason."""
from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

from labsupport.model.objects import clone

if TYPE_CHECKING:
    from labsupport.control.context import ControllerContext

ZONE_LABEL = "topology.kubernetes.io/zone"


def tolerates(pod: dict, taint: dict) -> bool:
    """Whether one of the pod's tolerations matches a taint (key, operator Equal/Exists, value, effect)."""
    for tol in pod.get("spec", {}).get("tolerations") or []:
        op = tol.get("operator", "Equal")
        if tol.get("effect") and tol["effect"] != taint.get("effect"):
            continue
        if op == "Exists" and (not tol.get("key") or tol.get("key") == taint.get("key")):
            return True
        if op == "Equal" and tol.get("key") == taint.get("key") and tol.get("value", "") == taint.get("value", ""):
            return True
    return False


def _taint_text(taint: dict) -> str:
    return f"{{{taint.get('key')}: {taint.get('value', '')}}}"


class Scheduler:
    """Filters nodes (readiness, taints, nodeSelector, pod capacity) and scores them to spread replicas
    over nodes and zones, as the default scheduler's PodTopologySpread and balanced-allocation plugins do."""

    def __init__(self, cluster: "ControllerContext"):
        self.cluster = cluster
        self.pending: set[tuple[str, str]] = set()
        self.unschedulable: set[tuple[str, str]] = set()
        self._pods_on: Counter = Counter()
        self._owner_on: Counter = Counter()
        cluster.store.subscribe(self._on_event)

    def _owner(self, pod: dict) -> str:
        refs = pod["metadata"].get("ownerReferences") or []
        return refs[0]["uid"] if refs else ""

    def _on_event(self, event) -> None:
        if event.kind == "Node" or (event.kind == "Pod" and event.type == "DELETED"):
            self.pending |= self.unschedulable
            self.unschedulable.clear()
        if event.kind != "Pod":
            return
        pod, old = event.object, event.old
        key = (pod["metadata"]["namespace"], pod["metadata"]["name"])
        for o, sign in ((old, -1), (pod if event.type != "DELETED" else None, 1)):
            node = (o or {}).get("spec", {}).get("nodeName")
            if node:
                self._pods_on[node] += sign
                self._owner_on[(node, self._owner(o))] += sign
        if event.type != "DELETED" and not pod["spec"].get("nodeName") and not pod["metadata"].get("deletionTimestamp"):
            if key not in self.unschedulable:
                self.pending.add(key)
        else:
            self.pending.discard(key)

    def sync(self) -> bool:
        """Try to bind every pending pod; returns whether anything changed."""
        if not self.pending:
            return False
        changed = False
        nodes = self.cluster.store.list("Node")
        for key in sorted(self.pending):
            pod = self.cluster.store.find("Pod", *key)
            self.pending.discard(key)
            self.unschedulable.discard(key)
            if pod is None or pod["spec"].get("nodeName"):
                continue
            changed |= self.schedule(pod, nodes)
        return changed

    def schedule(self, pod: dict, nodes: list[dict]) -> bool:
        """Bind one pod to the best node, or record why it cannot be scheduled."""
        reasons: Counter = Counter()
        feasible = []
        selector = pod["spec"].get("nodeSelector") or {}
        for node in nodes:
            name = node["metadata"]["name"]
            labels = node["metadata"].get("labels", {})
            if node.get("spec", {}).get("unschedulable"):
                reasons["node(s) were unschedulable"] += 1
                continue
            bad = [t for t in node.get("spec", {}).get("taints") or []
                   if t.get("effect") in ("NoSchedule", "NoExecute") and not tolerates(pod, t)]
            if bad:
                reasons[f"node(s) had untolerated taint {_taint_text(bad[0])}"] += 1
                continue
            if any(labels.get(k) != v for k, v in selector.items()):
                reasons["node(s) didn't match Pod's node affinity/selector"] += 1
                continue
            capacity = int(node.get("status", {}).get("allocatable", {}).get("pods", "110"))
            if self._pods_on[name] >= capacity:
                reasons["Too many pods"] += 1
                continue
            feasible.append(node)
        if not feasible:
            self.unschedulable.add((pod["metadata"]["namespace"], pod["metadata"]["name"]))
            return self._unschedulable(pod, len(nodes), reasons)
        owner = self._owner(pod)
        zone_load: Counter = Counter()
        if owner:
            for node in nodes:
                zone_load[node["metadata"].get("labels", {}).get(ZONE_LABEL, "")] += \
                    self._owner_on[(node["metadata"]["name"], owner)]

        def score(node: dict):
            name = node["metadata"]["name"]
            zone = node["metadata"].get("labels", {}).get(ZONE_LABEL, "")
            return (self._owner_on[(name, owner)] if owner else 0, zone_load[zone], self._pods_on[name], name)

        best = min(feasible, key=score)
        self.cluster.bind(pod, best["metadata"]["name"])
        return True

    def _unschedulable(self, pod: dict, total: int, reasons: Counter) -> bool:
        parts = ", ".join(sorted(f"{n} {r}" for r, n in reasons.items()))
        message = (f"0/{total} nodes are available: {parts}. preemption: 0/{total} nodes are available: "
                   f"{total} Preemption is not helpful for scheduling.")
        conds = [c for c in pod.get("status", {}).get("conditions", []) if c.get("type") != "PodScheduled"]
        cond = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": message,
                "lastProbeTime": None, "lastTransitionTime": self.cluster.timestamp()}
        current = next((c for c in pod.get("status", {}).get("conditions", []) if c.get("type") == "PodScheduled"), None)
        if current and current.get("message") == message:
            return False
        new = clone(pod)
        new.setdefault("status", {})["phase"] = "Pending"
        new["status"]["conditions"] = [cond] + conds
        new["status"].setdefault("qosClass", "BestEffort")
        self.cluster.store.update(new, check_version=False)
        self.cluster.record_event(pod, "Warning", "FailedScheduling", message, source="default-scheduler")
        return True
