"""The kind cluster the lessons run on, described as data: nodes, zones, kube-proxy mode, port mappings, images.

`cluster_config()` builds the `kind.x-k8s.io/v1alpha4` Cluster object; `config_yaml()` prints it as the file
`kind create cluster --config` reads. `config_problems()` checks a config against kind's own field names, so a
typo is caught here and not by kind halfway through creating nodes.

>>> cfg = cluster_config("nftables")
>>> cfg["networking"]["kubeProxyMode"], [n["role"] for n in cfg["nodes"]]
('nftables', ['control-plane', 'worker', 'worker', 'worker'])
>>> config_problems(cfg)
[]
"""
from __future__ import annotations

import copy
from typing import Any

import yaml

from labsupport.errors import UnknownProxyMode
from labsupport.shape import PROXY_MODES, ZONES, ClusterConfig

PREFIX = "labsupport"
DEFAULT_CLUSTER = PREFIX
API_VERSION = "kind.x-k8s.io/v1alpha4"

# The node image: Kubernetes v1.37.0 as built for kind v0.33.0 (from that release's notes). kind supports a node
# image only with the release that built it, so the tag is pinned together with its digest.
NODE_IMAGE = "kindest/node:v1.37.0@sha256:a1ed56cfb0e7b93589bdf97c8cd566405a265939e3620fc4f5de89adff580ae5"
KIND_RELEASE_FOR_IMAGE = (0, 33, 0)

# containerd's CRI plugin: keep oom_score_adj at or above the parent's (no CAP_SYS_RESOURCE needed)
OOM_PATCH = '[plugins."io.containerd.grpc.v1.cri"]\n  restrict_oom_score_adj = true\n'

#: The API server's admission plugins on the lab's clusters: kubeadm's own (NodeRestriction) and
#: DenyServiceExternalIPs, which refuses every new `spec.externalIPs`: an external IP takes that address's traffic
#: for the whole cluster, a classmate's ClusterIP included (CVE-2020-8554).
ADMISSION_PLUGINS = ("NodeRestriction", "DenyServiceExternalIPs")

ZONE_LABEL = "topology.kubernetes.io/zone"
REGION_LABEL = "topology.kubernetes.io/region"
POD_SUBNET = ClusterConfig.pod_cidr
SERVICE_SUBNET = ClusterConfig.service_cidr

# NodePorts the lessons use, published on the host by the control-plane node so that macOS and Windows hosts
# (where the node IPs are not reachable) can reach them at localhost:<port>.
NODE_PORTS = (30080, 30081, 30082, 30443, 31080)

# The images the lessons run, pinned by tag; preloaded into the nodes when the host already has them.
LESSON_IMAGES = (
    "nginx:1.27",
    "registry.k8s.io/e2e-test-images/agnhost:2.53",
    "registry.k8s.io/e2e-test-images/jessie-dnsutils:1.7",
    "registry.k8s.io/echoserver:1.10",
    "busybox:1.36",
)
DNSUTILS_IMAGE = "registry.k8s.io/e2e-test-images/jessie-dnsutils:1.7"
CLIENT_IMAGE = "curlimages/curl:8.11.1"

# kind's v1alpha4 field names (sigs.k8s.io/kind/pkg/apis/config/v1alpha4/types.go).
CLUSTER_FIELDS = {"kind", "apiVersion", "name", "nodes", "networking", "featureGates", "runtimeConfig",
                  "kubeadmConfigPatches", "kubeadmConfigPatchesJSON6902", "containerdConfigPatches",
                  "containerdConfigPatchesJSON6902"}
NODE_FIELDS = {"role", "image", "labels", "extraMounts", "extraPortMappings", "gpus", "kubeadmConfigPatches",
               "kubeadmConfigPatchesJSON6902"}
NETWORKING_FIELDS = {"ipFamily", "apiServerPort", "apiServerAddress", "podSubnet", "serviceSubnet",
                     "disableDefaultCNI", "kubeProxyMode", "dnsSearch"}
PORT_MAPPING_FIELDS = {"containerPort", "hostPort", "listenAddress", "protocol"}
MOUNT_FIELDS = {"containerPath", "hostPath", "readOnly", "selinuxRelabel", "propagation"}
NODE_ROLES = ("control-plane", "worker")
IP_FAMILIES = ("ipv4", "ipv6", "dual")
KIND_PROXY_MODES = ("iptables", "ipvs", "nftables", "none")
PORT_PROTOCOLS = ("TCP", "UDP", "SCTP")


