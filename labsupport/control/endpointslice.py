"""The EndpointSlice reconciler and the legacy Endpoints builder, as pure functions over API objects.

`reconcile` answers the question upstream's reconciler answers on every sync: given a Service, the Pods, the
Nodes and the slices that exist now, which EndpointSlices must be created, updated and deleted?  It packs
endpoints the way upstream does, so one pod change rewrites one slice and 250 new endpoints become 100/100/50.
"""
from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field
from typing import Any, Iterable

LABEL_SERVICE_NAME = "kubernetes.io/service-name"
LABEL_MANAGED_BY = "endpointslice.kubernetes.io/managed-by"
LABEL_HEADLESS = "service.kubernetes.io/headless"
LABEL_ZONE = "topology.kubernetes.io/zone"
CONTROLLER_NAME = "endpointslice-controller.k8s.io"
ANNOTATION_TRIGGER_TIME = "endpoints.kubernetes.io/last-change-trigger-time"
ANNOTATION_OVER_CAPACITY = "endpoints.kubernetes.io/over-capacity"
LABEL_ENDPOINTS_MANAGED_BY = "endpoints.kubernetes.io/managed-by"
ENDPOINTS_CONTROLLER_NAME = "endpoint-controller"
MAX_ENDPOINTS_ADDRESSES = 1000
TRAFFIC_DISTRIBUTIONS = ("PreferClose", "PreferSameZone", "PreferSameNode")

_RESERVED_LABELS = frozenset({LABEL_SERVICE_NAME, LABEL_MANAGED_BY, LABEL_HEADLESS})
_TERMINAL_PHASES = frozenset({"Succeeded", "Failed"})
_NO_NODE = object()
_TOPOLOGY_ANNOTATIONS = ("service.kubernetes.io/topology-aware-hints", "service.kubernetes.io/topology-mode")


@dataclass
class ReconcilePlan:
    """What the reconciler writes: slices to create, update (keeping their names) and delete, in that order."""

    create: list[dict] = field(default_factory=list)
    update: list[dict] = field(default_factory=list)
    delete: list[dict] = field(default_factory=list)

    def is_empty(self) -> bool:
        """True when the sync changes nothing."""
        return not (self.create or self.update or self.delete)


# ----------------------------------------------------------------------------------------------------------
# small helpers over API dicts

def _selects(selector: dict | None, labels: dict | None) -> bool:
    """Plain equality-map selection, as a Service's spec.selector (or a matchLabels-only selector) means it."""
    if selector and "matchLabels" in selector and isinstance(selector["matchLabels"], dict):
        selector = selector["matchLabels"]
    labels = labels or {}
    for key, value in selector.items():
        if labels.get(key) != value:
            return False
    return True


def _is_headless(service: dict) -> bool:
    cluster_ip = (service.get("spec") or {}).get("clusterIP")
    return cluster_ip in (None, "", "None")


def _address_types(service: dict) -> list[str]:
    spec = service.get("spec") or {}
    types = []
    for family in spec.get("ipFamilies") or ():
        if family == "IPv4" and "IPv4" not in types:
            types.append("IPv4")
        elif family == "IPv6" and "IPv6" not in types:
            types.append("IPv6")
    if types:
        return types
    cluster_ip = spec.get("clusterIP") or ""
    if cluster_ip not in ("", "None") and ":" in cluster_ip:
        return ["IPv6"]
    return ["IPv4"]


def _pod_ips(pod: dict) -> list[str]:
    status = pod.get("status") or {}
    ips = [entry.get("ip") for entry in status.get("podIPs") or () if entry.get("ip")]
    if not ips and status.get("podIP"):
        ips = [status["podIP"]]
    return ips


def _addresses_for(ips: list[str], address_type: str) -> list[str]:
    out = []
    for ip in ips:
        is_v6 = ":" in ip
        if not is_v6 and address_type == "IPv4" and _ip_key(ip)[0] == 4:
            out.append(ip)
        elif is_v6 == (address_type == "IPv6"):
            try:
                out.append(str(ipaddress.ip_address(ip)))
            except ValueError:
                out.append(ip)
    return out


