"""The `netns` data plane: the embedded cluster's network built from real Linux network namespaces.

    lsk-<run>-net        the node network: bridge lsk-br0 (172.18.0.1/16, the "docker" gateway; it drops
                         whatever it would forward, so a packet to nowhere times out as on kind)
    lsk-<run>-node-<n>   one per node: eth0 with the node IP, bridge lsk-cni0 with the pod CIDR's .1,
                         routes to the other nodes' pod CIDRs, ip_forward, br_netfilter, kube-proxy's rules
    lsk-<run>-pod-<p>    one per running pod: eth0 (a veth into its node's lsk-cni0) with the pod IP and
                         /etc/netns/<ns>/resolv.conf pointing at the cluster DNS
    lsk-<run>-client     the outside client 172.18.0.100 on the node network

kube-proxy's agents render the rules; every sync is applied in the node's namespace the way kube-proxy does
it (`iptables-restore --noflush --counters` of the full dump plus the jumps from the built-in chains;
`nft -f` of the incremental transaction). Pods' apps answer on real sockets made inside their namespaces;
CoreDNS pods answer real DNS on port 53; `curl`, `nslookup` and `conntrack` are the real tools.
"""
from __future__ import annotations

import atexit
import ipaddress
import os
import platform
import random
import re
import shutil
import socket
import threading
import time
import weakref
from dataclasses import dataclass, field
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from labsupport.control import dns
from labsupport.control.kubelet import PROBE_USER_AGENT
from labsupport.dataplane.kernel_ns import (KernelError, add_bridge, add_veth, blackhole_default, configure,
                                            create_namespace, inside, link_name, list_namespaces, new_run_id,
                                            ns_name, release_run_id, remove_namespace, replace_route, route_via,
                                            run_in, set_sysctls, write_etc)
from labsupport.dataplane.kernel_ns import clean as clean_namespaces
from labsupport.dataplane.kernel_servers import TAG_HEADER, Answer, Answered, Listener, Servers
from labsupport.dataplane.network import CLIENT_IP, DNS_IP, find_source
from labsupport.results import CurlResult, Hop, Trace
from labsupport.errors import BackendUnavailable, BadRequest, NotFound

if TYPE_CHECKING:
    from labsupport.control.cluster import Cluster
    from labsupport.proxy.daemon import KubeProxyDaemons

TOOLS = ("ip", "nft", "iptables-restore", "iptables-save", "conntrack", "curl", "nslookup", "getent")
NODE_BRIDGE = "lsk-br0"
POD_BRIDGE = "lsk-cni0"
GATEWAY_IP = "172.18.0.1"
CURL_TIMEOUT = 5.0
CURL_MARK = "\n__labsupport_curl__ "
CURL_AGENT = "curl/7.88.1"
NODE_SYSCTLS = {"net.ipv4.ip_forward": "1", "net.ipv4.conf.all.route_localnet": "1",
                "net.bridge.bridge-nf-call-iptables": "1", "net.ipv4.conf.all.rp_filter": "0",
                "net.ipv4.conf.default.rp_filter": "0"}
NFT_RESET = "add table ip kube-proxy\ndelete table ip kube-proxy\n"

__all__ = ["KernelNetwork", "KernelKeepAlive", "KernelError", "preflight", "problems", "clean", "parse_nslookup"]

_LIVE: "weakref.WeakSet[KernelNetwork]" = weakref.WeakSet()


# --- what this machine offers -----------------------------------------------------------------------------
def problems() -> list[str]:
    """What stops the `netns` backend from running here (empty: it can run)."""
    out = []
    if platform.system() != "Linux":
        return [f"it needs Linux network namespaces; this is {platform.system()} (use the sim backend)"]
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        out.append("it needs root to create network namespaces (run as root, e.g. `sudo`, or use the sim backend)")
    missing = [t for t in TOOLS if shutil.which(t) is None]
    if missing:
        out.append("missing tools: " + ", ".join(missing) +
                   " (apt-get install iproute2 nftables iptables conntrack curl dnsutils libc-bin)")
    if not os.path.exists("/proc/self/ns/net"):
        out.append("this kernel has no network namespaces (CONFIG_NET_NS)")
    try:
        import dnslib  # noqa: F401
        import pyroute2  # noqa: F401
    except ImportError as e:
        out.append(f"the Python package {e.name} is missing (pip install pyroute2 dnslib)")
    return out


def preflight(proxy_mode: str) -> None:
    """Refuse, with the reason and the fix, when the netns backend cannot run this proxy mode here."""
    if proxy_mode == "ipvs":
        raise BackendUnavailable('proxy_mode="ipvs" cannot run on the netns backend: IPVS is not in this kernel '
                                 '(CONFIG_IP_VS). Use proxy_mode="iptables" or "nftables" here, or '
                                 'Lab(backend="sim", proxy_mode="ipvs") to study IPVS on the modelled data plane.')
    found = problems()
    if found:
        raise BackendUnavailable("the netns backend cannot run here: " + "; ".join(found) +
                                 '. Lab(backend="sim") runs everywhere.')


def clean() -> list[str]:
    """Remove what earlier runs left behind: namespaces, /etc/netns entries, links (live runs are kept)."""
    if platform.system() != "Linux" or not hasattr(os, "geteuid") or os.geteuid() != 0:
        return []
    return clean_namespaces()


def _close_all() -> None:
    for network in list(_LIVE):
        try:
            network.close()
        except Exception:
            pass


atexit.register(_close_all)


# --- the network ------------------------------------------------------------------------------------------
@dataclass
class Sandbox:
    """A pod's network namespace: its name, IP, node and host-side veth."""

    ns: str
    ip: str
    node: str
    veth: str
    namespace: str
    name: str
    ports: set = field(default_factory=set)