def node_labels_patch(config_kind: str, labels: dict[str, str]) -> str:
    """A kubeadm merge patch that has the kubelet register its node with these labels (`--node-labels`)."""
    value = ",".join(f"{k}={v}" for k, v in sorted(labels.items()))
    return yaml.safe_dump({"kind": config_kind, "nodeRegistration": {"kubeletExtraArgs": {"node-labels": value}}},
                          sort_keys=False)


def zone_labels(zone: str) -> dict[str, str]:
    """The topology labels of a node in `zone` (region = the zone without its last dash part)."""
    return {ZONE_LABEL: zone, REGION_LABEL: zone.rsplit("-", 1)[0]}


def cluster_config(proxy_mode: str = "iptables", *, name: str = DEFAULT_CLUSTER, workers: int = 3,
                   zones: tuple[str, ...] = ZONES, image: str | None = NODE_IMAGE,
                   node_ports: tuple[int, ...] = NODE_PORTS, listen_address: str = "127.0.0.1",
                   cgroup_v1: bool = False, restrict_oom_score_adj: bool = False,
                   pod_subnet: str = POD_SUBNET) -> dict[str, Any]:
    """The kind Cluster config: one control plane and `workers` workers spread over `zones`.

    The control plane sits in the first zone; worker i in zone i (mod the number of zones). Zones are set with
    kubeadm patches (InitConfiguration for the first node, JoinConfiguration for the rest), as kubelet flags.
    cgroup_v1: the host runs cgroup v1, which kubelet 1.37 refuses unless told `failCgroupV1: false`;
    restrict_oom_score_adj: root lacks CAP_SYS_RESOURCE, so the nodes' containerd must not lower oom_score_adj;
    pod_subnet: the pods' addresses (a cluster whose pods this host routes to needs one no other cluster uses).
    Every cluster's API server runs the ADMISSION_PLUGINS (a kubeadm patch)."""
    if proxy_mode not in PROXY_MODES:
        raise UnknownProxyMode(proxy_mode, PROXY_MODES)
    if workers < 0:
        raise ValueError(f"workers must be 0 or more, not {workers}")
    control: dict[str, Any] = {"role": "control-plane"}
    if image:
        control["image"] = image
    control["kubeadmConfigPatches"] = [node_labels_patch("InitConfiguration", zone_labels(zones[0]))]
    if node_ports:
        control["extraPortMappings"] = [
            {"containerPort": port, "hostPort": port, "listenAddress": listen_address, "protocol": "TCP"}
            for port in node_ports]
    nodes = [control]
    for i in range(workers):
        node: dict[str, Any] = {"role": "worker"}
        if image:
            node["image"] = image
        node["kubeadmConfigPatches"] = [node_labels_patch("JoinConfiguration", zone_labels(zones[i % len(zones)]))]
        nodes.append(node)
    config: dict[str, Any] = {
        "kind": "Cluster", "apiVersion": API_VERSION, "name": name,
        "networking": {"kubeProxyMode": proxy_mode, "podSubnet": pod_subnet, "serviceSubnet": SERVICE_SUBNET},
        "nodes": nodes}
    config["kubeadmConfigPatches"] = [admission_patch()]
    if cgroup_v1:
        config["kubeadmConfigPatches"].append(yaml.safe_dump({"kind": "KubeletConfiguration", "failCgroupV1": False}))
    if restrict_oom_score_adj:
        config["containerdConfigPatches"] = [OOM_PATCH]
    return config


def admission_patch(plugins: tuple[str, ...] = ADMISSION_PLUGINS) -> str:
    """A kubeadm merge patch that runs the API server with these admission plugins (kind turns the map of
    `extraArgs` into kubeadm v1beta4's list)."""
    return yaml.safe_dump({"kind": "ClusterConfiguration",
                           "apiServer": {"extraArgs": {"enable-admission-plugins": ",".join(plugins)}}},
                          sort_keys=False)


def config_yaml(config: dict[str, Any]) -> str:
    """The config as the YAML file `kind create cluster --config` reads."""
    header = "# generated by labsupport: the Kubernetes Services lab cluster\n"
    return header + yaml.safe_dump(copy.deepcopy(config), sort_keys=False, default_flow_style=False, width=120)


def _unknown(fields: dict, allowed: set[str], where: str) -> list[str]:
    return [f"{where}: unknown field {key!r} (kind knows {', '.join(sorted(allowed))})"
            for key in fields if key not in allowed]


