"""The embedded cluster's network: where a connection goes, decided by the rules kube-proxy rendered.

Sources are the outside client (on the node network, like a container next to kind's nodes), a node, or a pod.
A packet enters the netfilter of the node it first reaches (PREROUTING from a pod or from outside, OUTPUT from
the node itself); its fate there comes from `NodeDatapath`, which interprets that node's rule text. After DNAT
the packet is routed: to a local pod, across the node network to the pod's node (whose netfilter sees it too), or
nowhere. The app in the pod answers, seeing the source address the packet arrived with.
"""
from __future__ import annotations

import ipaddress
import random
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from labsupport.control import dns
from labsupport.dataplane.model import NodeDatapath
from labsupport.errors import BadRequest, NotFound
from labsupport.i18n import tr
from labsupport.results import CurlResult, Hop, Trace, masquerade_rewrite
from labsupport.shape import CLIENT_IP, DNS_IP

if TYPE_CHECKING:
    from labsupport.control.cluster import Cluster
    from labsupport.proxy.daemon import KubeProxyDaemons

CONNECT_TIMEOUT_MS = 10_000


def find_source(cluster: "Cluster", source: str) -> tuple[str, str | None, dict | None, str]:
    """Where a connection starts, checked against the cluster: (kind, node name, pod, namespace).

    `source` is "client" (outside the cluster), "node/<name>", "pod/<name>" or "pod/<namespace>/<name>"; kind is
    "client", "node" or "pod" — a hostNetwork pod counts as its node (its pod is still returned)."""
    if source in ("client", "outside", "external"):
        return "client", None, None, "default"
    kind, _, rest = source.partition("/")
    if kind == "node":
        if cluster.store.find("Node", None, rest) is None:
            raise NotFound.of("nodes", rest)
        return "node", rest, None, "default"
    if kind == "pod":
        namespace, _, name = rest.rpartition("/")
        namespace = namespace or "default"
        pod = cluster.store.find("Pod", namespace, name)
        if pod is None:
            raise NotFound.of("pods", name)
        if pod.get("status", {}).get("phase") != "Running" or not pod["status"].get("podIP"):
            raise BadRequest(f'pod "{name}" is not running (phase {pod.get("status", {}).get("phase")}); '
                             "a command can only run in a running pod")
        return ("node" if pod["spec"].get("hostNetwork") else "pod"), pod["spec"]["nodeName"], pod, namespace
    raise BadRequest(f"unknown source {source!r}: use \"client\", \"node/<name>\", \"pod/<name>\" or "
                     "\"pod/<namespace>/<name>\"")


class Origin:
    """Where a connection starts: its address, the node whose netfilter sees it first, and how."""

    def __init__(self, kind: str, ip: str, node: str | None, local: bool, namespace: str = "default",
                 pod: dict | None = None):
        self.kind = kind
        self.ip = ip
        self.node = node
        self.local = local
        self.namespace = namespace
        self.pod = pod


class KeepAlive:
    """A long-lived connection (HTTP keep-alive): every request rides the same conntrack entry and pod."""

    def __init__(self, network: "SimNetwork", url: str, source: str):
        self.network = network
        self.url = url
        self.source = source
        self.first, self._state = network.request(url, source)
        self.closed = not self.first.ok
        if self.closed:
            network.finish(self._state)

    @property
    def pod(self) -> str | None:
        """The pod this connection is stuck to."""
        return self.first.pod

    def request(self, path: str | None = None) -> CurlResult:
        """Send one more request on this connection."""
        if self.closed:
            raise BadRequest("this connection is closed; open a new one with lab.connect()")
        result = self.network.reuse(self._state, path or urlsplit(self.url).path or "/", self.url, self.source)
        if not result.ok:
            self.close()
        return result

    def close(self) -> None:
        """Close the connection (its conntrack entries turn TIME_WAIT, and go 120 s later)."""
        if not self.closed:
            self.network.finish(self._state)
        self.closed = True

    def __repr__(self) -> str:
        return f"<KeepAlive {self.url} from {self.source} → pod {self.pod!r}{' (closed)' if self.closed else ''}>"


