"""The resource kinds the lab knows, under every spelling kubectl accepts."""
from __future__ import annotations

from dataclasses import dataclass, field

from labsupport.errors import BadRequest


@dataclass(frozen=True)
class KindInfo:
    """One API resource: its Kind, group/version, plural and the short names kubectl accepts."""

    kind: str
    group: str
    version: str
    plural: str
    namespaced: bool = True
    short_names: tuple[str, ...] = ()
    verbs: tuple[str, ...] = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")
    subresources: tuple[str, ...] = ()
    categories: tuple[str, ...] = field(default=())

    @property
    def api_version(self) -> str:
        """`v1` for the core group, `group/version` otherwise."""
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def singular(self) -> str:
        """The lower-case singular name (`endpointslice`)."""
        return self.kind.lower()

    @property
    def resource(self) -> str:
        """The plural resource name, qualified with its group when it has one (`deployments.apps`)."""
        return f"{self.plural}.{self.group}" if self.group else self.plural


KINDS: tuple[KindInfo, ...] = (
    KindInfo("Namespace", "", "v1", "namespaces", namespaced=False, short_names=("ns",),
             verbs=("create", "delete", "get", "list", "patch", "update", "watch")),
    KindInfo("Node", "", "v1", "nodes", namespaced=False, short_names=("no",)),
    KindInfo("Pod", "", "v1", "pods", short_names=("po",), subresources=("log", "exec", "attach", "portforward", "status"),
             categories=("all",)),
    KindInfo("Service", "", "v1", "services", short_names=("svc",), subresources=("status",), categories=("all",)),
    KindInfo("Endpoints", "", "v1", "endpoints", short_names=("ep",)),
    KindInfo("ConfigMap", "", "v1", "configmaps", short_names=("cm",)),
    KindInfo("Event", "", "v1", "events", short_names=("ev",)),
    KindInfo("Deployment", "apps", "v1", "deployments", short_names=("deploy",), subresources=("scale", "status"),
             categories=("all",)),
    KindInfo("ReplicaSet", "apps", "v1", "replicasets", short_names=("rs",), subresources=("scale", "status"),
             categories=("all",)),
    KindInfo("StatefulSet", "apps", "v1", "statefulsets", short_names=("sts",), subresources=("scale", "status"),
             categories=("all",)),
    KindInfo("DaemonSet", "apps", "v1", "daemonsets", short_names=("ds",), subresources=("status",),
             categories=("all",)),
    KindInfo("EndpointSlice", "discovery.k8s.io", "v1", "endpointslices"),
    KindInfo("ServiceCIDR", "networking.k8s.io", "v1", "servicecidrs", namespaced=False, subresources=("status",)),
)

_BY_KIND = {k.kind: k for k in KINDS}
_ALIASES: dict[str, KindInfo] = {}
for _k in KINDS:
    for _alias in (_k.kind.lower(), _k.plural, _k.singular, *_k.short_names, _k.resource, f"{_k.singular}.{_k.group}"):
        _ALIASES[_alias.lower()] = _k


def resolve(name: str) -> KindInfo:
    """The KindInfo for any kubectl spelling: `po`, `pods`, `Pod`, `svc`, `deploy`, `endpointslices`, `ep`, `ns`."""
    if isinstance(name, KindInfo):
        return name
    key = str(name).strip().lower()
    if key in _ALIASES:
        return _ALIASES[key]
    known = ", ".join(sorted({k.plural for k in KINDS}))
    raise BadRequest(f'the server doesn\'t have a resource type "{name}" (known here: {known})')


def by_kind(kind: str, api_version: str | None = None) -> KindInfo:
    """The KindInfo for an object's `kind` and `apiVersion`, refusing an unknown pair with the API server's words."""
    info = _BY_KIND.get(kind)
    if info is None:
        raise BadRequest(f'no matches for kind "{kind}" in version "{api_version or ""}"')
    if api_version is not None and api_version != info.api_version:
        raise BadRequest(f'no matches for kind "{kind}" in version "{api_version}"')
    return info


def by_resource(group: str, version: str, plural: str) -> KindInfo | None:
    """The KindInfo served at /apis/<group>/<version>/<plural>, or None."""
    for info in KINDS:
        if info.group == group and info.version == version and info.plural == plural:
            return info
    return None
