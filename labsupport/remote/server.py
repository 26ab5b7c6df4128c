"""A lab server: one embedded `sim` cluster served over unix sockets, so the code that uses it runs elsewhere.

While a notebook is graded, its kernel runs in a sandbox and its `Lab()` is a client of this server, which the
grader starts outside the sandbox. Two sockets: the *student* socket (bind-mounted into the sandbox) allows only
what the student role allows (`labsupport.remote.role`); the *grader* socket also answers `served` (whether an
object or result is one this server really handed out) and `refused` (whether an error message is one this server
returned). kubectl never runs here: a client runs it itself, against
this server's API server, which it reaches through a third socket beside the student socket and which checks every
request of the student's token against the same role.

Nothing the student sends is unbounded: a request is at most `REQUEST_LIMIT` bytes, an object what etcd stores, a
move of the clock finite and at most `MAX_ADVANCE` seconds, the whole clock `HORIZON` seconds; the grader runs
this process with memory and CPU-time limits.

    python -m labsupport.remote.server --student /run/lab.sock --grader /run/grader.sock --seed 0
"""
from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import socket
import sys
import threading
from typing import Any

from labsupport.sim.backend import EmbeddedBackend
from labsupport import errors
from labsupport.errors import BadRequest, ClockLimit, LabError, NotFound
from labsupport.relay import SocketRelay
from labsupport.remote import role, wire
from labsupport.results import ClusterSnapshot, ProxyStatus

#: Verbs anyone connected may call: they write no object the student role would have to check.
VERBS = frozenset({"get", "list", "now", "nslookup", "curl", "trace", "proxy_rules", "conntrack", "proxy_mode",
                   "logs", "summary_html", "client_ip", "snapshot", "sync_proxies", "advance", "wait_step",
                   "connect", "connection_request", "connection_close", "connection_state", "exec", "hello",
                   "set_proxy_mode", "stop_kube_proxy", "start_kube_proxy", "kubectl_access"})
#: Verbs that change objects: checked against the student role on the student socket.
WRITING = frozenset({"apply", "create", "delete", "scale"})
#: Verbs only the grader's socket answers.
GRADER_ONLY = frozenset({"served", "refused"})
#: The largest request the student socket reads, in bytes (the API server's own body limit).
REQUEST_LIMIT = 3 * 1024 * 1024
#: The longest one move of the clock may be, and how far a graded cluster's clock may go in all, in seconds.
MAX_ADVANCE = 3600.0
HORIZON = 86400.0
#: How many refusals the server remembers for `refused` (a student's flood of errors stops being recorded there).
MAX_REFUSALS = 20_000
#: The longest name and field text a refusal's record keeps.
RECORD_TEXT = 256
#: The name of the socket, beside the student socket, that relays to the API server.
API_SOCKET = "api.sock"
#: The kinds the picture draws as workloads.
WORKLOAD_KINDS = ("Deployment", "StatefulSet", "DaemonSet", "ReplicaSet")


