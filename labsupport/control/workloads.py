"""Workload controllers: ReplicaSet, Deployment (rolling updates), StatefulSet, DaemonSet, and the garbage collector."""
from __future__ import annotations

import json
import math
from collections import defaultdict
from typing import TYPE_CHECKING

from labsupport.control.scheduler import tolerates
from labsupport.model.meta import GENERATE_NAME_ALPHABET
from labsupport.model.objects import clone

if TYPE_CHECKING:
    from labsupport.control.context import ControllerContext

HASH_LABEL = "pod-template-hash"
REVISION_ANNOTATION = "deployment.kubernetes.io/revision"


def fnv32a(data: bytes) -> int:
    """The 32-bit FNV-1a hash."""
    h = 0x811C9DC5
    for b in data:
        h = ((h ^ b) * 0x01000193) & 0xFFFFFFFF
    return h


def safe_encode(text: str) -> str:
    """Kubernetes' SafeEncodeString: map each byte onto the consonant-and-digit name alphabet."""
    return "".join(GENERATE_NAME_ALPHABET[b % len(GENERATE_NAME_ALPHABET)] for b in text.encode())


def template_hash(template: dict, collision_count: int = 0) -> str:
    """The pod-template-hash of a pod template, shaped like upstream's (`5d9c7b8f6d`)."""
    data = json.dumps(template, sort_keys=True, separators=(",", ":")).encode()
    if collision_count:
        data += str(collision_count).encode()
    return safe_encode(str(fnv32a(data)))


