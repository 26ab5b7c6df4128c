"""The namespaces of one `netns` run: the node network, one namespace per node and per running pod, the client.

    lsk-<run>-net        the node network: bridge lsk-br0 (172.18.0.1/16, the "docker" gateway; it drops
                         whatever it would forward, so a packet to nowhere times out as on kind)
    lsk-<run>-node-<n>   one per node: eth0 with the node IP, bridge lsk-cni0 with the pod CIDR's .1,
                         routes to the other nodes' pod CIDRs, ip_forward, br_netfilter, kube-proxy's rules
    lsk-<run>-pod-<p>    one per running pod: eth0 (a veth into its node's lsk-cni0) with the pod IP and
                         /etc/netns/<ns>/resolv.conf and hosts as the kubelet writes them
    lsk-<run>-client     the outside client 172.18.0.100 on the node network
    lsk-<run>-dnsutils   a dnsutils pod's namespace on the first worker, for `lab.nslookup` without a pod
"""
from __future__ import annotations

import ipaddress
import socket
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from labsupport.apps.container import ClusterDNS, hosts_file, resolv_conf
from labsupport.errors import NotFound
from labsupport.netns.namespaces import (add_bridge, add_veth, blackhole_default, configure, create_namespace,
                                         inside, link_name, list_namespaces, new_run_id, ns_name, release_run_id,
                                         remove_namespace, set_sysctls, write_etc)
from labsupport.shape import CLIENT_IP, DNS_IP

if TYPE_CHECKING:
    from labsupport.control.cluster import Cluster

NODE_BRIDGE = "lsk-br0"
POD_BRIDGE = "lsk-cni0"
GATEWAY_IP = "172.18.0.1"
NODE_SYSCTLS = {"net.ipv4.ip_forward": "1", "net.ipv4.conf.all.route_localnet": "1",
                "net.bridge.bridge-nf-call-iptables": "1", "net.ipv4.conf.all.rp_filter": "0",
                "net.ipv4.conf.default.rp_filter": "0"}


@dataclass
class Sandbox:
    """A pod's network namespace: its name, IP, node and host-side veth, and the ports served in it."""

    ns: str
    ip: str
    node: str
    veth: str
    namespace: str
    name: str
    ports: set = field(default_factory=set)


