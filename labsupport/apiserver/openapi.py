"""OpenAPI v2 and v3 documents built from the kinds the server knows, so `kubectl explain`, kubectl's validation
and the patch strategies it reads all work.

Field names, types, required fields and descriptions come from the official Python client's models (a
dependency of this package), which are generated from the same OpenAPI schema a real API server serves.
The v3 documents, which kubectl reads, are read once into `openapi_v3.json` (package data), so they are served
the same wherever the package runs, the client installed or not (a browser tab has no client):
`python -m labsupport.apiserver.openapi` writes the file again from the installed client, and a test checks that
it matches.
"""
from __future__ import annotations

import functools
import hashlib
import json
import pathlib
import re
import sys

from labsupport.control.version import K8S_VERSION
from labsupport.model.kinds import KINDS, KindInfo

#: The package of a group's types in the API's definition names.
PACKAGES = {"": "io.k8s.api.core.v1", "apps": "io.k8s.api.apps.v1", "discovery.k8s.io": "io.k8s.api.discovery.v1",
            "autoscaling": "io.k8s.api.autoscaling.v1", "events.k8s.io": "io.k8s.api.events.v1",
            "networking.k8s.io": "io.k8s.api.networking.v1"}
META = "io.k8s.apimachinery.pkg.apis.meta.v1"
META_TYPES = {"ObjectMeta", "ListMeta", "ManagedFieldsEntry", "OwnerReference", "LabelSelector",
              "LabelSelectorRequirement", "Condition", "Status", "StatusDetails", "StatusCause", "MicroTime", "Time"}
#: Model names of kinds whose client class is not `V1<Kind>`.
MODEL_NAMES = {"Event": "CoreV1Event", "EndpointSlice": "V1EndpointSlice"}
#: Fields that are int-or-string in the API (the client types them as `object`).
INT_OR_STRING = {"targetPort", "port", "maxSurge", "maxUnavailable", "minAvailable"}
#: Patch strategies kubectl reads for strategic merge (`x-kubernetes-patch-merge-key`).
MERGE_KEYS = {("V1PodSpec", "containers"): "name", ("V1PodSpec", "initContainers"): "name",
              ("V1PodSpec", "volumes"): "name", ("V1PodSpec", "imagePullSecrets"): "name",
              ("V1PodSpec", "hostAliases"): "ip", ("V1Container", "ports"): "containerPort",
              ("V1Container", "env"): "name", ("V1Container", "volumeMounts"): "mountPath",
              ("V1ServiceSpec", "ports"): "port", ("V1PodStatus", "conditions"): "type",
              ("V1NodeStatus", "conditions"): "type", ("V1DeploymentStatus", "conditions"): "type"}
INT_OR_STRING_DESCRIPTION = ("IntOrString is a type that can hold an int32 or a string.  When used in JSON or "
                              "YAML marshalling and unmarshalling, it produces or consumes the inner type.  This "
                              "allows you to have, for example, a JSON field that can accept a name or number.")


def _models():
    from kubernetes.client import models
    return models


@functools.lru_cache(maxsize=None)
def _model(name: str):
    return getattr(_models(), name, None)


def _short(model_name: str) -> str:
    return re.sub(r"^(CoreV1|V\d+(alpha\d+|beta\d+)?)", "", model_name)


