"""The real kube-proxy on every node of the `netns` backend, in place of labsupport's rules.

Each node's namespace runs kube-proxy against the embedded API server; labsupport's kube-proxy daemons keep
running (health checks, the `sim` view) but their rules are no longer loaded into the kernel. Before traffic is
sent or rules are shown, every kube-proxy is waited for until it has written the latest change it was told of.
"""
from __future__ import annotations

import threading
import time
from typing import Any, Callable

from labsupport.upstream.node import KubeProxyNode

#: The kinds whose changes make kube-proxy rewrite rules (a Node's heartbeats do not; its labels rarely change).
WATCHED = frozenset({"Service", "EndpointSlice", "ServiceCIDR"})
#: A change kube-proxy ignores (an EndpointSlice rewrite that changes no endpoint) never gets queued: after this
#: long waiting for the queue to show it, the rules already written stand.
UNQUEUED_GRACE = 2.0
#: How long a settle waits for the API server to have sent a change to kube-proxy's watches before it starts the
#: grace above; a watch still behind after this (a client that stopped reading) is left.
DELIVERY_TIMEOUT = 30.0
#: kube-proxy's name in its requests' User-Agent (client-go names the program); only its watches are waited for
KUBE_PROXY_AGENT = "kube-proxy"
#: Settled also means kube-proxy's informers have stopped handing it events for this long: on a busy machine an
#: earlier change can be queued and written after the last change was made, before that last change arrives.
QUIET = 0.3


class UpstreamKubeProxies:
    """The real kube-proxy in each of `node_namespaces` (node name -> namespace), served by `api`."""

    def __init__(self, cluster: Any, api: Any, node_namespaces: dict[str, str], mode: str):
        self.cluster = cluster
        self.api = api
        self.mode = mode
        self.node_namespaces = dict(node_namespaces)
        self.nodes: dict[str, KubeProxyNode] = {}
        self._last_change = 0.0
        self._last_rv = 0
        self._settled = -1.0
        self._lock = threading.Lock()
        self._unsubscribe: Callable[[], None] | None = None

    def start(self) -> "UpstreamKubeProxies":
        """Start kube-proxy on every node (returns after their first syncs)."""
        self._unsubscribe = self.cluster.store.subscribe(self._on_event)
        try:
            for node, ns in sorted(self.node_namespaces.items()):
                self.nodes[node] = KubeProxyNode(self.cluster, self.api, node, self.mode, ns=ns).start()
        except BaseException:
            self.close()
            raise
        return self

    def _on_event(self, event) -> None:
        if event.kind in WATCHED:
            with self._lock:
                self._last_change = time.time()
                self._last_rv = max(self._last_rv, event.rv)

    def settle(self) -> None:
        """Wait until every kube-proxy has written rules for the last change it acts on."""
        with self._lock:
            since, rv = self._last_change, self._last_rv
        if since <= self._settled:
            return
        # on a busy machine the API server's watch threads can be seconds behind: the grace for a change kube-proxy
        # does not queue starts once kube-proxy's watches have been sent it, not when it was made
        self.api.wait_delivered(WATCHED, rv, DELIVERY_TIMEOUT, agent=KUBE_PROXY_AGENT)
        nodes = list(self.nodes.values())
        while True:
            for node in nodes:
                try:
                    node.sync(since, timeout=UNQUEUED_GRACE)
                except Exception:  # noqa: BLE001 - a change it did not queue: its last rules stand
                    node.sync(0.0)
            before = [node.kube_proxy.changes_received() for node in nodes]
            time.sleep(QUIET)
            if [node.kube_proxy.changes_received() for node in nodes] == before:
                for node in nodes:     # whatever arrived before the quiet spell is written
                    node.sync(0.0)
                break
        self._settled = since

    def rules(self, node: str) -> str:
        """What the real kube-proxy on `node` wrote (iptables-save of nat and filter, or the kube-proxy table)."""
        self.settle()
        return self.nodes[node].kube_proxy.rules()

    def log_problems(self) -> dict[str, list[str]]:
        """Per node, the log lines that report list/watch trouble."""
        return {name: node.kube_proxy.log_problems() for name, node in self.nodes.items()}

    def close(self) -> None:
        """Stop every kube-proxy and its relay."""
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
        for node in self.nodes.values():
            node.close()
        self.nodes.clear()


