"""Validation with the API server's own messages: every field error of an object, in upstream's order.

Call it the way kube-apiserver orders a create: `apply_defaults` (decoding), name from `generateName`,
allocation (`ServiceAllocator.allocate`), then `validate(obj)`; on failure release what was allocated.
`validate` never requires what the allocator fills in (clusterIP, nodePorts, healthCheckNodePort), so calling it
before allocation gives the same answer for everything else.
"""
from __future__ import annotations

import copy
import ipaddress
import json
import re
from typing import Any, Callable

from labsupport.errors import BadRequest, FieldError, Invalid
from labsupport.model import meta
from labsupport.model.defaults import prepare_service_update
from labsupport.model.kinds import KindInfo, by_kind
from labsupport.model.selectors import from_label_selector

NEGATIVE = "must be greater than or equal to 0"
IMMUTABLE = "field is immutable"
PORT_RANGE = "must be between 1 and 65535, inclusive"
SELECTOR_MISMATCH = "`selector` does not match template `labels`"
VALID_IP = "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"
TOTAL_ANNOTATION_SIZE = 256 * 1024
MAX_CLIENT_IP_AFFINITY_SECONDS = 86400
MAX_SLICE_ENDPOINTS = 1000
MAX_SLICE_PORTS = 100
MAX_ENDPOINT_ADDRESSES = 100

PROTOCOLS = ["SCTP", "TCP", "UDP"]
SERVICE_TYPES = ["ClusterIP", "ExternalName", "LoadBalancer", "NodePort"]
SESSION_AFFINITIES = ["ClientIP", "None"]
TRAFFIC_POLICIES = ["Cluster", "Local"]
TRAFFIC_DISTRIBUTIONS = ["PreferClose", "PreferSameZone", "PreferSameNode"]
IP_FAMILY_POLICIES = ["PreferDualStack", "RequireDualStack", "SingleStack"]
IP_FAMILIES = ["IPv4", "IPv6"]
RESTART_POLICIES = ["Always", "OnFailure", "Never"]
DNS_POLICIES = ["ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"]
ADDRESS_TYPES = ["FQDN", "IPv4", "IPv6"]
CONFIG_KEY_FMT = "[-._a-zA-Z0-9]+"
CONFIG_KEY_ERR = "a valid config key must consist of alphanumeric characters, '-', '_' or '.'"


class GoValue:
    """A value already rendered the way Go's `%#v` prints it (maps, structs), for a field error."""

    def __init__(self, text: str):
        self.text = text

    def __str__(self) -> str:
        return self.text

    def __eq__(self, other: object) -> bool:
        return isinstance(other, GoValue) and other.text == self.text

    def __hash__(self) -> int:
        return hash(self.text)


def go_string_map(value: dict | None) -> GoValue:
    """`map[string]string{"app":"web"}` (keys sorted, as Go prints maps), or `map[string]string(nil)`."""
    if value is None:
        return GoValue("map[string]string(nil)")
    items = ", ".join(f"{json.dumps(str(k))}:{json.dumps(str(v))}" for k, v in sorted(value.items()))
    return GoValue("map[string]string{" + items + "}")


def _go_strings(values: list | None) -> str:
    if values is None:
        return "[]string(nil)"
    return "[]string{" + ", ".join(json.dumps(str(v)) for v in values) + "}"


def go_label_selector(selector: dict | None) -> GoValue:
    """A LabelSelector as `%#v` prints `v1.LabelSelector{MatchLabels:…, MatchExpressions:…}`."""
    selector = selector or {}
    exprs = selector.get("matchExpressions")
    if exprs is None:
        rendered = "[]v1.LabelSelectorRequirement(nil)"
    else:
        rendered = "[]v1.LabelSelectorRequirement{" + ", ".join(
            f"v1.LabelSelectorRequirement{{Key:{json.dumps(e.get('key', ''))}, "
            f"Operator:{json.dumps(e.get('operator', ''))}, Values:{_go_strings(e.get('values'))}}}"
            for e in exprs) + "}"
    return GoValue(f"v1.LabelSelector{{MatchLabels:{go_string_map(selector.get('matchLabels')).text}, "
                   f"MatchExpressions:{rendered}}}")


def _go_service_port_key(protocol: str, port: int) -> GoValue:
    return GoValue(f'core.ServicePort{{Name:"", Protocol:{json.dumps(protocol)}, AppProtocol:(*string)(nil), '
                   f'Port:{port}, TargetPort:intstr.IntOrString{{Type:0, IntVal:0, StrVal:""}}, NodePort:0}}')


# --- generic helpers ---------------------------------------------------------------------------------------------

def _nonnegative(value: Any, path: str) -> list[FieldError]:
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value < 0:
        return [FieldError.invalid(path, value, NEGATIVE)]
    return []


def is_valid_port_name(name: str) -> list[str]:
    """Problems with an IANA_SVC_NAME port name (`http`, `metrics`); empty when valid."""
    errs = []
    if len(name) > 15:
        errs.append("must be no more than 15 characters")
    if not re.fullmatch(r"[-a-z0-9]*", name):
        errs.append("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)")
    if not re.search(r"[a-z]", name):
        errs.append("must contain at least one letter (a-z)")
    if "--" in name:
        errs.append("must not contain consecutive hyphens")
    if name and (name[0] == "-" or name[-1] == "-"):
        errs.append("must not begin or end with a hyphen")
    return errs


def _port_num(value: Any, path: str) -> list[FieldError]:
    if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= 65535:
        return [FieldError.invalid(path, value, PORT_RANGE)]
    return []


def _port_num_or_name(value: Any, path: str) -> list[FieldError]:
    if isinstance(value, str):
        if value == "":
            return [FieldError.required(path)]
        return [FieldError.invalid(path, value, msg) for msg in is_valid_port_name(value)]
    if value is None:
        value = 0
    return _port_num(value, path)


