"""Read the Kubernetes protobuf encoding (`application/vnd.kubernetes.protobuf`) for the kinds kubectl's typed
clients send that way (`kubectl create deployment|service|configmap|namespace`), turning them into API JSON.

Only decoding is needed: those clients accept JSON answers. Field numbers follow upstream's generated.proto; fields
this lab does not model are skipped.
"""
from __future__ import annotations

import base64
from typing import Any

from labsupport.control.clock import rfc3339
from labsupport.errors import BadRequest

MAGIC = b"k8s\x00"

# field number -> (json name, type); a leading "*" marks a repeated field. Types: s string, i integer, b bool,
# t Time, ios IntOrString, q Quantity, map:s map<string,string>, map:bytes, map:q map<string,Quantity>,
# m:<Message> a nested message.
SCHEMA: dict[str, dict[int, tuple[str, str]]] = {
    "Unknown": {1: ("typeMeta", "m:TypeMeta"), 2: ("raw", "raw"), 3: ("contentEncoding", "s"),
                4: ("contentType", "s")},
    "TypeMeta": {1: ("apiVersion", "s"), 2: ("kind", "s")},
    "ObjectMeta": {1: ("name", "s"), 2: ("generateName", "s"), 3: ("namespace", "s"), 5: ("uid", "s"),
                   6: ("resourceVersion", "s"), 7: ("generation", "i"), 8: ("creationTimestamp", "t"),
                   10: ("deletionGracePeriodSeconds", "i"), 11: ("labels", "map:s"),
                   12: ("annotations", "map:s"), 13: ("*ownerReferences", "m:OwnerReference"),
                   14: ("*finalizers", "s")},
    "OwnerReference": {1: ("kind", "s"), 3: ("name", "s"), 4: ("uid", "s"), 5: ("apiVersion", "s"),
                       6: ("controller", "b"), 7: ("blockOwnerDeletion", "b")},
    "LabelSelector": {1: ("matchLabels", "map:s"), 2: ("*matchExpressions", "m:LabelSelectorRequirement")},
    "LabelSelectorRequirement": {1: ("key", "s"), 2: ("operator", "s"), 3: ("*values", "s")},
    "Deployment": {1: ("metadata", "m:ObjectMeta"), 2: ("spec", "m:DeploymentSpec")},
    "DeploymentSpec": {1: ("replicas", "i"), 2: ("selector", "m:LabelSelector"), 3: ("template", "m:PodTemplateSpec"),
                       4: ("strategy", "m:DeploymentStrategy"), 5: ("minReadySeconds", "i"),
                       6: ("revisionHistoryLimit", "i"), 7: ("paused", "b"), 9: ("progressDeadlineSeconds", "i")},
    "DeploymentStrategy": {1: ("type", "s"), 2: ("rollingUpdate", "m:RollingUpdateDeployment")},
    "RollingUpdateDeployment": {1: ("maxUnavailable", "ios"), 2: ("maxSurge", "ios")},
    "PodTemplateSpec": {1: ("metadata", "m:ObjectMeta"), 2: ("spec", "m:PodSpec")},
    "Pod": {1: ("metadata", "m:ObjectMeta"), 2: ("spec", "m:PodSpec")},
    "PodSpec": {2: ("*containers", "m:Container"), 3: ("restartPolicy", "s"),
                4: ("terminationGracePeriodSeconds", "i"), 5: ("activeDeadlineSeconds", "i"), 6: ("dnsPolicy", "s"),
                7: ("nodeSelector", "map:s"), 8: ("serviceAccountName", "s"), 9: ("serviceAccount", "s"),
                10: ("nodeName", "s"), 11: ("hostNetwork", "b"), 16: ("hostname", "s"), 17: ("subdomain", "s"),
                19: ("schedulerName", "s"), 20: ("*initContainers", "m:Container"),
                21: ("automountServiceAccountToken", "b"), 30: ("enableServiceLinks", "b")},
    "Container": {1: ("name", "s"), 2: ("image", "s"), 3: ("*command", "s"), 4: ("*args", "s"),
                  5: ("workingDir", "s"), 6: ("*ports", "m:ContainerPort"), 7: ("*env", "m:EnvVar"),
                  8: ("resources", "m:ResourceRequirements"), 13: ("terminationMessagePath", "s"),
                  14: ("imagePullPolicy", "s"), 16: ("stdin", "b"), 17: ("stdinOnce", "b"), 18: ("tty", "b"),
                  20: ("terminationMessagePolicy", "s")},
    "ContainerPort": {1: ("name", "s"), 2: ("hostPort", "i"), 3: ("containerPort", "i"), 4: ("protocol", "s"),
                      5: ("hostIP", "s")},
    "EnvVar": {1: ("name", "s"), 2: ("value", "s")},
    "ResourceRequirements": {1: ("limits", "map:q"), 2: ("requests", "map:q")},
    "Service": {1: ("metadata", "m:ObjectMeta"), 2: ("spec", "m:ServiceSpec")},
    "ServiceSpec": {1: ("*ports", "m:ServicePort"), 2: ("selector", "map:s"), 3: ("clusterIP", "s"), 4: ("type", "s"),
                    5: ("*externalIPs", "s"), 7: ("sessionAffinity", "s"), 8: ("loadBalancerIP", "s"),
                    9: ("*loadBalancerSourceRanges", "s"), 10: ("externalName", "s"),
                    11: ("externalTrafficPolicy", "s"), 12: ("healthCheckNodePort", "i"),
                    13: ("publishNotReadyAddresses", "b"), 17: ("ipFamilyPolicy", "s"), 18: ("*clusterIPs", "s"),
                    19: ("*ipFamilies", "s"), 20: ("allocateLoadBalancerNodePorts", "b"),
                    21: ("loadBalancerClass", "s"), 22: ("internalTrafficPolicy", "s"),
                    23: ("trafficDistribution", "s")},
    "ServicePort": {1: ("name", "s"), 2: ("protocol", "s"), 3: ("port", "i"), 4: ("targetPort", "ios"),
                    5: ("nodePort", "i"), 6: ("appProtocol", "s")},
    "ConfigMap": {1: ("metadata", "m:ObjectMeta"), 2: ("data", "map:s"), 3: ("binaryData", "map:bytes"),
                  4: ("immutable", "b")},
    "Namespace": {1: ("metadata", "m:ObjectMeta"), 2: ("spec", "m:NamespaceSpec")},
    "NamespaceSpec": {1: ("*finalizers", "s")},
    "SelfSubjectAccessReview": {1: ("metadata", "m:ObjectMeta"), 2: ("spec", "m:SelfSubjectAccessReviewSpec")},
    "SelfSubjectAccessReviewSpec": {1: ("resourceAttributes", "m:ResourceAttributes"),
                                    2: ("nonResourceAttributes", "m:NonResourceAttributes")},
    "ResourceAttributes": {1: ("namespace", "s"), 2: ("verb", "s"), 3: ("group", "s"), 4: ("version", "s"),
                           5: ("resource", "s"), 6: ("subresource", "s"), 7: ("name", "s")},
    "NonResourceAttributes": {1: ("path", "s"), 2: ("verb", "s")},
    "SelfSubjectRulesReview": {1: ("metadata", "m:ObjectMeta"), 2: ("spec", "m:SelfSubjectRulesReviewSpec")},
    "SelfSubjectRulesReviewSpec": {1: ("namespace", "s")},
    "SelfSubjectReview": {1: ("metadata", "m:ObjectMeta")},
    "Time": {1: ("seconds", "i"), 2: ("nanos", "i")},
    "IntOrString": {1: ("type", "i"), 2: ("intVal", "i"), 3: ("strVal", "s")},
    "Quantity": {1: ("string", "s")},
    "Entry": {1: ("key", "raw"), 2: ("value", "raw")},
}


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if pos >= len(buf) or shift > 63:
            raise ValueError("truncated varint")
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, pos