def _ready_condition(pod: dict) -> dict | None:
    for condition in (pod.get("status") or {}).get("conditions") or ():
        if condition.get("type") == "Ready":
            return condition
    return None


def _pod_ready(pod: dict) -> bool:
    condition = _ready_condition(pod)
    return condition is not None and condition.get("status") == "True"


def _should_set_hostname(pod: dict, service: dict) -> bool:
    spec = pod.get("spec") or {}
    return bool(spec.get("hostname")) and spec.get("subdomain") == service["metadata"]["name"] \
        and (pod.get("metadata") or {}).get("namespace", "default") == _namespace(service)


def _namespace(obj: dict) -> str:
    return (obj.get("metadata") or {}).get("namespace") or "default"


def _find_port(pod: dict, service_port: dict) -> int | None:
    """The container port a Service port's targetPort means on this pod (None when a named port is missing)."""
    target = service_port.get("targetPort", service_port.get("port"))
    if target is None:
        target = service_port.get("port")
    if isinstance(target, int):
        return target
    # A string targetPort is always a port name, even when it spells a number (intstr semantics).
    protocol = service_port.get("protocol") or "TCP"
    spec = pod.get("spec") or {}
    for container in spec.get("containers") or ():
        for port in container.get("ports") or ():
            if port.get("name") == target and (port.get("protocol") or "TCP") == protocol:
                return port.get("containerPort")
    for container in spec.get("initContainers") or ():
        if container.get("restartPolicy") != "Always":
            continue
        for port in container.get("ports") or ():
            if port.get("name") == target and (port.get("protocol") or "TCP") == protocol:
                return port.get("containerPort")
    return None


def _port_sort_key(port: dict) -> tuple:
    return (port.get("name") or "", port.get("protocol") or "", port.get("port") or 0,
            port.get("appProtocol") or "")


def _endpoint_ports(service: dict, pod: dict) -> list[dict]:
    """The slice ports one pod offers for the Service, sorted so equal port maps compare equal."""
    spec = service.get("spec") or {}
    ports = []
    for service_port in spec.get("ports") or ():
        number = _find_port(pod, service_port)
        if number is None:
            continue
        port = {"name": service_port.get("name") or "", "port": number,
                "protocol": service_port.get("protocol") or "TCP"}
        if service_port.get("appProtocol"):
            port["appProtocol"] = service_port["appProtocol"]
        ports.append(port)
    ports.sort(key=_port_sort_key)
    return ports


def _ports_key(ports: Iterable[dict] | None) -> tuple:
    """A hashable port map, equal for equal sets of ports whatever their order."""
    return tuple(sorted((p.get("name") or "", p.get("protocol") or "TCP", p.get("port") or 0,
                         p.get("appProtocol") or "") for p in ports or ()))


def _owned_by(slice_: dict, service: dict) -> bool:
    uid = service["metadata"].get("uid")
    for ref in (slice_.get("metadata") or {}).get("ownerReferences") or ():
        if ref.get("uid") == uid and ref.get("kind") == "Service" and ref.get("apiVersion") == "v1":
            return True
    return False


def _owner_reference(service: dict) -> dict:
    meta = service["metadata"]
    return {"apiVersion": "v1", "kind": "Service", "name": meta["name"], "uid": meta.get("uid", ""),
            "controller": True, "blockOwnerDeletion": True}


def _slice_labels(existing: dict | None, service: dict) -> tuple[dict, bool]:
    """The labels a managed slice must carry, and whether the service's own labels differ from the slice's."""
    slice_labels = {k: v for k, v in (((existing or {}).get("metadata") or {}).get("labels") or {}).items()
                    if k not in _RESERVED_LABELS}
    labels = {k: v for k, v in (service["metadata"].get("labels") or {}).items() if k not in _RESERVED_LABELS}
    changed = slice_labels != labels
    if _is_headless(service):
        labels[LABEL_HEADLESS] = ""
    labels[LABEL_SERVICE_NAME] = service["metadata"]["name"]
    labels[LABEL_MANAGED_BY] = CONTROLLER_NAME
    return labels, changed