@dataclass
class NodeRules:
    """What is loaded in a node's namespace: the mode, the agent's sync count, iptables chains and jumps."""

    mode: str | None = None
    syncs: int = -1
    chains: dict = field(default_factory=dict)
    jumps: bool = False
    unsupported: str = ""


@dataclass
class Source:
    """Where a connection starts: the kind of source, its address, its node and its namespace."""

    kind: str
    ip: str
    node: str | None
    ns: str
    namespace: str = "default"


class KernelKeepAlive:
    """A long-lived HTTP connection from a real socket in the source's namespace: it stays on one pod."""

    def __init__(self, network: "KernelNetwork", url: str, source: str):
        self.network = network
        self.url = url
        self.source = source
        self.sock: socket.socket | None = None
        target = url if "://" in url else f"http://{url}"
        parts = urlsplit(target)
        self.host = parts.hostname or ""
        self.port = parts.port or 80
        self.path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        self.host_header = self.host if parts.port is None else f"{self.host}:{self.port}"
        self.first = self._open()
        self.closed = not self.first.ok

    @property
    def pod(self) -> str | None:
        """The pod this connection is stuck to."""
        return self.first.pod

    def _open(self) -> CurlResult:
        net = self.network
        result = CurlResult(url=self.url, source=self.source)
        with net.cluster.lock:
            net.refresh()
            origin = net.origin(self.source)
            ip = net.resolve(origin, self.host)
            if ip is None:
                result.error, result.exit_code = f"curl: (6) Could not resolve host: {self.host}", 6
                return result
            if origin.kind == "client":
                net.route_client(ip, result.hops)
        sock = net.socket_in(origin.ns)
        sock.settimeout(net.curl_timeout)
        start = time.monotonic()
        try:
            sock.connect((ip, self.port))
        except ConnectionRefusedError:
            sock.close()
            ms = int((time.monotonic() - start) * 1000)
            result.error = (f"curl: (7) Failed to connect to {ip} port {self.port} after {ms} ms: "
                            "Couldn't connect to server")
            result.exit_code = 7
            return result
        except (socket.timeout, OSError):
            sock.close()
            ms = int((time.monotonic() - start) * 1000)
            result.error = f"curl: (28) Failed to connect to {ip} port {self.port} after {ms} ms: Timeout was reached"
            result.exit_code = 28
            return result
        self.sock = sock
        return self._exchange(self.path, result)

    def _exchange(self, path: str, result: CurlResult) -> CurlResult:
        assert self.sock is not None
        tag = self.network.new_tag()
        request = (f"GET {path} HTTP/1.1\r\nHost: {self.host_header}\r\nUser-Agent: {CURL_AGENT}\r\nAccept: */*\r\n"
                   f"{TAG_HEADER}: {tag}\r\n\r\n")
        try:
            self.sock.sendall(request.encode())
            status, body = read_http_response(self.sock)
        except (ConnectionResetError, BrokenPipeError):
            status, body = None, "reset"
        except (socket.timeout, OSError):
            status, body = None, "timeout"
        if status is None:
            self.closed = True
            self.sock.close()
            if body == "timeout":
                result.error, result.exit_code = "curl: (28) Operation timed out", 28
            elif body == "reset":
                result.error, result.exit_code = "curl: (56) Recv failure: Connection reset by peer", 56
            else:
                result.error, result.exit_code = "curl: (52) Empty reply from server", 52
            return result
        result.status, result.body = status, body
        self.network.fill_from_record(result, self.network.servers.record(tag))
        return result

    def request(self, path: str | None = None) -> CurlResult:
        """Send one more request on this connection."""
        if self.closed or self.sock is None:
            raise BadRequest("this connection is closed; open a new one with lab.connect()")
        with self.network.cluster.lock:
            self.network.refresh()          # a pod that is gone has its sockets closed before we send
        return self._exchange(path or self.path, CurlResult(url=self.url, source=self.source))

    def close(self) -> None:
        """Close the connection."""
        if self.sock is not None:
            self.sock.close()
        self.closed = True

    def __repr__(self) -> str:
        return f"<KeepAlive {self.url} from {self.source} → pod {self.pod!r}{' (closed)' if self.closed else ''}>"


def read_http_response(sock: socket.socket) -> tuple[int | None, str]:
    """Read one HTTP/1.1 response (Content-Length framed): (status, body); (None, "") when the peer hung up."""
    buf = b""
    while b"\r\n\r\n" not in buf:
        chunk = sock.recv(65536)
        if not chunk:
            return None, ""
        buf += chunk
    head, _, rest = buf.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split(" ")[1])
    length = 0
    for line in lines[1:]:
        name, _, value = line.partition(":")
        if name.strip().lower() == "content-length":
            length = int(value.strip())
    while len(rest) < length:
        chunk = sock.recv(65536)
        if not chunk:
            break
        rest += chunk
    return status, rest[:length].decode(errors="replace")


