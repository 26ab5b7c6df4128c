"""Upstream defaulting: the fields the API server fills in before it stores an object."""
from __future__ import annotations

import copy
from typing import Any, Callable

DEFAULT_TOLERATION_SECONDS = 300
NOT_READY_TAINT = "node.kubernetes.io/not-ready"
UNREACHABLE_TAINT = "node.kubernetes.io/unreachable"


def apply_defaults(obj: dict) -> dict:
    """A new object with every upstream default filled in for its kind; the argument is left untouched."""
    out = copy.deepcopy(obj)
    fill = _BY_KIND.get(out.get("kind", ""))
    if fill is not None:
        fill(out)
    return out


def _set(d: dict, key: str, value: Any) -> Any:
    """`d[key]` when present (and not None), else store `value` there; returns the value now held."""
    if d.get(key) is None:
        d[key] = value
    return d[key]


def _dict(d: dict, key: str) -> dict:
    """The dict at `d[key]`, created empty when missing."""
    if not isinstance(d.get(key), dict):
        d[key] = {}
    return d[key]


# --- Service ---------------------------------------------------------------------------------------------------

def default_service(svc: dict) -> None:
    """Service defaults: type, port protocol/targetPort, affinity, traffic policies, IP families, clusterIPs."""
    spec = _dict(svc, "spec")
    svc_type = _set(spec, "type", "ClusterIP")
    affinity = _set(spec, "sessionAffinity", "None")
    if affinity == "ClientIP":
        client_ip = _dict(_dict(spec, "sessionAffinityConfig"), "clientIP")
        _set(client_ip, "timeoutSeconds", 10800)
    for port in spec.get("ports") or []:
        _set(port, "protocol", "TCP")
        if port.get("targetPort") in (None, 0, ""):
            port["targetPort"] = port.get("port")
    if svc_type in ("NodePort", "LoadBalancer") or spec.get("externalIPs"):
        _set(spec, "externalTrafficPolicy", "Cluster")
    if svc_type == "LoadBalancer":
        _set(spec, "allocateLoadBalancerNodePorts", True)
    if svc_type != "ExternalName":
        _set(spec, "internalTrafficPolicy", "Cluster")
        if spec.get("clusterIP") and not spec.get("clusterIPs"):
            spec["clusterIPs"] = [spec["clusterIP"]]
        elif spec.get("clusterIPs") and not spec.get("clusterIP"):
            spec["clusterIP"] = spec["clusterIPs"][0]
        headless = spec.get("clusterIP") == "None"
        if headless and not spec.get("selector"):
            # Headless without selector: the API server asks for both families when the cluster has them;
            # on a single-stack cluster that leaves the one family it has.
            _set(spec, "ipFamilyPolicy", "RequireDualStack")
        else:
            _set(spec, "ipFamilyPolicy", "SingleStack")
        _set(spec, "ipFamilies", ["IPv4"])
    status = _dict(svc, "status")
    _dict(status, "loadBalancer")


def _needs_cluster_ip(spec: dict) -> bool:
    return spec.get("type", "ClusterIP") != "ExternalName"


def _needs_node_port(spec: dict) -> bool:
    return spec.get("type") in ("NodePort", "LoadBalancer")


def _needs_health_check(spec: dict) -> bool:
    return spec.get("type") == "LoadBalancer" and spec.get("externalTrafficPolicy") == "Local"


def _externally_accessible(spec: dict) -> bool:
    return spec.get("type") in ("NodePort", "LoadBalancer") or (
        spec.get("type") == "ClusterIP" and bool(spec.get("externalIPs")))