def _new_slice(service: dict, ports: list[dict], address_type: str) -> dict:
    labels, _ = _slice_labels(None, service)
    return {
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "metadata": {
            "generateName": service["metadata"]["name"] + "-",
            "namespace": _namespace(service),
            "labels": labels,
            "ownerReferences": [_owner_reference(service)],
        },
        "addressType": address_type,
        "endpoints": [],
        "ports": [dict(p) for p in ports],
    }


def _copy_slice(slice_: dict) -> dict:
    """A copy deep enough to edit metadata, endpoints and hints without touching the original."""
    copy = dict(slice_)
    meta = dict(slice_.get("metadata") or {})
    if "labels" in meta:
        meta["labels"] = dict(meta["labels"] or {})
    if "annotations" in meta:
        meta["annotations"] = dict(meta["annotations"] or {})
    copy["metadata"] = meta
    copy["endpoints"] = list(slice_.get("endpoints") or [])
    return copy


def _ip_sort_key(address: str, hostname: str | None) -> tuple:
    version, number = _ip_key(address)
    return (version, number, hostname or "") if version != 9 else (9, 0, address)


def _max_time(*values: str | None) -> str:
    best = ""
    for value in values:
        if value and value > best:
            best = value
    return best


# ----------------------------------------------------------------------------------------------------------
# reconcile

def reconcile(service: dict, pods: Iterable[dict], existing_slices: Iterable[dict], nodes: Iterable[dict],
              max_endpoints_per_slice: int = 100) -> ReconcilePlan:
    """What upstream's EndpointSlice reconciler writes for this Service; inputs are never mutated."""
    spec = service.get("spec") or {}
    plan = ReconcilePlan()
    if not spec.get("selector") or spec.get("type") == "ExternalName":
        return plan  # the controller leaves these Services' slices alone
    zones = {}
    for node in nodes or ():
        meta = node.get("metadata") or {}
        zones[meta.get("name")] = (meta.get("labels") or {}).get(LABEL_ZONE) or None
    supported = _address_types(service)
    by_type: dict[str, list[dict]] = {}
    stale: list[dict] = []
    for slice_ in existing_slices:
        address_type = slice_.get("addressType")
        if address_type in supported:
            by_type.setdefault(address_type, []).append(slice_)
        else:
            stale.append(slice_)
    desired_by_type, ports_by_key, trigger_time = _desired_endpoints(service, pods, zones, supported)
    for address_type in supported:
        _reconcile_address_type(plan, service, ports_by_key, desired_by_type[address_type],
                                by_type.get(address_type, []), address_type, max_endpoints_per_slice, trigger_time)
    plan.delete.extend(stale)
    return plan


