"""The EndpointSlice and (legacy) Endpoints controllers: watch Services and Pods, write what `reconcile` plans."""
from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING

from labsupport.control.endpointslice import endpoints_for, reconcile
from labsupport.model.objects import clone

if TYPE_CHECKING:
    from labsupport.control.context import ControllerContext

SERVICE_NAME_LABEL = "kubernetes.io/service-name"
MANAGED_BY_LABEL = "endpointslice.kubernetes.io/managed-by"
MANAGED_BY = "endpointslice-controller.k8s.io"


class ServiceSelectors:
    """Every Service's selector as (key, value) pairs, by namespace, kept current from watch events."""

    def __init__(self, store):
        self.by_namespace: dict[str, dict[str, tuple]] = defaultdict(dict)
        for svc in store.list("Service"):
            self._set(svc)
        store.subscribe(self._on_event)

    def _set(self, svc: dict, deleted: bool = False) -> None:
        ns, name = svc["metadata"]["namespace"], svc["metadata"]["name"]
        selector = (svc.get("spec") or {}).get("selector") or {}
        if deleted or not selector:
            self.by_namespace[ns].pop(name, None)
        else:
            self.by_namespace[ns][name] = tuple(selector.items())

    def _on_event(self, event) -> None:
        if event.kind == "Service":
            self._set(event.object, deleted=event.type == "DELETED")

    def selecting(self, namespace: str, labels: dict) -> list[str]:
        """Names of the Services in a namespace whose selector picks these labels."""
        return [name for name, items in self.by_namespace.get(namespace, {}).items()
                if all(labels.get(k) == v for k, v in items)]

    def items(self, namespace: str, name: str) -> tuple | None:
        """One Service's selector pairs (None without a selector)."""
        return self.by_namespace.get(namespace, {}).get(name)


class _ServiceWatcher:
    """Marks a Service dirty when it, or a pod it selects (before or after the change), changes."""

    def __init__(self, cluster: "ControllerContext", selectors: ServiceSelectors):
        self.cluster = cluster
        self.store = cluster.store
        self.selectors = selectors
        self.dirty: set[tuple[str, str]] = set()
        self.store.subscribe(self._on_event)

    def _on_event(self, event) -> None:
        obj = event.object
        if event.kind == "Service":
            self.dirty.add((obj["metadata"]["namespace"], obj["metadata"]["name"]))
        elif event.kind == "Pod":
            ns = obj["metadata"]["namespace"]
            for o in (obj, event.old):
                if o is not None:
                    for name in self.selectors.selecting(ns, o["metadata"].get("labels") or {}):
                        self.dirty.add((ns, name))
        elif event.kind == "Node" and (event.old is None or
                                       event.old["metadata"].get("labels") != obj["metadata"].get("labels")):
            for svc in self.store.list("Service"):
                self.dirty.add((svc["metadata"]["namespace"], svc["metadata"]["name"]))

    def sync(self) -> bool:
        """Reconcile every dirty Service."""
        if not self.dirty:
            return False
        keys, self.dirty = sorted(self.dirty), set()
        for ns, name in keys:
            self.reconcile(ns, name)
        return True

    def selected(self, svc: dict) -> list[dict]:
        """The pods in the Service's namespace that its selector picks."""
        items = tuple(((svc.get("spec") or {}).get("selector") or {}).items())
        if not items:
            return []
        return [p for p in self.store.list("Pod", svc["metadata"]["namespace"])
                if all((p["metadata"].get("labels") or {}).get(k) == v for k, v in items)]

    def reconcile(self, namespace: str, name: str) -> None:
        """Write what this Service's endpoints should be."""
        raise NotImplementedError