def _is_ip(value: str) -> bool:
    try:
        ipaddress.ip_address(value)
        return True
    except ValueError:
        return False


def _dns1123_label(value: str, path: str) -> list[FieldError]:
    return [FieldError.invalid(path, value, msg) for msg in meta.is_dns1123_label(value)]


def _unsupported(value: Any, path: str, supported: list[str]) -> list[FieldError]:
    if value in (None, ""):
        return [FieldError.required(path)]
    if value not in supported:
        return [FieldError.unsupported(path, value, supported)]
    return []


def validate_labels(labels: dict | None, path: str) -> list[FieldError]:
    """Label keys and values (`metadata.labels`, `spec.selector`, `nodeSelector`), in sorted key order."""
    errs: list[FieldError] = []
    for key, value in sorted((labels or {}).items()):
        errs += [FieldError.invalid(path, key, msg) for msg in meta.is_label_key(key)]
        if not isinstance(value, str):
            errs.append(FieldError.invalid(path, value, "must be a string"))
            continue
        errs += [FieldError.invalid(path, value, msg) for msg in meta.is_label_value(value)]
    return errs


def validate_annotations(annotations: dict | None, path: str) -> list[FieldError]:
    """Annotation keys (qualified names, checked lower-cased) and the 256 KiB total size."""
    errs: list[FieldError] = []
    total = 0
    for key, value in sorted((annotations or {}).items()):
        errs += [FieldError.invalid(path, key, msg) for msg in meta.is_qualified_name(key.lower())]
        total += len(key) + len(str(value))
    if total > TOTAL_ANNOTATION_SIZE:
        errs.append(FieldError("Too long", path, "", f"must have at most {TOTAL_ANNOTATION_SIZE} bytes"))
    return errs


def validate_object_meta(obj: dict, namespaced: bool, name_fn: Callable[[str, bool], list[str]],
                         path: str = "metadata") -> list[FieldError]:
    """ObjectMeta checks: generateName, name (required, per-kind format), namespace, labels, annotations."""
    md = obj.get("metadata") or {}
    errs: list[FieldError] = []
    generate = md.get("generateName") or ""
    name = md.get("name") or ""
    if generate:
        errs += [FieldError.invalid(f"{path}.generateName", generate, msg) for msg in name_fn(generate, True)]
    if not name:
        if not generate:
            errs.append(FieldError.required(f"{path}.name", meta.NAME_REQUIRED))
    else:
        errs += [FieldError.invalid(f"{path}.name", name, msg) for msg in name_fn(name, False)]
    namespace = md.get("namespace") or ""
    if namespaced:
        if not namespace:
            errs.append(FieldError.required(f"{path}.namespace"))
        else:
            errs += [FieldError.invalid(f"{path}.namespace", namespace, msg)
                     for msg in meta.name_is_dns1123_label(namespace)]
    elif namespace:
        errs.append(FieldError.forbidden(f"{path}.namespace", "not allowed on this type"))
    errs += _nonnegative(md.get("generation"), f"{path}.generation")
    errs += validate_labels(md.get("labels"), f"{path}.labels")
    errs += validate_annotations(md.get("annotations"), f"{path}.annotations")
    return errs


def validate_label_selector(selector: dict | None, path: str) -> list[FieldError]:
    """A LabelSelector: matchExpressions operators and values, keys, and matchLabels."""
    if selector is None:
        return []
    errs: list[FieldError] = []
    for i, expr in enumerate(selector.get("matchExpressions") or []):
        epath = f"{path}.matchExpressions[{i}]"
        op = expr.get("operator")
        values = expr.get("values") or []
        if op in ("In", "NotIn"):
            if not values:
                errs.append(FieldError.required(f"{epath}.values",
                                                "must be specified when `operator` is 'In' or 'NotIn'"))
        elif op in ("Exists", "DoesNotExist"):
            if values:
                errs.append(FieldError.forbidden(f"{epath}.values",
                                                 "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"))
        else:
            errs.append(FieldError.invalid(f"{epath}.operator", op, "not a valid selector operator"))
        key = expr.get("key", "")
        errs += [FieldError.invalid(f"{epath}.key", key, msg) for msg in meta.is_label_key(key)]
    errs += validate_labels(selector.get("matchLabels"), f"{path}.matchLabels")
    return errs


# --- pods --------------------------------------------------------------------------------------------------------

def _validate_probe(probe: dict | None, path: str, kind: str) -> list[FieldError]:
    if not isinstance(probe, dict):
        return []
    errs: list[FieldError] = []
    handlers = [h for h in ("exec", "httpGet", "tcpSocket", "grpc") if probe.get(h) is not None]
    if not handlers:
        errs.append(FieldError.required(path, "must specify a handler type"))
    for extra in handlers[1:]:
        errs.append(FieldError.forbidden(f"{path}.{extra}", "may not specify more than 1 handler type"))
    if handlers and handlers[0] == "httpGet":
        http = probe["httpGet"]
        if not http.get("path"):
            errs.append(FieldError.required(f"{path}.httpGet.path"))
        errs += _port_num_or_name(http.get("port"), f"{path}.httpGet.port")
        scheme = http.get("scheme", "HTTP")
        if scheme not in ("HTTP", "HTTPS"):
            errs.append(FieldError.unsupported(f"{path}.httpGet.scheme", scheme, ["HTTP", "HTTPS"]))
    elif handlers and handlers[0] == "tcpSocket":
        errs += _port_num_or_name(probe["tcpSocket"].get("port"), f"{path}.tcpSocket.port")
    elif handlers and handlers[0] == "exec":
        if not (probe["exec"] or {}).get("command"):
            errs.append(FieldError.required(f"{path}.exec.command"))
    for name in ("initialDelaySeconds", "timeoutSeconds", "periodSeconds", "successThreshold", "failureThreshold"):
        errs += _nonnegative(probe.get(name), f"{path}.{name}")
    if kind in ("livenessProbe", "startupProbe") and probe.get("successThreshold", 1) != 1:
        errs.append(FieldError.invalid(f"{path}.successThreshold", probe.get("successThreshold"), "must be 1"))
    if kind == "readinessProbe" and probe.get("terminationGracePeriodSeconds") is not None:
        errs.append(FieldError.invalid(f"{path}.terminationGracePeriodSeconds",
                                       probe["terminationGracePeriodSeconds"], "must not be set for readinessProbes"))
    return errs