def prepare_service_update(new: dict, old: dict) -> dict:
    """A new Service prepared for an update as the registry does before validating it.

    Allocated values the client left out are carried over from `old` (clusterIP/clusterIPs, nodePorts matched by
    port name, healthCheckNodePort); clusterIPs follow a changed clusterIP; and fields the new type no longer uses
    are dropped when the client did not change them (clusterIPs for ExternalName, nodePorts, healthCheckNodePort,
    allocateLoadBalancerNodePorts, loadBalancerClass, externalTrafficPolicy, the load-balancer status).
    """
    svc = copy.deepcopy(new)
    spec = _dict(svc, "spec")
    old_spec = old.get("spec") or {}
    # Carry over what was allocated.
    if _needs_cluster_ip(old_spec) and _needs_cluster_ip(spec):
        if not spec.get("clusterIP") and old_spec.get("clusterIP"):
            spec["clusterIP"] = old_spec["clusterIP"]
        if not spec.get("clusterIPs") and old_spec.get("clusterIPs"):
            spec["clusterIPs"] = list(old_spec["clusterIPs"])
    if _needs_node_port(old_spec) and _needs_node_port(spec):
        in_use = {p.get("nodePort") for p in old_spec.get("ports") or []} & \
            {p.get("nodePort") for p in spec.get("ports") or []}
        by_name = {p.get("name", ""): p.get("nodePort") for p in old_spec.get("ports") or []}
        for port in spec.get("ports") or []:
            if not port.get("nodePort"):
                previous = by_name.get(port.get("name", ""))
                if previous and previous not in in_use:
                    port["nodePort"] = previous
    if _needs_health_check(old_spec) and _needs_health_check(spec) and not spec.get("healthCheckNodePort"):
        if old_spec.get("healthCheckNodePort"):
            spec["healthCheckNodePort"] = old_spec["healthCheckNodePort"]
    # clusterIPs follow clusterIP.
    old_ips = old_spec.get("clusterIPs") or []
    if spec.get("clusterIPs") == old_ips and old_ips:
        if not spec.get("clusterIP"):
            spec.pop("clusterIPs", None)
        elif spec["clusterIP"] != old_ips[0]:
            spec["clusterIPs"] = [spec["clusterIP"]] + list(old_ips[1:])
    elif spec.get("clusterIP") and not spec.get("clusterIPs"):
        spec["clusterIPs"] = [spec["clusterIP"]]
    # Drop what the new type does not use, unless the client changed it.
    if _needs_cluster_ip(old_spec) and not _needs_cluster_ip(spec):
        if spec.get("clusterIPs", []) == old_spec.get("clusterIPs", []) and \
                spec.get("clusterIP", "") == old_spec.get("clusterIP", ""):
            spec.pop("clusterIP", None)
            spec.pop("clusterIPs", None)
        if spec.get("ipFamilies") == old_spec.get("ipFamilies"):
            spec.pop("ipFamilies", None)
        if spec.get("ipFamilyPolicy") == old_spec.get("ipFamilyPolicy"):
            spec.pop("ipFamilyPolicy", None)
    if _needs_node_port(old_spec) and not _needs_node_port(spec):
        old_ports = [p.get("nodePort") for p in old_spec.get("ports") or []]
        new_ports = [p.get("nodePort") for p in spec.get("ports") or []]
        if all(n in (None, 0) or n in old_ports for n in new_ports):
            for port in spec.get("ports") or []:
                port.pop("nodePort", None)
    if _needs_health_check(old_spec) and not _needs_health_check(spec):
        if spec.get("healthCheckNodePort") in (None, 0, old_spec.get("healthCheckNodePort")):
            spec.pop("healthCheckNodePort", None)
    if old_spec.get("type") == "LoadBalancer" and spec.get("type") != "LoadBalancer":
        if spec.get("allocateLoadBalancerNodePorts") is not None and \
                spec.get("allocateLoadBalancerNodePorts") == old_spec.get("allocateLoadBalancerNodePorts"):
            spec.pop("allocateLoadBalancerNodePorts")
        if spec.get("loadBalancerClass") == old_spec.get("loadBalancerClass"):
            spec.pop("loadBalancerClass", None)
    if _externally_accessible(old_spec) and not _externally_accessible(spec):
        if spec.get("externalTrafficPolicy") == old_spec.get("externalTrafficPolicy"):
            spec.pop("externalTrafficPolicy", None)
    if spec.get("type") != "LoadBalancer" and isinstance(svc.get("status"), dict):
        svc["status"]["loadBalancer"] = {}
    return svc


