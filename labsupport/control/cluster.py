"""The embedded cluster: store, clock, scheduler, kubelet, controllers and allocators wired together.

Its methods are the API server's verbs (create, replace, delete, get, list) with the API server's defaulting,
validation and allocation; controllers write through the store directly, as controllers do through the API.
"""
from __future__ import annotations

import ipaddress
import json
import math
import random
import threading
from typing import Any, Callable

from labsupport.apps.container import ClusterDNS
from labsupport.control.allocators import ServiceAllocator
from labsupport.control.clock import Timer, VirtualClock, rfc3339
from labsupport.control.context import ControllerContext, PodNetwork, Prober
from labsupport.control.endpoints import EndpointsController, EndpointSliceController, ServiceSelectors
from labsupport.control.kubelet import Kubelet
from labsupport.control.scheduler import Scheduler
from labsupport.control.store import Store
from labsupport.model.objects import clone
from labsupport.control.workloads import (DaemonSetController, DeploymentController, GarbageCollector, OwnedPods,
                                          ReplicaSetController, StatefulSetController)
from labsupport.errors import AlreadyExists, BadRequest, ClockLimit, InternalError, NotFound
from labsupport.model.defaults import apply_defaults
from labsupport.model.kinds import by_kind, resolve
from labsupport.model.selectors import matches_fields, parse_field_selector, to_selector
from labsupport.model.validation import validate
from labsupport.shape import DNS_IP, ClusterConfig

#: The largest object etcd stores (its request limit, 1.5 MiB): a larger one is refused as etcd refuses it.
MAX_OBJECT_BYTES = 1536 * 1024


def _fits_in_etcd(obj: dict) -> None:
    """Refuse, as etcd does, an object larger than it stores."""
    if len(json.dumps(obj, separators=(",", ":"), default=str)) > MAX_OBJECT_BYTES:
        raise InternalError("etcdserver: request is too large")