class SimNetwork:
    """The `sim` data plane: one NodeDatapath per node, fed by that node's kube-proxy."""

    def __init__(self, cluster: "Cluster", proxies: "KubeProxyDaemons", *, seed: int = 0):
        self.cluster = cluster
        self.proxies = proxies
        self.rng = random.Random(seed * 31 + 7)
        self.datapaths: dict[str, NodeDatapath] = {}
        self._ports: dict[str, int] = {}
        proxies.listeners.append(self._on_rules)
        for name, agent in proxies.agents.items():
            self._on_rules(name, agent, None)

    # --- kube-proxy → kernel -------------------------------------------------------------------------------
    def _on_rules(self, node_name: str, agent, change) -> None:
        dp = self.datapaths.get(node_name)
        if dp is None:
            node = self.cluster.store.find("Node", None, node_name)
            dp = NodeDatapath(agent.mode, agent.rules, self._local_ips(node), random.Random(self.rng.random()))
            self.datapaths[node_name] = dp
        else:
            dp.load(agent.mode, agent.rules)

    def _local_ips(self, node: dict | None) -> list[str]:
        ips = [a["address"] for a in (node or {}).get("status", {}).get("addresses", []) if a["type"] == "InternalIP"]
        gateway = self.cluster.kubelet.gateway(node["metadata"]["name"]) if node else None
        return ips + ([gateway] if gateway else [])

    def datapath(self, node_name: str) -> NodeDatapath | None:
        """The node's data path with its kube-proxy's latest rules."""
        if node_name in self.proxies.agents:
            self.proxies.agent(node_name)
        return self.datapaths.get(node_name)

    # --- addresses -----------------------------------------------------------------------------------------
    def nodes(self) -> list[dict]:
        """Every node."""
        return self.cluster.store.list("Node")

    def node_by_ip(self, ip: str) -> dict | None:
        """The node with this InternalIP."""
        for node in self.nodes():
            if ip in self._local_ips(node)[:1] or any(a["address"] == ip for a in node["status"]["addresses"]):
                return node
        return None

    def pod_by_ip(self, ip: str) -> dict | None:
        """The running, non-hostNetwork pod with this IP."""
        for pod in self.cluster.store.list("Pod"):
            st = pod.get("status", {})
            if st.get("podIP") == ip and not pod["spec"].get("hostNetwork") and st.get("phase") == "Running":
                return pod
        return None

    def node_of_pod_cidr(self, ip: str) -> dict | None:
        """The node whose pod CIDR holds this address."""
        addr = ipaddress.ip_address(ip)
        for node in self.nodes():
            cidr = node.get("spec", {}).get("podCIDR")
            if cidr and addr in ipaddress.ip_network(cidr):
                return node
        return None

    def origin(self, source: str) -> Origin:
        """Parse a source: "client", "node/<name>", "pod/<name>" or "pod/<ns>/<name>"."""
        kind, node, pod, namespace = find_source(self.cluster, source)
        if kind == "client":
            return Origin("client", CLIENT_IP, None, False)
        if kind == "node":
            ip = pod["status"]["podIP"] if pod else self.cluster.node_ip(node)
            return Origin("node", ip, node, True, namespace, pod)
        return Origin("pod", pod["status"]["podIP"], node, False, namespace, pod)

    def _sport(self, ip: str) -> int:
        port = self._ports.get(ip)
        if port is None:
            port = 32768 + self.rng.randrange(20000)
        port = port + 1 if port < 60999 else 32768
        self._ports[ip] = port
        return port

    # --- DNS -----------------------------------------------------------------------------------------------
    def dns_lookup(self, qname: str, qtype: str):
        """What the cluster's CoreDNS answers (kind's Corefile: pods insecure, ttl 30)."""
        store = self.cluster.store
        return dns.answer(qname, qtype, store.list("Service"), store.list("EndpointSlice"), store.list("Pod"),
                          zone=self.cluster.config.domain, ttl=30, pods_mode="insecure",
                          namespaces=[n["metadata"]["name"] for n in store.list("Namespace")])

    def _dns_reachable(self, origin: Origin) -> str | None:
        """Send one query to the cluster DNS Service through the data plane; None when it reaches CoreDNS."""
        probe = self._connect(origin, DNS_IP, 53, "udp")
        self.finish(probe)
        if probe.get("error"):
            return probe["error_kind"]
        pod = probe.get("pod")
        if pod is None or "coredns" not in " ".join(c.get("image", "") for c in pod["spec"]["containers"]):
            return "refused"
        return None

    def nslookup(self, name: str, pod: str | None = None):
        """`nslookup name` as run in a pod (default: a throwaway pod in `default` on the first worker)."""
        origin = self._dns_origin(pod)
        search = [f"{origin.namespace}.svc.{self.cluster.config.domain}", f"svc.{self.cluster.config.domain}",
                  self.cluster.config.domain]
        failure = self._dns_reachable(origin)
        if failure is not None:
            return dns.NslookupAnswer(addresses=[], rcode="SERVFAIL", text=(
                ";; connection timed out; no servers could be reached\n\n" if failure == "timeout" else
                f";; communications error to {DNS_IP}#53: connection refused\n"
                f";; communications error to {DNS_IP}#53: connection refused\n"
                f";; communications error to {DNS_IP}#53: connection refused\n"
                ";; no servers could be reached\n\n"), name=name)
        return dns.nslookup(name, lookup=self.dns_lookup, search=search, ndots=5, server=DNS_IP)

    def _dns_origin(self, pod: str | None) -> Origin:
        if pod:
            return self.origin(pod if pod.startswith("pod/") else f"pod/{pod}")
        workers = [n for n in self.nodes() if "node-role.kubernetes.io/control-plane" not in n["metadata"]["labels"]]
        node = (workers or self.nodes())[0]
        net = ipaddress.ip_network(node["spec"]["podCIDR"])
        return Origin("pod", str(net.broadcast_address - 1), node["metadata"]["name"], False, "default")

    # --- HTTP ----------------------------------------------------------------------------------------------
    def curl(self, url: str, source: str = "client", *, headers: dict | None = None) -> CurlResult:
        """One HTTP request from `source` on a new connection, closed afterwards; failures are results."""
        result, state = self.request(url, source, headers)
        self.finish(state)
        return result

    def request(self, url: str, source: str, headers: dict | None = None) -> tuple[CurlResult, dict]:
        """Open a connection and send one request; the connection stays tracked until `finish(state)`."""
        origin = self.origin(source)
        target = url if "://" in url else f"http://{url}"
        parts = urlsplit(target)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise BadRequest(f"cannot fetch {url!r}: give a URL like http://web or http://172.18.0.3:30080/path")
        host, port = parts.hostname, parts.port or (443 if parts.scheme == "https" else 80)
        path = parts.path or "/"
        if parts.query:
            path += "?" + parts.query
        result = CurlResult(url=url, source=source)
        ip = self._resolve_host(origin, host)
        if ip is None:
            result.error, result.exit_code = f"curl: (6) Could not resolve host: {host}", 6
            return result, {}
        state = self._connect(origin, ip, port, "tcp")
        result.hops = state["hops"]
        if state.get("error"):
            result.error = self._curl_error(state["error_kind"], ip, port)
            result.exit_code = {"refused": 7, "timeout": 28}.get(state["error_kind"], 7)
            return result, state
        self._answer(state, result, path, host if parts.port is None else f"{host}:{port}", headers)
        return result, state

    def connect(self, url: str, source: str = "client") -> KeepAlive:
        """A keep-alive connection."""
        return KeepAlive(self, url, source)

    def trace(self, url: str, source: str = "client") -> Trace:
        """Trace one new connection."""
        return Trace(url, source, self.curl(url, source))

    def _resolve_host(self, origin: Origin, host: str) -> str | None:
        try:
            ipaddress.ip_address(host)
            return host
        except ValueError:
            pass
        if host == "localhost":
            return "127.0.0.1"
        if origin.kind != "pod":
            node = self.cluster.store.find("Node", None, host)
            return self.cluster.node_ip(node) if node else None
        if self._dns_reachable(origin) is not None:
            return None
        search = [f"{origin.namespace}.svc.{self.cluster.config.domain}", f"svc.{self.cluster.config.domain}",
                  self.cluster.config.domain]
        res = dns.resolve(host, "A", search=search, ndots=5, lookup=self.dns_lookup)
        for record in res.reply.answer:
            fields = record.split("\t")
            if len(fields) >= 5 and fields[3] == "A":
                return fields[4]
        return None

    @staticmethod
    def _curl_error(kind: str, ip: str, port: int) -> str:
        if kind == "timeout":
            return f"curl: (28) Failed to connect to {ip} port {port} after {CONNECT_TIMEOUT_MS} ms: Timeout was reached"
        return f"curl: (7) Failed to connect to {ip} port {port} after 0 ms: Couldn't connect to server"

    # --- the path ------------------------------------------------------------------------------------------
    def _connect(self, origin: Origin, dst: str, dport: int, proto: str) -> dict:
        """Route one new connection node by node; returns a state dict with the hops, the pod reached, or the
        error. Each node the packet enters runs it through its own netfilter (its kube-proxy's rules)."""
        now = self.cluster.clock.now
        sport = self._sport(origin.ip)
        state: dict[str, Any] = {"hops": [], "origin": origin, "sport": sport, "proto": proto, "tracked": []}
        hops = state["hops"]
        node = origin.node
        if origin.kind == "client":
            node = self._client_entry(dst, dport, proto, hops)
            if node is None:
                hops.append(Hop(tr("network"), tr("no route from outside the cluster to {dst} (only node addresses "
                                              "and LoadBalancer IPs are reachable from here)", dst=dst)))
                return self._fail(state, "timeout")
        src, local, seen = origin.ip, origin.local, set()
        dnat_node = snat_node = None
        while True:
            if (node, dst, dport) in seen:
                hops.append(Hop(node, tr("routing loop towards {dst}:{dport}: the connection times out", dst=dst,
                                         dport=dport)))
                return self._fail(state, "timeout")
            seen.add((node, dst, dport))
            dp = self.datapath(node)
            masquerade = False
            if dp is None:
                hops.append(Hop(node, tr("no kube-proxy has ever run on this node: no rules, the packet goes on")))
            else:
                conn = dp.connect(src, sport, dst, dport, proto, now=now)
                state["tracked"].append((dp, src, sport, dst, dport, proto))
                hook = tr("OUTPUT (locally generated)") if local else tr("PREROUTING (arriving)")
                if dp.mode == "ipvs" and conn.endpoint and not conn.from_conntrack:
                    what = tr("netfilter, {hook}, then IPVS (the ClusterIP is an address of kube-ipvs0, so the "
                              "packet is for this node; IPVS's virtual server picks a real server and rewrites the "
                              "destination): {verdict}", hook=hook, verdict=conn.verdict)
                else:
                    what = f"netfilter, {hook}: {conn.verdict}"
                hops.append(Hop(node, what, list(conn.hits), list(conn.rewrites)))
                if conn.verdict in ("DROP", "REJECT"):
                    return self._fail(state, "timeout" if conn.verdict == "DROP" else "refused")
                if conn.endpoint and not conn.from_conntrack:
                    dst, port = conn.endpoint.rsplit(":", 1)
                    dport = int(port)
                    dnat_node = node
                masquerade = conn.masquerade
                if masquerade:
                    snat_node = node
            target_pod = self.pod_by_ip(dst)
            target_node = target_pod["spec"]["nodeName"] if target_pod else None
            if masquerade:
                before = src
                src = self.cluster.kubelet.gateway(node) if target_node == node else self.cluster.node_ip(node)
                if hops[-1].rewrites and hops[-1].rewrites[-1].startswith("SNAT"):
                    hops[-1].rewrites[-1] = masquerade_rewrite(f"{before}:{sport}", f"{src}:{sport}")
            state["src_seen"] = src
            if target_pod is not None and target_node == node:
                if dnat_node is not None and snat_node != dnat_node and \
                        dnat_node not in (node, self._node_of_address(src)):
                    hops.append(Hop(node, tr("the reply from {dst} goes straight back to {src}, bypassing {dnat_node} "
                                             "where the DNAT happened: it matches no connection the client knows "
                                             "(conntrack INVALID) and is dropped — the connection times out",
                                             dst=dst, src=src, dnat_node=dnat_node)))
                    return self._fail(state, "timeout")
                return self._deliver(state, target_pod, dst, dport, proto)
            if target_pod is not None:
                hops.append(Hop(tr("network"), tr("{node} → {target} over the node network (pod-to-pod, no NAT)",
                                              node=node, target=target_node)))
                node, local = target_node, False
                continue
            owner = self.node_by_ip(dst) or (self.cluster.store.find("Node", None, node)
                                              if dst.startswith("127.") else None)
            if owner is not None and (owner["metadata"]["name"] == node or dst.startswith("127.")):
                return self._node_listener(state, owner, dst, dport)
            if owner is not None:
                hops.append(Hop(tr("network"), tr("{node} → {target} ({dst}) over the node network", node=node,
                                              target=owner['metadata']['name'], dst=dst)))
                node, local = owner["metadata"]["name"], False
                continue
            cidr_owner = self.node_of_pod_cidr(dst)
            hops.append(Hop(cidr_owner["metadata"]["name"] if cidr_owner else tr("network"),
                            tr("no host answers at {dst} (no such pod): the connection times out", dst=dst)))
            return self._fail(state, "timeout")

    def _node_of_address(self, ip: str) -> str | None:
        """The node a reply to `ip` is routed to: the node itself, or the node of the pod with that IP."""
        node = self.node_by_ip(ip)
        if node is not None:
            return node["metadata"]["name"]
        pod = self.pod_by_ip(ip)
        if pod is not None:
            return pod["spec"]["nodeName"]
        owner = self.node_of_pod_cidr(ip)
        return owner["metadata"]["name"] if owner else None

    def _deliver(self, state: dict, pod: dict, ip: str, port: int, proto: str) -> dict:
        """Hand the connection to the pod's app listening on that port, or refuse it."""
        state["hops"].append(Hop(pod["spec"]["nodeName"],
                                 tr("delivered to pod {pod} at {address}",
                                    pod=f"{pod['metadata']['namespace']}/{pod['metadata']['name']}",
                                    address=f"{ip}:{port}")))
        state.update(pod=pod, dst=ip, port=port)
        rt = self.cluster.kubelet.runtime(pod)
        app = next((a for a in (rt.apps.values() if rt else ()) if (proto.upper(), port) in a.listens()), None)
        if app is None:
            state["hops"].append(Hop(pod["metadata"]["name"],
                                     tr("nothing listens on {proto}/{port} in this pod: connection refused",
                                        proto=proto, port=port)))
            return self._fail(state, "refused")
        state["app"] = app
        return state

    def _client_entry(self, dst: str, dport: int, proto: str, hops: list[Hop]) -> str | None:
        """Which node a packet from outside reaches first: the node owning the address, or the LoadBalancer's pick."""
        node = self.node_by_ip(dst)
        if node is not None:
            hops.append(Hop(tr("network"), tr("client {client} → node {node} ({dst})", client=CLIENT_IP,
                                          node=node['metadata']['name'], dst=dst)))
            return node["metadata"]["name"]
        for svc in self.cluster.store.list("Service"):
            ingress = svc.get("status", {}).get("loadBalancer", {}).get("ingress") or []
            if any(i.get("ip") == dst for i in ingress):
                return self._load_balance(svc, dst, hops)
        return None

    def _load_balance(self, svc: dict, dst: str, hops: list[Hop]) -> str | None:
        """A LoadBalancer picks a healthy node (health check on healthCheckNodePort for Local services)."""
        candidates = [n for n in self.nodes()
                      if "node.kubernetes.io/exclude-from-external-load-balancers" not in n["metadata"]["labels"]]
        hc = svc["spec"].get("healthCheckNodePort")
        if hc:
            answers = {n["metadata"]["name"]: self.proxies.health_check(n["metadata"]["name"], hc) for n in candidates}
            checked = ", ".join(f"{name}:{hc} → {a[0] if a else 'refused'}" for name, a in answers.items())
            hops.append(Hop(tr("load balancer"), tr("health checks {checked}", checked=checked)))
            candidates = [n for n in candidates if (answers[n["metadata"]["name"]] or (0,))[0] == 200]
        if not candidates:
            hops.append(Hop(tr("load balancer"), tr("no healthy node behind {dst}: the connection times out",
                                                    dst=dst)))
            return None
        node = candidates[self.rng.randrange(len(candidates))]
        hops.append(Hop(tr("load balancer"), tr("{dst} → node {node} (chosen among {count} healthy node(s))",
                                                dst=dst, node=node['metadata']['name'], count=len(candidates))))
        return node["metadata"]["name"]

    def _node_listener(self, state: dict, node: dict, ip: str, port: int) -> dict:
        """A connection that ends on a node's own address: kube-proxy's health check port, or nothing."""
        answer = self.proxies.health_check(node["metadata"]["name"], port)
        if answer is not None:
            code, body = answer
            state["hops"].append(Hop(node["metadata"]["name"], tr("kube-proxy health check server answers {code}",
                                                                  code=code)))
            state["node_answer"] = (code, body, node["metadata"]["name"])
            return state
        state["hops"].append(Hop(node["metadata"]["name"], tr("nothing listens on {ip}:{port}: connection refused",
                                                              ip=ip, port=port)))
        return self._fail(state, "refused")

    def _fail(self, state: dict, kind: str) -> dict:
        state["error"] = True
        state["error_kind"] = kind
        return state

    def _answer(self, state: dict, result: CurlResult, path: str, host: str, headers: dict | None) -> None:
        if "node_answer" in state:
            code, body, node = state["node_answer"]
            result.status, result.body, result.node = code, body, node
            return
        pod, app = state["pod"], state["app"]
        peer = (state["src_seen"], state["sport"])
        req_headers = {"Host": host, "User-Agent": "curl/8.11.1", "Accept": "*/*", **(headers or {})}
        response = app.http("GET", path, peer, state["port"], req_headers)
        result.pod, result.namespace = pod["metadata"]["name"], pod["metadata"]["namespace"]
        result.node = pod["spec"]["nodeName"]
        result.client_ip, result.client_port = peer
        result.endpoint = f"{state['dst']}:{state['port']}"
        if response is None:
            result.error, result.exit_code = "curl: (52) Empty reply from server", 52
            return
        result.status, result.body = response.status, response.body

    def reuse(self, state: dict, path: str, url: str, source: str) -> CurlResult:
        """Send another request on an open connection: conntrack keeps it on the pod it first reached."""
        result = CurlResult(url=url, source=source)
        pod = state["pod"]
        current = self.cluster.store.find("Pod", pod["metadata"]["namespace"], pod["metadata"]["name"])
        if current is None or current["metadata"]["uid"] != pod["metadata"]["uid"]:
            result.error, result.exit_code = "curl: (56) Recv failure: Connection reset by peer", 56
            return result
        dp, src, sport, dst, dport, proto = state["tracked"][0]
        conn = dp.connect(src, sport, dst, dport, proto, now=self.cluster.clock.now)
        result.hops = [Hop(state["origin"].node or "client", f"existing connection (conntrack): {conn.verdict}",
                           list(conn.hits), [])]
        self._answer(state, result, path, urlsplit(url if "://" in url else "http://" + url).netloc, None)
        return result

    def finish(self, state: dict) -> None:
        """End a connection: its TCP entries stay as a node keeps them (TIME_WAIT after an answer, SYN_SENT when
        none came, CLOSE after a refusal), the others go."""
        ended = {"timeout": "SYN_SENT", "refused": "CLOSE"}.get(state.get("error_kind", ""), "TIME_WAIT")
        for dp, src, sport, dst, dport, proto in state.get("tracked", []):
            dp.close(src, sport, dst, dport, proto, now=self.cluster.clock.now, state=ended)

    def conntrack(self, node_name: str) -> list[str]:
        """The node's live conntrack entries."""
        dp = self.datapath(node_name)
        return dp.conntrack_entries(self.cluster.clock.now) if dp else []
