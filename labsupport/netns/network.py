"""The `netns` data plane: the embedded cluster's network built from real Linux network namespaces.

`KernelNetwork` answers the same verbs as the `sim` network with the kernel: `Topology` builds the namespaces,
`RuleLoader` applies each kube-proxy sync in the node's namespace the way kube-proxy does, `PodServers` runs real
sockets for the pods' apps (and DNS, and kube-proxy's health checks), `KernelProber` probes pods for real, and
`curl`, `nslookup` and `conntrack` are the real tools run inside the source's namespace.
"""
from __future__ import annotations

import atexit
import ipaddress
import random
import re
import threading
import time
import weakref
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from labsupport.errors import BackendUnavailable, BadRequest, NotFound
from labsupport.i18n import tr
from labsupport.netns.client import KernelKeepAlive, read_http_response
from labsupport.netns.namespaces import KernelError, replace_route, route_via, run_in
from labsupport.netns.pods import PodServers
from labsupport.netns.probes import KernelProber
from labsupport.netns.rules import NodeRules, RuleLoader
from labsupport.netns.servers import TAG_HEADER, Answered, Servers
from labsupport.netns.topology import GATEWAY_IP, Topology
from labsupport.results import CurlResult, Hop, NslookupAnswer, Trace
from labsupport.shape import CLIENT_IP
from labsupport.sim.network import find_source
from labsupport.tool_output import conntrack_rewrites, curl_argv, parse_curl, parse_nslookup

if TYPE_CHECKING:
    from labsupport.control.cluster import Cluster
    from labsupport.proxy.daemon import KubeProxyDaemons

CURL_TIMEOUT = 5.0

__all__ = ["KernelNetwork", "KernelKeepAlive", "KernelError"]

_LIVE: "weakref.WeakSet[KernelNetwork]" = weakref.WeakSet()


def _close_all() -> None:
    for network in list(_LIVE):
        try:
            network.close()
        except Exception:
            pass


atexit.register(_close_all)


# --- the network ------------------------------------------------------------------------------------------
@dataclass
class Source:
    """Where a connection starts: the kind of source, its address, its node and its namespace."""

    kind: str
    ip: str
    node: str | None
    ns: str
    namespace: str = "default"