def start_on(backend: Any, mode: str) -> UpstreamKubeProxies:
    """Run the real kube-proxy on every node of an embedded `netns` backend (built with load_rules=False, so
    labsupport's rules are not loaded there)."""
    from labsupport.errors import BackendUnavailable
    from labsupport.upstream.binaries import missing_upstream_requirements
    if getattr(backend, "name", None) != "netns":
        raise BackendUnavailable('kube_proxy="upstream" runs the real kube-proxy in the node namespaces of the '
                                 'netns backend: use Lab(backend="netns", kube_proxy="upstream")')
    if mode not in ("iptables", "nftables"):
        raise BackendUnavailable(f'the real kube-proxy runs here in iptables or nftables mode, not {mode!r}')
    problems = missing_upstream_requirements("kube-proxy")
    if problems:
        raise BackendUnavailable('kube_proxy="upstream" needs ' + " and ".join(problems))
    backend.kubeconfig()   # starts the API server
    return UpstreamKubeProxies(backend.cluster, backend.apiserver(), backend.network.topology.node_ns, mode).start()


class UpstreamDNS:
    """The real CoreDNS in the namespace of every running CoreDNS pod of a `netns` network (built with
    serve_dns=False), kept in step with the pods by `reconcile`."""

    def __init__(self, cluster: Any, api: Any, network: Any):
        self.cluster = cluster
        self.api = api
        self.network = network
        self.servers: dict[str, tuple[Any, Any]] = {}

    def _coredns_namespaces(self) -> dict[str, str]:
        with self.cluster.lock:
            self.network.pods.apply_changes()
            pods = {p["metadata"]["uid"] for p in self.cluster.store.list("Pod", "kube-system")
                    if (p["metadata"].get("labels") or {}).get("k8s-app") == "kube-dns"}
            return {uid: box.ns for uid, box in self.network.pods.sandboxes.items() if uid in pods}

    def reconcile(self) -> None:
        """Start CoreDNS in new CoreDNS pods' namespaces, stop it for pods that are gone."""
        from labsupport.upstream.coredns import UpstreamCoreDNS
        from labsupport.upstream.forwarder import LoopbackForwarder
        wanted = self._coredns_namespaces()
        for uid in set(self.servers) - set(wanted):
            self._stop(uid)
        for uid, ns in wanted.items():
            if uid in self.servers:
                continue
            with self.cluster.lock:
                config_map = self.cluster.get("ConfigMap", "kube-system", "coredns")
            forwarder = LoopbackForwarder(ns, self.api.port).start()
            try:
                server = UpstreamCoreDNS(ns, config_map, self.api.kubeconfig_path).start()
            except BaseException:
                forwarder.stop()
                raise
            self.servers[uid] = (forwarder, server)

    def _stop(self, uid: str) -> None:
        forwarder, server = self.servers.pop(uid)
        server.remove()
        forwarder.stop()

    def close(self) -> None:
        """Stop every CoreDNS and its relay."""
        for uid in list(self.servers):
            self._stop(uid)


def start_dns_on(backend: Any) -> UpstreamDNS:
    """Serve the cluster DNS of an embedded `netns` backend with the real CoreDNS."""
    from labsupport.errors import BackendUnavailable
    from labsupport.upstream.binaries import missing_upstream_requirements
    if getattr(backend, "name", None) != "netns":
        raise BackendUnavailable('dns="upstream" runs the real CoreDNS in the CoreDNS pods of the netns backend: '
                                 'use Lab(backend="netns", dns="upstream")')
    problems = missing_upstream_requirements("coredns")
    if problems:
        raise BackendUnavailable('dns="upstream" needs ' + " and ".join(problems))
    backend.kubeconfig()   # starts the API server
    dns = UpstreamDNS(backend.cluster, backend.apiserver(), backend.network)
    dns.reconcile()
    return dns