# --- Pods and pod templates ------------------------------------------------------------------------------------

def image_pull_policy(image: str) -> str:
    """`Always` for an image tagged `:latest` or untagged, else `IfNotPresent` (digests included)."""
    if "@" in image:
        return "IfNotPresent"
    last = image.rsplit("/", 1)[-1]
    if ":" not in last:
        return "Always"
    return "Always" if last.rsplit(":", 1)[1] == "latest" else "IfNotPresent"


def default_probe(probe: dict) -> None:
    """Probe defaults: period 10s, timeout 1s, success 1, failure 3; httpGet path `/` and scheme HTTP."""
    _set(probe, "periodSeconds", 10)
    _set(probe, "timeoutSeconds", 1)
    _set(probe, "successThreshold", 1)
    _set(probe, "failureThreshold", 3)
    if isinstance(probe.get("httpGet"), dict):
        _set(probe["httpGet"], "path", "/")
        _set(probe["httpGet"], "scheme", "HTTP")


def default_container(container: dict) -> None:
    """Container defaults: pull policy, termination message, resources, port protocols, probe timings."""
    if container.get("image") is not None:
        _set(container, "imagePullPolicy", image_pull_policy(str(container["image"])))
    _set(container, "terminationMessagePath", "/dev/termination-log")
    _set(container, "terminationMessagePolicy", "File")
    _set(container, "resources", {})
    for port in container.get("ports") or []:
        _set(port, "protocol", "TCP")
    for name in ("livenessProbe", "readinessProbe", "startupProbe"):
        if isinstance(container.get(name), dict):
            default_probe(container[name])
    for env in container.get("env") or []:
        field_ref = (env.get("valueFrom") or {}).get("fieldRef")
        if isinstance(field_ref, dict):
            _set(field_ref, "apiVersion", "v1")


def default_pod_spec(spec: dict) -> None:
    """PodSpec defaults shared by Pods and pod templates."""
    _set(spec, "restartPolicy", "Always")
    _set(spec, "terminationGracePeriodSeconds", 30)
    _set(spec, "dnsPolicy", "ClusterFirst")
    _set(spec, "schedulerName", "default-scheduler")
    _set(spec, "securityContext", {})
    _set(spec, "enableServiceLinks", True)
    for key in ("initContainers", "containers"):
        for container in spec.get(key) or []:
            default_container(container)


def _tolerates(tolerations: list[dict], key: str) -> bool:
    for tol in tolerations:
        effect_ok = tol.get("effect") in (None, "", "NoExecute")
        if effect_ok and (tol.get("key") == key or (not tol.get("key") and tol.get("operator") == "Exists")):
            return True
    return False


def default_pod(pod: dict) -> None:
    """Pod defaults, with what admission adds on create: service account, priority, default tolerations."""
    spec = _dict(pod, "spec")
    default_pod_spec(spec)
    _set(spec, "serviceAccountName", "default")
    _set(spec, "serviceAccount", spec["serviceAccountName"])
    _set(spec, "priority", 0)
    _set(spec, "preemptionPolicy", "PreemptLowerPriority")
    tolerations = spec.get("tolerations") or []
    for key in (NOT_READY_TAINT, UNREACHABLE_TAINT):
        if not _tolerates(tolerations, key):
            tolerations.append({"key": key, "operator": "Exists", "effect": "NoExecute",
                                "tolerationSeconds": DEFAULT_TOLERATION_SECONDS})
    spec["tolerations"] = tolerations


def _default_template(spec: dict) -> None:
    template = spec.get("template")
    if isinstance(template, dict):
        default_pod_spec(_dict(template, "spec"))


# --- workloads -------------------------------------------------------------------------------------------------