class KernelNetwork:
    """The `netns` data plane: the same verbs as SimNetwork, answered by the Linux kernel."""

    def __init__(self, cluster: "Cluster", proxies: "KubeProxyDaemons", *, seed: int = 0,
                 load_rules: bool = True, serve_dns: bool = True):
        self.cluster = cluster
        self.proxies = proxies
        self.rng = random.Random(seed * 31 + 7)
        self.curl_timeout = CURL_TIMEOUT
        self.topology = Topology(cluster)
        self.servers = Servers()
        # load_rules=False: another kube-proxy (the real one) programs the node namespaces and serves their health
        # checks; serve_dns=False: another DNS server (the real CoreDNS) runs in the CoreDNS pods' namespaces.
        self.load_rules = load_rules
        self.pods = PodServers(cluster, self.topology, proxies, self.servers, serve_dns=serve_dns,
                               health_checks=load_rules)
        self.rules = RuleLoader(self.topology.node_ns, proxies)
        self.prober = KernelProber(self.pods, cluster.kubelet)
        self._tags = 0
        self._closed = False
        self._changed = threading.Event()
        self._keeper_error: Exception | None = None
        self._keeper: threading.Thread | None = None
        _LIVE.add(self)
        self._unsubscribe = None
        try:
            self.topology.build()
            for name in self.topology.node_ns:
                self.rules.states[name] = NodeRules()
            self._unsubscribe = cluster.store.subscribe(self._on_event)
            if load_rules:
                proxies.listeners.append(self.rules.on_rules)
                for name, agent in proxies.agents.items():
                    self.rules.on_rules(name, agent, None)
            for pod in cluster.store.list("Pod"):
                self.pods.note(pod["metadata"]["uid"], pod)
            self.refresh()
            self._keeper = threading.Thread(target=self._keep_up, name="labsupport-netns-keeper", daemon=True)
            self._keeper.start()
        except BaseException:
            self.close()
            raise


    # --- keeping up ----------------------------------------------------------------------------------------
    def _on_event(self, event) -> None:
        if self._closed or event.kind not in ("Pod", "Service", "EndpointSlice"):
            return
        if event.kind == "Pod":
            self.pods.note(event.object["metadata"]["uid"], None if event.type == "DELETED" else event.object)
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

    def refresh(self) -> None:
        """Bring the kernel up to date: pod namespaces, kube-proxy's latest rules, health-check servers. Under the
        cluster's lock, whoever calls, so that it never runs beside the keeper thread's own."""
        with self.cluster.lock:
            self._refresh()

    def _refresh(self) -> None:
        if self._closed:
            raise BadRequest("this lab's network is closed")
        error, self._keeper_error = self._keeper_error, None
        if error is not None and not isinstance(error, BackendUnavailable):
            self.rules.forget()              # the failed load left the kernel unknown: load everything again
            self.proxies.dirty.update(n for n in self.topology.node_ns if n in self.proxies.agents)
        self.pods.apply_changes()
        self.proxies.sync_all()
        self.pods.sync_health_ports()
        self.pods.refresh_dns()
        bad = self.rules.unsupported()
        if bad:
            raise BackendUnavailable(tr("kube-proxy on {nodes} runs in {mode} mode, which this kernel cannot load "
                                        "(IPVS is not compiled in); switch back with "
                                        "lab.set_proxy_mode(\"nftables\") or use the sim backend",
                                        nodes=", ".join(sorted(bad)), mode=sorted(set(bad.values()))[0]))

    def new_tag(self) -> str:
        """A fresh request tag (sent as a header, stripped by the servers)."""
        self._tags += 1
        return f"{self.topology.run}-{self._tags}"

    # --- sources -------------------------------------------------------------------------------------------
    def origin(self, source: str) -> Source:
        """Parse a source: "client", "node/<name>", "pod/<name>" or "pod/<ns>/<name>"."""
        kind, node, pod, namespace = find_source(self.cluster, source)
        if kind == "client":
            return Source("client", CLIENT_IP, None, self.topology.client_ns)
        if kind == "node":
            ip = pod["status"]["podIP"] if pod else self.cluster.node_ip(node)
            return Source("node", ip, node, self.topology.node_ns[node], namespace)
        box = self.pods.sandbox(pod)
        return Source("pod", box.ip, node, box.ns, namespace)

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
        candidates = [n for n in self.topology.nodes()
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
            hops.append(Hop(tr("load balancer"), tr("health checks (real HTTP from the client) {checked}",
                                                    checked=", ".join(checked))))
            candidates = healthy
        if not candidates:
            replace_route(self.topology.client_ns, f"{ip}/32", GATEWAY_IP)
            hops.append(Hop(tr("load balancer"), tr("no healthy node behind {dst}: the connection times out", dst=ip)))
            return
        node = candidates[self.rng.randrange(len(candidates))]
        replace_route(self.topology.client_ns, f"{ip}/32", self.cluster.node_ip(node))
        hops.append(Hop(tr("load balancer"), tr("{dst} → node {node} (chosen among {count} healthy node(s)); client "
                                                "route {dst}/32 via {via}", dst=ip, node=node["metadata"]["name"],
                                                count=len(candidates), via=self.cluster.node_ip(node))))

    def _health_probe(self, ip: str, port: int) -> int | None:
        sock = self.topology.socket_in(self.topology.client_ns)
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
        argv = curl_argv(target, timeout=self.curl_timeout, headers={TAG_HEADER: tag, **(headers or {})})
        proc = run_in(origin.ns, argv, timeout=self.curl_timeout + 15)
        out = parse_curl(proc.stdout, proc.stderr, proc.returncode)
        local = (out.local_ip, out.local_port) if out.local_ip and out.local_port else None
        remote = (out.remote_ip, out.remote_port) if out.remote_ip and out.remote_port else None
        result.exit_code = out.exit_code
        if out.exit_code == 0 and out.status is not None:
            result.status, result.body = out.status, out.body
        else:
            result.error = out.error or f"curl: ({out.exit_code})"
        record = self.servers.record(tag)
        self.fill_from_record(result, record)
        result.hops.insert(0, Hop(origin.kind if origin.kind == "client" else f"{origin.kind}/{origin.node}",
                                  tr("curl {target} from {ip} in network namespace {ns}", target=str(target),
                                     ip=origin.ip, ns=origin.ns) +
                                  (tr(" (local {local} → {remote})", local=f"{local[0]}:{local[1]}",
                                      remote=f"{remote[0]}:{remote[1]}") if local and remote else "")))
        if trace:
            self._trace_hops(result, origin, parts, local, remote, record, before)
        if record is not None and record.where == "pod":
            result.hops.append(Hop(record.node or "", tr("delivered to pod {pod} at {address}; the app saw {peer}",
                                                         pod=f"{record.namespace}/{record.pod}",
                                                         address=f"{record.local[0]}:{record.local[1]}",
                                                         peer=f"{record.peer[0]}:{record.peer[1]}")))
        elif record is not None:
            result.hops.append(Hop(record.node or "", tr("kube-proxy health check server answers {code}",
                                                         code=record.status)))
        elif not result.ok:
            result.hops.append(Hop(tr("kernel"), result.error or ""))
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

    def nslookup(self, name: str, pod: str | None = None) -> NslookupAnswer:
        """The real `nslookup name` run in a pod's namespace (default: a dnsutils namespace on the first worker)."""
        self.refresh()
        ns = self.topology.dns_ns
        if pod:
            ns = self.origin(pod if pod.startswith("pod/") else f"pod/{pod}").ns
        proc = run_in(ns, ["nslookup", "-timeout=2", "-retry=1", name], timeout=30)
        return parse_nslookup(proc.stdout + proc.stderr, name)

    def conntrack(self, node_name: str) -> list[str]:
        """The node's conntrack table as `conntrack -L` prints it."""
        self.refresh()
        ns = self.topology.node_ns.get(node_name)
        if ns is None:
            raise NotFound.of("nodes", node_name)
        return [line for line in run_in(ns, ["conntrack", "-L"]).stdout.splitlines() if line.strip()]

    def kernel_rules(self, node_name: str) -> str:
        """What the node's kernel holds now: `nft list table ip kube-proxy` or `iptables-save`."""
        with self.cluster.lock:                  # not halfway through the keeper thread's load
            self.refresh()
            ns = self.topology.node_ns[node_name]
            if self.rules.mode(node_name) == "nftables":
                return run_in(ns, ["nft", "list", "table", "ip", "kube-proxy"]).stdout
            return run_in(ns, ["iptables-save"]).stdout

    # --- tracing -------------------------------------------------------------------------------------------
    def _counters(self) -> dict[str, dict[tuple[str, str], int]]:
        out: dict[str, dict[tuple[str, str], int]] = {}
        for node_name, ns in self.topology.node_ns.items():
            if self.rules.mode(node_name) != "iptables":
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
            node = self.topology.node_by_ip(dst)
            entry = node["metadata"]["name"] if node else None
            if entry is None:
                gateway = route_via(self.topology.client_ns, dst)
                hop = self.topology.node_by_ip(gateway) if gateway else None
                entry = hop["metadata"]["name"] if hop else None
        if entry and entry in self.proxies.agents:
            agent = self.proxies.agent(entry)
            gateway = self.cluster.kubelet.gateway(entry)
            local_ips = [self.cluster.node_ip(entry)] + ([gateway] if gateway else [])
            try:
                model = trace_packet(agent.mode, agent.rules, local_ips, origin.ip, dst, int(dport))
                hits = model.paths[0].hits if model.paths else []
                result.hops.append(Hop(entry, tr("model of {mode} rules: {verdict}, may DNAT to {endpoints}"
                                                 "{masquerade} (rules on the first of {count} explored path(s))",
                                                 mode=agent.mode, verdict=model.verdict,
                                                 endpoints=", ".join(model.endpoints) or tr("nothing"),
                                                 masquerade=tr(", masqueraded") if model.masquerade else "",
                                                 count=len(model.paths)),
                                       list(hits)))
            except Exception as e:      # the model may not know a construct; the kernel view still stands
                result.hops.append(Hop(entry, tr("model could not trace these rules: {error}", error=e)))
        if entry and self.rules.mode(entry) == "nftables":
            lookups = self._nft_lookups(entry, dst, int(dport))
            result.hops.append(Hop(entry, tr("kernel: what the nftables maps hold for this packet: {lookups}",
                                             lookups="; ".join(lookups))))
        after = self._counters() if before else {}
        nodes = sorted(self.topology.node_ns.items(), key=lambda item: item[0] != entry)
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
                result.hops.append(Hop(node_name, tr("kernel: iptables rules whose counters moved, and conntrack")
                                       if hits else tr("kernel: conntrack"), hits,
                                       nat + [f"conntrack: {line}" for line in mine]))

    def _nft_lookups(self, node_name: str, dst: str, dport: int) -> list[str]:
        """`nft get element` for the packet's keys in kube-proxy's verdict maps, as the kernel holds them."""
        ns = self.topology.node_ns[node_name]
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

    # --- the end -------------------------------------------------------------------------------------------
    def namespaces(self) -> list[str]:
        """Every network namespace this network made."""
        return self.topology.namespaces()

    def close(self) -> None:
        """Stop the servers and remove every namespace (and with them every link and rule)."""
        if self._closed:
            return
        self._closed = True
        self.pods.closed = True
        self.rules.closed = True
        self._changed.set()
        if self._keeper is not None and self._keeper is not threading.current_thread():
            self._keeper.join(5)
        if self._unsubscribe is not None:
            self._unsubscribe()
        if self.rules.on_rules in self.proxies.listeners:
            self.proxies.listeners.remove(self.rules.on_rules)
        self.servers.close()
        self.topology.close()
        _LIVE.discard(self)
