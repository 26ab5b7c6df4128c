"""Discovery documents: aggregated (apidiscovery.k8s.io/v2) and legacy (/api, /apis, APIResourceList)."""
from __future__ import annotations

from labsupport.apiserver.authz import REVIEW_KINDS
from labsupport.model.kinds import KINDS, KindInfo

#: Every resource discovery lists: the stored kinds, then the create-only self reviews.
SERVED = (*KINDS, *REVIEW_KINDS)

AGGREGATED = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
SUBRESOURCE_VERBS = {"status": ("get", "patch", "update"), "scale": ("get", "patch", "update"),
                     "log": ("get",), "exec": ("create", "get"), "attach": ("create", "get"),
                     "portforward": ("create", "get")}
SUBRESOURCE_KINDS = {"scale": ("autoscaling", "v1", "Scale"), "log": ("", "v1", "Pod"),
                     "exec": ("", "v1", "PodExecOptions"), "attach": ("", "v1", "PodAttachOptions"),
                     "portforward": ("", "v1", "PodPortForwardOptions")}


def groups() -> list[tuple[str, str]]:
    """(group, version) pairs served, the core group first."""
    out: list[tuple[str, str]] = []
    for info in SERVED:
        if (info.group, info.version) not in out:
            out.append((info.group, info.version))
    return out


def _kinds_of(group: str, version: str) -> list[KindInfo]:
    return [k for k in SERVED if k.group == group and k.version == version]


def version_info(git_version: str) -> dict:
    """The /version document."""
    major, minor = git_version.lstrip("v").split(".")[:2]
    return {"major": major, "minor": minor, "emulationMajor": major, "emulationMinor": minor,
            "minCompatibilityMajor": major, "minCompatibilityMinor": str(max(int(minor) - 1, 0)),
            "gitVersion": git_version, "gitCommit": "0" * 40, "gitTreeState": "clean",
            "buildDate": "2026-01-01T00:00:00Z", "goVersion": "go1.25.0", "compiler": "gc",
            "platform": "linux/amd64"}


def _discovery_resource(info: KindInfo) -> dict:
    res = {"resource": info.plural,
           "responseKind": {"group": info.group, "version": info.version, "kind": info.kind},
           "scope": "Namespaced" if info.namespaced else "Cluster", "singularResource": info.singular,
           "verbs": list(info.verbs)}
    if info.short_names:
        res["shortNames"] = list(info.short_names)
    if info.categories:
        res["categories"] = list(info.categories)
    subs = []
    for sub in info.subresources:
        group, version, kind = SUBRESOURCE_KINDS.get(sub, (info.group, info.version, info.kind))
        subs.append({"subresource": sub, "responseKind": {"group": group, "version": version, "kind": kind},
                     "verbs": list(SUBRESOURCE_VERBS.get(sub, ("get",)))})
    if subs:
        res["subresources"] = subs
    return res


def aggregated(core: bool) -> dict:
    """The aggregated discovery document for /api (core) or /apis (named groups)."""
    items = []
    for group, version in groups():
        if (group == "") != core:
            continue
        items.append({"metadata": {"name": group, "creationTimestamp": None},
                      "versions": [{"version": version, "freshness": "Current",
                                    "resources": [_discovery_resource(k) for k in _kinds_of(group, version)]}]})
    return {"kind": "APIGroupDiscoveryList", "apiVersion": "apidiscovery.k8s.io/v2", "metadata": {},
            "items": items}


def api_versions() -> dict:
    """Legacy /api."""
    return {"kind": "APIVersions", "versions": ["v1"],
            "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1"}]}


def api_group_list() -> dict:
    """Legacy /apis."""
    out = []
    for group, version in groups():
        if group:
            gv = {"groupVersion": f"{group}/{version}", "version": version}
            out.append({"name": group, "versions": [gv], "preferredVersion": gv})
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": out}


def api_group(group: str) -> dict | None:
    """Legacy /apis/<group>."""
    for g, version in groups():
        if g == group and g:
            gv = {"groupVersion": f"{group}/{version}", "version": version}
            return {"kind": "APIGroup", "apiVersion": "v1", "name": group, "versions": [gv], "preferredVersion": gv}
    return None


def resource_list(group: str, version: str) -> dict | None:
    """Legacy /api/v1 or /apis/<group>/<version>."""
    kinds = _kinds_of(group, version)
    if not kinds:
        return None
    resources = []
    for info in kinds:
        res = {"name": info.plural, "singularName": info.singular, "namespaced": info.namespaced,
               "kind": info.kind, "verbs": list(info.verbs)}
        if info.short_names:
            res["shortNames"] = list(info.short_names)
        if info.categories:
            res["categories"] = list(info.categories)
        resources.append(res)
        for sub in info.subresources:
            g, v, kind = SUBRESOURCE_KINDS.get(sub, (info.group, info.version, info.kind))
            entry = {"name": f"{info.plural}/{sub}", "singularName": "", "namespaced": info.namespaced,
                     "kind": kind, "verbs": list(SUBRESOURCE_VERBS.get(sub, ("get",)))}
            if g != group:
                entry["group"], entry["version"] = g, v
            resources.append(entry)
    gv = f"{group}/{version}" if group else version
    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": resources}