def fingerprint(value: Any) -> str:
    """A digest of a value's canonical JSON form: what `served` compares."""
    data = json.dumps(wire.encode(value), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(data.encode()).hexdigest()


def message_digest(text: str) -> str:
    """A digest of an error message: what `refused` compares."""
    return hashlib.sha256(text.encode()).hexdigest()


def _plain(value: Any) -> Any:
    """A value as a record keeps it: numbers, booleans and short text as they are, anything else as short text."""
    if value is None or isinstance(value, (bool, int, float)):
        return value
    return str(value)[:RECORD_TEXT]


def refusal_record(method: str | None, args: list, error: BaseException) -> dict:
    """What the server keeps of a refused request: the verb, the kind, name and namespace it asked for (from the
    request itself), the error's reason and its field errors (field, type, value, detail)."""
    kind = name = namespace = None
    if method in ("apply", "create") and args and isinstance(args[0], dict):
        meta = args[0].get("metadata") if isinstance(args[0].get("metadata"), dict) else {}
        kind, name, namespace = args[0].get("kind"), meta.get("name"), meta.get("namespace")
    elif method in ("get", "delete") and len(args) >= 2:
        kind, name = args[0], args[1]
        namespace = args[2] if len(args) > 2 else None
    elif method == "list" and args:
        kind = args[0]
    elif method == "scale" and args:
        name = args[0]
    causes = [{"field": _plain(e.field), "type": _plain(e.type), "value": _plain(e.value), "detail": _plain(e.detail)}
              for e in getattr(error, "errors", [])[:20] if isinstance(e, errors.FieldError)]
    return {"verb": _plain(method), "kind": _plain(kind), "name": _plain(name), "namespace": _plain(namespace),
            "reason": _plain(getattr(error, "reason", type(error).__name__)), "causes": causes}


class LabServer:
    """One embedded cluster behind a student socket and a grader socket."""

    def __init__(self, student_socket: str, grader_socket: str, *, seed: int = 0, proxy_mode: str = "iptables",
                 student_uid: int | None = None):
        self.seed = seed
        self.backend = EmbeddedBackend(seed=seed, proxy_mode=proxy_mode)
        clock = self.backend.cluster.clock
        clock.horizon = clock.now + HORIZON
        self.student_uid = student_uid
        self.api_socket = os.path.join(os.path.dirname(student_socket), API_SOCKET)
        self._api_relay: SocketRelay | None = None
        self._student_token: str | None = None
        self.initial_mode = proxy_mode
        self.lock = threading.RLock()
        self.served_digests: set[str] = set()
        self.refusals: dict[str, list[dict]] = {}      # message digest -> the records of the requests refused so
        self.refusal_count = 0
        self.connections: dict[int, Any] = {}
        self.listeners: list[socket.socket] = []
        self.student_socket = student_socket
        self.grader_socket = grader_socket

    # --- sockets -------------------------------------------------------------------------------------------
    def listen(self) -> None:
        """Bind both sockets (each readable and writable by its owner only)."""
        for path, student in ((self.student_socket, True), (self.grader_socket, False)):
            sock = bind(path, owner=self.student_uid if student else None)
            self.listeners.append(sock)
            threading.Thread(target=self._accept, args=(sock, student), daemon=True).start()

    def _accept(self, sock: socket.socket, student: bool) -> None:
        while True:
            try:
                conn, _ = sock.accept()
            except OSError:
                return
            threading.Thread(target=self.serve_connection, args=(conn, student), daemon=True).start()

    def serve_connection(self, conn: socket.socket, student: bool) -> None:
        """Answer one client's requests until it hangs up."""
        with conn, conn.makefile("rb") as stream:
            while True:
                try:
                    message = wire.read_message(stream, limit=REQUEST_LIMIT if student else wire.MAX_MESSAGE)
                except wire.MessageTooLarge:            # refused, and the stream is at the next message
                    conn.sendall(wire.dumps({"id": None, "error": wire.encode_error(
                        errors.APIError(f"Request entity too large: limit is {REQUEST_LIMIT}"))}))
                    continue
                except wire.WireError as e:
                    conn.sendall(wire.dumps({"id": None, "error": wire.encode_error(e)}))
                    return
                if message is None:
                    return
                reply = self.answer(message, student)
                try:
                    conn.sendall(wire.dumps(reply))
                except OSError:
                    return

    def answer(self, message: dict, student: bool) -> dict:
        """The reply to one request."""
        method = message.get("method")
        args: Any = []
        try:
            args = wire.decode(message.get("args") or [])
            kwargs = wire.decode(message.get("kwargs") or {})
            allowed = VERBS | WRITING | (set() if student else GRADER_ONLY)
            if method not in allowed:
                raise BadRequest(f"the lab server has no verb {method!r}" if method not in GRADER_ONLY else
                                 f'{role.STUDENT} cannot call "{method}": it belongs to the grader')
            with self.lock:
                result = getattr(self, f"do_{method}")(student, *args, **kwargs)
                encoded = wire.encode(result)
            return {"id": message.get("id"), "result": encoded}
        except Exception as e:       # every failure is the client's answer, never the server's end
            error = wire.encode_error(e)
            with self.lock:
                if self.refusal_count < MAX_REFUSALS:
                    self.refusal_count += 1
                    self.refusals.setdefault(message_digest(str(wire.decode_error(error))), []).append(
                        refusal_record(method if isinstance(method, str) else None,
                                       args if isinstance(args, list) else [], e))
            return {"id": message.get("id"), "error": error}

    def served(self, value: Any) -> Any:
        """Remember a value handed out (objects one by one), then return it."""
        items = value if isinstance(value, list) else [value]
        for item in items:
            self.served_digests.add(fingerprint(item))
        if isinstance(value, list):
            self.served_digests.add(fingerprint(value))
        return value

    # --- verbs ---------------------------------------------------------------------------------------------
    def do_hello(self, student: bool, seed: int, proxy_mode: str) -> dict:
        """Check a new client asks for this cluster; returns what it runs."""
        if seed != self.seed:
            raise LabError(f"this graded cluster runs with seed {self.seed}, not {seed}: keep the setup cell's "
                           f"Lab(..., seed={self.seed})")
        if proxy_mode != self.initial_mode and proxy_mode != self.backend.proxy_mode():
            raise LabError(f"this graded cluster starts in proxy mode {self.initial_mode!r}, not {proxy_mode!r}: "
                           "keep the setup cell, and switch later with lab.set_proxy_mode(...)")
        return {"seed": self.seed, "proxy_mode": self.backend.proxy_mode()}

    def do_apply(self, student: bool, obj: dict, field_validation: str = "Strict") -> dict:
        return self.served(self.backend.apply(role.student_manifest(obj) if student else obj, field_validation))

    def do_create(self, student: bool, obj: dict, field_validation: str = "Strict") -> dict:
        return self.served(self.backend.create(role.student_manifest(obj) if student else obj, field_validation))

    def do_get(self, student: bool, kind: str, name: str, namespace: str | None) -> dict:
        return self.served(self.backend.get(kind, name, namespace))

    def do_list(self, student: bool, kind: str, namespace: str | None, selector: Any) -> list[dict]:
        return self.served(self.backend.list(kind, namespace, selector))

    def do_delete(self, student: bool, kind: str, name: str, namespace: str | None,
                  grace_period: int | None = None) -> dict:
        if student:
            role.check_write("delete", kind, name, namespace)
        return self.served(self.backend.delete(kind, name, namespace, grace_period=grace_period))

    def do_scale(self, student: bool, name: str, replicas: int, namespace: str) -> dict:
        if student:
            kind, _, bare = name.rpartition("/")
            role.check_write("update", kind or "Deployment", bare, namespace)
        return self.served(self.backend.scale(name, replicas, namespace))

    def do_advance(self, student: bool, seconds: float) -> None:
        if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not math.isfinite(seconds) \
                or seconds < 0:
            raise BadRequest(f"advance takes a finite number of seconds, 0 or more, not {seconds!r}")
        if seconds > MAX_ADVANCE:
            raise ClockLimit(f"a graded cluster's clock moves at most {MAX_ADVANCE:g} s at a time, not {seconds:g} s")
        self.backend.advance(seconds)

    def do_now(self, student: bool) -> float:
        return self.backend.now()

    def do_wait_step(self, student: bool, deadline: float, timeout: float) -> float:
        """Move the clock to the next timer (at most to the deadline); TimeoutError once the deadline is reached."""
        cluster = self.backend.cluster
        if isinstance(deadline, bool) or not isinstance(deadline, (int, float)) or not math.isfinite(deadline):
            raise BadRequest(f"wait_step takes a finite deadline, not {deadline!r}")
        with cluster.lock:
            deadline = min(deadline, cluster.clock.horizon or deadline)
            if cluster.clock.now >= deadline:
                raise TimeoutError(f"the condition did not hold within {timeout:g} s of cluster time")
            due = cluster.clock.next_due()
            step_to = min(deadline, due if due is not None else deadline)
            step_to = max(step_to, cluster.clock.now + 0.1)
            cluster.advance(min(step_to, deadline) - cluster.clock.now)
            return cluster.clock.now

    def do_nslookup(self, student: bool, name: str, pod: str | None):
        return self.served(self.backend.nslookup(name, pod))

    def do_curl(self, student: bool, url: str, source: str, **options: Any):
        return self.served(self.backend.curl(url, source, **options))

    def do_trace(self, student: bool, url: str, source: str):
        return self.served(self.backend.trace(url, source))

    def do_proxy_rules(self, student: bool, node: str | None) -> str:
        return self.backend.proxy_rules(node)

    def do_conntrack(self, student: bool, node: str | None) -> list[str]:
        return self.backend.conntrack(node)

    def do_proxy_mode(self, student: bool) -> str:
        return self.backend.proxy_mode()

    def do_set_proxy_mode(self, student: bool, mode: str) -> None:
        self.backend.set_proxy_mode(mode)

    def do_stop_kube_proxy(self, student: bool, node: str | None) -> None:
        self.backend.stop_kube_proxy(node)

    def do_start_kube_proxy(self, student: bool, node: str | None) -> None:
        self.backend.start_kube_proxy(node)

    def do_exec(self, student: bool, pod: str, argv: list[str], namespace: str, container: str | None):
        return self.backend.exec(pod, argv, namespace, container)

    def do_logs(self, student: bool, pod: str, namespace: str, container: str | None) -> str:
        return self.backend.logs(pod, namespace, container)

    def do_kubectl_access(self, student: bool) -> dict:
        """What a client needs to run kubectl itself against this cluster: the socket that relays to the API server,
        the server's certificate, and a token (the student's, checked against the student role on every request;
        the administrator's on the grader socket)."""
        api = self.backend.apiserver()
        if self._api_relay is None:
            listener = bind(self.api_socket, owner=self.student_uid)
            self._api_relay = SocketRelay(listener, lambda: socket.create_connection(("127.0.0.1", api.port),
                                                                                     timeout=10),
                                          name="apiserver").start()
        if student and self._student_token is None:
            self._student_token = api.add_user(role.STUDENT, role.POLICY)
        return {"socket": self.api_socket, "certificate": api.certificate,
                "token": self._student_token if student else api.token,
                "user": role.STUDENT if student else "kubernetes-admin"}

    def do_summary_html(self, student: bool) -> str:
        return self.backend.summary_html()

    def do_client_ip(self, student: bool) -> str:
        from labsupport.shape import CLIENT_IP
        return CLIENT_IP

    def do_snapshot(self, student: bool, rule_counts: bool = True) -> ClusterSnapshot:
        store = self.backend.cluster.store
        proxies = self.backend.proxies
        status = {}
        for node in store.list("Node"):
            name = node["metadata"]["name"]
            agent = proxies.agents.get(name)
            status[name] = ProxyStatus(mode=agent.mode if agent else self.backend.proxy_mode(),
                                       running=bool(proxies.running.get(name)), pending=name in proxies.dirty)
        return ClusterSnapshot(nodes=store.list("Node"), pods=store.list("Pod"), services=store.list("Service"),
                               endpointslices=store.list("EndpointSlice"),
                               workloads=[o for k in WORKLOAD_KINDS for o in store.list(k)], proxies=status)

    def do_sync_proxies(self, student: bool) -> None:
        if self.backend.proxies.dirty:
            self.backend.proxies.sync_all()

    def do_connect(self, student: bool, url: str, source: str) -> dict:
        conn = self.backend.connect(url, source)
        key = len(self.connections) + 1
        self.connections[key] = conn
        return {"id": key, **self._connection_state(key)}

    def _connection(self, key: int):
        conn = self.connections.get(key)
        if conn is None:
            raise NotFound(f"connection {key!r} was never opened on this cluster")
        return conn

    def _connection_state(self, key: int) -> dict:
        conn = self._connection(key)
        return {"pod": conn.pod, "closed": conn.closed, "first": self.served(conn.first)}

    def do_connection_request(self, student: bool, key: int, path: str | None = None) -> dict:
        result = self.served(self._connection(key).request(path))
        return {"result": result, **self._connection_state(key)}

    def do_connection_close(self, student: bool, key: int) -> dict:
        self._connection(key).close()
        return self._connection_state(key)

    def do_connection_state(self, student: bool, key: int) -> dict:
        return self._connection_state(key)

    # --- the grader's verbs --------------------------------------------------------------------------------
    def do_served(self, student: bool, value: Any) -> bool:
        """Whether this value (an object, a list of objects, a result) is one the cluster handed out."""
        return fingerprint(value) in self.served_digests

    def do_refused(self, student: bool, text: str) -> list[dict]:
        """The requests this server refused with the message `text` (what `str(err)` gives the client), each as
        `refusal_record` keeps it; empty when it never said it."""
        if not isinstance(text, str):
            return []
        return [dict(record) for record in self.refusals.get(message_digest(text), [])[:50]]

def bind(path: str, owner: int | None = None) -> socket.socket:
    """A listening unix socket at `path` that only its owner may use (`owner`: that uid instead of ours)."""
    if os.path.lexists(path):
        os.unlink(path)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o077)
    try:
        sock.bind(path)
    finally:
        os.umask(old)
    if owner is not None:
        os.chown(path, owner, -1)
    sock.listen(16)
    return sock


def main(argv: list[str] | None = None) -> int:
    """Serve one cluster until stdin closes or the process is told to stop."""
    parser = argparse.ArgumentParser(prog="python -m labsupport.remote.server", description=__doc__.splitlines()[0])
    parser.add_argument("--student", required=True, help="path of the student socket")
    parser.add_argument("--grader", required=True, help="path of the grader socket")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--proxy-mode", default="iptables")
    parser.add_argument("--student-uid", type=int, help="the uid the student socket belongs to (the sandbox's)")
    opts = parser.parse_args(argv)
    server = LabServer(opts.student, opts.grader, seed=opts.seed, proxy_mode=opts.proxy_mode,
                       student_uid=opts.student_uid)
    server.listen()
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    sys.stdin.read()                                    # the grader holds our stdin: its end is ours
    if server._api_relay is not None:
        server._api_relay.stop()
    server.backend.close()                              # the API server kubectl used, and its files
    return 0


if __name__ == "__main__":
    sys.exit(main())


__all__ = ["LabServer", "fingerprint", "message_digest", "refusal_record", "bind", "main"]