def _desired_endpoints(service: dict, pods: Iterable[dict], zones: dict, address_types: list[str]
                       ) -> tuple[dict[str, dict[tuple, dict[tuple, tuple]]], dict[tuple, list[dict]], str]:
    """Wanted endpoints per address type and port map (identity -> state), the port maps, and the
    newest change visible on any selected pod.  Endpoint dicts are only built for what gets written."""
    spec = service.get("spec") or {}
    namespace = _namespace(service)
    selector = spec["selector"]
    if isinstance(selector.get("matchLabels"), dict):
        selector = selector["matchLabels"]
    selector_items = tuple(selector.items())
    publish_not_ready = bool(spec.get("publishNotReadyAddresses"))
    service_name = service["metadata"]["name"]
    service_ports = spec.get("ports") or ()
    if not service_ports and _is_headless(service):
        shared_ports: list[dict] | None = []
    elif all(isinstance(p.get("targetPort", p.get("port")), int) for p in service_ports):
        shared_ports = _endpoint_ports(service, {})
    else:
        shared_ports = None
    shared_key = _ports_key(shared_ports) if shared_ports is not None else None
    newest = (service.get("metadata") or {}).get("creationTimestamp") or ""
    ports_by_key: dict[tuple, list[dict]] = {}
    if shared_ports is not None:
        ports_by_key[shared_key] = shared_ports
    desired: dict[str, dict[tuple, dict[tuple, tuple]]] = {t: {} for t in address_types}
    only_type = address_types[0] if len(address_types) == 1 else None
    only_v6 = only_type == "IPv6"
    shared_v4 = desired["IPv4"].setdefault(shared_key, {}) if shared_ports is not None and "IPv4" in desired else None
    shared_v6 = desired["IPv6"].setdefault(shared_key, {}) if shared_ports is not None and "IPv6" in desired else None

    empty: dict = {}
    for pod in pods:
        meta = pod.get("metadata") or empty
        labels = meta.get("labels") or empty
        for key, value in selector_items:
            if labels.get(key) != value:
                break
        else:
            pod_namespace = meta.get("namespace") or "default"
            if pod_namespace != namespace:
                continue
            status = pod.get("status") or empty
            serving = False
            for condition in status.get("conditions") or ():
                if condition.get("type") == "Ready":
                    serving = condition.get("status") == "True"
                    changed = condition.get("lastTransitionTime")
                    if changed and changed > newest:
                        newest = changed
                    break
            created = meta.get("creationTimestamp")
            if created and created > newest:
                newest = created
            deleted = meta.get("deletionTimestamp")
            if deleted is not None and deleted > newest:
                newest = deleted
            if status.get("phase") in _TERMINAL_PHASES:
                continue
            pod_ips = status.get("podIPs")
            if pod_ips:
                if len(pod_ips) == 1:
                    ips = (pod_ips[0].get("ip"),) if pod_ips[0].get("ip") else ()
                else:
                    ips = tuple(entry.get("ip") for entry in pod_ips if entry.get("ip"))
            else:
                ips = (status["podIP"],) if status.get("podIP") else ()
            if not ips:
                continue
            pod_spec = pod.get("spec") or empty
            node_name = pod_spec.get("nodeName") or None
            zone = zones.get(node_name, _NO_NODE)
            if zone is _NO_NODE:
                if not publish_not_ready:
                    continue  # upstream skips a pod whose Node it cannot find (and requeues the Service)
                zone = None
            hostname = pod_spec.get("hostname")
            if hostname and pod_spec.get("subdomain") != service_name:
                hostname = ""
            terminating = deleted is not None
            state = (node_name, zone, publish_not_ready or (serving and not terminating), serving,
                     terminating, "Pod", meta.get("uid", ""))
            if shared_ports is not None:
                pkey = shared_key
            else:
                ports = _endpoint_ports(service, pod)
                pkey = _ports_key(ports)
                if pkey not in ports_by_key:
                    ports_by_key[pkey] = ports
            if only_type is not None and len(ips) == 1:
                if (":" in ips[0]) is not only_v6:
                    continue
                key = (ips, hostname or "", pod_namespace, meta.get("name") or "")
                wanted = (shared_v6 if only_v6 else shared_v4) if shared_ports is not None else None
                if wanted is None:
                    wanted = desired[only_type].setdefault(pkey, {})
                wanted[key] = state
                continue
            for address_type in address_types:
                want_v6 = address_type == "IPv6"
                addresses = tuple(sorted(ip for ip in ips if (":" in ip) == want_v6))
                if addresses:
                    key = (addresses, hostname or "", pod_namespace, meta.get("name") or "")
                    desired[address_type].setdefault(pkey, {})[key] = state
    for by_ports in desired.values():
        for pkey in [k for k, v in by_ports.items() if not v]:
            del by_ports[pkey]
    return desired, ports_by_key, newest


def _build_endpoint(key: tuple, state: tuple) -> dict:
    node_name, zone, ready, serving, terminating, kind, uid = state
    addresses, hostname, namespace, name = key
    endpoint: dict[str, Any] = {"addresses": list(addresses),
                                "conditions": {"ready": ready, "serving": serving, "terminating": terminating}}
    if hostname:
        endpoint["hostname"] = hostname
    endpoint["targetRef"] = {"kind": kind, "namespace": namespace, "name": name, "uid": uid}
    if node_name:
        endpoint["nodeName"] = node_name
    if zone:
        endpoint["zone"] = zone
    return endpoint


