"""Server-side tables (`meta.k8s.io/v1 Table`): the columns and cells `kubectl get` prints, as upstream's printers."""
from __future__ import annotations

from typing import Any, Callable

from labsupport.control.clock import parse_rfc3339

Column = tuple[str, str, int]  # (name, type, priority); priority 1 = shown with -o wide


def human_duration(seconds: float) -> str:
    """A duration as kubectl prints ages: `5s`, `2m3s`, `15m`, `4h`, `3d5h`, `2y`."""
    secs = int(seconds)
    if secs < -1:
        return "<invalid>"
    if secs < 0:
        return "0s"
    if secs < 120:
        return f"{secs}s"
    minutes = secs // 60
    if minutes < 10:
        rest = secs % 60
        return f"{minutes}m" if rest == 0 else f"{minutes}m{rest}s"
    if minutes < 180:
        return f"{minutes}m"
    hours = secs // 3600
    if hours < 8:
        rest = minutes % 60
        return f"{hours}h" if rest == 0 else f"{hours}h{rest}m"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        rest = hours % 24
        return f"{hours // 24}d" if rest == 0 else f"{hours // 24}d{rest}h"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        rest = (hours // 24) % 365
        return f"{hours // 24 // 365}y" if rest == 0 else f"{hours // 24 // 365}y{rest}d"
    return f"{hours // 24 // 365}y"


def since(stamp: str | None, now: float) -> str:
    """The age of a timestamp, `<unknown>` when there is none."""
    if not stamp:
        return "<unknown>"
    try:
        return human_duration(now - parse_rfc3339(stamp))
    except ValueError:
        return "<unknown>"


def format_labels(labels: dict | None) -> str:
    """`a=b,c=d` sorted by key, `<none>` when empty."""
    if not labels:
        return "<none>"
    return ",".join(f"{k}={labels[k]}" for k in sorted(labels))


def format_label_selector(selector: dict | None) -> str:
    """A LabelSelector as `metav1.FormatLabelSelector` writes it."""
    if selector is None:
        return "<none>"
    parts = [f"{k}={v}" for k, v in sorted((selector.get("matchLabels") or {}).items())]
    for expr in selector.get("matchExpressions") or []:
        op, key, values = expr.get("operator"), expr.get("key"), expr.get("values") or []
        if op == "In":
            parts.append(f"{key} in ({','.join(values)})")
        elif op == "NotIn":
            parts.append(f"{key} notin ({','.join(values)})")
        elif op == "Exists":
            parts.append(key)
        elif op == "DoesNotExist":
            parts.append(f"!{key}")
    text = ",".join(parts)
    return text or "<none>"


def _more(items: list[str], total: int, limit: int = 3) -> str:
    text = ",".join(items[:limit])
    if total > limit:
        return f"{text} + {total - limit} more..."
    return text or "<unset>"


def _containers(spec: dict) -> tuple[str, str]:
    containers = spec.get("containers") or []
    return ",".join(c.get("name", "") for c in containers), ",".join(c.get("image", "") for c in containers)


# --- pods ----------------------------------------------------------------------------------------------------
def _pod_cells(pod: dict, now: float) -> list[Any]:
    spec, status, meta = pod.get("spec") or {}, pod.get("status") or {}, pod["metadata"]
    statuses = status.get("containerStatuses") or []
    total = len(spec.get("containers") or [])
    ready = 0
    restarts = 0
    last_restart = None
    reason = status.get("reason") or status.get("phase") or ""
    initializing = False
    for i, cs in enumerate(status.get("initContainerStatuses") or []):
        restarts += cs.get("restartCount", 0)
        state = cs.get("state") or {}
        if "terminated" in state and state["terminated"].get("exitCode", 0) == 0:
            continue
        initializing = True
        if "terminated" in state:
            term = state["terminated"]
            reason = "Init:" + (term.get("reason") or f"ExitCode:{term.get('exitCode')}")
        elif state.get("waiting", {}).get("reason") and state["waiting"]["reason"] != "PodInitializing":
            reason = "Init:" + state["waiting"]["reason"]
        else:
            reason = f"Init:{i}/{len(spec.get('initContainers') or [])}"
        break
    if not initializing:
        has_running = False
        for cs in reversed(statuses):
            restarts += cs.get("restartCount", 0)
            last = (cs.get("lastState") or {}).get("terminated") or {}
            if last.get("finishedAt"):
                when = parse_rfc3339(last["finishedAt"])
                last_restart = when if last_restart is None else max(last_restart, when)
            state = cs.get("state") or {}
            if state.get("waiting", {}).get("reason"):
                reason = state["waiting"]["reason"]
            elif "terminated" in state:
                term = state["terminated"]
                if term.get("reason"):
                    reason = term["reason"]
                elif term.get("signal"):
                    reason = f"Signal:{term['signal']}"
                else:
                    reason = f"ExitCode:{term.get('exitCode', 0)}"
            elif "running" in state and cs.get("ready"):
                has_running = True
                ready += 1
        if reason == "Completed" and has_running:
            conds = {c.get("type"): c.get("status") for c in status.get("conditions") or []}
            reason = "Running" if conds.get("Ready") == "True" else "NotReady"
    if meta.get("deletionTimestamp"):
        reason = "Unknown" if status.get("reason") == "NodeLost" else "Terminating"
    restart_text = str(restarts)
    if last_restart is not None and restarts:
        restart_text = f"{restarts} ({human_duration(now - last_restart)} ago)"
    gates = spec.get("readinessGates") or []
    if gates:
        conds = {c.get("type"): c.get("status") for c in status.get("conditions") or []}
        gate_text = f"{sum(1 for g in gates if conds.get(g.get('conditionType')) == 'True')}/{len(gates)}"
    else:
        gate_text = "<none>"
    return [meta["name"], f"{ready}/{total}", reason, restart_text, since(meta.get("creationTimestamp"), now),
            status.get("podIP") or "<none>", spec.get("nodeName") or "<none>",
            status.get("nominatedNodeName") or "<none>", gate_text]


POD_COLUMNS: list[Column] = [("Name", "string", 0), ("Ready", "string", 0), ("Status", "string", 0),
                             ("Restarts", "string", 0), ("Age", "string", 0), ("IP", "string", 1),
                             ("Node", "string", 1), ("Nominated Node", "string", 1),
                             ("Readiness Gates", "string", 1)]


# --- services and endpoints ----------------------------------------------------------------------------------
def _lb_ingress(svc: dict, wide: bool = True) -> str:
    ingress = ((svc.get("status") or {}).get("loadBalancer") or {}).get("ingress") or []
    text = ",".join(i.get("ip") or i.get("hostname") or "" for i in ingress if i.get("ip") or i.get("hostname"))
    if not wide and len(text) > 16:
        text = text[:13] + "..."
    return text


def _external_ip(svc: dict) -> str:
    spec = svc.get("spec") or {}
    kind = spec.get("type", "ClusterIP")
    external = spec.get("externalIPs") or []
    if kind in ("ClusterIP", "NodePort"):
        return ",".join(external) if external else "<none>"
    if kind == "LoadBalancer":
        ips = [x for x in [_lb_ingress(svc)] if x] + external
        return ",".join(ips) if ips else "<pending>"
    if kind == "ExternalName":
        return spec.get("externalName", "")
    return "<unknown>"


def _service_ports(ports: list[dict]) -> str:
    out = []
    for p in ports or []:
        proto = p.get("protocol", "TCP")
        if p.get("nodePort"):
            out.append(f"{p.get('port')}:{p['nodePort']}/{proto}")
        else:
            out.append(f"{p.get('port')}/{proto}")
    return ",".join(out) if out else "<none>"


def _service_cells(svc: dict, now: float) -> list[Any]:
    spec = svc.get("spec") or {}
    return [svc["metadata"]["name"], spec.get("type", "ClusterIP"), spec.get("clusterIP") or "<none>",
            _external_ip(svc), _service_ports(spec.get("ports") or []),
            since(svc["metadata"].get("creationTimestamp"), now), format_labels(spec.get("selector"))]


SERVICE_COLUMNS: list[Column] = [("Name", "string", 0), ("Type", "string", 0), ("Cluster-IP", "string", 0),
                                 ("External-IP", "string", 0), ("Port(s)", "string", 0), ("Age", "string", 0),
                                 ("Selector", "string", 1)]


def _slice_cells(eps: dict, now: float) -> list[Any]:
    ports = eps.get("ports") or []
    port_names = []
    for p in ports:
        if p.get("port") is not None:
            port_names.append(str(p["port"]))
        elif p.get("name"):
            port_names.append(p["name"])
        else:
            port_names.append("*")
    addresses = [a for e in eps.get("endpoints") or [] for a in e.get("addresses") or []]
    return [eps["metadata"]["name"], eps.get("addressType", ""), _more(port_names, len(port_names)),
            _more(addresses, len(addresses)), since(eps["metadata"].get("creationTimestamp"), now)]


SLICE_COLUMNS: list[Column] = [("Name", "string", 0), ("AddressType", "string", 0), ("Ports", "string", 0),
                               ("Endpoints", "string", 0), ("Age", "string", 0)]


def _endpoints_cells(ep: dict, now: float) -> list[Any]:
    pairs = []
    for subset in ep.get("subsets") or []:
        ports = subset.get("ports") or []
        addresses = subset.get("addresses") or []
        if not ports:
            pairs.extend(a.get("ip", "") for a in addresses)
        for port in ports:
            pairs.extend(f"{a.get('ip')}:{port.get('port')}" for a in addresses)
    text = _more(pairs, len(pairs)) if pairs else "<none>"
    return [ep["metadata"]["name"], text, since(ep["metadata"].get("creationTimestamp"), now)]


ENDPOINTS_COLUMNS: list[Column] = [("Name", "string", 0), ("Endpoints", "string", 0), ("Age", "string", 0)]


# --- workloads -----------------------------------------------------------------------------------------------
def _deployment_cells(d: dict, now: float) -> list[Any]:
    spec, status = d.get("spec") or {}, d.get("status") or {}
    names, images = _containers((spec.get("template") or {}).get("spec") or {})
    return [d["metadata"]["name"], f"{status.get('readyReplicas', 0)}/{spec.get('replicas', 1)}",
            status.get("updatedReplicas", 0), status.get("availableReplicas", 0),
            since(d["metadata"].get("creationTimestamp"), now), names, images,
            format_label_selector(spec.get("selector"))]


DEPLOYMENT_COLUMNS: list[Column] = [("Name", "string", 0), ("Ready", "string", 0), ("Up-to-date", "integer", 0),
                                    ("Available", "integer", 0), ("Age", "string", 0), ("Containers", "string", 1),
                                    ("Images", "string", 1), ("Selector", "string", 1)]


def _replicaset_cells(rs: dict, now: float) -> list[Any]:
    spec, status = rs.get("spec") or {}, rs.get("status") or {}
    names, images = _containers((spec.get("template") or {}).get("spec") or {})
    return [rs["metadata"]["name"], spec.get("replicas", 1), status.get("replicas", 0),
            status.get("readyReplicas", 0), since(rs["metadata"].get("creationTimestamp"), now), names, images,
            format_label_selector(spec.get("selector"))]


REPLICASET_COLUMNS: list[Column] = [("Name", "string", 0), ("Desired", "integer", 0), ("Current", "integer", 0),
                                    ("Ready", "integer", 0), ("Age", "string", 0), ("Containers", "string", 1),
                                    ("Images", "string", 1), ("Selector", "string", 1)]


def _statefulset_cells(s: dict, now: float) -> list[Any]:
    spec, status = s.get("spec") or {}, s.get("status") or {}
    names, images = _containers((spec.get("template") or {}).get("spec") or {})
    return [s["metadata"]["name"], f"{status.get('readyReplicas', 0)}/{spec.get('replicas', 1)}",
            since(s["metadata"].get("creationTimestamp"), now), names, images]


STATEFULSET_COLUMNS: list[Column] = [("Name", "string", 0), ("Ready", "string", 0), ("Age", "string", 0),
                                     ("Containers", "string", 1), ("Images", "string", 1)]


def _daemonset_cells(ds: dict, now: float) -> list[Any]:
    spec, status = ds.get("spec") or {}, ds.get("status") or {}
    template = (spec.get("template") or {}).get("spec") or {}
    names, images = _containers(template)
    return [ds["metadata"]["name"], status.get("desiredNumberScheduled", 0), status.get("currentNumberScheduled", 0),
            status.get("numberReady", 0), status.get("updatedNumberScheduled", 0),
            status.get("numberAvailable", 0), format_labels(template.get("nodeSelector")),
            since(ds["metadata"].get("creationTimestamp"), now), names, images,
            format_label_selector(spec.get("selector"))]


DAEMONSET_COLUMNS: list[Column] = [("Name", "string", 0), ("Desired", "integer", 0), ("Current", "integer", 0),
                                   ("Ready", "integer", 0), ("Up-to-date", "integer", 0),
                                   ("Available", "integer", 0), ("Node Selector", "string", 0),
                                   ("Age", "string", 0), ("Containers", "string", 1), ("Images", "string", 1),
                                   ("Selector", "string", 1)]


# --- cluster objects -----------------------------------------------------------------------------------------
def _node_cells(node: dict, now: float) -> list[Any]:
    meta, spec, status = node["metadata"], node.get("spec") or {}, node.get("status") or {}
    state = "Unknown"
    for cond in status.get("conditions") or []:
        if cond.get("type") == "Ready":
            state = "Ready" if cond.get("status") == "True" else "NotReady"
    if spec.get("unschedulable"):
        state += ",SchedulingDisabled"
    roles = set()
    for key, value in (meta.get("labels") or {}).items():
        if key.startswith("node-role.kubernetes.io/"):
            roles.add(key.split("/", 1)[1])
        elif key == "kubernetes.io/role" and value:
            roles.add(value)
    info = status.get("nodeInfo") or {}
    addresses = {a.get("type"): a.get("address") for a in status.get("addresses") or []}
    return [meta["name"], state, ",".join(sorted(r for r in roles if r)) or "<none>",
            since(meta.get("creationTimestamp"), now), info.get("kubeletVersion", ""),
            addresses.get("InternalIP") or "<none>", addresses.get("ExternalIP") or "<none>",
            info.get("osImage", "<unknown>"), info.get("kernelVersion", "<unknown>"),
            info.get("containerRuntimeVersion", "<unknown>")]


NODE_COLUMNS: list[Column] = [("Name", "string", 0), ("Status", "string", 0), ("Roles", "string", 0),
                              ("Age", "string", 0), ("Version", "string", 0), ("Internal-IP", "string", 1),
                              ("External-IP", "string", 1), ("OS-Image", "string", 1),
                              ("Kernel-Version", "string", 1), ("Container-Runtime", "string", 1)]


def _namespace_cells(ns: dict, now: float) -> list[Any]:
    return [ns["metadata"]["name"], (ns.get("status") or {}).get("phase", "Active"),
            since(ns["metadata"].get("creationTimestamp"), now)]


def _configmap_cells(cm: dict, now: float) -> list[Any]:
    return [cm["metadata"]["name"], len(cm.get("data") or {}) + len(cm.get("binaryData") or {}),
            since(cm["metadata"].get("creationTimestamp"), now)]


def _event_cells(ev: dict, now: float) -> list[Any]:
    involved = ev.get("involvedObject") or {}
    first = ev.get("firstTimestamp") or ev.get("eventTime") or ev["metadata"].get("creationTimestamp")
    last = ev.get("lastTimestamp") or first
    count = ev.get("count") or 1
    series = ev.get("series") or {}
    if series:
        last, count = series.get("lastObservedTime") or last, series.get("count") or count
    source = ev.get("source") or {}
    component = source.get("component") or ev.get("reportingComponent") or ""
    instance = source.get("host") or ev.get("reportingInstance") or ""
    kind = str(involved.get("kind", "")).lower()
    target = f"{kind}/{involved['name']}" if involved.get("name") else kind
    return [since(last, now), ev.get("type", ""), ev.get("reason", ""), target, involved.get("fieldPath", ""),
            f"{component}, {instance}" if instance else component, (ev.get("message") or "").strip(),
            since(first, now), count, ev["metadata"]["name"]]


EVENT_COLUMNS: list[Column] = [("Last Seen", "string", 0), ("Type", "string", 0), ("Reason", "string", 0),
                               ("Object", "string", 0), ("Subobject", "string", 1), ("Source", "string", 1),
                               ("Message", "string", 0), ("First Seen", "string", 1), ("Count", "string", 1),
                               ("Name", "string", 1)]

PRINTERS: dict[str, tuple[list[Column], Callable[[dict, float], list[Any]]]] = {
    "Pod": (POD_COLUMNS, _pod_cells),
    "Service": (SERVICE_COLUMNS, _service_cells),
    "EndpointSlice": (SLICE_COLUMNS, _slice_cells),
    "Endpoints": (ENDPOINTS_COLUMNS, _endpoints_cells),
    "Deployment": (DEPLOYMENT_COLUMNS, _deployment_cells),
    "ReplicaSet": (REPLICASET_COLUMNS, _replicaset_cells),
    "StatefulSet": (STATEFULSET_COLUMNS, _statefulset_cells),
    "DaemonSet": (DAEMONSET_COLUMNS, _daemonset_cells),
    "Node": (NODE_COLUMNS, _node_cells),
    "Namespace": ([("Name", "string", 0), ("Status", "string", 0), ("Age", "string", 0)], _namespace_cells),
    "ConfigMap": ([("Name", "string", 0), ("Data", "string", 0), ("Age", "string", 0)], _configmap_cells),
    "Event": (EVENT_COLUMNS, _event_cells),
}

DESCRIPTIONS = {"Name": "Name must be unique within a namespace. Is required when creating resources, although some "
                        "resources may allow a client to request the generation of an appropriate name "
                        "automatically. Name is primarily intended for creation idempotence and configuration "
                        "definition. Cannot be updated.",
                "Age": "CreationTimestamp is a timestamp representing the server time when this object was created."}


def column_definitions(kind: str) -> list[dict]:
    """The Table's columnDefinitions for a kind."""
    columns = PRINTERS.get(kind, ([("Name", "string", 0), ("Age", "string", 0)], None))[0]
    return [{"name": name, "type": type_, "format": "name" if name == "Name" and i == 0 else "",
             "description": DESCRIPTIONS.get(name, name), "priority": prio}
            for i, (name, type_, prio) in enumerate(columns)]


def row_cells(obj: dict, now: float) -> list[Any]:
    """One object's cells."""
    printer = PRINTERS.get(obj.get("kind", ""))
    if printer is None:
        return [obj["metadata"]["name"], since(obj["metadata"].get("creationTimestamp"), now)]
    return printer[1](obj, now)


def partial_metadata(obj: dict) -> dict:
    """The row's object as `includeObject=Metadata` gives it."""
    meta = {k: v for k, v in obj["metadata"].items() if k != "managedFields"}
    return {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": meta}


def table(kind: str, objects: list[dict], now: float, *, resource_version: str = "", include: str = "Metadata",
          with_columns: bool = True) -> dict:
    """A `meta.k8s.io/v1 Table` of objects of one kind."""
    rows = []
    for obj in objects:
        row: dict[str, Any] = {"cells": row_cells(obj, now)}
        if include == "Object":
            row["object"] = obj
        elif include != "None":
            row["object"] = partial_metadata(obj)
        rows.append(row)
    out: dict[str, Any] = {"kind": "Table", "apiVersion": "meta.k8s.io/v1",
                           "metadata": {"resourceVersion": resource_version} if resource_version else {}}
    out["columnDefinitions"] = column_definitions(kind) if with_columns else []
    out["rows"] = rows
    return out