def default_deployment(obj: dict) -> None:
    """Deployment defaults (apps/v1): replicas 1, RollingUpdate 25%/25%, history 10, deadline 600s."""
    spec = _dict(obj, "spec")
    _set(spec, "replicas", 1)
    strategy = _dict(spec, "strategy")
    if _set(strategy, "type", "RollingUpdate") == "RollingUpdate":
        rolling = _dict(strategy, "rollingUpdate")
        _set(rolling, "maxUnavailable", "25%")
        _set(rolling, "maxSurge", "25%")
    _set(spec, "revisionHistoryLimit", 10)
    _set(spec, "progressDeadlineSeconds", 600)
    _default_template(spec)


def default_replicaset(obj: dict) -> None:
    """ReplicaSet defaults: replicas 1 and the pod template's."""
    spec = _dict(obj, "spec")
    _set(spec, "replicas", 1)
    _default_template(spec)


def default_statefulset(obj: dict) -> None:
    """StatefulSet defaults: OrderedReady, RollingUpdate partition 0, replicas 1, history 10, PVC policy Retain."""
    spec = _dict(obj, "spec")
    _set(spec, "podManagementPolicy", "OrderedReady")
    strategy = _dict(spec, "updateStrategy")
    if _set(strategy, "type", "RollingUpdate") == "RollingUpdate":
        _set(_dict(strategy, "rollingUpdate"), "partition", 0)
    _set(spec, "replicas", 1)
    _set(spec, "revisionHistoryLimit", 10)
    policy = _dict(spec, "persistentVolumeClaimRetentionPolicy")
    _set(policy, "whenDeleted", "Retain")
    _set(policy, "whenScaled", "Retain")
    _default_template(spec)


def default_daemonset(obj: dict) -> None:
    """DaemonSet defaults: RollingUpdate maxUnavailable 1 / maxSurge 0, history 10."""
    spec = _dict(obj, "spec")
    strategy = _dict(spec, "updateStrategy")
    if _set(strategy, "type", "RollingUpdate") == "RollingUpdate":
        rolling = _dict(strategy, "rollingUpdate")
        _set(rolling, "maxUnavailable", 1)
        _set(rolling, "maxSurge", 0)
    _set(spec, "revisionHistoryLimit", 10)
    _default_template(spec)


# --- the rest --------------------------------------------------------------------------------------------------

def default_namespace(obj: dict) -> None:
    """Namespace defaults: the `kubernetes.io/metadata.name` label, finalizer `kubernetes`, phase Active."""
    metadata = _dict(obj, "metadata")
    if metadata.get("name"):
        _dict(metadata, "labels")["kubernetes.io/metadata.name"] = metadata["name"]
    _set(_dict(obj, "spec"), "finalizers", ["kubernetes"])
    _set(_dict(obj, "status"), "phase", "Active")


def default_endpointslice(obj: dict) -> None:
    """EndpointSlice defaults: port name "" and protocol TCP."""
    for port in obj.get("ports") or []:
        _set(port, "name", "")
        _set(port, "protocol", "TCP")


def default_endpoints(obj: dict) -> None:
    """Endpoints defaults: port protocol TCP."""
    for subset in obj.get("subsets") or []:
        for port in subset.get("ports") or []:
            _set(port, "protocol", "TCP")


def default_node(obj: dict) -> None:
    """Node defaults: allocatable equals capacity when not given."""
    status = obj.get("status")
    if isinstance(status, dict) and isinstance(status.get("capacity"), dict):
        _set(status, "allocatable", dict(status["capacity"]))


def default_configmap(obj: dict) -> None:
    """ConfigMaps have no defaults."""


_BY_KIND: dict[str, Callable[[dict], None]] = {
    "Service": default_service,
    "Pod": default_pod,
    "Deployment": default_deployment,
    "ReplicaSet": default_replicaset,
    "StatefulSet": default_statefulset,
    "DaemonSet": default_daemonset,
    "Namespace": default_namespace,
    "EndpointSlice": default_endpointslice,
    "Endpoints": default_endpoints,
    "Node": default_node,
    "ConfigMap": default_configmap,
}