class Cluster:
    """An embedded Kubernetes control plane on a virtual clock. Thread-safe through `lock`."""

    def __init__(self, config: ClusterConfig | None = None, *, seed: int = 0):
        self.config = config or ClusterConfig()
        self.seed = seed
        self.rng = random.Random(seed)
        self.clock = VirtualClock()
        self.store = Store(self.clock, random.Random(seed * 7919 + 1))
        self.lock = threading.RLock()
        self.allocator = ServiceAllocator(self.config.service_cidr, self.config.node_port_range,
                                          rng=random.Random(seed * 7919 + 2))
        self._event_seq = 0
        #: What controllers may use of this cluster; the backend wires the network and prober into it.
        self.context = ControllerContext(
            config=self.config, store=self.store, clock=self.clock, rng=self.rng, create=self.create,
            delete=self.delete, bind=self.bind, create_pod_from_template=self.create_pod_from_template,
            finalize_pod=self.finalize_pod, record_event=self.record_event, node_ip=self.node_ip,
            pod_env=self.pod_env)
        ctx = self.context
        self.owned = OwnedPods(ctx)
        self.scheduler = Scheduler(ctx)
        self.kubelet = Kubelet(ctx)
        selectors = ServiceSelectors(self.store)
        self.controllers = [
            self.scheduler,
            DeploymentController(ctx, self.owned),
            ReplicaSetController(ctx, self.owned),
            StatefulSetController(ctx, self.owned),
            DaemonSetController(ctx, self.owned),
            GarbageCollector(ctx),
            self.kubelet,
            EndpointSliceController(ctx, selectors, self.config.max_endpoints_per_slice),
            EndpointsController(ctx, selectors),
        ]
        self._lb_next = 0
        self._bootstrap()

    # --- API verbs -----------------------------------------------------------------------------------------
    def create(self, obj: dict, *, dry_run: bool = False) -> dict:
        """Create an object as the API server does: default, validate, allocate, store. Refusals change nothing."""
        with self.lock:
            self._catch_up()
            obj = self._prepare(obj)
            info = by_kind(obj["kind"], obj.get("apiVersion"))
            if info.namespaced:
                ns = obj["metadata"].setdefault("namespace", "default")
                if self.store.find("Namespace", None, ns) is None:
                    raise NotFound.of("namespaces", ns)
            validate(obj)
            _fits_in_etcd(obj)
            name = obj["metadata"].get("name")
            if name and self.store.find(info.kind, obj["metadata"].get("namespace"), name) is not None:
                raise AlreadyExists.of(info.plural, name, group=info.group)
            if info.kind == "Service":
                obj = self._allocate_service(obj, None, dry_run)
            if dry_run:
                return clone(obj)
            if info.kind == "Pod" and obj["spec"].get("nodeName"):
                obj.setdefault("status", {})["phase"] = "Pending"
            stored = self.store.create(obj)
            self.settle()
            return clone(self.store.find(info.kind, stored["metadata"].get("namespace"), stored["metadata"]["name"])
                         or stored)

    def replace(self, obj: dict, *, dry_run: bool = False) -> dict:
        """Replace an object (PUT): validation against the old object, immutable fields, allocation."""
        with self.lock:
            self._catch_up()
            obj = self._prepare(obj)
            info = by_kind(obj["kind"], obj.get("apiVersion"))
            meta = obj["metadata"]
            old = self.store.get(info.kind, meta.get("namespace") if info.namespaced else None, meta.get("name", ""))
            for key in ("uid", "creationTimestamp", "generateName", "ownerReferences", "deletionTimestamp",
                        "deletionGracePeriodSeconds"):
                if key in old["metadata"] and key not in meta:
                    meta[key] = old["metadata"][key]
            if "status" in old:
                obj["status"] = old["status"]      # status is written through its subresource only
            validate(obj, old)
            _fits_in_etcd(obj)
            if info.kind == "Service":
                obj = self._allocate_service(obj, old, dry_run)
            if dry_run:
                return clone(obj)
            stored = self.store.update(obj)
            self.settle()
            return clone(self.store.find(info.kind, stored["metadata"].get("namespace"), stored["metadata"]["name"])
                         or stored)

    def replace_status(self, obj: dict) -> dict:
        """Write an object's status subresource."""
        with self.lock:
            info = by_kind(obj["kind"], obj.get("apiVersion"))
            meta = obj.get("metadata", {})
            old = self.store.get(info.kind, meta.get("namespace") if info.namespaced else None, meta.get("name", ""))
            new = dict(old)
            new["status"] = clone(obj.get("status", {}))
            if meta.get("resourceVersion"):
                new["metadata"] = dict(old["metadata"], resourceVersion=meta["resourceVersion"])
            stored = self.store.update(new)
            self.settle()
            return clone(stored)

    def delete(self, kind: str, namespace: str | None, name: str, *, grace_period: int | None = None,
               propagation: str = "Background", dry_run: bool = False) -> dict:
        """Delete an object. A running pod gets a deletionTimestamp; the kubelet then runs preStop and stops it."""
        with self.lock:
            self._catch_up()
            info = resolve(kind)
            ns = (namespace or "default") if info.namespaced else None
            obj = self.store.get(info.kind, ns, name)
            if dry_run:
                return clone(obj)
            if propagation == "Orphan":
                self._orphan(obj)
            if info.kind == "Pod":
                result = self._delete_pod(obj, grace_period)
            elif info.kind == "Namespace":
                result = self._delete_namespace(obj)
            else:
                if info.kind == "Service":
                    self.allocator.release(obj)
                result = self.store.remove(info.kind, ns, name)
            self.settle()
            return clone(result)

    def get(self, kind: str, namespace: str | None, name: str) -> dict:
        """One object (a copy), or NotFound with the API server's words."""
        with self.lock:
            self._catch_up()
            info = resolve(kind)
            return clone(self.store.get(info.kind, (namespace or "default") if info.namespaced else None, name))

    def list(self, kind: str, namespace: str | None = None, label_selector: Any = None,
             field_selector: str | None = None) -> list[dict]:
        """Objects of a kind (namespace None = all namespaces), filtered by label and field selectors."""
        with self.lock:
            self._catch_up()
            info = resolve(kind)
            labels = to_selector(label_selector) if label_selector not in (None, "") else None
            fields = parse_field_selector(field_selector) if field_selector else None
            items = self.store.list(info.kind, namespace if info.namespaced else None)
            out = []
            for obj in items:
                if labels is not None and not labels.matches(obj["metadata"].get("labels") or {}):
                    continue
                if fields is not None and not matches_fields(fields, obj):
                    continue
                out.append(clone(obj))
            return out

    def advance(self, seconds: float) -> None:
        """Move the virtual clock forward, firing timers and letting controllers react; never past the clock's
        `horizon` (a graded cluster's), which is refused with ClockLimit before anything moves."""
        if not isinstance(seconds, (int, float)) or not math.isfinite(seconds):
            raise ClockLimit(f"the clock moves by a finite number of seconds, not {seconds!r}")
        if seconds < 0:
            raise ValueError(f"cannot move the clock backwards ({seconds} s)")
        with self.lock:
            horizon = self.clock.horizon
            if horizon is not None and self.clock.now + seconds > horizon + 1e-9:
                raise ClockLimit(f"this cluster's clock stops {horizon - self.clock.start:g} s after it started "
                                 f"(it is at {self.clock.now - self.clock.start:g} s): moving it {seconds:g} s more "
                                 "would pass that")
            self.clock.run_until(self.clock.now + seconds, self.settle)

    def settle(self, rounds: int = 200) -> None:
        """Let every controller react until none has work left."""
        for _ in range(rounds):
            busy = False
            for controller in self.controllers:
                busy |= bool(controller.sync())
            if not busy:
                return
        raise RuntimeError("the control plane did not settle: controllers keep rewriting each other")

    # --- helpers the controllers use -----------------------------------------------------------------------
    def timestamp(self) -> str:
        """The current virtual time as an RFC 3339 timestamp."""
        return rfc3339(self.clock.now)

    def node_ip(self, node: dict | str | None) -> str:
        """A node's primary InternalIP."""
        if isinstance(node, str):
            node = self.store.find("Node", None, node)
        for addr in (node or {}).get("status", {}).get("addresses", []):
            if addr.get("type") == "InternalIP":
                return addr["address"]
        return ""

    def bind(self, pod: dict, node_name: str) -> None:
        """Bind a pod to a node (the scheduler's Binding)."""
        new = clone(pod)
        new["spec"]["nodeName"] = node_name
        status = new.setdefault("status", {})
        status["phase"] = "Pending"
        status["conditions"] = [{"type": "PodScheduled", "status": "True", "lastProbeTime": None,
                                 "lastTransitionTime": self.timestamp()}]
        status.setdefault("qosClass", "BestEffort")
        self.store.update(new, check_version=False)
        self.record_event(pod, "Normal", "Scheduled",
                          f"Successfully assigned {pod['metadata']['namespace']}/{pod['metadata']['name']} to {node_name}",
                          source="default-scheduler")

    def create_pod_from_template(self, owner: dict, template: dict, generate_name: str | None = None,
                                 name: str | None = None, node: str | None = None) -> dict:
        """Create a pod for a controller from its pod template."""
        from labsupport.control.workloads import owner_ref
        meta = clone(template.get("metadata", {}))
        meta.pop("creationTimestamp", None)
        meta["namespace"] = owner["metadata"]["namespace"]
        if name:
            meta["name"] = name
        else:
            meta["generateName"] = generate_name
        meta["ownerReferences"] = [owner_ref(owner)]
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": clone(template.get("spec", {}))}
        if node:
            pod["spec"]["nodeName"] = node
        pod = apply_defaults(pod)
        pod["status"] = {"phase": "Pending", "qosClass": "BestEffort"}
        created = self.store.create(pod)
        if node is None:
            self.record_event(owner, "Normal", "SuccessfulCreate", f"Created pod: {created['metadata']['name']}",
                              source=f"{owner['kind'].lower()}-controller")
        return created

    def finalize_pod(self, pod: dict) -> None:
        """Remove a pod whose containers have stopped."""
        if self.store.find("Pod", pod["metadata"]["namespace"], pod["metadata"]["name"]) is not None:
            self.store.remove("Pod", pod["metadata"]["namespace"], pod["metadata"]["name"])

    def record_event(self, obj: dict, type_: str, reason: str, message: str, source: str = "") -> None:
        """Record a core/v1 Event about an object (what `kubectl describe` shows under Events)."""
        if not self.config.record_events:
            return
        self._event_seq += 1
        ns = obj["metadata"].get("namespace") or "default"
        now = self.timestamp()
        self.store.create({
            "apiVersion": "v1", "kind": "Event",
            "metadata": {"name": f"{obj['metadata']['name']}.{self._event_seq:016x}", "namespace": ns},
            "involvedObject": {"apiVersion": obj.get("apiVersion"), "kind": obj.get("kind"), "namespace": ns,
                               "name": obj["metadata"]["name"], "uid": obj["metadata"].get("uid")},
            "reason": reason, "message": message, "type": type_, "count": 1,
            "source": {"component": source}, "firstTimestamp": now, "lastTimestamp": now,
            "reportingComponent": source, "reportingInstance": ""})

    def pod_env(self, pod: dict) -> "PodEnv":
        """What a pod's processes can reach: the clock, cluster DNS and the network."""
        return PodEnv(self.context, self.kubelet, pod["metadata"]["namespace"], pod["metadata"]["name"])

    def lb_address(self) -> str:
        """The next free address of the LoadBalancer pool (MetalLB-style)."""
        first, last = (int(ipaddress.ip_address(a)) for a in self.config.lb_pool)
        used = {ing.get("ip") for svc in self.store.list("Service")
                for ing in svc.get("status", {}).get("loadBalancer", {}).get("ingress", [])}
        for n in range(first, last + 1):
            ip = str(ipaddress.ip_address(n))
            if ip not in used:
                return ip
        return ""

    # --- internals -----------------------------------------------------------------------------------------
    def _catch_up(self) -> None:
        delta = self.clock.wall_delta()
        if delta > 0:
            self.clock.run_until(self.clock.now + delta, self.settle)

    def _prepare(self, obj: dict) -> dict:
        if not isinstance(obj, dict):
            raise BadRequest(f"an object must be a mapping, not {type(obj).__name__}")
        if not obj.get("kind"):
            raise BadRequest("Object 'Kind' is missing in the object")
        if not obj.get("apiVersion"):
            raise BadRequest(f"Object 'apiVersion' is missing in the {obj['kind']} object")
        if not isinstance(obj.get("metadata", {}), dict):
            raise BadRequest("metadata must be a mapping")
        info = by_kind(obj["kind"], obj["apiVersion"])
        obj = apply_defaults(clone(obj))
        obj.setdefault("metadata", {})
        if info.namespaced:
            obj["metadata"]["namespace"] = obj["metadata"].get("namespace") or "default"
        for key in ("uid", "resourceVersion", "creationTimestamp", "generation", "deletionTimestamp",
                    "deletionGracePeriodSeconds", "managedFields", "selfLink"):
            if key != "resourceVersion":
                obj["metadata"].pop(key, None)
        return obj

    def _allocate_service(self, svc: dict, old: dict | None, dry_run: bool) -> dict:
        if dry_run:
            return self.allocator.copy().allocate(svc, old)
        svc = self.allocator.allocate(svc, old)
        if svc["spec"].get("type") == "LoadBalancer":
            ingress = (old or {}).get("status", {}).get("loadBalancer", {}).get("ingress") or \
                [{"ip": self.lb_address(), "ipMode": "VIP"}]
            svc["status"] = {"loadBalancer": {"ingress": ingress}}
        else:
            svc["status"] = {"loadBalancer": {}}
        return svc

    def _delete_pod(self, pod: dict, grace_period: int | None) -> dict:
        if pod["metadata"].get("deletionTimestamp"):
            if grace_period == 0:
                return self.store.remove("Pod", pod["metadata"]["namespace"], pod["metadata"]["name"])
            return pod
        grace = pod["spec"].get("terminationGracePeriodSeconds", 30) if grace_period is None else grace_period
        running = pod["spec"].get("nodeName") and pod.get("status", {}).get("phase") in ("Pending", "Running") and \
            self.kubelet.runtime(pod) is not None
        if grace <= 0 or not running:
            return self.store.remove("Pod", pod["metadata"]["namespace"], pod["metadata"]["name"])
        new = clone(pod)
        new["metadata"]["deletionTimestamp"] = rfc3339(self.clock.now + grace)
        new["metadata"]["deletionGracePeriodSeconds"] = grace
        return self.store.update(new, check_version=False)

    def _delete_namespace(self, ns: dict) -> dict:
        name = ns["metadata"]["name"]
        if name in ("default", "kube-system", "kube-public", "kube-node-lease"):
            raise BadRequest(f'namespaces "{name}" is forbidden: this namespace may not be deleted')
        for info_kind in ("Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Service", "ConfigMap", "Pod",
                          "EndpointSlice", "Endpoints", "Event"):
            for obj in self.store.list(info_kind, name):
                if info_kind == "Service":
                    self.allocator.release(obj)
                if info_kind == "Pod":
                    self._delete_pod(obj, 0)
                elif self.store.find(info_kind, name, obj["metadata"]["name"]) is not None:
                    self.store.remove(info_kind, name, obj["metadata"]["name"])
        return self.store.remove("Namespace", None, name)

    def _orphan(self, obj: dict) -> None:
        uid = obj["metadata"]["uid"]
        for kind in ("ReplicaSet", "Pod"):
            for dep in self.store.list(kind, obj["metadata"].get("namespace")):
                refs = dep["metadata"].get("ownerReferences") or []
                if any(r["uid"] == uid for r in refs):
                    new = clone(dep)
                    new["metadata"]["ownerReferences"] = [r for r in refs if r["uid"] != uid]
                    if not new["metadata"]["ownerReferences"]:
                        del new["metadata"]["ownerReferences"]
                    self.store.update(new, check_version=False)

    def _bootstrap(self) -> None:
        from labsupport.control.bootstrap import bootstrap
        bootstrap(self.context, self.kubelet, settle=self.settle, advance=self.advance)

    def connect_data_plane(self, network: PodNetwork, prober: Prober | None = None) -> None:
        """Wire in the network a pod's processes use and, for a real data plane, its prober (the backend does
        this once, after building the data plane over this cluster)."""
        self.context.network = network
        self.context.prober = prober

    @property
    def network(self) -> PodNetwork | None:
        """The network pods use, once the backend has wired it in."""
        return self.context.network