def _reconcile_address_type(plan: ReconcilePlan, service: dict, ports_by_key: dict, desired: dict,
                            existing: list[dict], address_type: str, max_per_slice: int, trigger_time: str) -> None:
    to_create: list[dict] = []
    to_update: list[dict] = []
    to_delete: list[dict] = []
    existing_by_ports: dict[tuple, list[dict]] = {}
    for slice_ in existing:
        if _owned_by(slice_, service):
            existing_by_ports.setdefault(_ports_key(slice_.get("ports")), []).append(slice_)
        else:
            to_delete.append(slice_)

    for pkey, wanted in desired.items():
        created, updated, deleted = _reconcile_port_map(service, existing_by_ports.get(pkey, []), wanted,
                                                        ports_by_key[pkey], address_type, max_per_slice)
        to_create.extend(created)
        to_update.extend(updated)
        to_delete.extend(deleted)
    for pkey, slices in existing_by_ports.items():
        if pkey not in desired:
            to_delete.extend(slices)

    if len(existing) == len(to_delete) and not to_create:
        placeholder = _new_slice(service, [], address_type)
        if len(to_delete) == 1 and _same_placeholder(to_delete[0], placeholder):
            to_delete = []
        else:
            to_create.append(placeholder)

    changed = {id(s) for s in to_delete}
    changed_names = {(s.get("metadata") or {}).get("name") for s in to_update}
    unchanged = [s for s in existing if id(s) not in changed
                 and (s.get("metadata") or {}).get("name") not in changed_names]
    _reconcile_hints(service, to_create, to_update, unchanged)

    # Creates become updates of slices that would otherwise be deleted.
    i = 0
    while i < len(to_delete) and to_create:
        doomed = to_delete[i]
        if doomed.get("addressType") == to_create[-1].get("addressType") and _owned_by(doomed, service):
            slice_ = to_create.pop()
            slice_["metadata"] = {"name": doomed["metadata"]["name"], **slice_["metadata"]}
            to_update.append(slice_)
            del to_delete[i]
        else:
            i += 1

    if (service.get("metadata") or {}).get("deletionTimestamp"):
        to_create = []
    for slice_ in to_create + to_update:
        _set_trigger_time(slice_, trigger_time)
    plan.create.extend(to_create)
    plan.update.extend(to_update)
    plan.delete.extend(to_delete)


def _set_trigger_time(slice_: dict, trigger_time: str) -> None:
    meta = slice_["metadata"]
    annotations = dict(meta.get("annotations") or {})
    if trigger_time:
        annotations[ANNOTATION_TRIGGER_TIME] = trigger_time
    else:
        annotations.pop(ANNOTATION_TRIGGER_TIME, None)
    meta["annotations"] = annotations


def _same_placeholder(existing: dict, placeholder: dict) -> bool:
    """Upstream's placeholder comparison: namespace, labels, address type, no ports, no endpoints."""
    meta = existing.get("metadata") or {}
    return ((meta.get("namespace") or "default") == placeholder["metadata"]["namespace"]
            and (meta.get("labels") or {}) == placeholder["metadata"]["labels"]
            and existing.get("addressType") == placeholder["addressType"]
            and not existing.get("ports") and not existing.get("endpoints"))


