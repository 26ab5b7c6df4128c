"""What runs in the `netns` pods: a namespace per running pod, and real sockets in it for each port its app serves.

HTTP and UDP requests reach the same app objects the `sim` backend uses; CoreDNS pods answer real DNS on port 53
from the cluster's DNS model; every node serves kube-proxy's health-check ports for `externalTrafficPolicy: Local`.
"""
from __future__ import annotations

import socket
from typing import TYPE_CHECKING

from labsupport.control import dns
from labsupport.netns.servers import Answer, Listener, Servers
from labsupport.netns.topology import Sandbox, Topology

if TYPE_CHECKING:
    from labsupport.control.cluster import Cluster
    from labsupport.proxy.daemon import KubeProxyDaemons


class PodServers:
    """Pods' namespaces and the servers listening in them, kept in step with the kubelet's running pods."""

    def __init__(self, cluster: "Cluster", topology: Topology, proxies: "KubeProxyDaemons", servers: Servers, *,
                 serve_dns: bool = True, health_checks: bool = True):
        self.cluster = cluster
        self.serve_dns = serve_dns
        self.health_checks = health_checks
        self.topology = topology
        self.proxies = proxies
        self.servers = servers
        self.sandboxes: dict[str, Sandbox] = {}
        self.health_ports: dict[str, set[int]] = {}
        self.closed = False
        self._pending: dict[str, dict | None] = {}
        self._dns_snapshot: tuple = ([], [], [], [])

    # --- pods ----------------------------------------------------------------------------------------------
    def note(self, uid: str, pod: dict | None) -> None:
        """A pod changed (None: it was deleted); the next `apply_changes` looks at it."""
        self._pending[uid] = pod

    def apply_changes(self) -> None:
        """Create namespaces for pods that started and remove those of pods that are gone."""
        if self.closed or not self._pending:
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
                self._stop(uid)
        for uid, pod in wanted.items():
            if uid not in self.sandboxes:
                self._start(uid, pod)
            self._sync_listeners(uid)

    def sandbox(self, pod: dict) -> Sandbox:
        """The namespace of a running pod, made now if the pod has none yet."""
        uid = pod["metadata"]["uid"]
        self.apply_changes()
        if uid not in self.sandboxes:
            self.note(uid, pod)
            self.apply_changes()
        return self.sandboxes[uid]

    def _runs(self, pod: dict) -> bool:
        status = pod.get("status") or {}
        return (status.get("phase") == "Running" and bool(status.get("podIP")) and not pod["spec"].get("hostNetwork")
                and pod["spec"].get("nodeName") in self.topology.node_ns)

    def _start(self, uid: str, pod: dict) -> None:
        meta = pod["metadata"]
        ns = self.topology.pod_namespace(meta["namespace"], meta["name"], uid, {s.ns for s in self.sandboxes.values()})
        self.sandboxes[uid] = self.topology.make_sandbox(ns, pod["status"]["podIP"], pod["spec"]["nodeName"], pod,
                                                         self.topology.run + "/" + uid)

    def _stop(self, uid: str) -> None:
        box = self.sandboxes.pop(uid, None)
        if box is None:
            return
        self.servers.remove(uid)
        self.topology.remove(box.ns)

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
                sock = self.topology.socket_in(box.ns, socket.SOCK_STREAM)
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                sock.bind(("0.0.0.0", port))
                sock.listen(512)
                if dns_server and port == 53:
                    self.servers.add(Listener(uid, "dns-tcp", sock, self._dns_reply))
                else:
                    self.servers.add(Listener(uid, "http", sock, self._pod_http(uid, box)))
            elif proto == "UDP":
                sock = self.topology.socket_in(box.ns, socket.SOCK_DGRAM)
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
    def refresh_dns(self) -> None:
        """Take the objects DNS answers from (a DNS server thread must not wait for the cluster's lock)."""
        store = self.cluster.store
        self._dns_snapshot = (store.list("Service"), store.list("EndpointSlice"), store.list("Pod"),
                              [n["metadata"]["name"] for n in store.list("Namespace")])

    def dns_lookup(self, qname: str, qtype: str) -> dns.DNSReply:
        """What the cluster's CoreDNS answers (kind's Corefile: pods insecure, ttl 30)."""
        lock = self.cluster.lock
        if lock.acquire(blocking=False):
            try:
                self.refresh_dns()
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

    # --- kube-proxy's health-check servers -----------------------------------------------------------------
    def sync_health_ports(self) -> None:
        """Serve every Service's healthCheckNodePort on every node, answered by that node's kube-proxy."""
        if not self.health_checks:
            return
        wanted = {svc["spec"]["healthCheckNodePort"] for svc in self.cluster.store.list("Service")
                  if svc["spec"].get("healthCheckNodePort")}
        for node_name, ns in self.topology.node_ns.items():
            have = self.health_ports.setdefault(node_name, set())
            owner = f"node/{node_name}"
            for port in sorted(have - wanted):
                self.servers.remove(owner, port)
                have.discard(port)
            for port in sorted(wanted - have):
                sock = self.topology.socket_in(ns, socket.SOCK_STREAM)
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


__all__ = ["PodServers"]