class PodEnv:
    """The world as one pod sees it: the cluster clock, cluster DNS (with its resolv.conf) and the network."""

    def __init__(self, context: ControllerContext, kubelet: Kubelet, namespace: str, name: str):
        self.context = context
        self.kubelet = kubelet
        self.namespace = namespace
        self.name = name

    def now(self) -> float:
        """The cluster's virtual time."""
        return self.context.clock.now

    def nslookup(self, name: str):
        """Resolve a name as `nslookup` in this pod would."""
        if self.context.network is None:
            raise RuntimeError("this cluster has no network attached")
        return self.context.network.nslookup(name, pod=f"{self.namespace}/{self.name}")

    def fetch(self, url: str):
        """Fetch a URL from this pod (curl / wget)."""
        if self.context.network is None:
            raise RuntimeError("this cluster has no network attached")
        return self.context.network.curl(url, source=f"pod/{self.namespace}/{self.name}")

    def pod_ip(self) -> str | None:
        """The address the kubelet gave the pod (None before it has one)."""
        runtime = self._runtime()
        return runtime.ip if runtime is not None else None

    def services(self) -> list[dict]:
        """The Services that exist now (what the kubelet turns into environment variables)."""
        return self.context.store.list("Service")

    def after(self, seconds: float, callback: Callable[[], None]) -> Timer:
        """Run `callback` on the cluster's clock `seconds` from now (a container's own timing)."""
        return self.context.clock.after(seconds, callback, f"{self.namespace}/{self.name}")

    def is_current(self, app: Any) -> bool:
        """Whether `app` is still the running process of one of this pod's containers."""
        runtime = self._runtime()
        if runtime is None:
            return False
        return any(current is app and name not in runtime.exited for name, current in runtime.apps.items())

    def cluster_dns(self) -> ClusterDNS:
        """The kubelet's --cluster-dns and --cluster-domain."""
        return ClusterDNS(DNS_IP, self.context.config.domain)

    def _runtime(self) -> Any:
        pod = self.context.store.find("Pod", self.namespace, self.name)
        return self.kubelet.runtime(pod) if pod is not None else None