class EndpointSliceController(_ServiceWatcher):
    """kube-controller-manager's EndpointSlice controller, around the pure `reconcile`."""

    def __init__(self, cluster: "ControllerContext", selectors: ServiceSelectors, max_endpoints_per_slice: int = 100):
        super().__init__(cluster, selectors)
        self.max_endpoints_per_slice = max_endpoints_per_slice
        self.slices: dict[tuple[str, str], set[str]] = defaultdict(set)
        self.writes = 0

    def _on_event(self, event) -> None:
        super()._on_event(event)
        if event.kind != "EndpointSlice":
            return
        obj = event.object
        labels = obj["metadata"].get("labels") or {}
        old_labels = (event.old or {}).get("metadata", {}).get("labels") or {}
        ns = obj["metadata"]["namespace"]
        for lab in (old_labels,):
            if lab.get(SERVICE_NAME_LABEL):
                self.slices[(ns, lab[SERVICE_NAME_LABEL])].discard(obj["metadata"]["name"])
        if event.type != "DELETED" and labels.get(SERVICE_NAME_LABEL):
            self.slices[(ns, labels[SERVICE_NAME_LABEL])].add(obj["metadata"]["name"])
        if event.type == "DELETED" and labels.get(SERVICE_NAME_LABEL):
            self.slices[(ns, labels[SERVICE_NAME_LABEL])].discard(obj["metadata"]["name"])
        if labels.get(MANAGED_BY_LABEL) == MANAGED_BY and labels.get(SERVICE_NAME_LABEL) and \
                event.type != "ADDED":
            self.dirty.add((ns, labels[SERVICE_NAME_LABEL]))

    def existing(self, namespace: str, name: str) -> list[dict]:
        """The controller-managed slices labelled for this Service."""
        out = []
        for slice_name in sorted(self.slices.get((namespace, name), ())):
            s = self.store.find("EndpointSlice", namespace, slice_name)
            if s is not None and (s["metadata"].get("labels") or {}).get(MANAGED_BY_LABEL) == MANAGED_BY:
                out.append(s)
        return out

    def reconcile(self, namespace: str, name: str) -> None:
        svc = self.store.find("Service", namespace, name)
        existing = self.existing(namespace, name)
        if svc is None:
            for s in existing:
                self.store.remove("EndpointSlice", namespace, s["metadata"]["name"])
            return
        if not svc["spec"].get("selector"):
            return
        plan = reconcile(svc, self.selected(svc), existing, self.store.list("Node"),
                         max_endpoints_per_slice=self.max_endpoints_per_slice)
        for s in plan.create:
            self.store.create(s)
            self.writes += 1
        for s in plan.update:
            current = self.store.find("EndpointSlice", namespace, s["metadata"]["name"])
            if current is None:
                continue
            s = clone(s)
            s["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
            self.store.update(s, check_version=False)
            self.writes += 1
        for s in plan.delete:
            if self.store.find("EndpointSlice", namespace, s["metadata"]["name"]) is not None:
                self.store.remove("EndpointSlice", namespace, s["metadata"]["name"])
                self.writes += 1


class EndpointsController(_ServiceWatcher):
    """The legacy Endpoints controller (v1 Endpoints, deprecated in 1.33, capped at 1000 addresses)."""

    def reconcile(self, namespace: str, name: str) -> None:
        svc = self.store.find("Service", namespace, name)
        current = self.store.find("Endpoints", namespace, name)
        if svc is None or not svc["spec"].get("selector"):
            if current is not None and svc is None:
                self.store.remove("Endpoints", namespace, name)
            return
        wanted = endpoints_for(svc, self.selected(svc))
        if wanted is None:
            return
        if current is None:
            self.store.create(wanted)
            return
        if {k: current.get(k) for k in ("subsets",)} == {k: wanted.get(k) for k in ("subsets",)} and \
                current["metadata"].get("annotations", {}).get("endpoints.kubernetes.io/over-capacity") == \
                wanted["metadata"].get("annotations", {}).get("endpoints.kubernetes.io/over-capacity"):
            return
        new = clone(current)
        new["subsets"] = wanted.get("subsets", [])
        if not new["subsets"]:
            new.pop("subsets")
        new["metadata"]["labels"] = wanted["metadata"].get("labels", {})
        annotations = {k: v for k, v in (wanted["metadata"].get("annotations") or {}).items()}
        if annotations:
            new["metadata"]["annotations"] = annotations
        else:
            new["metadata"].pop("annotations", None)
        self.store.update(new, check_version=False)