def _validate_container_ports(ports: list[dict], path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    names: set[str] = set()
    for i, port in enumerate(ports or []):
        ppath = f"{path}[{i}]"
        name = port.get("name") or ""
        if name:
            errs += [FieldError.invalid(f"{ppath}.name", name, msg) for msg in is_valid_port_name(name)]
            if name in names:
                errs.append(FieldError.duplicate(f"{ppath}.name", name))
            names.add(name)
        if not port.get("containerPort"):
            errs.append(FieldError.required(f"{ppath}.containerPort"))
        else:
            errs += _port_num(port["containerPort"], f"{ppath}.containerPort")
        if port.get("hostPort"):
            errs += _port_num(port["hostPort"], f"{ppath}.hostPort")
        errs += _unsupported(port.get("protocol"), f"{ppath}.protocol", PROTOCOLS)
    return errs


def _validate_containers(containers: list[dict] | None, path: str, names: set[str]) -> list[FieldError]:
    errs: list[FieldError] = []
    for i, ctr in enumerate(containers or []):
        cpath = f"{path}[{i}]"
        name = ctr.get("name") or ""
        if not name:
            errs.append(FieldError.required(f"{cpath}.name"))
        else:
            errs += _dns1123_label(name, f"{cpath}.name")
        if not ctr.get("image"):
            errs.append(FieldError.required(f"{cpath}.image"))
        errs += _validate_container_ports(ctr.get("ports") or [], f"{cpath}.ports")
        if name:
            if name in names:
                errs.append(FieldError.duplicate(f"{cpath}.name", name))
            names.add(name)
        for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
            errs += _validate_probe(ctr.get(probe), f"{cpath}.{probe}", probe)
    return errs


def validate_pod_spec(spec: dict | None, path: str) -> list[FieldError]:
    """PodSpec: containers (required, names, images, ports, probes), restartPolicy, dnsPolicy, nodeSelector."""
    spec = spec or {}
    errs: list[FieldError] = []
    names: set[str] = set()
    if not spec.get("containers"):
        errs.append(FieldError.required(f"{path}.containers"))
    else:
        errs += _validate_containers(spec["containers"], f"{path}.containers", names)
    errs += _validate_containers(spec.get("initContainers"), f"{path}.initContainers", names)
    errs += _unsupported(spec.get("restartPolicy"), f"{path}.restartPolicy", RESTART_POLICIES)
    errs += _unsupported(spec.get("dnsPolicy"), f"{path}.dnsPolicy", DNS_POLICIES)
    errs += validate_labels(spec.get("nodeSelector"), f"{path}.nodeSelector")
    errs += _nonnegative(spec.get("terminationGracePeriodSeconds"), f"{path}.terminationGracePeriodSeconds")
    if spec.get("hostname"):
        errs += _dns1123_label(spec["hostname"], f"{path}.hostname")
    if spec.get("subdomain"):
        errs += _dns1123_label(spec["subdomain"], f"{path}.subdomain")
    return errs


def validate_pod_template(template: dict | None, path: str) -> list[FieldError]:
    """A pod template: its labels (reported at `<path>.labels`, as upstream does), annotations and spec."""
    if template is None:
        return [FieldError.required(path)]
    md = template.get("metadata") or {}
    errs = validate_labels(md.get("labels"), f"{path}.labels")
    errs += validate_annotations(md.get("annotations"), f"{path}.annotations")
    errs += validate_pod_spec(template.get("spec"), f"{path}.spec")
    return errs


def _validate_pod(obj: dict, old: dict | None) -> list[FieldError]:
    spec = obj.get("spec") or {}
    errs = validate_pod_spec(spec, "spec")
    for i, ctr in enumerate(spec.get("containers") or []):
        image = ctr.get("image") or ""
        if image and image != image.strip():
            errs.append(FieldError.invalid(f"spec.containers[{i}].image", image,
                                           "must not have leading or trailing whitespace"))
    return errs


# --- workloads ---------------------------------------------------------------------------------------------------

def _template_labels(spec: dict) -> dict | None:
    return ((spec.get("template") or {}).get("metadata") or {}).get("labels")


def _selector_and_template(spec: dict, kind_word: str, required: bool) -> list[FieldError]:
    # Deployments, ReplicaSets and StatefulSets complain about an empty selector before comparing it with the
    # template's labels; DaemonSets (which do not require one) after.
    errs: list[FieldError] = []
    selector = spec.get("selector")
    empty = selector is not None and not (selector.get("matchLabels") or selector.get("matchExpressions"))
    empty_error = FieldError.invalid("spec.selector", go_label_selector(selector),
                                     f"empty selector is invalid for {kind_word}")
    if selector is None:
        if required:
            errs.append(FieldError.required("spec.selector"))
    else:
        errs += validate_label_selector(selector, "spec.selector")
        if empty and required:
            errs.append(empty_error)
    try:
        parsed = from_label_selector(selector)
    except BadRequest:
        errs.append(FieldError.invalid("spec.selector", go_label_selector(selector), "invalid label selector"))
        return errs
    if not parsed.empty() and not parsed.matches(_template_labels(spec) or {}):
        errs.append(FieldError.invalid("spec.template.metadata.labels", go_string_map(_template_labels(spec)),
                                       SELECTOR_MISMATCH))
    if empty and not required:
        errs.append(empty_error)
    return errs


def _replica_template(spec: dict) -> list[FieldError]:
    template = spec.get("template")
    errs = validate_pod_template(template, "spec.template")
    restart = ((template or {}).get("spec") or {}).get("restartPolicy")
    if template is not None and restart not in (None, "Always"):
        errs.append(FieldError.unsupported("spec.template.spec.restartPolicy", restart, ["Always"]))
    if ((template or {}).get("spec") or {}).get("activeDeadlineSeconds") is not None:
        errs.append(FieldError.forbidden("spec.template.spec.activeDeadlineSeconds",
                                         "activeDeadlineSeconds in ReplicaSet is not Supported"))
    return errs


def _int_or_percent(value: Any, path: str) -> list[FieldError]:
    if isinstance(value, str):
        if not re.fullmatch(r"[0-9]+%", value):
            return [FieldError.invalid(path, value, meta.regex_error(
                "a valid percent string must be a numeric string followed by an ending '%'", "[0-9]+%",
                "1%", "93%"))]
        return []
    return _nonnegative(value, path)


def _is_zero(value: Any) -> bool:
    return value in (0, "0%")


def _validate_deployment_strategy(strategy: dict) -> list[FieldError]:
    path = "spec.strategy"
    kind = strategy.get("type")
    if kind == "Recreate":
        if strategy.get("rollingUpdate") is not None:
            return [FieldError.forbidden(f"{path}.rollingUpdate",
                                         "may not be specified when strategy `type` is 'Recreate'")]
        return []
    if kind == "RollingUpdate":
        rolling = strategy.get("rollingUpdate")
        if rolling is None:
            return [FieldError.required(f"{path}.rollingUpdate", "this should be defaulted and never be nil")]
        errs: list[FieldError] = []
        rpath = f"{path}.rollingUpdate"
        errs += _int_or_percent(rolling.get("maxUnavailable"), f"{rpath}.maxUnavailable")
        errs += _int_or_percent(rolling.get("maxSurge"), f"{rpath}.maxSurge")
        if _is_zero(rolling.get("maxUnavailable")) and _is_zero(rolling.get("maxSurge")):
            errs.append(FieldError.invalid(f"{rpath}.maxUnavailable", rolling.get("maxUnavailable"),
                                           "may not be 0 when `maxSurge` is 0"))
        unavailable = rolling.get("maxUnavailable")
        if isinstance(unavailable, str) and unavailable.endswith("%") and unavailable[:-1].isdigit():
            if int(unavailable[:-1]) > 100:
                errs.append(FieldError.invalid(f"{rpath}.maxUnavailable", unavailable, "must not be greater than 100%"))
        return errs
    return [FieldError.unsupported(f"{path}.type", kind, ["Recreate", "RollingUpdate"])]


def _validate_deployment(obj: dict, old: dict | None) -> list[FieldError]:
    spec = obj.get("spec") or {}
    errs = _nonnegative(spec.get("replicas"), "spec.replicas")
    errs += _selector_and_template(spec, "deployment", required=True)
    errs += _replica_template(spec)
    errs += _validate_deployment_strategy(spec.get("strategy") or {})
    errs += _nonnegative(spec.get("minReadySeconds"), "spec.minReadySeconds")
    errs += _nonnegative(spec.get("revisionHistoryLimit"), "spec.revisionHistoryLimit")
    deadline = spec.get("progressDeadlineSeconds")
    if deadline is not None:
        errs += _nonnegative(deadline, "spec.progressDeadlineSeconds")
        if deadline <= (spec.get("minReadySeconds") or 0):
            errs.append(FieldError.invalid("spec.progressDeadlineSeconds", deadline,
                                           "must be greater than minReadySeconds"))
    errs += _selector_immutable(obj, old)
    return errs


def _validate_replicaset(obj: dict, old: dict | None) -> list[FieldError]:
    spec = obj.get("spec") or {}
    errs = _nonnegative(spec.get("replicas"), "spec.replicas")
    errs += _nonnegative(spec.get("minReadySeconds"), "spec.minReadySeconds")
    errs += _selector_and_template(spec, "deployment", required=True)
    errs += _replica_template(spec)
    errs += _selector_immutable(obj, old)
    return errs


def _validate_daemonset(obj: dict, old: dict | None) -> list[FieldError]:
    spec = obj.get("spec") or {}
    errs = _selector_and_template(spec, "daemonset", required=False)
    errs += validate_pod_template(spec.get("template"), "spec.template")
    restart = ((spec.get("template") or {}).get("spec") or {}).get("restartPolicy")
    if restart not in (None, "Always"):
        errs.append(FieldError.unsupported("spec.template.spec.restartPolicy", restart, ["Always"]))
    errs += _nonnegative(spec.get("minReadySeconds"), "spec.minReadySeconds")
    errs += _nonnegative(spec.get("revisionHistoryLimit"), "spec.revisionHistoryLimit")
    strategy = spec.get("updateStrategy") or {}
    kind = strategy.get("type")
    if kind == "RollingUpdate":
        rolling = strategy.get("rollingUpdate") or {}
        errs += _int_or_percent(rolling.get("maxUnavailable"), "spec.updateStrategy.rollingUpdate.maxUnavailable")
        errs += _int_or_percent(rolling.get("maxSurge"), "spec.updateStrategy.rollingUpdate.maxSurge")
        if _is_zero(rolling.get("maxUnavailable")) and _is_zero(rolling.get("maxSurge")):
            errs.append(FieldError.invalid("spec.updateStrategy.rollingUpdate.maxUnavailable",
                                           rolling.get("maxUnavailable"), "may not be 0 when `maxSurge` is 0"))
    elif kind != "OnDelete":
        errs += _unsupported(kind, "spec.updateStrategy.type", ["OnDelete", "RollingUpdate"])
    errs += _selector_immutable(obj, old)
    return errs


_STS_MUTABLE = ("replicas", "ordinals", "template", "updateStrategy", "persistentVolumeClaimRetentionPolicy",
                "minReadySeconds")


def _validate_statefulset(obj: dict, old: dict | None) -> list[FieldError]:
    spec = obj.get("spec") or {}
    errs: list[FieldError] = []
    policy = spec.get("podManagementPolicy")
    if not policy:
        errs.append(FieldError.required("spec.podManagementPolicy"))
    elif policy not in ("OrderedReady", "Parallel"):
        errs.append(FieldError.invalid("spec.podManagementPolicy", policy, "must be 'OrderedReady' or 'Parallel'"))
    strategy = spec.get("updateStrategy") or {}
    kind = strategy.get("type")
    if not kind:
        errs.append(FieldError.required("spec.updateStrategy"))
    elif kind == "OnDelete":
        if strategy.get("rollingUpdate") is not None:
            errs.append(FieldError.invalid("spec.updateStrategy.rollingUpdate", GoValue("{}"),
                                           "only allowed for updateStrategy 'RollingUpdate'"))
    elif kind == "RollingUpdate":
        errs += _nonnegative((strategy.get("rollingUpdate") or {}).get("partition"),
                             "spec.updateStrategy.rollingUpdate.partition")
    else:
        value = GoValue(f'apps.StatefulSetUpdateStrategy{{Type:"{kind}"}}')
        errs.append(FieldError.invalid("spec.updateStrategy", value, "must be 'RollingUpdate' or 'OnDelete'"))
    errs += _nonnegative(spec.get("replicas"), "spec.replicas")
    errs += _nonnegative(spec.get("minReadySeconds"), "spec.minReadySeconds")
    errs += _selector_and_template(spec, "statefulset", required=True)
    template = spec.get("template") or {}
    md = template.get("metadata") or {}
    errs += validate_labels(md.get("labels"), "spec.template.labels")
    errs += validate_annotations(md.get("annotations"), "spec.template.annotations")
    restart = (template.get("spec") or {}).get("restartPolicy")
    if restart not in (None, "Always"):
        errs.append(FieldError.unsupported("spec.template.spec.restartPolicy", restart, ["Always"]))
    if (template.get("spec") or {}).get("activeDeadlineSeconds") is not None:
        errs.append(FieldError.forbidden("spec.template.spec.activeDeadlineSeconds",
                                         "activeDeadlineSeconds in StatefulSet is not Supported"))
    if old is not None:
        old_spec = old.get("spec") or {}
        rest = {k: v for k, v in spec.items() if k not in _STS_MUTABLE}
        old_rest = {k: v for k, v in old_spec.items() if k not in _STS_MUTABLE}
        if rest != old_rest:
            errs.append(FieldError.forbidden("spec", "updates to statefulset spec for fields other than 'replicas', "
                                             "'ordinals', 'template', 'updateStrategy', "
                                             "'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are "
                                             "forbidden"))
    return errs


def _selector_immutable(obj: dict, old: dict | None) -> list[FieldError]:
    if old is None:
        return []
    new_sel = (obj.get("spec") or {}).get("selector")
    old_sel = (old.get("spec") or {}).get("selector")
    if new_sel != old_sel:
        return [FieldError.invalid("spec.selector", go_label_selector(new_sel), IMMUTABLE)]
    return []


# --- services ----------------------------------------------------------------------------------------------------

def _normalized_service(obj: dict, old: dict | None) -> dict:
    """The Service as the registry hands it to validation: clusterIPs set from clusterIP, and on an update the
    allocated values carried over and the fields of a former type dropped (`prepare_service_update`)."""
    if old is not None:
        return prepare_service_update(obj, old)
    svc = copy.deepcopy(obj)
    spec = svc.setdefault("spec", {})
    if spec.get("clusterIP") and not spec.get("clusterIPs"):
        spec["clusterIPs"] = [spec["clusterIP"]]
    return svc


def _externally_accessible(spec: dict) -> bool:
    svc_type = spec.get("type")
    return svc_type in ("LoadBalancer", "NodePort") or (svc_type == "ClusterIP" and bool(spec.get("externalIPs")))


def _validate_service_port(port: dict, require_name: bool, names: set[str], path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    name = port.get("name") or ""
    if require_name and not name:
        errs.append(FieldError.required(f"{path}.name"))
    elif name:
        errs += _dns1123_label(name, f"{path}.name")
        if name in names:
            errs.append(FieldError.duplicate(f"{path}.name", name))
        names.add(name)
    errs += _port_num(port.get("port", 0), f"{path}.port")
    errs += _unsupported(port.get("protocol"), f"{path}.protocol", PROTOCOLS)
    errs += _port_num_or_name(port.get("targetPort", 0), f"{path}.targetPort")
    if port.get("appProtocol"):
        errs += [FieldError.invalid(f"{path}.appProtocol", port["appProtocol"], msg)
                 for msg in meta.is_qualified_name(port["appProtocol"])]
    return errs


def _validate_client_ip_affinity(config: dict | None) -> list[FieldError]:
    path = "spec.sessionAffinityConfig"
    detail = "when session affinity type is ClientIP"
    if config is None:
        return [FieldError.required(path, detail)]
    client_ip = config.get("clientIP")
    if client_ip is None:
        return [FieldError.required(f"{path}.clientIP", detail)]
    timeout = client_ip.get("timeoutSeconds")
    if timeout is None:
        return [FieldError.required(f"{path}.clientIP.timeoutSeconds", detail)]
    if timeout <= 0 or timeout > MAX_CLIENT_IP_AFFINITY_SECONDS:
        return [FieldError.invalid(f"{path}.clientIP.timeoutSeconds", timeout,
                                   f"must be greater than 0 and less than {MAX_CLIENT_IP_AFFINITY_SECONDS}")]
    return []


def _validate_cluster_ips(spec: dict, old_spec: dict | None) -> list[FieldError]:
    if spec.get("type") == "ExternalName":
        return []
    errs: list[FieldError] = []
    ip = spec.get("clusterIP") or ""
    ips = list(spec.get("clusterIPs") or [])
    if ip:
        if not ips:
            errs.append(FieldError.required("spec.clusterIPs"))
        elif ips[0] != ip:
            errs.append(FieldError.invalid("spec.clusterIPs", ips, "first value must match `clusterIP`"))
    elif ips:
        errs.append(FieldError.invalid("spec.clusterIPs", ips, "must be empty when `clusterIP` is not specified"))
    policy = spec.get("ipFamilyPolicy")
    if policy is not None and policy not in IP_FAMILY_POLICIES:
        errs.append(FieldError.unsupported("spec.ipFamilyPolicy", policy, IP_FAMILY_POLICIES))
    seen: set[str] = set()
    for i, family in enumerate(spec.get("ipFamilies") or []):
        if family not in IP_FAMILIES:
            errs.append(FieldError.unsupported(f"spec.ipFamilies[{i}]", family, IP_FAMILIES))
        elif family in seen:
            errs.append(FieldError.duplicate(f"spec.ipFamilies[{i}]", family))
        seen.add(family)
    existing = (old_spec or {}).get("clusterIPs") or []
    invalid = False
    for i, value in enumerate(ips):
        if i == 0 and value == "None":
            if len(ips) > 1:
                invalid = True
                errs.append(FieldError.invalid("spec.clusterIPs", ips, "'None' must be the first and only value"))
            continue
        if value not in existing and not _is_ip(value):
            invalid = True
            errs.append(FieldError.invalid(f"spec.clusterIPs[{i}]", value, VALID_IP))
    if len(ips) > 2:
        errs.append(FieldError.invalid("spec.clusterIPs", ips, "may only hold up to 2 values"))
    if invalid:
        return errs
    if len(ips) > 1:
        v6 = sum(1 for v in ips if ipaddress.ip_address(v).version == 6)
        if v6 in (0, len(ips)):
            errs.append(FieldError.invalid("spec.clusterIPs", ips,
                                           "may specify no more than one IP for each IP family"))
    families = spec.get("ipFamilies") or []
    if ips and ips != ["None"]:
        for i, value in enumerate(ips):
            if i >= len(families):
                break
            version = ipaddress.ip_address(value).version
            if families[i] == "IPv4" and version == 6:
                errs.append(FieldError.invalid(f"spec.clusterIPs[{i}]", value,
                                               f"expected an IPv4 value as indicated by `ipFamilies[{i}]`"))
            if families[i] == "IPv6" and version == 4:
                errs.append(FieldError.invalid(f"spec.clusterIPs[{i}]", value,
                                               f"expected an IPv6 value as indicated by `ipFamilies[{i}]`"))
    return errs


def _validate_service_update(spec: dict, old_spec: dict) -> list[FieldError]:
    errs: list[FieldError] = []
    if "ExternalName" in (spec.get("type"), old_spec.get("type")):
        return errs
    old_ips = list(old_spec.get("clusterIPs") or [])
    new_ips = list(spec.get("clusterIPs") or [])
    if old_ips == ["None"] and new_ips == ["None"]:
        return errs
    if len(old_ips) == len(new_ips):
        for i, value in enumerate(old_ips):
            if value != new_ips[i]:
                errs.append(FieldError.invalid(f"spec.clusterIPs[{i}]", new_ips, "may not change once set"))
    elif len(old_ips) > len(new_ips):
        if not new_ips:
            errs.append(FieldError.invalid("spec.clusterIPs[0]", new_ips, "primary clusterIP can not be unset"))
        elif new_ips[0] != old_ips[0]:
            errs.append(FieldError.invalid("spec.clusterIPs[0]", new_ips, "may not change once set"))
    elif old_ips and new_ips[0] != old_ips[0]:
        errs.append(FieldError.invalid("spec.clusterIPs[0]", new_ips, "may not change once set"))
    needs_hc = (spec.get("type") == "LoadBalancer" and spec.get("externalTrafficPolicy") == "Local")
    old_needs_hc = (old_spec.get("type") == "LoadBalancer" and old_spec.get("externalTrafficPolicy") == "Local")
    if needs_hc and old_needs_hc and spec.get("healthCheckNodePort") and \
            spec.get("healthCheckNodePort") != old_spec.get("healthCheckNodePort"):
        errs.append(FieldError.forbidden("spec.healthCheckNodePort", IMMUTABLE))
    return errs


def _validate_service(obj: dict, old: dict | None) -> list[FieldError]:
    spec = obj.get("spec") or {}
    old_spec = (old or {}).get("spec") if old is not None else None
    errs: list[FieldError] = []
    if old_spec is not None:
        errs += _validate_service_update(spec, old_spec)
    svc_type = spec.get("type")
    ips = spec.get("clusterIPs") or []
    headless = ips == ["None"]
    ports = spec.get("ports") or []
    if not ports and not headless and svc_type != "ExternalName":
        errs.append(FieldError.required("spec.ports"))
    if svc_type in ("LoadBalancer", "NodePort") and headless:
        errs.append(FieldError.invalid("spec.clusterIPs[0]", "None",
                                       f"may not be set to 'None' for {svc_type} services"))
    elif svc_type == "ExternalName":
        if ips:
            errs.append(FieldError.forbidden("spec.clusterIPs", "may not be set for ExternalName services"))
        if spec.get("ipFamilies"):
            errs.append(FieldError.forbidden("spec.ipFamilies", "may not be set for ExternalName services"))
        if spec.get("ipFamilyPolicy") is not None:
            errs.append(FieldError.forbidden("spec.ipFamilyPolicy", "may not be set for ExternalName services"))
        cname = (spec.get("externalName") or "").removesuffix(".")
        if cname:
            errs += [FieldError.invalid("spec.externalName", cname, msg) for msg in meta.is_dns1123_subdomain(cname)]
        else:
            errs.append(FieldError.required("spec.externalName"))
    names: set[str] = set()
    for i, port in enumerate(ports):
        errs += _validate_service_port(port, len(ports) > 1, names, f"spec.ports[{i}]")
    if spec.get("selector") is not None:
        errs += validate_labels(spec["selector"], "spec.selector")
    affinity = spec.get("sessionAffinity")
    errs += _unsupported(affinity, "spec.sessionAffinity", SESSION_AFFINITIES)
    if affinity == "ClientIP":
        errs += _validate_client_ip_affinity(spec.get("sessionAffinityConfig"))
    elif affinity == "None" and spec.get("sessionAffinityConfig") is not None:
        errs.append(FieldError.forbidden("spec.sessionAffinityConfig", "must not be set when session affinity is None"))
    errs += _validate_cluster_ips(spec, old_spec)
    old_external = (old_spec or {}).get("externalIPs") or []
    for i, value in enumerate(spec.get("externalIPs") or []):
        if value not in old_external and not _is_ip(value):
            errs.append(FieldError.invalid(f"spec.externalIPs[{i}]", value, VALID_IP))
    errs += _unsupported(svc_type, "spec.type", SERVICE_TYPES)
    if svc_type == "ClusterIP":
        for i, port in enumerate(ports):
            if port.get("nodePort"):
                errs.append(FieldError.forbidden(f"spec.ports[{i}].nodePort",
                                                 "may not be used when `type` is 'ClusterIP'"))
    seen_node_ports: set[tuple] = set()
    for i, port in enumerate(ports):
        if not port.get("nodePort"):
            continue
        key = (port.get("protocol"), port["nodePort"])
        if key in seen_node_ports:
            errs.append(FieldError.duplicate(f"spec.ports[{i}].nodePort", port["nodePort"]))
        seen_node_ports.add(key)
    seen_ports: set[tuple] = set()
    for i, port in enumerate(ports):
        key = (port.get("protocol"), port.get("port"))
        if key in seen_ports:
            errs.append(FieldError.duplicate(f"spec.ports[{i}]", _go_service_port_key(*key)))
        seen_ports.add(key)
    if spec.get("loadBalancerSourceRanges") and svc_type != "LoadBalancer":
        errs.append(FieldError.forbidden("spec.LoadBalancerSourceRanges",
                                         "may only be used when `type` is 'LoadBalancer'"))
    if spec.get("allocateLoadBalancerNodePorts") is not None and svc_type != "LoadBalancer":
        errs.append(FieldError.forbidden("spec.allocateLoadBalancerNodePorts",
                                         "may only be used when `type` is 'LoadBalancer'"))
    if svc_type == "LoadBalancer" and spec.get("allocateLoadBalancerNodePorts") is None:
        errs.append(FieldError.required("allocateLoadBalancerNodePorts"))
    if spec.get("loadBalancerClass") is not None and svc_type != "LoadBalancer":
        errs.append(FieldError.forbidden("spec.loadBalancerClass", "may only be used when `type` is 'LoadBalancer'"))
    etp = spec.get("externalTrafficPolicy")
    if not _externally_accessible(spec):
        if etp:
            errs.append(FieldError.invalid("spec.externalTrafficPolicy", etp,
                                           "may only be set for externally-accessible services"))
    else:
        errs += _unsupported(etp, "spec.externalTrafficPolicy", TRAFFIC_POLICIES)
    hcnp = spec.get("healthCheckNodePort") or 0
    needs_hc = svc_type == "LoadBalancer" and etp == "Local"
    if not needs_hc:
        if hcnp:
            errs.append(FieldError.invalid("spec.healthCheckNodePort", hcnp,
                                           "may only be set when `type` is 'LoadBalancer' and "
                                           "`externalTrafficPolicy` is 'Local'"))
    elif hcnp:
        errs += _port_num(hcnp, "spec.healthCheckNodePort")
    itp = spec.get("internalTrafficPolicy")
    if itp is None:
        if svc_type in ("NodePort", "LoadBalancer", "ClusterIP"):
            errs.append(FieldError.required("spec.internalTrafficPolicy"))
    elif itp not in TRAFFIC_POLICIES:
        errs.append(FieldError.unsupported("spec.internalTrafficPolicy", itp, TRAFFIC_POLICIES))
    distribution = spec.get("trafficDistribution")
    if distribution is not None and distribution not in TRAFFIC_DISTRIBUTIONS:
        errs.append(FieldError.unsupported("spec.trafficDistribution", distribution, TRAFFIC_DISTRIBUTIONS))
    return errs


# --- discovery and the rest --------------------------------------------------------------------------------------

def _too_many(path: str, count: int, limit: int) -> FieldError:
    return FieldError("Too many", path, count, f"must have at most {limit} items")


def _validate_endpointslice(obj: dict, old: dict | None) -> list[FieldError]:
    errs: list[FieldError] = []
    address_type = obj.get("addressType")
    if old is not None and address_type != old.get("addressType"):
        errs.append(FieldError.invalid("addressType", address_type, IMMUTABLE))
    elif address_type not in ADDRESS_TYPES:
        errs += _unsupported(address_type, "addressType", ADDRESS_TYPES)
    endpoints = obj.get("endpoints") or []
    if len(endpoints) > MAX_SLICE_ENDPOINTS:
        errs.append(_too_many("endpoints", len(endpoints), MAX_SLICE_ENDPOINTS))
    for i, endpoint in enumerate(endpoints):
        path = f"endpoints[{i}]"
        addresses = endpoint.get("addresses") or []
        if not addresses:
            errs.append(FieldError.required(f"{path}.addresses", "must contain at least 1 address"))
        elif len(addresses) > MAX_ENDPOINT_ADDRESSES:
            errs.append(_too_many(f"{path}.addresses", len(addresses), MAX_ENDPOINT_ADDRESSES))
        for j, address in enumerate(addresses):
            apath = f"{path}.addresses[{j}]"
            if address_type in ("IPv4", "IPv6"):
                try:
                    ok = ipaddress.ip_address(address).version == (4 if address_type == "IPv4" else 6)
                except ValueError:
                    ok = False
                if not ok:
                    errs.append(FieldError.invalid(apath, address, f"must be a valid {address_type} address"))
            elif address_type == "FQDN":
                errs += [FieldError.invalid(apath, address, msg) for msg in meta.is_dns1123_subdomain(address)]
        if endpoint.get("nodeName"):
            errs += [FieldError.invalid(f"{path}.nodeName", endpoint["nodeName"], msg)
                     for msg in meta.name_is_dns1123_subdomain(endpoint["nodeName"])]
        if endpoint.get("hostname"):
            errs += _dns1123_label(endpoint["hostname"], f"{path}.hostname")
    ports = obj.get("ports") or []
    if len(ports) > MAX_SLICE_PORTS:
        errs.append(_too_many("ports", len(ports), MAX_SLICE_PORTS))
    names: set[str] = set()
    for i, port in enumerate(ports):
        path = f"ports[{i}]"
        name = port.get("name") or ""
        if name:
            errs += _dns1123_label(name, f"{path}.name")
        if name in names:
            errs.append(FieldError.duplicate(f"{path}.name", name))
        names.add(name)
        errs += _unsupported(port.get("protocol"), f"{path}.protocol", PROTOCOLS)
        if port.get("port") is not None:
            errs += _port_num(port["port"], f"{path}.port")
        if port.get("appProtocol"):
            errs += [FieldError.invalid(f"{path}.appProtocol", port["appProtocol"], msg)
                     for msg in meta.is_qualified_name(port["appProtocol"])]
    return errs


#: A ConfigMap's data and binaryData together, keys included (upstream's MaxSecretSize, 1 MiB).
MAX_CONFIG_BYTES = 1024 * 1024


def _validate_configmap(obj: dict, old: dict | None) -> list[FieldError]:
    errs: list[FieldError] = []
    data = obj.get("data") or {}
    binary = obj.get("binaryData") or {}
    for section, values in (("data", data), ("binaryData", binary)):
        for key in sorted(values):
            msgs = []
            if len(key) > meta.DNS1123_SUBDOMAIN_MAX_LENGTH:
                msgs.append(meta.max_len_error(meta.DNS1123_SUBDOMAIN_MAX_LENGTH))
            if not re.fullmatch(CONFIG_KEY_FMT, key):
                msgs.append(meta.regex_error(CONFIG_KEY_ERR, CONFIG_KEY_FMT, "key.name", "KEY_NAME", "key-name"))
            if key in (".", ".."):
                msgs.append(f"must not be '{key}'")
            elif key.startswith(".."):
                msgs.append("must not start with '..'")
            errs += [FieldError.invalid(f"{section}[{key}]", key, msg) for msg in msgs]
            if section == "binaryData" and key in data:
                errs.append(FieldError.invalid(f"binaryData[{key}]", key, "duplicate of key present in data"))
    total = sum(len(k) + len(str(v)) for values in (data, binary) for k, v in values.items())
    if total > MAX_CONFIG_BYTES:
        errs.append(FieldError("Too long", "[]", "", f"must have at most {MAX_CONFIG_BYTES} bytes"))
    return errs


def _validate_nothing_more(obj: dict, old: dict | None) -> list[FieldError]:
    return []


_NAME_RULES: dict[str, Callable[[str, bool], list[str]]] = {
    "Service": meta.name_is_dns1035_label,
    "Namespace": meta.name_is_dns1123_label,
    "StatefulSet": meta.name_is_dns1123_label,
}

_SPEC_RULES: dict[str, Callable[[dict, dict | None], list[FieldError]]] = {
    "Service": _validate_service,
    "Pod": _validate_pod,
    "Deployment": _validate_deployment,
    "ReplicaSet": _validate_replicaset,
    "StatefulSet": _validate_statefulset,
    "DaemonSet": _validate_daemonset,
    "EndpointSlice": _validate_endpointslice,
    "ConfigMap": _validate_configmap,
}


def field_errors(obj: dict, old: dict | None = None) -> list[FieldError]:
    """Every field error of `obj` (an update when `old` is given), in upstream's order; empty when valid."""
    info: KindInfo = by_kind(obj.get("kind", ""), obj.get("apiVersion"))
    if info.kind == "Service":
        obj = _normalized_service(obj, old)
    name_rule = _NAME_RULES.get(info.kind, meta.name_is_dns1123_subdomain)
    errs = validate_object_meta(obj, info.namespaced, name_rule)
    if old is not None:
        errs += _validate_meta_update(obj, old)
    errs += _SPEC_RULES.get(info.kind, _validate_nothing_more)(obj, old)
    return _dedupe(errs)


def _validate_meta_update(obj: dict, old: dict) -> list[FieldError]:
    errs: list[FieldError] = []
    new_md, old_md = obj.get("metadata") or {}, old.get("metadata") or {}
    for key in ("name", "namespace", "uid", "creationTimestamp"):
        if old_md.get(key) and new_md.get(key) and new_md[key] != old_md[key]:
            errs.append(FieldError.invalid(f"metadata.{key}", new_md[key], IMMUTABLE))
    return errs


def _dedupe(errs: list[FieldError]) -> list[FieldError]:
    seen: set[str] = set()
    out = []
    for err in errs:
        text = str(err)
        if text not in seen:
            seen.add(text)
            out.append(err)
    return out


def validate(obj: dict, old: dict | None = None) -> None:
    """Refuse an object the API server would refuse: raises Invalid with all its field errors (BadRequest for an
    unknown kind/apiVersion)."""
    errs = field_errors(obj, old)
    if errs:
        info = by_kind(obj.get("kind", ""), obj.get("apiVersion"))
        name = (obj.get("metadata") or {}).get("name") or (obj.get("metadata") or {}).get("generateName") or ""
        # kubectl names the bare kind ("The Deployment "web" is invalid"), so the group is left out here.
        raise Invalid(info.kind, name, errs, group=info.group)