def _reconcile_port_map(service: dict, existing: list[dict], wanted: dict[tuple, tuple], ports: list[dict],
                        address_type: str, max_per_slice: int) -> tuple[list[dict], list[dict], list[dict]]:
    by_name: dict[str, dict] = {}
    unchanged: list[str] = []
    to_update: list[str] = []
    to_delete: list[str] = []
    remaining = wanted  # ours to consume: built fresh for this sync
    empty: dict = {}

    # 1. Drop endpoints no longer wanted, refresh changed ones in place.
    for slice_ in existing:
        name = slice_["metadata"]["name"]
        by_name[name] = slice_
        old_endpoints = slice_.get("endpoints") or []
        new_endpoints = []
        changed = False
        for endpoint in old_endpoints:
            # Identity (addresses, hostname, target namespace/name) and the fields that make an endpoint
            # "changed" (targetRef compared without resourceVersion), inlined: this loop is the hot path.
            ref = endpoint.get("targetRef") or empty
            addresses = endpoint.get("addresses") or ()
            key = (tuple(addresses) if len(addresses) == 1 else tuple(sorted(addresses)),
                   endpoint.get("hostname") or "", ref.get("namespace") or "", ref.get("name") or "")
            got = remaining.pop(key, None)
            if got is None:
                continue
            cond = endpoint.get("conditions") or empty
            if got != (endpoint.get("nodeName"), endpoint.get("zone"), cond.get("ready"), cond.get("serving"),
                          cond.get("terminating"), ref.get("kind"), ref.get("uid")):
                changed = True
                new_endpoints.append(_build_endpoint(key, got))
            else:
                new_endpoints.append(endpoint)
        labels, labels_changed = _slice_labels(slice_, service)
        if changed or len(new_endpoints) != len(old_endpoints):
            if not new_endpoints:
                to_delete.append(name)
            else:
                copy = _copy_slice(slice_)
                copy["endpoints"] = new_endpoints
                copy["metadata"]["labels"] = labels
                by_name[name] = copy
                to_update.append(name)
        elif labels_changed:
            copy = _copy_slice(slice_)
            copy["metadata"]["labels"] = labels
            by_name[name] = copy
            to_update.append(name)
        else:
            unchanged.append(name)

    pending = sorted(remaining.items(), key=lambda item: _ip_sort_key(item[0][0][0], item[0][1]))
    pending.reverse()  # pop() from the end hands them out in address order

    # 2. Fill slices already being updated, fullest first.
    if pending and to_update:
        for name in sorted(to_update, key=lambda n: -len(by_name[n]["endpoints"])):
            slice_ = by_name[name]
            while pending and len(slice_["endpoints"]) < max_per_slice:
                slice_["endpoints"].append(_build_endpoint(*pending.pop()))

    # 3. Put a remainder into the unchanged slice that ends closest to full, else create new slices.
    to_create: list[dict] = []
    while pending:
        target = None
        if len(pending) < max_per_slice and unchanged:
            closest = max_per_slice
            for name in unchanged:
                diff = max_per_slice - (len(pending) + len(by_name[name].get("endpoints") or ()))
                if 0 <= diff < closest:
                    closest, target = diff, name
                    if diff == 0:
                        break
        if target is None:
            slice_ = _new_slice(service, ports, address_type)
        else:
            slice_ = _copy_slice(by_name[target])
            by_name[target] = slice_
        while pending and len(slice_["endpoints"]) < max_per_slice:
            slice_["endpoints"].append(_build_endpoint(*pending.pop()))
        if target is None:
            to_create.append(slice_)
        else:
            unchanged.remove(target)
            to_update.append(target)

    return (to_create, [by_name[n] for n in sorted(to_update)], [by_name[n] for n in sorted(to_delete)])


def _want_hints(service: dict) -> str | None:
    spec = service.get("spec") or {}
    annotations = (service.get("metadata") or {}).get("annotations") or {}
    for key in _TOPOLOGY_ANNOTATIONS:
        if key in annotations:
            if annotations[key] in ("Auto", "auto"):
                return "topology-mode"
            break
    distribution = spec.get("trafficDistribution")
    return distribution if distribution in TRAFFIC_DISTRIBUTIONS else None


def _wanted_hints(endpoint: dict, node_hints: bool) -> dict | None:
    zones = [{"name": endpoint["zone"]}] if endpoint.get("zone") else None
    nodes = [{"name": endpoint["nodeName"]}] if endpoint.get("nodeName") and node_hints else None
    if zones is None and nodes is None:
        return None
    hints: dict[str, Any] = {}
    if zones is not None:
        hints["forZones"] = zones
    if nodes is not None:
        hints["forNodes"] = nodes
    return hints