def _patch_problems(patches: Any, where: str) -> list[str]:
    if not isinstance(patches, list):
        return [f"{where}: must be a list of YAML strings"]
    problems = []
    for i, patch in enumerate(patches):
        if not isinstance(patch, str):
            problems.append(f"{where}[{i}]: must be an inline YAML string, not {type(patch).__name__}")
            continue
        try:
            doc = yaml.safe_load(patch)
        except yaml.YAMLError as e:
            problems.append(f"{where}[{i}]: not YAML: {e}")
            continue
        if not isinstance(doc, dict) or not doc.get("kind"):
            problems.append(f"{where}[{i}]: a merge patch needs a `kind` naming the kubeadm object it patches")
    return problems


def config_problems(config: dict[str, Any]) -> list[str]:
    """What kind would refuse in this config (field names and values of the v1alpha4 Cluster); empty when fine."""
    problems = _unknown(config, CLUSTER_FIELDS, "Cluster")
    if config.get("kind") != "Cluster":
        problems.append(f"Cluster: kind must be 'Cluster', not {config.get('kind')!r}")
    if config.get("apiVersion") != API_VERSION:
        problems.append(f"Cluster: apiVersion must be {API_VERSION!r}, not {config.get('apiVersion')!r}")
    net = config.get("networking") or {}
    problems += _unknown(net, NETWORKING_FIELDS, "networking")
    if "kubeProxyMode" in net and net["kubeProxyMode"] not in KIND_PROXY_MODES:
        problems.append(f"networking.kubeProxyMode: {net['kubeProxyMode']!r} is not one of "
                        f"{', '.join(KIND_PROXY_MODES)}")
    if "ipFamily" in net and net["ipFamily"] not in IP_FAMILIES:
        problems.append(f"networking.ipFamily: {net['ipFamily']!r} is not one of {', '.join(IP_FAMILIES)}")
    problems += _patch_problems(config.get("kubeadmConfigPatches", []), "kubeadmConfigPatches")
    nodes = config.get("nodes") or []
    if nodes and not any(n.get("role", "control-plane") == "control-plane" for n in nodes):
        problems.append("nodes: at least one node must have role control-plane")
    host_ports: dict[tuple, str] = {}
    for i, node in enumerate(nodes):
        where = f"nodes[{i}]"
        problems += _unknown(node, NODE_FIELDS, where)
        if node.get("role", "control-plane") not in NODE_ROLES:
            problems.append(f"{where}.role: {node.get('role')!r} is not one of {', '.join(NODE_ROLES)}")
        problems += _patch_problems(node.get("kubeadmConfigPatches", []), f"{where}.kubeadmConfigPatches")
        for j, mapping in enumerate(node.get("extraPortMappings") or []):
            mwhere = f"{where}.extraPortMappings[{j}]"
            problems += _unknown(mapping, PORT_MAPPING_FIELDS, mwhere)
            for key in ("containerPort", "hostPort"):
                value = mapping.get(key)
                if value is not None and not (isinstance(value, int) and (value == -1 or 0 <= value <= 65535)):
                    problems.append(f"{mwhere}.{key}: {value!r} is not a port number")
            if mapping.get("protocol", "TCP") not in PORT_PROTOCOLS:
                problems.append(f"{mwhere}.protocol: {mapping.get('protocol')!r} is not one of "
                                f"{', '.join(PORT_PROTOCOLS)}")
            key = (mapping.get("listenAddress", "0.0.0.0"), mapping.get("hostPort"), mapping.get("protocol", "TCP"))
            if mapping.get("hostPort") not in (None, 0, -1):
                if key in host_ports:
                    problems.append(f"{mwhere}: host port {key[1]}/{key[2]} is already mapped by {host_ports[key]}")
                host_ports[key] = mwhere
        for j, mount in enumerate(node.get("extraMounts") or []):
            problems += _unknown(mount, MOUNT_FIELDS, f"{where}.extraMounts[{j}]")
    return problems


def node_names(name: str = DEFAULT_CLUSTER, workers: int = 3) -> list[str]:
    """The node (container) names kind gives a cluster: `<name>-control-plane`, `<name>-worker`, `<name>-worker2`…"""
    return [f"{name}-control-plane"] + [f"{name}-worker" + (str(i + 1) if i else "") for i in range(workers)]


def kubeconfig_context(name: str = DEFAULT_CLUSTER) -> str:
    """The kubeconfig context kind writes for a cluster."""
    return f"kind-{name}"