class KernelNetwork:
    """The `netns` data plane: the same verbs as SimNetwork, answered by the Linux kernel."""

    def __init__(self, cluster: "Cluster", proxies: "KubeProxyDaemons", *, seed: int = 0,
                 load_rules: bool = True, serve_dns: bool = True):
        self.cluster = cluster
        self.proxies = proxies
        # False: another kube-proxy (the real one) programs the node namespaces and serves their health checks
        self.load_rules = load_rules
        # False: another DNS server (the real CoreDNS) runs in the CoreDNS pods' namespaces
        self.serve_dns = serve_dns
        self.rng = random.Random(seed * 31 + 7)
        self.curl_timeout = CURL_TIMEOUT
        self.run = new_run_id()
        self.net_ns = ns_name(self.run, "net")
        self.client_ns = ns_name(self.run, "client")
        self.dns_ns = ns_name(self.run, "dnsutils")
        self.node_ns: dict[str, str] = {}
        self.sandboxes: dict[str, Sandbox] = {}
        self.rules: dict[str, NodeRules] = {}
        self.health_ports: dict[str, set[int]] = {}
        self._pending: dict[str, dict | None] = {}
        self._tags = 0
        self._closed = False
        self._dns_snapshot: tuple = ([], [], [], [])
        self._changed = threading.Event()
        self._keeper_error: Exception | None = None
        self._keeper: threading.Thread | None = None
        self.servers = Servers()
        _LIVE.add(self)
        self._unsubscribe = None
        try:
            self._build()
            self._unsubscribe = cluster.store.subscribe(self._on_event)
            if load_rules:
                proxies.listeners.append(self._on_rules)
                for name, agent in proxies.agents.items():
                    self._on_rules(name, agent, None)
            cluster.kubelet.probe_hook = self._probe
            for pod in cluster.store.list("Pod"):
                self._pending[pod["metadata"]["uid"]] = pod
            self.refresh()
            self._keeper = threading.Thread(target=self._keep_up, name="labsupport-netns-keeper", daemon=True)
            self._keeper.start()
        except BaseException:
            self.close()
            raise

    # --- building the network ------------------------------------------------------------------------------
    def nodes(self) -> list[dict]:
        """Every node."""
        return self.cluster.store.list("Node")

    def _build(self) -> None:
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
            self.rules[name] = NodeRules()
        create_namespace(self.client_ns)
        write_etc(self.client_ns, {"hosts": hosts, "resolv.conf": quiet_resolver})
        add_veth(self.net_ns, "lskc", self.client_ns, "eth0", master=NODE_BRIDGE)
        configure(self.client_ns, "eth0", CLIENT_IP, net.prefixlen, GATEWAY_IP)
        workers = [n for n in nodes if "node-role.kubernetes.io/control-plane" not in n["metadata"]["labels"]]
        first = (workers or nodes)[0]
        cidr = ipaddress.ip_network(first["spec"]["podCIDR"])
        self._make_sandbox(self.dns_ns, str(cidr.broadcast_address - 1), first["metadata"]["name"], "default",
                           "dnsutils", self.run + "/dnsutils")

    def _make_sandbox(self, ns: str, ip: str, node: str, namespace: str, name: str, key: str) -> Sandbox:
        node_ns = self.node_ns[node]
        veth = link_name(key)
        domain = self.cluster.config.domain
        write_etc(ns, {"resolv.conf": f"search {namespace}.svc.{domain} svc.{domain} {domain}\n"
                                      f"nameserver {DNS_IP}\noptions ndots:5\n",
                       "hosts": f"127.0.0.1\tlocalhost\n{ip}\t{name}\n"})
        create_namespace(ns)
        add_veth(node_ns, veth, ns, "eth0", master=POD_BRIDGE, hairpin=True)
        prefix = ipaddress.ip_network(self._node(node)["spec"]["podCIDR"]).prefixlen
        configure(ns, "eth0", ip, prefix, self.cluster.kubelet.gateway(node))
        return Sandbox(ns, ip, node, veth, namespace, name)

    def _node(self, name: str) -> dict:
        node = self.cluster.store.find("Node", None, name)
        if node is None:
            raise NotFound.of("nodes", name)
        return node

    # --- pods ----------------------------------------------------------------------------------------------
    def _on_event(self, event) -> None:
        if self._closed or event.kind not in ("Pod", "Service", "EndpointSlice"):
            return
        if event.kind == "Pod":
            self._pending[event.object["metadata"]["uid"]] = None if event.type == "DELETED" else event.object
        self._changed.set()

    def _keep_up(self) -> None:
        """Once the verb that changed the cluster lets go of its lock, bring the kernel up to date, so that
        real tools run from a shell (`ip netns exec … nslookup db`) see the cluster as it is."""
        while not self._closed:
            if not self._changed.wait(1.0):
                continue
            time.sleep(0.05)
            with self.cluster.lock:
                self._changed.clear()
                if self._closed:
                    return
                try:
                    self.refresh()
                except Exception as e:       # the next verb repairs it with a full reload
                    self._keeper_error = e

    def apply_pod_changes(self) -> None:
        """Create namespaces for pods that started and remove those of pods that are gone."""
        if self._closed or not self._pending:
            return
        pending, self._pending = self._pending, {}
        wanted: dict[str, dict] = {}
        for uid, pod in pending.items():
            current = None
            if pod is not None:
                current = self.cluster.store.find("Pod", pod["metadata"]["namespace"], pod["metadata"]["name"])
                if current is not None and current["metadata"]["uid"] != uid:
                    current = None
            if current is not None and self._runs(current):
                wanted[uid] = current
            elif uid in self.sandboxes:
                self._stop_pod(uid)
        for uid, pod in wanted.items():
            if uid not in self.sandboxes:
                self._start_pod(uid, pod)
            self._sync_listeners(uid)

    def _runs(self, pod: dict) -> bool:
        status = pod.get("status") or {}
        return (status.get("phase") == "Running" and bool(status.get("podIP")) and not pod["spec"].get("hostNetwork")
                and pod["spec"].get("nodeName") in self.node_ns)

    def _start_pod(self, uid: str, pod: dict) -> None:
        meta = pod["metadata"]
        ns = ns_name(self.run, f"pod-{meta['namespace']}-{meta['name']}")
        if any(s.ns == ns for s in self.sandboxes.values()):
            ns = ns_name(self.run, f"pod-{meta['namespace']}-{meta['name']}-{uid[:8]}")
        self.sandboxes[uid] = self._make_sandbox(ns, pod["status"]["podIP"], pod["spec"]["nodeName"],
                                                 meta["namespace"], meta["name"], self.run + "/" + uid)

    def _stop_pod(self, uid: str) -> None:
        box = self.sandboxes.pop(uid, None)
        if box is None:
            return
        self.servers.remove(uid)
        remove_namespace(box.ns)

    def _sync_listeners(self, uid: str) -> None:
        box = self.sandboxes[uid]
        rt = self.cluster.kubelet.pods.get(uid)
        apps = list(rt.apps.values()) if rt else []
        wanted: set[tuple[str, int]] = set()
        dns_server = False
        for app in apps:
            wanted |= set(app.listens())
            dns_server |= app.kind == "coredns"
        if dns_server and not self.serve_dns:
            return
        for proto, port in sorted(wanted - box.ports):
            if proto == "TCP":
                sock = self.socket_in(box.ns, socket.SOCK_STREAM)
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                sock.bind(("0.0.0.0", port))
                sock.listen(512)
                if dns_server and port == 53:
                    self.servers.add(Listener(uid, "dns-tcp", sock, self._dns_reply))
                else:
                    self.servers.add(Listener(uid, "http", sock, self._pod_http(uid, box)))
            elif proto == "UDP":
                sock = self.socket_in(box.ns, socket.SOCK_DGRAM)
                sock.bind(("0.0.0.0", port))
                handler = self._dns_reply if dns_server and port == 53 else self._pod_udp(uid)
                self.servers.add(Listener(uid, "udp", sock, handler))
            box.ports.add((proto, port))

    def _pod_http(self, uid: str, box: Sandbox):
        who = {"where": "pod", "namespace": box.namespace, "pod": box.name, "node": box.node}

        def handle(method: str, target: str, headers: dict, peer: tuple, local: tuple):
            app = self._app(uid, "TCP", local[1])
            if app is None:
                return None, who
            response = app.http(method, target, peer, local[1], headers)
            if response is None:
                return None, who
            return Answer(response.status, response.body, dict(response.headers)), who
        return handle

    def _pod_udp(self, uid: str):
        def handle(payload: bytes, peer: tuple, local: tuple):
            app = self._app(uid, "UDP", local[1])
            return app.udp(local[1], payload, peer) if app is not None else None
        return handle

    def _app(self, uid: str, proto: str, port: int):
        for _ in range(3):
            try:
                rt = self.cluster.kubelet.pods.get(uid)
                apps = list(rt.apps.values()) if rt else []
                return next((a for a in apps if (proto, port) in a.listens()), None)
            except RuntimeError:        # the kubelet changed the dict under us; look again
                continue
        return None

    # --- DNS -----------------------------------------------------------------------------------------------
    def _snapshot(self) -> tuple:
        store = self.cluster.store
        return (store.list("Service"), store.list("EndpointSlice"), store.list("Pod"),
                [n["metadata"]["name"] for n in store.list("Namespace")])

    def dns_lookup(self, qname: str, qtype: str) -> dns.DNSReply:
        """What the cluster's CoreDNS answers (kind's Corefile: pods insecure, ttl 30)."""
        lock = self.cluster.lock
        if lock.acquire(blocking=False):
            try:
                self._dns_snapshot = self._snapshot()
            finally:
                lock.release()
        services, slices, pods, namespaces = self._dns_snapshot
        return dns.answer(qname, qtype, services, slices, pods, zone=self.cluster.config.domain, ttl=30,
                          pods_mode="insecure", namespaces=namespaces)

    def _dns_reply(self, data: bytes, peer: tuple, local: tuple) -> bytes | None:
        from dnslib import QTYPE, RCODE, RR, DNSRecord
        try:
            request = DNSRecord.parse(data)
        except Exception:
            return None
        reply = request.reply()
        question = request.q
        qtype = QTYPE.get(question.qtype, str(question.qtype))
        try:
            answer = self.dns_lookup(str(question.qname), qtype)
        except Exception:
            reply.header.rcode = RCODE.SERVFAIL
            return reply.pack()
        reply.header.rcode = getattr(RCODE, answer.rcode, RCODE.SERVFAIL)
        for records, add in ((answer.answer, reply.add_answer), (answer.authority, reply.add_auth),
                             (answer.additional, reply.add_ar)):
            for text in records:
                try:
                    add(*RR.fromZone(text.replace("\t", " ")))
                except Exception:
                    continue
        return reply.pack()

    # --- kube-proxy → kernel -------------------------------------------------------------------------------
    def _on_rules(self, node_name: str, agent, change) -> None:
        if self._closed or node_name not in self.node_ns:
            return
        try:
            self._apply_rules(node_name, agent, change)
        except Exception:
            self.rules[node_name].mode = None       # what the kernel holds is unknown now: reload it all next time
            self.proxies.dirty.add(node_name)
            raise

    def _apply_rules(self, node_name: str, agent, change) -> None:
        state = self.rules.setdefault(node_name, NodeRules())
        if change is None:
            if agent.rules and agent.mode in ("iptables", "nftables"):
                self._load(node_name, agent.mode, agent.rules, full=True)
            state.syncs = agent.syncs
            return
        kind, payload = change
        if kind == "cleanup":
            self._cleanup(node_name, payload)
            return
        if not payload.applied:
            return
        if payload.mode in ("iptables", "nftables"):
            # A delta only applies on top of the previous sync; after a gap (a sync whose result kube-proxy's
            # daemon did not pass on, a mode switch) load the complete rule set instead.
            if state.mode != payload.mode or agent.syncs != state.syncs + 1:
                self._load(node_name, payload.mode, agent.rules, full=True)
            elif payload.text:
                self._load(node_name, payload.mode, payload.text, full=False)
            if payload.mode == "iptables":
                state.chains = _declared_chains(agent.rules)
        else:
            state.unsupported = payload.mode
        state.syncs = agent.syncs

    def _load(self, node_name: str, mode: str, text: str, *, full: bool) -> None:
        ns = self.node_ns[node_name]
        state = self.rules[node_name]
        if mode == "iptables":
            if full:
                chains = _declared_chains(text)
                stale = {t: sorted(c - chains.get(t, set())) for t, c in state.chains.items()}
                text = _with_deletions(text, stale)
                state.chains = chains
            run_in(ns, ["iptables-restore", "--noflush", "--counters"], input=text, check=True)
            if not state.jumps:
                from labsupport.proxy.iptables import JUMP_RULES
                jumps = "".join(f"*{table}\n" + "".join(f"-A {chain} {rule}\n" for chain, rule in rules) + "COMMIT\n"
                                for table, rules in JUMP_RULES.items())
                run_in(ns, ["iptables-restore", "--noflush"], input=jumps, check=True)
                state.jumps = True
        else:
            run_in(ns, ["nft", "-f", "-"], input=(NFT_RESET + text) if full else text, check=True)
        state.mode = mode
        state.unsupported = ""

    def _cleanup(self, node_name: str, switch) -> None:
        ns = self.node_ns[node_name]
        state = self.rules[node_name]
        if switch.cleanup_tool.startswith("iptables-restore"):
            without_jumps = "".join(line + "\n" for line in switch.cleanup.splitlines() if not line.startswith("-D "))
            proc = run_in(ns, ["iptables-restore", "--noflush"], input=switch.cleanup if state.jumps else without_jumps)
            if proc.returncode != 0:
                run_in(ns, ["iptables-restore", "--noflush"], input=without_jumps)
        elif switch.cleanup_tool.startswith("nft"):
            run_in(ns, ["nft", "-f", "-"], input=NFT_RESET)
        self.rules[node_name] = NodeRules()

    def _sync_health_ports(self) -> None:
        if not self.load_rules:
            return
        wanted = {svc["spec"]["healthCheckNodePort"] for svc in self.cluster.store.list("Service")
                  if svc["spec"].get("healthCheckNodePort")}
        for node_name, ns in self.node_ns.items():
            have = self.health_ports.setdefault(node_name, set())
            owner = f"node/{node_name}"
            for port in sorted(have - wanted):
                self.servers.remove(owner, port)
                have.discard(port)
            for port in sorted(wanted - have):
                sock = self.socket_in(ns, socket.SOCK_STREAM)
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                sock.bind(("0.0.0.0", port))
                sock.listen(64)
                self.servers.add(Listener(owner, "http", sock, self._health_handler(node_name)))
                have.add(port)

    def _health_handler(self, node_name: str):
        who = {"where": "node", "node": node_name}

        def handle(method: str, target: str, headers: dict, peer: tuple, local: tuple):
            answer = self.proxies.health_check(node_name, local[1])
            if answer is None:
                return Answer(404, "404 page not found\n"), who
            code, body = answer
            return Answer(code, body, {"Content-Type": "application/json", "X-Content-Type-Options": "nosniff"}), who
        return handle

    # --- keeping up ----------------------------------------------------------------------------------------
    def refresh(self) -> None:
        """Bring the kernel up to date: pod namespaces, kube-proxy's latest rules, health-check servers."""
        if self._closed:
            raise BadRequest("this lab's network is closed")
        error, self._keeper_error = self._keeper_error, None
        if error is not None and not isinstance(error, BackendUnavailable):
            for state in self.rules.values():
                state.mode = None            # the failed load left the kernel unknown: load everything again
            self.proxies.dirty.update(n for n in self.node_ns if n in self.proxies.agents)
        self.apply_pod_changes()
        self.proxies.sync_all()
        self._sync_health_ports()
        self._dns_snapshot = self._snapshot()
        bad = {n: s.unsupported for n, s in self.rules.items() if s.unsupported}
        if bad:
            raise BackendUnavailable(f"kube-proxy on {', '.join(sorted(bad))} runs in {sorted(set(bad.values()))[0]} "
                                     "mode, which this kernel cannot load (IPVS is not compiled in); switch back "
                                     "with lab.set_proxy_mode(\"nftables\") or use the sim backend")

    def socket_in(self, ns: str, kind: int = socket.SOCK_STREAM) -> socket.socket:
        """A new IPv4 socket that lives in namespace `ns`."""
        with inside(ns):
            return socket.socket(socket.AF_INET, kind)

    def new_tag(self) -> str:
        """A fresh request tag (sent as a header, stripped by the servers)."""
        self._tags += 1
        return f"{self.run}-{self._tags}"

    # --- sources -------------------------------------------------------------------------------------------
    def origin(self, source: str) -> Source:
        """Parse a source: "client", "node/<name>", "pod/<name>" or "pod/<ns>/<name>"."""
        kind, node, pod, namespace = find_source(self.cluster, source)
        if kind == "client":
            return Source("client", CLIENT_IP, None, self.client_ns)
        if kind == "node":
            ip = pod["status"]["podIP"] if pod else self.cluster.node_ip(node)
            return Source("node", ip, node, self.node_ns[node], namespace)
        self.apply_pod_changes()
        box = self.sandboxes.get(pod["metadata"]["uid"])
        if box is None:
            self._pending[pod["metadata"]["uid"]] = pod
            self.apply_pod_changes()
            box = self.sandboxes[pod["metadata"]["uid"]]
        return Source("pod", box.ip, node, box.ns, namespace)

    def node_by_ip(self, ip: str) -> dict | None:
        """The node with this InternalIP."""
        return next((n for n in self.nodes() if self.cluster.node_ip(n) == ip), None)

    def resolve(self, origin: Source, host: str) -> str | None:
        """The IPv4 address `host` resolves to inside the source's namespace (real resolver), or None."""
        try:
            ipaddress.ip_address(host)
            return host
        except ValueError:
            pass
        proc = run_in(origin.ns, ["getent", "ahostsv4", host], timeout=15)
        for line in proc.stdout.splitlines():
            return line.split()[0]
        return None

    def route_client(self, ip: str, hops: list[Hop]) -> None:
        """Send the outside client's packets for a LoadBalancer IP to a healthy node, as the load balancer does."""
        svc = next((s for s in self.cluster.store.list("Service")
                    if any(i.get("ip") == ip for i in (s.get("status", {}).get("loadBalancer", {}).get("ingress")
                                                        or []))), None)
        if svc is None:
            return
        candidates = [n for n in self.nodes()
                      if "node.kubernetes.io/exclude-from-external-load-balancers" not in n["metadata"]["labels"]]
        hc = svc["spec"].get("healthCheckNodePort")
        if hc:
            checked = []
            healthy = []
            for n in candidates:
                code = self._health_probe(self.cluster.node_ip(n), hc)
                checked.append(f"{n['metadata']['name']}:{hc} → {code}")
                if code == 200:
                    healthy.append(n)
            hops.append(Hop("load balancer", "health checks (real HTTP from the client) " + ", ".join(checked)))
            candidates = healthy
        if not candidates:
            replace_route(self.client_ns, f"{ip}/32", GATEWAY_IP)
            hops.append(Hop("load balancer", f"no healthy node behind {ip}: the connection times out"))
            return
        node = candidates[self.rng.randrange(len(candidates))]
        replace_route(self.client_ns, f"{ip}/32", self.cluster.node_ip(node))
        hops.append(Hop("load balancer", f"{ip} → node {node['metadata']['name']} (chosen among "
                                         f"{len(candidates)} healthy node(s)); client route {ip}/32 via "
                                         f"{self.cluster.node_ip(node)}"))

    def _health_probe(self, ip: str, port: int) -> int | None:
        sock = self.socket_in(self.client_ns)
        sock.settimeout(2)
        try:
            sock.connect((ip, port))
            sock.sendall(f"GET /healthz HTTP/1.1\r\nHost: {ip}:{port}\r\nConnection: close\r\n\r\n".encode())
            return read_http_response(sock)[0]
        except OSError:
            return None
        finally:
            sock.close()

    # --- verbs ---------------------------------------------------------------------------------------------
    def curl(self, url: str, source: str = "client", *, keep_open: bool = False, headers: dict | None = None,
             trace: bool = False) -> CurlResult:
        """One HTTP request with the real curl in the source's namespace; failures are results."""
        self.refresh()
        origin = self.origin(source)
        target = url if "://" in url else f"http://{url}"
        parts = urlsplit(target)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise BadRequest(f"cannot fetch {url!r}: give a URL like http://web or http://172.18.0.3:30080/path")
        result = CurlResult(url=url, source=source)
        if origin.kind == "client":
            self.route_client(parts.hostname, result.hops)
        before = self._counters() if trace else {}
        tag = self.new_tag()
        argv = ["curl", "-sS", "-m", f"{self.curl_timeout:g}", "-H", f"{TAG_HEADER}: {tag}"]
        for key, value in (headers or {}).items():
            argv += ["-H", f"{key}: {value}"]
        argv += ["-w", CURL_MARK + "%{http_code} %{local_ip} %{local_port} %{remote_ip} %{remote_port}", target]
        proc = run_in(origin.ns, argv, timeout=self.curl_timeout + 10)
        body, _, info = proc.stdout.rpartition(CURL_MARK)
        fields = info.split()
        code = fields[0] if fields else "000"
        local = (fields[1], int(fields[2])) if len(fields) >= 3 and fields[2].isdigit() else None
        remote = (fields[3], int(fields[4])) if len(fields) >= 5 and fields[4].isdigit() else None
        result.exit_code = proc.returncode
        if proc.returncode == 0 and code != "000":
            result.status, result.body = int(code), body
        else:
            result.error = (proc.stderr.strip().splitlines() or [f"curl: ({proc.returncode})"])[-1]
        record = self.servers.record(tag)
        self.fill_from_record(result, record)
        result.hops.insert(0, Hop(origin.kind if origin.kind == "client" else f"{origin.kind}/{origin.node}",
                                  f"curl {target} from {origin.ip} in network namespace {origin.ns}" +
                                  (f" (local {local[0]}:{local[1]} → {remote[0]}:{remote[1]})"
                                   if local and remote else "")))
        if trace:
            self._trace_hops(result, origin, parts, local, remote, record, before)
        if record is not None and record.where == "pod":
            result.hops.append(Hop(record.node or "", f"delivered to pod {record.namespace}/{record.pod} at "
                                                      f"{record.local[0]}:{record.local[1]}; the app saw "
                                                      f"{record.peer[0]}:{record.peer[1]}"))
        elif record is not None:
            result.hops.append(Hop(record.node or "", f"kube-proxy health check server answers {record.status}"))
        elif not result.ok:
            result.hops.append(Hop("kernel", result.error or ""))
        return result

    def fill_from_record(self, result: CurlResult, record: Answered | None) -> None:
        """Fill which pod answered and what it saw from the server side's record."""
        if record is None:
            return
        result.node = record.node
        if record.where == "pod":
            result.pod, result.namespace = record.pod, record.namespace
            result.client_ip, result.client_port = record.peer
            result.endpoint = f"{record.local[0]}:{record.local[1]}"

    def connect(self, url: str, source: str = "client") -> KernelKeepAlive:
        """A keep-alive connection from a real socket in the source's namespace."""
        return KernelKeepAlive(self, url, source)

    def trace(self, url: str, source: str = "client") -> Trace:
        """One new connection, with the model's view and the kernel's own (counters, conntrack)."""
        return Trace(url, source, self.curl(url, source, trace=True))

    def nslookup(self, name: str, pod: str | None = None) -> dns.NslookupAnswer:
        """The real `nslookup name` run in a pod's namespace (default: a dnsutils namespace on the first worker)."""
        self.refresh()
        ns = self.dns_ns
        if pod:
            ns = self.origin(pod if pod.startswith("pod/") else f"pod/{pod}").ns
        proc = run_in(ns, ["nslookup", "-timeout=2", "-retry=1", name], timeout=30)
        return parse_nslookup(proc.stdout + proc.stderr, name)

    def conntrack(self, node_name: str) -> list[str]:
        """The node's conntrack table as `conntrack -L` prints it."""
        self.refresh()
        ns = self.node_ns.get(node_name)
        if ns is None:
            raise NotFound.of("nodes", node_name)
        return [line for line in run_in(ns, ["conntrack", "-L"]).stdout.splitlines() if line.strip()]

    def kernel_rules(self, node_name: str) -> str:
        """What the node's kernel holds now: `nft list table ip kube-proxy` or `iptables-save`."""
        self.refresh()
        ns = self.node_ns[node_name]
        if self.rules[node_name].mode == "nftables":
            return run_in(ns, ["nft", "list", "table", "ip", "kube-proxy"]).stdout
        return run_in(ns, ["iptables-save"]).stdout

    # --- tracing -------------------------------------------------------------------------------------------
    def _counters(self) -> dict[str, dict[tuple[str, str], int]]:
        out: dict[str, dict[tuple[str, str], int]] = {}
        for node_name, ns in self.node_ns.items():
            if self.rules[node_name].mode != "iptables":
                continue
            counts: dict[tuple[str, str], int] = {}
            table = ""
            for line in run_in(ns, ["iptables-save", "-c"]).stdout.splitlines():
                if line.startswith("*"):
                    table = line[1:]
                m = re.match(r"^\[(\d+):\d+\] (-A .*)$", line)
                if m:
                    counts[(table, m.group(2))] = int(m.group(1))
            out[node_name] = counts
        return out

    def _trace_hops(self, result: CurlResult, origin: Source, parts, local, remote, record, before) -> None:
        from labsupport.dataplane.model import trace_packet
        from labsupport.dataplane.netfilter import Hit
        dst = remote[0] if remote else parts.hostname
        dport = remote[1] if remote else (parts.port or 80)
        entry = origin.node
        if origin.kind == "client":
            node = self.node_by_ip(dst)
            entry = node["metadata"]["name"] if node else None
            if entry is None:
                gateway = route_via(self.client_ns, dst)
                hop = self.node_by_ip(gateway) if gateway else None
                entry = hop["metadata"]["name"] if hop else None
        if entry and entry in self.proxies.agents:
            agent = self.proxies.agent(entry)
            gateway = self.cluster.kubelet.gateway(entry)
            local_ips = [self.cluster.node_ip(entry)] + ([gateway] if gateway else [])
            try:
                model = trace_packet(agent.mode, agent.rules, local_ips, origin.ip, dst, int(dport))
                hits = model.paths[0].hits if model.paths else []
                result.hops.append(Hop(entry, f"model of {agent.mode} rules: {model.verdict}, may DNAT to "
                                              f"{', '.join(model.endpoints) or 'nothing'}"
                                              f"{', masqueraded' if model.masquerade else ''}"
                                              f" (rules on the first of {len(model.paths)} explored path(s))",
                                       list(hits)))
            except Exception as e:      # the model may not know a construct; the kernel view still stands
                result.hops.append(Hop(entry, f"model could not trace these rules: {e}"))
        if entry and self.rules.get(entry) and self.rules[entry].mode == "nftables":
            lookups = self._nft_lookups(entry, dst, int(dport))
            result.hops.append(Hop(entry, "kernel: what the nftables maps hold for this packet: " +
                                   "; ".join(lookups)))
        after = self._counters() if before else {}
        nodes = sorted(self.node_ns.items(), key=lambda item: item[0] != entry)
        for node_name, ns in nodes:
            lines = run_in(ns, ["conntrack", "-L"]).stdout.splitlines()
            mine = []
            for line in lines:
                if local and f"src={local[0]} " in line and f"sport={local[1]} " in line:
                    mine.append(line)
                elif record is not None and f"src={record.peer[0]} " in line and f"sport={record.peer[1]} " in line:
                    mine.append(line)
            hits = []
            old = before.get(node_name, {})
            for (table, rule), count in after.get(node_name, {}).items():
                if count > old.get((table, rule), 0):
                    words = rule.split()
                    target = words[words.index("-j") + 1] if "-j" in words else ""
                    # nat rules count only a connection's first packet; filter rules count every packet,
                    # so of those only the verdicts that end a connection say something about this one.
                    if table == "nat" or target in ("DROP", "REJECT"):
                        hits.append(Hit(table, words[1], rule, target))
            if mine or hits:
                nat = [rw for line in mine for rw in conntrack_rewrites(line)]
                result.hops.append(Hop(node_name, "kernel: " + (
                    "iptables rules whose counters moved, and conntrack" if hits else "conntrack"), hits,
                    nat + [f"conntrack: {line}" for line in mine]))

    def _nft_lookups(self, node_name: str, dst: str, dport: int) -> list[str]:
        """`nft get element` for the packet's keys in kube-proxy's verdict maps, as the kernel holds them."""
        ns = self.node_ns[node_name]
        out = []
        for table_map, key in (("service-ips", f"{dst} . tcp . {dport}"), ("no-endpoint-services",
                                                                           f"{dst} . tcp . {dport}"),
                               ("service-nodeports", f"tcp . {dport}"), ("no-endpoint-nodeports", f"tcp . {dport}")):
            proc = run_in(ns, ["nft", "get", "element", "ip", "kube-proxy", table_map, "{", key, "}"])
            for line in proc.stdout.splitlines():
                line = line.strip()
                if line.startswith("elements"):
                    out.append(f"nft get element ip kube-proxy {table_map} {{ {key} }} → {line}")
        if not out:
            out.append(f"no element for {dst}:{dport} in service-ips, service-nodeports or the no-endpoint maps")
        return out

    # --- probes --------------------------------------------------------------------------------------------
    def _probe(self, pod: dict, rt, app, probe: dict) -> tuple[bool, str] | None:
        """A real probe from the node's namespace: (passed, the kubelet's message), or None for the model."""
        if self._closed:
            return None
        kind = "httpGet" if "httpGet" in probe else "tcpSocket" if "tcpSocket" in probe else None
        if kind is None:
            return None
        self.apply_pod_changes()
        box = self.sandboxes.get(rt.uid)
        if box is None or rt.ip is None:
            return None
        kubelet = self.cluster.kubelet
        port = kubelet.resolve_port(pod, probe[kind].get("port"))
        if port is None:
            return None
        path = probe[kind].get("path", "/")
        url = f"http://{rt.ip}:{port}{path}"
        sock = self.socket_in(self.node_ns[box.node])
        sock.settimeout(float(probe.get("timeoutSeconds", 1)))
        try:
            try:
                sock.connect((rt.ip, port))
            except ConnectionRefusedError:
                refused = f"dial tcp {rt.ip}:{port}: connect: connection refused"
                return False, (f'Get "{url}": {refused}' if kind == "httpGet" else refused)
            except OSError:
                return False, (f'Get "{url}": context deadline exceeded '
                               "(Client.Timeout exceeded while awaiting headers)")
            if kind == "tcpSocket":
                return True, ""
            sock.sendall(f"GET {path} HTTP/1.1\r\nHost: {rt.ip}:{port}\r\nUser-Agent: {PROBE_USER_AGENT}\r\n"
                         "Accept: */*\r\nConnection: close\r\n\r\n".encode())
            try:
                status, _ = read_http_response(sock)
            except OSError:
                status = None
            if status is None:
                return False, f'Get "{url}": EOF'
            return 200 <= status < 400, f"HTTP probe failed with statuscode: {status}"
        finally:
            sock.close()

    # --- the end -------------------------------------------------------------------------------------------
    def namespaces(self) -> list[str]:
        """Every network namespace this network made."""
        return list_namespaces(self.run + "-")

    def close(self) -> None:
        """Stop the servers and remove every namespace (and with them every link and rule)."""
        if self._closed:
            return
        self._closed = True
        self._changed.set()
        if self._keeper is not None and self._keeper is not threading.current_thread():
            self._keeper.join(5)
        if self._unsubscribe is not None:
            self._unsubscribe()
        if self._on_rules in self.proxies.listeners:
            self.proxies.listeners.remove(self._on_rules)
        if getattr(self.cluster.kubelet, "probe_hook", None) == self._probe:
            self.cluster.kubelet.probe_hook = None
        self.servers.close()
        for name in list_namespaces(self.run + "-"):
            remove_namespace(name)
        release_run_id(self.run)
        _LIVE.discard(self)