class Topology:
    """Builds and removes the namespaces, bridges, veths and routes of one run."""

    def __init__(self, cluster: "Cluster"):
        self.cluster = cluster
        self.run = new_run_id()
        self.net_ns = ns_name(self.run, "net")
        self.client_ns = ns_name(self.run, "client")
        self.dns_ns = ns_name(self.run, "dnsutils")
        self.node_ns: dict[str, str] = {}

    def nodes(self) -> list[dict]:
        """Every node."""
        return self.cluster.store.list("Node")

    def node(self, name: str) -> dict:
        """One node, or NotFound."""
        node = self.cluster.store.find("Node", None, name)
        if node is None:
            raise NotFound.of("nodes", name)
        return node

    def node_by_ip(self, ip: str) -> dict | None:
        """The node with this InternalIP."""
        return next((n for n in self.nodes() if self.cluster.node_ip(n) == ip), None)

    def build(self) -> None:
        """The node network, every node's namespace with its pod bridge and routes, the client, the dnsutils pod."""
        net = ipaddress.ip_network(self.cluster.config.node_network)
        create_namespace(self.net_ns)
        add_bridge(self.net_ns, NODE_BRIDGE, GATEWAY_IP, net.prefixlen)
        set_sysctls(self.net_ns, {"net.ipv4.ip_forward": "1"})
        blackhole_default(self.net_ns)
        nodes = self.nodes()
        hosts = "127.0.0.1\tlocalhost\n" + "".join(f"{self.cluster.node_ip(n)}\t{n['metadata']['name']}\n"
                                                   for n in nodes)
        quiet_resolver = "# the node network has no resolver\noptions timeout:1 attempts:1\n"
        for node in nodes:
            name = node["metadata"]["name"]
            ip = self.cluster.node_ip(node)
            ns = ns_name(self.run, f"node-{name}")
            self.node_ns[name] = ns
            create_namespace(ns)
            write_etc(ns, {"hosts": hosts, "resolv.conf": quiet_resolver})
            add_veth(self.net_ns, f"lskn{ip.replace('.', '')[-8:]}", ns, "eth0", master=NODE_BRIDGE)
            routes = [(o["spec"]["podCIDR"], self.cluster.node_ip(o)) for o in nodes
                      if o is not node and o["spec"].get("podCIDR")]
            configure(ns, "eth0", ip, net.prefixlen, GATEWAY_IP, routes)
            gateway = self.cluster.kubelet.gateway(name)
            if gateway:
                add_bridge(ns, POD_BRIDGE, gateway, ipaddress.ip_network(node["spec"]["podCIDR"]).prefixlen)
            set_sysctls(ns, NODE_SYSCTLS)
        create_namespace(self.client_ns)
        write_etc(self.client_ns, {"hosts": hosts, "resolv.conf": quiet_resolver})
        add_veth(self.net_ns, "lskc", self.client_ns, "eth0", master=NODE_BRIDGE)
        configure(self.client_ns, "eth0", CLIENT_IP, net.prefixlen, GATEWAY_IP)
        workers = [n for n in nodes if "node-role.kubernetes.io/control-plane" not in n["metadata"]["labels"]]
        first = (workers or nodes)[0]
        cidr = ipaddress.ip_network(first["spec"]["podCIDR"])
        dnsutils = {"metadata": {"name": "dnsutils", "namespace": "default"}, "spec": {}}
        self.make_sandbox(self.dns_ns, str(cidr.broadcast_address - 1), first["metadata"]["name"], dnsutils,
                          self.run + "/dnsutils")

    def make_sandbox(self, ns: str, ip: str, node: str, pod: dict, key: str) -> Sandbox:
        """A pod's namespace on `node`, wired into the node's pod bridge, with the resolv.conf and hosts the
        kubelet writes for that pod (so real tools run in it resolve as the pod does)."""
        node_ns = self.node_ns[node]
        veth = link_name(key)
        dns = ClusterDNS(DNS_IP, self.cluster.config.domain)
        write_etc(ns, {"resolv.conf": resolv_conf(pod, dns), "hosts": hosts_file(pod, ip, dns)})
        namespace, name = pod["metadata"].get("namespace", "default"), pod["metadata"]["name"]
        create_namespace(ns)
        add_veth(node_ns, veth, ns, "eth0", master=POD_BRIDGE, hairpin=True)
        prefix = ipaddress.ip_network(self.node(node)["spec"]["podCIDR"]).prefixlen
        configure(ns, "eth0", ip, prefix, self.cluster.kubelet.gateway(node))
        return Sandbox(ns, ip, node, veth, namespace, name)

    def pod_namespace(self, namespace: str, name: str, uid: str, taken: set[str]) -> str:
        """The namespace name for a pod (its uid added when a pod of the same name still has one)."""
        ns = ns_name(self.run, f"pod-{namespace}-{name}")
        return ns_name(self.run, f"pod-{namespace}-{name}-{uid[:8]}") if ns in taken else ns

    @staticmethod
    def socket_in(ns: str, kind: int = socket.SOCK_STREAM) -> socket.socket:
        """A new IPv4 socket that lives in namespace `ns`."""
        with inside(ns):
            return socket.socket(socket.AF_INET, kind)

    def namespaces(self) -> list[str]:
        """Every network namespace this run made."""
        return list_namespaces(self.run + "-")

    def remove(self, ns: str) -> None:
        """Remove one namespace (and with it its links and rules)."""
        remove_namespace(ns)

    def close(self) -> None:
        """Remove every namespace of this run and give its run id back."""
        for name in list_namespaces(self.run + "-"):
            remove_namespace(name)
        release_run_id(self.run)


__all__ = ["Topology", "Sandbox", "GATEWAY_IP", "NODE_BRIDGE", "POD_BRIDGE"]