def owner_ref(owner: dict) -> dict:
    """A controller ownerReference pointing at `owner`."""
    return {"apiVersion": owner["apiVersion"], "kind": owner["kind"], "name": owner["metadata"]["name"],
            "uid": owner["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}


def controller_uid(obj: dict) -> str | None:
    """The uid of the object's controlling owner, if any."""
    for ref in obj["metadata"].get("ownerReferences") or []:
        if ref.get("controller"):
            return ref["uid"]
    return None


def pod_ready(pod: dict) -> bool:
    """Whether the pod's Ready condition is True."""
    return any(c.get("type") == "Ready" and c.get("status") == "True"
               for c in pod.get("status", {}).get("conditions") or [])


def pod_active(pod: dict) -> bool:
    """Counted by controllers: not being deleted and not finished."""
    return not pod["metadata"].get("deletionTimestamp") and \
        pod.get("status", {}).get("phase") not in ("Succeeded", "Failed")


def scaled_value(value, total: int, round_up: bool) -> int:
    """An int-or-percent field (`25%`) resolved against `total`."""
    if isinstance(value, str) and value.endswith("%"):
        frac = int(value[:-1]) * total / 100
        return math.ceil(frac) if round_up else math.floor(frac)
    return int(value)


class Controller:
    """A level-triggered controller: watch events mark keys dirty, `sync` reconciles each dirty key once.

    Events of `kinds` mark that object dirty; events of `owned` kinds mark their owner of `kinds[0]` dirty."""

    kinds: tuple[str, ...] = ()
    owned: tuple[str, ...] = ()

    def __init__(self, cluster: "ControllerContext"):
        self.cluster = cluster
        self.store = cluster.store
        self.dirty: set[tuple[str, str]] = set()
        self.store.subscribe(self._on_event)

    def _on_event(self, event) -> None:
        if event.kind in self.kinds:
            self.dirty.add((event.object["metadata"].get("namespace", ""), event.object["metadata"]["name"]))
        elif event.kind in self.owned:
            for obj in (event.object, event.old):
                for ref in (obj or {}).get("metadata", {}).get("ownerReferences") or []:
                    if ref.get("kind") == self.kinds[0]:
                        self.dirty.add((obj["metadata"]["namespace"], ref["name"]))

    def sync(self) -> bool:
        """Reconcile every dirty key; returns whether there was work."""
        if not self.dirty:
            return False
        keys, self.dirty = sorted(self.dirty), set()
        for key in keys:
            self.reconcile(*key)
        return True

    def reconcile(self, namespace: str, name: str) -> None:
        """Bring one object's world in line with its spec."""
        raise NotImplementedError


class OwnedPods:
    """An index of pods by controlling owner uid."""

    def __init__(self, cluster: "ControllerContext"):
        self.by_owner: dict[str, set[tuple[str, str]]] = defaultdict(set)
        cluster.store.subscribe(self._on_event)
        self.store = cluster.store

    def _on_event(self, event) -> None:
        if event.kind != "Pod":
            return
        key = (event.object["metadata"]["namespace"], event.object["metadata"]["name"])
        if event.old is not None:
            old_owner = controller_uid(event.old)
            if old_owner:
                self.by_owner[old_owner].discard(key)
        owner = controller_uid(event.object)
        if owner and event.type != "DELETED":
            self.by_owner[owner].add(key)

    def pods(self, owner_uid: str) -> list[dict]:
        """The pods this owner controls, sorted by name."""
        out = []
        for key in sorted(self.by_owner.get(owner_uid, ())):
            pod = self.store.find("Pod", *key)
            if pod is not None and controller_uid(pod) == owner_uid:
                out.append(pod)
        return out


class ReplicaSetController(Controller):
    """Keeps `replicas` pods of a ReplicaSet alive and reports their readiness."""

    kinds = ("ReplicaSet",)
    owned = ("Pod",)

    def __init__(self, cluster: "ControllerContext", pods: OwnedPods):
        super().__init__(cluster)
        self.pods = pods

    def reconcile(self, namespace: str, name: str) -> None:
        rs = self.store.find("ReplicaSet", namespace, name)
        if rs is None or rs["metadata"].get("deletionTimestamp"):
            return
        active = [p for p in self.pods.pods(rs["metadata"]["uid"]) if pod_active(p)]
        want = rs["spec"].get("replicas", 1)
        ready = sum(1 for p in active if pod_ready(p))
        count = len(active)
        if count < want:
            for _ in range(want - count):
                self.cluster.create_pod_from_template(rs, rs["spec"]["template"], f"{name}-")
            count = want
        elif count > want:
            doomed = sorted(active, key=_deletion_rank)[: count - want]
            for pod in doomed:
                # an earlier delete settles the cluster, and a nested sync may already have removed this pod
                if self.store.find("Pod", namespace, pod["metadata"]["name"]) is not None:
                    self.cluster.delete("Pod", namespace, pod["metadata"]["name"])
            ready -= sum(1 for p in doomed if pod_ready(p))
            count = want
        status = {"replicas": count, "fullyLabeledReplicas": count, "readyReplicas": ready,
                  "availableReplicas": ready, "observedGeneration": rs["metadata"].get("generation", 1)}
        status = {k: v for k, v in status.items() if v or k in ("replicas", "observedGeneration")}
        if rs.get("status") != status:
            new = dict(rs)
            new["status"] = status
            self.store.update(new, check_version=False)


def _deletion_rank(pod: dict):
    phase_rank = {"Pending": 0, "Unknown": 1, "Running": 2}
    return (1 if pod["spec"].get("nodeName") else 0, phase_rank.get(pod.get("status", {}).get("phase"), 0),
            1 if pod_ready(pod) else 0, _neg_time(pod["metadata"]["creationTimestamp"]), pod["metadata"]["name"])


def _neg_time(stamp: str) -> str:
    return "".join(chr(255 - ord(ch)) for ch in stamp)


class DeploymentController(Controller):
    """Deployment → ReplicaSets named by pod-template-hash, with RollingUpdate (maxSurge / maxUnavailable) and
    Recreate strategies."""

    kinds = ("Deployment",)
    owned = ("ReplicaSet",)

    def __init__(self, cluster: "ControllerContext", pods: OwnedPods):
        super().__init__(cluster)
        self.pods = pods

    def owned_sets(self, dep: dict) -> list[dict]:
        """The ReplicaSets this Deployment controls, oldest first."""
        uid = dep["metadata"]["uid"]
        sets = [rs for rs in self.store.list("ReplicaSet", dep["metadata"]["namespace"]) if controller_uid(rs) == uid]
        return sorted(sets, key=lambda rs: (rs["metadata"]["creationTimestamp"], rs["metadata"]["name"]))

    def reconcile(self, namespace: str, name: str) -> None:
        dep = self.store.find("Deployment", namespace, name)
        if dep is None or dep["metadata"].get("deletionTimestamp"):
            return
        spec = dep["spec"]
        want = spec.get("replicas", 1)
        template = spec["template"]
        h = template_hash(template, dep.get("status", {}).get("collisionCount", 0))
        sets = self.owned_sets(dep)
        new_rs = next((rs for rs in sets if rs["metadata"].get("labels", {}).get(HASH_LABEL) == h), None)
        old_sets = [rs for rs in sets if rs is not new_rs]
        if spec.get("paused"):
            self._status(dep, new_rs, old_sets)
            return
        revision = max([int(rs["metadata"].get("annotations", {}).get(REVISION_ANNOTATION, "0")) for rs in sets] + [0])
        strategy = spec.get("strategy", {}).get("type", "RollingUpdate")
        rolling = spec.get("strategy", {}).get("rollingUpdate", {})
        surge = scaled_value(rolling.get("maxSurge", "25%"), want, True) if strategy == "RollingUpdate" else 0
        unavailable = scaled_value(rolling.get("maxUnavailable", "25%"), want, False) if strategy == "RollingUpdate" else 0
        if strategy == "RollingUpdate" and surge == 0 and unavailable == 0:
            unavailable = 1
        if new_rs is None:
            old_total = sum(rs["spec"].get("replicas", 0) for rs in old_sets)
            if strategy == "Recreate":
                start = want if old_total == 0 and not self._old_pods_exist(old_sets) else 0
            else:
                start = want if old_total == 0 else max(0, min(want, want + surge - old_total))
            new_rs = self._create_rs(dep, h, start, revision + 1)
        elif new_rs["metadata"].get("annotations", {}).get(REVISION_ANNOTATION) != str(revision) and old_sets and \
                any(rs["spec"].get("replicas", 0) for rs in old_sets):
            new_rs = self._annotate(new_rs, dep, revision + 1)
        if strategy == "Recreate":
            for rs in old_sets:
                self._scale(rs, 0, dep)
            if not self._old_pods_exist(old_sets):
                self._scale(new_rs, want, dep)
        else:
            self._roll(dep, new_rs, old_sets, want, surge, unavailable)
        self._cleanup(dep, old_sets)
        self._status(dep, self.store.find("ReplicaSet", namespace, new_rs["metadata"]["name"]),
                     [self.store.find("ReplicaSet", namespace, rs["metadata"]["name"]) for rs in old_sets])

    def _old_pods_exist(self, old_sets: list[dict]) -> bool:
        return any(self.pods.pods(rs["metadata"]["uid"]) for rs in old_sets)

    def _roll(self, dep, new_rs, old_sets, want, surge, unavailable) -> None:
        active_old = [rs for rs in old_sets if rs["spec"].get("replicas", 0) > 0]
        if not active_old:
            self._scale(new_rs, want, dep)
            return
        total = new_rs["spec"].get("replicas", 0) + sum(rs["spec"].get("replicas", 0) for rs in old_sets)
        if new_rs["spec"].get("replicas", 0) < want and total < want + surge:
            grow = min(want + surge - total, want - new_rs["spec"].get("replicas", 0))
            new_rs = self._scale(new_rs, new_rs["spec"].get("replicas", 0) + grow, dep)
        available = lambda rs: rs.get("status", {}).get("availableReplicas", 0)  # noqa: E731
        min_available = want - unavailable
        new_unavailable = new_rs["spec"].get("replicas", 0) - available(new_rs)
        all_count = new_rs["spec"].get("replicas", 0) + sum(rs["spec"].get("replicas", 0) for rs in old_sets)
        budget = all_count - min_available - new_unavailable
        if budget <= 0:
            return
        for rs in active_old:
            unhealthy = rs["spec"].get("replicas", 0) - available(rs)
            if unhealthy > 0 and budget > 0:
                cut = min(unhealthy, budget)
                budget -= cut
                rs = self._scale(rs, rs["spec"]["replicas"] - cut, dep)
        total_available = available(new_rs) + sum(available(self.store.find("ReplicaSet", rs["metadata"]["namespace"],
                                                                             rs["metadata"]["name"]) or rs)
                                                  for rs in active_old)
        budget = total_available - min_available
        for rs in active_old:
            rs = self.store.find("ReplicaSet", rs["metadata"]["namespace"], rs["metadata"]["name"]) or rs
            if budget <= 0:
                break
            cut = min(rs["spec"].get("replicas", 0), budget)
            if cut > 0:
                budget -= cut
                self._scale(rs, rs["spec"]["replicas"] - cut, dep)

    def _create_rs(self, dep: dict, h: str, replicas: int, revision: int) -> dict:
        template = clone(dep["spec"]["template"])
        template.setdefault("metadata", {}).setdefault("labels", {})[HASH_LABEL] = h
        selector = clone(dep["spec"]["selector"])
        selector.setdefault("matchLabels", {})[HASH_LABEL] = h
        name = f"{dep['metadata']['name']}-{h}"
        rs = {"apiVersion": "apps/v1", "kind": "ReplicaSet",
              "metadata": {"name": name, "namespace": dep["metadata"]["namespace"],
                           "labels": dict(template["metadata"]["labels"]),
                           "annotations": self._annotations(dep, revision),
                           "ownerReferences": [owner_ref(dep)]},
              "spec": {"replicas": replicas, "selector": selector, "template": template,
                       "minReadySeconds": dep["spec"].get("minReadySeconds", 0)},
              "status": {"replicas": 0}}
        if "minReadySeconds" not in dep["spec"]:
            del rs["spec"]["minReadySeconds"]
        created = self.store.create(rs)
        self.cluster.record_event(dep, "Normal", "ScalingReplicaSet",
                                  f"Scaled up replica set {name} from 0 to {replicas}", source="deployment-controller")
        return created

    def _annotations(self, dep: dict, revision: int) -> dict:
        want = dep["spec"].get("replicas", 1)
        surge = scaled_value(dep["spec"].get("strategy", {}).get("rollingUpdate", {}).get("maxSurge", "25%"), want, True)
        return {"deployment.kubernetes.io/desired-replicas": str(want),
                "deployment.kubernetes.io/max-replicas": str(want + surge), REVISION_ANNOTATION: str(revision)}

    def _annotate(self, rs: dict, dep: dict, revision: int) -> dict:
        new = clone(rs)
        new["metadata"].setdefault("annotations", {}).update(self._annotations(dep, revision))
        return self.store.update(new, check_version=False)

    def _scale(self, rs: dict, replicas: int, dep: dict) -> dict:
        current = rs["spec"].get("replicas", 0)
        if current == replicas:
            return rs
        new = clone(rs)
        new["spec"]["replicas"] = replicas
        new["metadata"].setdefault("annotations", {})["deployment.kubernetes.io/desired-replicas"] = \
            str(dep["spec"].get("replicas", 1))
        verb = "up" if replicas > current else "down"
        self.cluster.record_event(dep, "Normal", "ScalingReplicaSet",
                                  f"Scaled {verb} replica set {rs['metadata']['name']} from {current} to {replicas}",
                                  source="deployment-controller")
        return self.store.update(new, check_version=False)

    def _cleanup(self, dep: dict, old_sets: list[dict]) -> None:
        limit = dep["spec"].get("revisionHistoryLimit", 10)
        idle = [rs for rs in old_sets if rs["spec"].get("replicas", 0) == 0 and not rs.get("status", {}).get("replicas")]
        for rs in idle[: max(0, len(idle) - limit)]:
            self.cluster.delete("ReplicaSet", rs["metadata"]["namespace"], rs["metadata"]["name"])

    def _status(self, dep: dict, new_rs: dict | None, old_sets: list[dict]) -> None:
        sets = [rs for rs in [new_rs, *old_sets] if rs is not None]
        st = lambda rs, k: rs.get("status", {}).get(k, 0)  # noqa: E731
        want = dep["spec"].get("replicas", 1)
        replicas = sum(st(rs, "replicas") for rs in sets)
        updated = st(new_rs, "replicas") if new_rs else 0
        ready = sum(st(rs, "readyReplicas") for rs in sets)
        available = sum(st(rs, "availableReplicas") for rs in sets)
        rolling = dep["spec"].get("strategy", {}).get("rollingUpdate", {})
        max_unavailable = scaled_value(rolling.get("maxUnavailable", "25%"), want, False)
        now = self.cluster.timestamp()
        old = {c["type"]: c for c in dep.get("status", {}).get("conditions", [])}

        def cond(kind, status, reason, message):
            prev = old.get(kind)
            same = prev and prev["status"] == status
            return {"type": kind, "status": status, "lastUpdateTime": prev["lastUpdateTime"] if same and
                    prev.get("reason") == reason else now,
                    "lastTransitionTime": prev["lastTransitionTime"] if same else now, "reason": reason,
                    "message": message}

        is_available = available >= want - max_unavailable
        complete = new_rs is not None and updated == want and replicas == want and available == want
        rs_name = new_rs["metadata"]["name"] if new_rs else ""
        conditions = [
            cond("Available", "True" if is_available else "False",
                 "MinimumReplicasAvailable" if is_available else "MinimumReplicasUnavailable",
                 "Deployment has minimum availability." if is_available else
                 "Deployment does not have minimum availability."),
            cond("Progressing", "True", "NewReplicaSetAvailable" if complete else "ReplicaSetUpdated",
                 f'ReplicaSet "{rs_name}" has successfully progressed.' if complete else
                 f'ReplicaSet "{rs_name}" is progressing.'),
        ]
        status = {"observedGeneration": dep["metadata"].get("generation", 1), "replicas": replicas,
                  "updatedReplicas": updated, "readyReplicas": ready, "availableReplicas": available,
                  "unavailableReplicas": max(0, want - available), "conditions": conditions}
        status = {k: v for k, v in status.items() if v or k in ("observedGeneration", "conditions")}
        if dep.get("status") != status:
            new = dict(dep)
            new["status"] = status
            self.store.update(new, check_version=False)


class StatefulSetController(Controller):
    """Pods `<name>-0 … <name>-N-1` with stable names, hostname/subdomain for DNS, created in order."""

    kinds = ("StatefulSet",)
    owned = ("Pod",)

    def __init__(self, cluster: "ControllerContext", pods: OwnedPods):
        super().__init__(cluster)
        self.pods = pods

    def reconcile(self, namespace: str, name: str) -> None:
        sts = self.store.find("StatefulSet", namespace, name)
        if sts is None or sts["metadata"].get("deletionTimestamp"):
            return
        want = sts["spec"].get("replicas", 1)
        revision = f"{name}-{template_hash(sts['spec']['template'])}"
        pods = {p["metadata"]["name"]: p for p in self.pods.pods(sts["metadata"]["uid"])}
        ordered = sts["spec"].get("podManagementPolicy", "OrderedReady") == "OrderedReady"
        for i in range(want):
            pod_name = f"{name}-{i}"
            pod = pods.get(pod_name)
            if pod is None:
                if self.store.find("Pod", namespace, pod_name) is None:
                    self._create(sts, i, revision)
                if ordered:
                    break
                continue
            if ordered and not (pod_active(pod) and pod_ready(pod)):
                break
        extra = sorted((p for n, p in pods.items() if _ordinal(n, name) >= want and pod_active(p)),
                       key=lambda p: -_ordinal(p["metadata"]["name"], name))
        if extra:
            healthy = all(pod_ready(p) for p in pods.values() if pod_active(p) and
                          _ordinal(p["metadata"]["name"], name) < want)
            if healthy or not ordered:
                for pod in (extra[:1] if ordered else extra):
                    self.cluster.delete("Pod", namespace, pod["metadata"]["name"])
        else:
            stale = sorted((p for p in pods.values() if pod_active(p) and
                            p["metadata"].get("labels", {}).get("controller-revision-hash") != revision),
                           key=lambda p: -_ordinal(p["metadata"]["name"], name))
            if stale and all(pod_ready(p) for p in pods.values() if pod_active(p)):
                self.cluster.delete("Pod", namespace, stale[0]["metadata"]["name"])
        self._status(sts, revision)

    def _create(self, sts: dict, ordinal: int, revision: str) -> None:
        name = sts["metadata"]["name"]
        template = clone(sts["spec"]["template"])
        labels = template.setdefault("metadata", {}).setdefault("labels", {})
        labels.update({"controller-revision-hash": revision, "statefulset.kubernetes.io/pod-name": f"{name}-{ordinal}",
                       "apps.kubernetes.io/pod-index": str(ordinal)})
        template.setdefault("spec", {})["hostname"] = f"{name}-{ordinal}"
        if sts["spec"].get("serviceName"):
            template["spec"]["subdomain"] = sts["spec"]["serviceName"]
        self.cluster.create_pod_from_template(sts, template, name=f"{name}-{ordinal}")

    def _status(self, sts: dict, revision: str) -> None:
        pods = [p for p in self.pods.pods(sts["metadata"]["uid"]) if pod_active(p)]
        ready = sum(1 for p in pods if pod_ready(p))
        current = sum(1 for p in pods if p["metadata"].get("labels", {}).get("controller-revision-hash") == revision)
        status = {"observedGeneration": sts["metadata"].get("generation", 1), "replicas": len(pods),
                  "readyReplicas": ready, "currentReplicas": current, "updatedReplicas": current,
                  "availableReplicas": ready, "currentRevision": revision, "updateRevision": revision,
                  "collisionCount": 0}
        status = {k: v for k, v in status.items() if v or k in ("observedGeneration", "replicas", "collisionCount",
                                                                  "availableReplicas")}
        if sts.get("status") != status:
            new = dict(sts)
            new["status"] = status
            self.store.update(new, check_version=False)


def _ordinal(pod_name: str, sts_name: str) -> int:
    tail = pod_name[len(sts_name) + 1:]
    return int(tail) if tail.isdigit() else -1


class DaemonSetController(Controller):
    """One pod per eligible node."""

    kinds = ("DaemonSet",)
    owned = ("Pod",)

    def __init__(self, cluster: "ControllerContext", pods: OwnedPods):
        super().__init__(cluster)
        self.pods = pods

    def _on_event(self, event) -> None:
        super()._on_event(event)
        if event.kind == "Node":
            for ds in self.store.list("DaemonSet"):
                self.dirty.add((ds["metadata"]["namespace"], ds["metadata"]["name"]))

    def eligible(self, ds: dict, node: dict) -> bool:
        """Whether the DaemonSet's pod may run on this node (taints and nodeSelector)."""
        template = ds["spec"]["template"]
        selector = template.get("spec", {}).get("nodeSelector") or {}
        labels = node["metadata"].get("labels", {})
        if any(labels.get(k) != v for k, v in selector.items()):
            return False
        for taint in node.get("spec", {}).get("taints") or []:
            if taint.get("effect") in ("NoSchedule", "NoExecute") and not tolerates(template, taint):
                return False
        return node_affinity_allows(template.get("spec", {}), node)

    def reconcile(self, namespace: str, name: str) -> None:
        ds = self.store.find("DaemonSet", namespace, name)
        if ds is None or ds["metadata"].get("deletionTimestamp"):
            return
        pods = [p for p in self.pods.pods(ds["metadata"]["uid"]) if pod_active(p)]
        by_node = defaultdict(list)
        for p in pods:
            by_node[p["spec"].get("nodeName")].append(p)
        nodes = self.store.list("Node")
        wanted = [n for n in nodes if self.eligible(ds, n)]
        revision = template_hash(ds["spec"]["template"])
        for node in wanted:
            node_name = node["metadata"]["name"]
            if not by_node.get(node_name):
                template = clone(ds["spec"]["template"])
                labels = template.setdefault("metadata", {}).setdefault("labels", {})
                labels["controller-revision-hash"] = revision
                labels["pod-template-generation"] = str(ds["metadata"].get("generation", 1))
                spec = template.setdefault("spec", {})
                spec["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In",
                                                            "values": [node_name]}]}]}}}
                self.cluster.create_pod_from_template(ds, template, f"{name}-", node=node_name)
        wanted_names = {n["metadata"]["name"] for n in wanted}
        for node_name, node_pods in by_node.items():
            if node_name not in wanted_names:
                for p in node_pods:
                    self.cluster.delete("Pod", namespace, p["metadata"]["name"])
        stale = [p for p in pods if p["metadata"].get("labels", {}).get("controller-revision-hash") != revision
                 and p["spec"].get("nodeName") in wanted_names]
        if stale and all(pod_ready(p) for p in pods):
            self.cluster.delete("Pod", namespace, stale[0]["metadata"]["name"])
        pods = [p for p in self.pods.pods(ds["metadata"]["uid"]) if pod_active(p)]
        ready = sum(1 for p in pods if pod_ready(p))
        status = {"currentNumberScheduled": len(pods), "desiredNumberScheduled": len(wanted),
                  "numberAvailable": ready, "numberMisscheduled": 0, "numberReady": ready,
                  "observedGeneration": ds["metadata"].get("generation", 1), "updatedNumberScheduled": len(pods)}
        if ds.get("status") != status:
            new = dict(ds)
            new["status"] = status
            self.store.update(new, check_version=False)