class _Builder:
    """Walks the client models reachable from the served kinds and writes one schema per type."""

    def __init__(self, ref_prefix: str, v3: bool, names: dict[str, str] | None = None):
        self.ref_prefix = ref_prefix
        self.v3 = v3
        self.schemas: dict[str, dict] = {}
        self.names: dict[str, str] = dict(names) if names is not None else dict(_definition_names())

    def name_of(self, model_name: str, group: str) -> str:
        """The definition name of a client model (`io.k8s.api.core.v1.ServiceSpec`)."""
        if model_name not in self.names:
            short = _short(model_name)
            package = META if short in META_TYPES else PACKAGES.get(group, PACKAGES[""])
            self.names[model_name] = f"{package}.{short}"
        return self.names[model_name]

    def ref(self, model_name: str, group: str) -> dict:
        """A reference to a model's schema, writing the schema on first use."""
        name = self.name_of(model_name, group)
        if name not in self.schemas:
            self.schemas[name] = {}
            self.schemas[name] = self.schema(model_name, group)
        if self.v3:
            return {"allOf": [{"$ref": self.ref_prefix + name}]}
        return {"$ref": self.ref_prefix + name}

    def schema(self, model_name: str, group: str, kind: KindInfo | None = None) -> dict:
        """The schema of one model: its properties, required fields and description."""
        cls = _model(model_name)
        out: dict = {"type": "object"}
        doc = (cls.__doc__ or "").strip().split("\n\n", 1)[0].strip() if cls is not None else ""
        if doc and not doc.startswith("Attributes:"):
            out["description"] = " ".join(doc.split())
        if cls is None or not hasattr(cls, "openapi_types"):
            return out
        props, required = {}, []
        fields = getattr(cls, "model_fields", {})
        for attr, type_name in cls.openapi_types.items():
            key = cls.attribute_map[attr]
            prop = self.type_schema(type_name, group, key)
            info = fields.get(attr)
            description = getattr(info, "description", None) if info is not None else None
            if description:
                if "$ref" in prop or "allOf" in prop:
                    prop = {**prop, "description": description} if self.v3 else \
                        {"description": description, **prop}
                else:
                    prop["description"] = description
            merge_key = MERGE_KEYS.get((model_name, key))
            if merge_key and type_name.startswith("List["):
                prop["x-kubernetes-patch-merge-key"] = merge_key
                prop["x-kubernetes-patch-strategy"] = "merge"
                prop["x-kubernetes-list-type"] = "map"
                prop["x-kubernetes-list-map-keys"] = [merge_key]
            if info is not None and info.is_required():
                required.append(key)
            props[key] = prop
        out["properties"] = dict(sorted(props.items()))
        if required:
            out["required"] = sorted(required)
        if kind is not None:
            out["x-kubernetes-group-version-kind"] = [{"group": kind.group, "kind": kind.kind,
                                                       "version": kind.version}]
        return out

    def type_schema(self, type_name: str, group: str, key: str = "") -> dict:
        """The schema of a client type name (`List[V1ServicePort]`, `Dict[str, str]`, `int`)."""
        if type_name.startswith("List["):
            return {"type": "array", "items": self.type_schema(type_name[5:-1], group)}
        if type_name.startswith("Dict["):
            inner = type_name[5:-1].split(", ", 1)[1]
            return {"type": "object", "additionalProperties": self.type_schema(inner, group)}
        simple = {"str": {"type": "string"}, "int": {"type": "integer", "format": "int32"},
                  "bool": {"type": "boolean"}, "float": {"type": "number", "format": "double"},
                  "datetime": {"type": "string", "format": "date-time"}, "date": {"type": "string"},
                  "bytearray": {"type": "string", "format": "byte"}}
        if type_name in simple:
            return dict(simple[type_name])
        if type_name == "object":
            if key in INT_OR_STRING:
                name = "io.k8s.apimachinery.pkg.util.intstr.IntOrString"
                if self.v3:
                    self.schemas[name] = {"description": INT_OR_STRING_DESCRIPTION, "format": "int-or-string",
                                          "oneOf": [{"type": "integer"}, {"type": "string"}]}
                    return {"allOf": [{"$ref": self.ref_prefix + name}]}
                self.schemas[name] = {"type": "string", "format": "int-or-string",
                                      "description": INT_OR_STRING_DESCRIPTION}
                return {"$ref": self.ref_prefix + name}
            return {"type": "object"}
        if _model(type_name) is not None:
            return self.ref(type_name, group)
        return {"type": "object"}

    def kind(self, info: KindInfo) -> str:
        """Write a served kind's schema (with its group-version-kind); returns its definition name."""
        model_name = MODEL_NAMES.get(info.kind, f"V1{info.kind}")
        name = self.name_of(model_name, info.group)
        self.schemas[name] = {}
        self.schemas[name] = self.schema(model_name, info.group, info)
        return name


@functools.lru_cache(maxsize=None)
def _definition_names() -> dict[str, str]:
    """Each client model's definition name. A type belongs to the group of the first kind (in served order,
    the core group first) that reaches it: PodSpec is core's though Deployments embed it."""
    builder = _Builder("#/definitions/", v3=False, names={})
    for info in KINDS:
        builder.kind(info)
    return builder.names


def _group_version(info: KindInfo) -> str:
    return f"apis/{info.group}/{info.version}" if info.group else f"api/{info.version}"