def _slice_hints_ok(slice_: dict, distribution: str | None) -> bool:
    node_hints = distribution == "PreferSameNode"
    for endpoint in slice_.get("endpoints") or ():
        if distribution is None:
            if endpoint.get("hints") is not None:
                return False
            continue
        if not (endpoint.get("conditions") or {}).get("ready"):
            continue
        want = _wanted_hints(endpoint, node_hints) or {}
        have = endpoint.get("hints") or {}
        if (have.get("forZones") or None) != want.get("forZones") or \
                (have.get("forNodes") or None) != want.get("forNodes"):
            return False
    return True


def _apply_hints(slice_: dict, distribution: str | None) -> None:
    node_hints = distribution == "PreferSameNode"
    endpoints = []
    for endpoint in slice_["endpoints"]:
        if distribution is None:
            if "hints" in endpoint:
                endpoint = {k: v for k, v in endpoint.items() if k != "hints"}
        elif (endpoint.get("conditions") or {}).get("ready"):
            hints = _wanted_hints(endpoint, node_hints)
            if hints != endpoint.get("hints"):
                endpoint = {k: v for k, v in endpoint.items() if k != "hints"}
                if hints is not None:
                    endpoint["hints"] = hints
        endpoints.append(endpoint)
    slice_["endpoints"] = endpoints


def _reconcile_hints(service: dict, to_create: list[dict], to_update: list[dict], unchanged: list[dict]) -> None:
    mode = _want_hints(service)
    if mode == "topology-mode":
        return  # the CPU-proportional heuristic of the topology-mode annotation is not modelled
    for slice_ in unchanged:
        if not _slice_hints_ok(slice_, mode):
            to_update.append(_copy_slice(slice_))
    for slice_ in to_create:
        _apply_hints(slice_, mode)
    for slice_ in to_update:
        _apply_hints(slice_, mode)


# ----------------------------------------------------------------------------------------------------------
# legacy Endpoints