def node_affinity_allows(pod_spec: dict, node: dict) -> bool:
    """Whether a node passes a pod spec's required node affinity (matchExpressions on labels, matchFields on name)."""
    required = (pod_spec.get("affinity") or {}).get("nodeAffinity", {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution")
    if not required:
        return True
    labels = node["metadata"].get("labels") or {}
    for term in required.get("nodeSelectorTerms") or []:
        ok = True
        for expr in term.get("matchExpressions") or []:
            ok &= _expression(expr, labels.get(expr["key"]), expr["key"] in labels)
        for expr in term.get("matchFields") or []:
            value = node["metadata"]["name"] if expr["key"] == "metadata.name" else None
            ok &= _expression(expr, value, value is not None)
        if ok:
            return True
    return False


def _expression(expr: dict, value, present: bool) -> bool:
    op, values = expr.get("operator"), expr.get("values") or []
    if op == "In":
        return present and value in values
    if op == "NotIn":
        return not present or value not in values
    if op == "Exists":
        return present
    if op == "DoesNotExist":
        return not present
    if op in ("Gt", "Lt") and present and values:
        try:
            return int(value) > int(values[0]) if op == "Gt" else int(value) < int(values[0])
        except ValueError:
            return False
    return False


class GarbageCollector:
    """Deletes objects whose owner is gone (background cascading deletion)."""

    def __init__(self, cluster: "ControllerContext"):
        self.cluster = cluster
        self.dependents: dict[str, set[tuple[str, str, str]]] = defaultdict(set)
        self.gone: list[str] = []
        cluster.store.subscribe(self._on_event)

    def _on_event(self, event) -> None:
        meta = event.object["metadata"]
        key = (event.kind, meta.get("namespace", ""), meta["name"])
        if event.old is not None:
            for ref in event.old["metadata"].get("ownerReferences") or []:
                self.dependents[ref["uid"]].discard(key)
        if event.type == "DELETED":
            self.gone.append(meta["uid"])
            return
        for ref in meta.get("ownerReferences") or []:
            self.dependents[ref["uid"]].add(key)

    def sync(self) -> bool:
        """Delete the dependents of every owner deleted since the last sync."""
        if not self.gone:
            return False
        gone, self.gone = self.gone, []
        for uid in gone:
            for kind, ns, name in sorted(self.dependents.pop(uid, ())):
                obj = self.cluster.store.find(kind, ns, name)
                if obj is None or obj["metadata"].get("deletionTimestamp"):
                    continue
                self.cluster.delete(kind, ns, name)
        return True