def _fields(buf: bytes):
    pos = 0
    while pos < len(buf):
        key, pos = _varint(buf, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(buf, pos)
        elif wire == 2:
            size, pos = _varint(buf, pos)
            if pos + size > len(buf):
                raise ValueError("truncated field")
            value, pos = buf[pos:pos + size], pos + size
        elif wire == 1:
            value, pos = buf[pos:pos + 8], pos + 8
        elif wire == 5:
            value, pos = buf[pos:pos + 4], pos + 4
        else:
            raise ValueError(f"unsupported wire type {wire}")
        yield number, wire, value


def _signed(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


def _scalar(kind: str, value: Any) -> Any:
    if kind == "s":
        return bytes(value).decode("utf-8")
    if kind == "raw":
        return bytes(value)
    if kind == "i":
        return _signed(value)
    if kind == "b":
        return bool(value)
    if kind == "t":
        seconds = decode_message("Time", value).get("seconds")
        return None if seconds is None or seconds <= ZERO_TIME else rfc3339(seconds)
    if kind == "ios":
        ios = decode_message("IntOrString", value)
        if ios.get("type") == 1:
            return ios.get("strVal") or None
        return ios.get("intVal") or None
    if kind == "q":
        return decode_message("Quantity", value).get("string", "0")
    if kind.startswith("m:"):
        return decode_message(kind[2:], value)
    raise ValueError(f"unknown field type {kind}")


#: Non-pointer fields that JSON omits when zero (protobuf writes them anyway); pointer fields keep their zero.
OMIT_ZERO = {"hostPort", "nodePort", "healthCheckNodePort", "generation", "minReadySeconds", "stdin", "stdinOnce",
             "tty", "hostNetwork", "paused", "publishNotReadyAddresses"}
#: The zero time.Time, which protobuf writes for an unset timestamp.
ZERO_TIME = -62135596800


def _omitted(key: str, value: Any) -> bool:
    if value is None or value == "":
        return True
    return key in OMIT_ZERO and value in (0, False) and not isinstance(value, str)


def decode_message(name: str, buf: bytes) -> dict:
    """One message of a known type as a JSON-shaped dict."""
    schema = SCHEMA[name]
    out: dict[str, Any] = {}
    for number, wire, value in _fields(buf):
        field = schema.get(number)
        if field is None:
            continue
        key, kind = field
        if kind.startswith("map:"):
            entry = decode_message("Entry", value)
            inner = kind[4:]
            raw = entry.get("value", b"")
            if inner == "s":
                item: Any = raw.decode("utf-8")
            elif inner == "bytes":
                item = base64.b64encode(raw).decode()
            else:
                item = _scalar(inner, raw)
            out.setdefault(key, {})[entry.get("key", b"").decode("utf-8")] = item
        elif key.startswith("*"):
            out.setdefault(key[1:], []).append(_scalar(kind, value))
        else:
            item = _scalar(kind, value)
            if not _omitted(key, item):
                out[key] = item
            else:
                out.pop(key, None)
    return out


def decode_object(body: bytes) -> dict:
    """A protobuf-encoded request body (magic, runtime.Unknown envelope, typed object) as API JSON."""
    if not body.startswith(MAGIC):
        raise BadRequest("the protobuf body lacks the k8s magic prefix")
    try:
        envelope = decode_message("Unknown", body[len(MAGIC):])
        type_meta = envelope.get("typeMeta") or {}
        kind = type_meta.get("kind", "")
        if kind not in SCHEMA or kind in ("Unknown", "TypeMeta"):
            raise BadRequest(f'no protobuf decoding here for kind "{kind}": send JSON instead')
        obj = decode_message(kind, envelope.get("raw", b""))
    except (ValueError, UnicodeDecodeError, KeyError) as e:
        raise BadRequest(f"the protobuf body could not be decoded: {e}") from e
    return {"apiVersion": type_meta.get("apiVersion", ""), "kind": kind, **obj}
