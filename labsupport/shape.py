"""The cluster's shape, defined once: nodes, zones, address ranges, the DNS Service's IP and kube-proxy's modes.

The embedded cluster (`sim`, `netns`) is built from a `ClusterConfig`; the kind backend writes its kind config
from the same one, so both describe the same nodes, zones and CIDRs.
"""
from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field

#: kube-proxy's modes on Linux (`mode` in KubeProxyConfiguration, `--proxy-mode`).
PROXY_MODES = ("iptables", "ipvs", "nftables")
#: The lesson's zones (its cluster lives in ru-central1).
ZONES = ("ru-central1-a", "ru-central1-b", "ru-central1-d")
#: The cluster DNS Service (kube-dns) — the 10th address of the service CIDR, as kubeadm and kind choose it.
DNS_IP = "10.96.0.10"
#: The outside client: a machine on the node network next to the nodes (as a container beside kind's nodes).
CLIENT_IP = "172.18.0.100"


@dataclass
class ClusterConfig:
    """The shape of a cluster. The defaults mirror the lesson and kind."""

    name: str = "lab"
    workers: int = 3
    zones: tuple[str, ...] = ZONES
    control_plane: bool = True
    node_network: str = "172.18.0.0/16"
    pod_cidr: str = "10.244.0.0/16"
    service_cidr: str = "10.96.0.0/12"
    node_port_range: tuple[int, int] = (30000, 32767)
    domain: str = "cluster.local"
    proxy_mode: str = "iptables"
    max_pods: int = 110
    max_endpoints_per_slice: int = 100
    lb_pool: tuple[str, str] = ("172.18.255.200", "172.18.255.250")
    record_events: bool = True
    system_pods: bool = True
    extra_node_labels: dict[str, dict[str, str]] = field(default_factory=dict)

    @property
    def dns_ip(self) -> str:
        """The cluster DNS Service's address."""
        return DNS_IP


def node_plan(cfg: ClusterConfig) -> list[tuple[str, str, str, str, bool]]:
    """(name, IP, pod CIDR, zone, is control plane) for every node, kind-style."""
    net = ipaddress.ip_network(cfg.node_network)
    pods = ipaddress.ip_network(cfg.pod_cidr)
    subnets = pods.subnets(new_prefix=24)
    plan = []
    host = 2
    if cfg.control_plane:
        plan.append((f"{cfg.name}-control-plane", str(net.network_address + host), str(next(subnets)), cfg.zones[0],
                     True))
        host += 1
    else:
        next(subnets)
    for i in range(cfg.workers):
        name = f"{cfg.name}-worker" + (str(i + 1) if i else "")
        plan.append((name, str(net.network_address + host + i), str(next(subnets)), cfg.zones[i % len(cfg.zones)],
                     False))
    return plan


__all__ = ["ClusterConfig", "node_plan", "PROXY_MODES", "ZONES", "DNS_IP", "CLIENT_IP"]