def endpoints_for(service: dict, pods: Iterable[dict], max_addresses: int | None = MAX_ENDPOINTS_ADDRESSES
                  ) -> dict | None:
    """The v1 Endpoints object the endpoints controller writes for this Service (None without a selector).

    `max_addresses=None` builds it as clusters before 1.22 did, without the 1000-address cap."""
    spec = service.get("spec") or {}
    selector = spec.get("selector")
    if not selector or spec.get("type") == "ExternalName":
        return None
    namespace = _namespace(service)
    name = service["metadata"]["name"]
    publish_not_ready = bool(spec.get("publishNotReadyAddresses"))
    family = (spec.get("ipFamilies") or [None])[0]
    if family is None:
        cluster_ip = spec.get("clusterIP") or ""
        family = "IPv6" if ":" in cluster_ip else "IPv4"
    headless = _is_headless(service)
    subsets: dict[tuple, dict] = {}
    trigger = ""
    for pod in pods:
        meta = pod.get("metadata") or {}
        if (meta.get("namespace") or "default") != namespace or not _selects(selector, meta.get("labels")):
            continue
        status = pod.get("status") or {}
        if status.get("phase") in _TERMINAL_PHASES:
            continue
        if not publish_not_ready and meta.get("deletionTimestamp"):
            continue
        ips = _addresses_for(_pod_ips(pod), family)
        if not ips:
            continue
        trigger = _max_time(trigger, meta.get("creationTimestamp"), meta.get("deletionTimestamp"),
                            (_ready_condition(pod) or {}).get("lastTransitionTime"))
        address: dict[str, Any] = {"ip": ips[0]}
        pod_spec = pod.get("spec") or {}
        if _should_set_hostname(pod, service):
            address["hostname"] = pod_spec["hostname"]
        if pod_spec.get("nodeName"):
            address["nodeName"] = pod_spec["nodeName"]
        address["targetRef"] = {"kind": "Pod", "namespace": meta.get("namespace") or "default",
                                "name": meta.get("name"), "uid": meta.get("uid", "")}
        ready = publish_not_ready or _pod_ready(pod)
        ports = []
        for service_port in spec.get("ports") or ():
            number = _find_port(pod, service_port)
            if number is None:
                continue
            port = {"name": service_port.get("name"), "port": number,
                    "protocol": service_port.get("protocol") or "TCP"}
            if not port["name"]:
                del port["name"]
            if service_port.get("appProtocol"):
                port["appProtocol"] = service_port["appProtocol"]
            ports.append(port)
        if not ports and not (headless and not spec.get("ports")):
            continue  # no port of this Service resolves on this pod
        # Repacked as upstream's RepackSubsets does: addresses sharing the same set of ports share a subset.
        subset = subsets.setdefault(_ports_key(ports), {"addresses": [], "notReadyAddresses": [], "ports": ports})
        subset["addresses" if ready else "notReadyAddresses"].append(address)
    result_subsets = []
    for subset in subsets.values():
        out: dict[str, Any] = {}
        if subset["addresses"]:
            out["addresses"] = sorted(subset["addresses"], key=lambda a: (_ip_key(a["ip"]), a["targetRef"]["uid"]))
        if subset["notReadyAddresses"]:
            out["notReadyAddresses"] = sorted(subset["notReadyAddresses"],
                                              key=lambda a: (_ip_key(a["ip"]), a["targetRef"]["uid"]))
        if subset["ports"]:
            out["ports"] = sorted(subset["ports"], key=_port_sort_key)
        result_subsets.append(out)
    result_subsets.sort(key=lambda s: (_ip_key(((s.get("addresses") or s.get("notReadyAddresses") or
                                                 [{"ip": ""}])[0])["ip"]), _ports_key(s.get("ports"))))
    labels = dict(service["metadata"].get("labels") or {})
    if headless:
        labels[LABEL_HEADLESS] = ""
    else:
        labels.pop(LABEL_HEADLESS, None)
    labels[LABEL_ENDPOINTS_MANAGED_BY] = ENDPOINTS_CONTROLLER_NAME
    annotations = {}
    if trigger:
        annotations[ANNOTATION_TRIGGER_TIME] = trigger
    total = sum(len(s.get("addresses", ())) + len(s.get("notReadyAddresses", ())) for s in result_subsets)
    if max_addresses is not None and total > max_addresses:
        result_subsets = _truncate(result_subsets, max_addresses)
        annotations[ANNOTATION_OVER_CAPACITY] = "truncated"
    metadata: dict[str, Any] = {"name": name, "namespace": namespace, "labels": labels}
    if annotations:
        metadata["annotations"] = annotations
    return {"apiVersion": "v1", "kind": "Endpoints", "metadata": metadata, "subsets": result_subsets}


def _ip_key(ip: str) -> tuple:
    parts = ip.split(".")
    if len(parts) == 4 and all(p.isdigit() and len(p) <= 3 for p in parts):
        a, b, c, d = (int(p) for p in parts)
        if max(a, b, c, d) <= 255:
            return (4, (a << 24) | (b << 16) | (c << 8) | d)
    try:
        parsed = ipaddress.ip_address(ip)
        return (parsed.version, int(parsed))
    except ValueError:
        return (9, 0)


def _truncate(subsets: list[dict], limit: int) -> list[dict]:
    """Keep `limit` addresses: ready ones first, each subset cut in proportion to its size, like upstream."""
    ready_total = sum(len(s.get("addresses", ())) for s in subsets)
    keys = ("addresses",) if ready_total >= limit else ("addresses", "notReadyAddresses")
    total = sum(len(s.get(k, ())) for s in subsets for k in keys)
    out = []
    budget = limit
    for index, subset in enumerate(subsets):
        copy = dict(subset)
        if "notReadyAddresses" not in keys:
            copy.pop("notReadyAddresses", None)
        size = sum(len(subset.get(k, ())) for k in keys)
        share = budget if index == len(subsets) - 1 else min(budget, round(size * limit / total))
        for key in keys:
            items = subset.get(key, [])
            kept = items[:share]
            share -= len(kept)
            budget -= len(kept)
            if kept:
                copy[key] = kept
            else:
                copy.pop(key, None)
        if copy.get("addresses") or copy.get("notReadyAddresses"):
            out.append(copy)
    return out