def _declared_chains(dump: str) -> dict[str, set[str]]:
    chains: dict[str, set[str]] = {}
    table = ""
    for line in dump.splitlines():
        if line.startswith("*"):
            table = line[1:].strip()
            chains.setdefault(table, set())
        elif line.startswith(":"):
            chains.setdefault(table, set()).add(line[1:].split()[0])
    return chains


def _with_deletions(dump: str, stale: dict[str, list[str]]) -> str:
    """The dump plus, per table, the declaration and deletion of chains that no longer exist (as kube-proxy does)."""
    if not any(stale.values()):
        return dump
    out = []
    table = ""
    seen = set()
    for line in dump.splitlines():
        if line.startswith("*"):
            table = line[1:].strip()
            seen.add(table)
            out.append(line)
            out.extend(f":{c} - [0:0]" for c in stale.get(table, []))
        elif line.strip() == "COMMIT":
            out.extend(f"-X {c}" for c in stale.get(table, []))
            out.append(line)
        else:
            out.append(line)
    for t, chains in stale.items():
        if t not in seen and chains:
            out.append(f"*{t}")
            out.extend(f":{c} - [0:0]" for c in chains)
            out.extend(f"-X {c}" for c in chains)
            out.append("COMMIT")
    return "\n".join(out) + "\n"