def _paths(kinds: list[KindInfo], v3: bool) -> dict:
    paths: dict = {}
    for info in kinds:
        prefix = f"/apis/{info.group}/{info.version}" if info.group else f"/api/{info.version}"
        gvk = {"group": info.group, "version": info.version, "kind": info.kind}
        if v3:
            params = [{"name": n, "in": "query", "schema": {"type": "string", "uniqueItems": True}}
                      for n in ("dryRun", "fieldManager", "fieldValidation")]
        else:
            params = [{"name": n, "in": "query", "type": "string", "uniqueItems": True}
                      for n in ("dryRun", "fieldManager", "fieldValidation")]
        op = {"parameters": params, "x-kubernetes-group-version-kind": gvk, "responses": {}}
        base = f"{prefix}/namespaces/{{namespace}}/{info.plural}" if info.namespaced else f"{prefix}/{info.plural}"
        paths[base] = {"post": dict(op, operationId=f"create{info.kind}", **{"x-kubernetes-action": "post"})}
        paths[base + "/{name}"] = {
            "get": dict(op, operationId=f"read{info.kind}", **{"x-kubernetes-action": "get"}),
            "put": dict(op, operationId=f"replace{info.kind}", **{"x-kubernetes-action": "put"}),
            "patch": dict(op, operationId=f"patch{info.kind}", **{"x-kubernetes-action": "patch"}),
        }
    return paths


def v3_root() -> dict:
    """/openapi/v3: where each group-version's document lives, with a hash that changes with its content."""
    out = {}
    for info in KINDS:
        key = _group_version(info)
        if key not in out:
            out[key] = {"serverRelativeURL": f"/openapi/v3/{key}?hash={_hash(key)}"}
    return {"paths": out}


@functools.lru_cache(maxsize=None)
def _hash(key: str) -> str:
    doc = v3_document_text(key)
    return hashlib.sha512((doc or "").encode()).hexdigest()[:128].upper()


#: The v3 documents the client's models give: {"client": its version, "documents": {group-version: document}}.
V3_PATH = pathlib.Path(__file__).with_name("openapi_v3.json")


@functools.lru_cache(maxsize=1)
def _shipped_v3() -> dict[str, str]:
    documents = json.loads(V3_PATH.read_text(encoding="utf-8"))["documents"]
    return {key: json.dumps(doc, separators=(",", ":")) for key, doc in documents.items()}


def v3_document_text(key: str) -> str | None:
    """The OpenAPI v3 document of one group-version (`api/v1`, `apis/apps/v1`) as JSON text; None if not served."""
    return _shipped_v3().get(key)


def v3_documents_from_client() -> dict:
    """Every served group-version's v3 document, built from the installed client (what `openapi_v3.json` holds)."""
    import kubernetes
    keys = sorted({_group_version(k) for k in KINDS})
    return {"client": f"kubernetes {kubernetes.__version__}",
            "documents": {key: json.loads(v3_document_from_client(key) or "null") for key in keys}}


@functools.lru_cache(maxsize=None)
def v3_document_from_client(key: str) -> str | None:
    """One group-version's v3 document as JSON text, built from the installed client's models."""
    kinds = [k for k in KINDS if _group_version(k) == key]
    if not kinds:
        return None
    builder = _Builder("#/components/schemas/", v3=True)
    for info in kinds:
        builder.kind(info)
    doc = {"openapi": "3.0.0", "info": {"title": "Kubernetes", "version": K8S_VERSION},
           "paths": _paths(kinds, True), "components": {"schemas": dict(sorted(builder.schemas.items()))}}
    return json.dumps(doc, separators=(",", ":"))


@functools.lru_cache(maxsize=None)
def v2_document_text() -> str:
    """The OpenAPI v2 (Swagger) document of every kind served, as JSON text."""
    builder = _Builder("#/definitions/", v3=False)
    for info in KINDS:
        builder.kind(info)
    doc = {"swagger": "2.0", "info": {"title": "Kubernetes", "version": K8S_VERSION},
           "paths": _paths(list(KINDS), False), "definitions": dict(sorted(builder.schemas.items())),
           "security": [{"BearerToken": []}],
           "securityDefinitions": {"BearerToken": {"type": "apiKey", "name": "authorization", "in": "header"}}}
    return json.dumps(doc, separators=(",", ":"))


@functools.lru_cache(maxsize=None)
def v2_document_protobuf() -> bytes:
    """The OpenAPI v2 document as kubectl reads it (gnostic protobuf)."""
    from labsupport.apiserver.openapi_pb import encode_document
    return encode_document(v2_document_text())


def write_v3_documents(path: pathlib.Path = V3_PATH) -> None:
    """Write `openapi_v3.json` from the installed client: one group-version's document per line."""
    found = v3_documents_from_client()
    lines = [f"{json.dumps(key)}: {json.dumps(doc, separators=(',', ':'))}" for key, doc in found["documents"].items()]
    path.write_text(f'{{"client": {json.dumps(found["client"])},\n"documents": {{\n' + ",\n".join(lines) + "\n}}\n",
                    encoding="utf-8")


if __name__ == "__main__":
    write_v3_documents()
    sys.stdout.write(f"wrote {V3_PATH}\n")