def conntrack_rewrites(line: str) -> list[str]:
    """The NAT a `conntrack -L` line records, in the model's words: `DNAT a:p -> b:q`, `SNAT a:p -> b:q`."""
    tuples = re.findall(r"src=(\S+) dst=(\S+) sport=(\d+) dport=(\d+)", line)
    if len(tuples) < 2:
        return []
    (osrc, odst, osport, odport), (rsrc, rdst, rsport, rdport) = tuples[:2]
    out = []
    if (odst, odport) != (rsrc, rsport):
        out.append(f"DNAT {odst}:{odport} -> {rsrc}:{rsport}")
    if (osrc, osport) != (rdst, rdport):
        out.append(f"SNAT {osrc}:{osport} -> {rdst}:{rdport}")
    return out


def parse_nslookup(text: str, name: str) -> dns.NslookupAnswer:
    """Turn the real nslookup's output into an answer: addresses after each `Name:` line, the rcode, the text."""
    addresses: list[str] = []
    found = ""
    seen_name = False
    rcode = "NOERROR"
    for line in text.splitlines():
        if line.startswith("Name:"):
            seen_name = True
            found = found or line.split(":", 1)[1].strip()
        elif line.startswith("Address:") and seen_name:
            addresses.append(line.split(":", 1)[1].strip())
        elif line.startswith("** server can't find"):
            code = line.rsplit(":", 1)[-1].strip()
            if not addresses:
                rcode = code or "SERVFAIL"
        elif "no servers could be reached" in line or "connection timed out" in line:
            if not addresses:
                rcode = "SERVFAIL"
    return dns.NslookupAnswer(addresses=addresses, rcode=rcode, text=text, name=found or name.rstrip("."))
