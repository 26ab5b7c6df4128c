"""Real servers for the `netns` data plane: one thread serving every listening socket of every namespace.

A listening socket is made inside a pod's (or node's) namespace and handed to `Servers`; its handler turns
each HTTP request or datagram into a call on the pod's App object, with the peer address the kernel reports.
Every answered HTTP request is recorded (by the request tag the lab's own clients send, and by peer address),
so the client side can tell which pod answered and which address that pod saw.
"""
from __future__ import annotations

import queue
import selectors
import socket
import struct
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Callable

TAG_HEADER = "X-Labsupport-Request"
MAX_RECORDS = 20_000
REASONS = {200: "OK", 201: "Created", 204: "No Content", 301: "Moved Permanently", 302: "Found",
           304: "Not Modified", 400: "Bad Request", 403: "Forbidden", 404: "Not Found", 405: "Method Not Allowed",
           500: "Internal Server Error", 502: "Bad Gateway", 503: "Service Unavailable"}


@dataclass
class Answer:
    """What a handler answers to one HTTP request: status, body, headers."""

    status: int
    body: str
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class Answered:
    """One HTTP request a server answered: who answered it and the addresses the kernel gave that socket."""

    tag: str | None
    where: str                   # "pod" or "node"
    namespace: str | None
    pod: str | None
    node: str | None
    peer: tuple[str, int]
    local: tuple[str, int]
    status: int | None


HttpHandler = Callable[[str, str, dict, tuple, tuple], "tuple[Answer | None, dict]"]
DatagramHandler = Callable[[bytes, tuple, tuple], "bytes | None"]


@dataclass
class Listener:
    """A listening socket: its owner (a pod uid or node name), protocol and the function that answers."""

    owner: str
    kind: str                    # "http" | "udp" | "dns-tcp"
    sock: socket.socket
    handler: Callable


class _Conn:
    def __init__(self, sock: socket.socket, listener: Listener, peer: tuple, local: tuple):
        self.sock = sock
        self.listener = listener
        self.peer = peer
        self.local = local
        self.buf = b""


class Servers:
    """The serving thread and its sockets. Sockets are added and removed from any thread."""

    def __init__(self) -> None:
        self.selector = selectors.DefaultSelector()
        self.records: "OrderedDict[str, Answered]" = OrderedDict()
        self.by_peer: "OrderedDict[tuple, Answered]" = OrderedDict()
        self._commands: "queue.Queue[tuple[Callable[[], Any], threading.Event]]" = queue.Queue()
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self.selector.register(self._wake_r, selectors.EVENT_READ, None)
        self._listeners: list[Listener] = []
        self._conns: dict[socket.socket, _Conn] = {}
        self._stopping = False
        self._lock = threading.Lock()
        self.thread = threading.Thread(target=self._loop, name="labsupport-netns-servers", daemon=True)
        self.thread.start()

    # --- control (any thread) ------------------------------------------------------------------------------
    def _call(self, fn: Callable[[], Any]) -> None:
        if threading.current_thread() is self.thread:
            fn()
            return
        done = threading.Event()
        self._commands.put((fn, done))
        self._wake_w.send(b"x")
        done.wait(10)

    def add(self, listener: Listener) -> None:
        """Start serving a listening socket (TCP already listening, or a bound UDP socket)."""
        listener.sock.setblocking(False)

        def register() -> None:
            self._listeners.append(listener)
            self.selector.register(listener.sock, selectors.EVENT_READ, listener)
        self._call(register)

    def remove(self, owner: str, port: int | None = None) -> None:
        """Stop an owner's listeners (all, or one port) and reset their open connections."""
        def unregister() -> None:
            for lst in [x for x in self._listeners if x.owner == owner and
                        (port is None or x.sock.getsockname()[1] == port)]:
                self._listeners.remove(lst)
                self._drop(lst.sock)
                for conn in [c for c in self._conns.values() if c.listener is lst]:
                    self._reset(conn)
        self._call(unregister)

    def ports(self, owner: str) -> set[tuple[str, int]]:
        """The (kind, port) pairs an owner serves."""
        with self._lock:
            return {(x.kind, x.sock.getsockname()[1]) for x in self._listeners if x.owner == owner}

    def close(self) -> None:
        """Stop serving and close every socket."""
        if self._stopping:
            return

        def stop() -> None:
            self._stopping = True
            for conn in list(self._conns.values()):
                self._reset(conn)
            for lst in self._listeners:
                self._drop(lst.sock)
            self._listeners.clear()
        self._call(stop)
        self.thread.join(5)
        for s in (self._wake_r, self._wake_w):
            s.close()
        self.selector.close()

    def record(self, tag: str) -> Answered | None:
        """The request with this tag, once answered."""
        with self._lock:
            return self.records.get(tag)

    def record_for_peer(self, ip: str, port: int) -> Answered | None:
        """The last request answered for this peer address."""
        with self._lock:
            return self.by_peer.get((ip, port))

    # --- the loop ------------------------------------------------------------------------------------------
    def _loop(self) -> None:
        while not self._stopping:
            for key, _ in self.selector.select(timeout=1.0):
                data = key.data
                try:
                    if data is None:
                        self._run_commands()
                    elif isinstance(data, Listener):
                        self._ready_listener(data)
                    else:
                        self._ready_conn(data)
                except Exception:          # a broken peer must not stop the other servers
                    if isinstance(data, _Conn):
                        self._close_conn(data)
        self._run_commands()

    def _run_commands(self) -> None:
        try:
            while self._wake_r.recv(4096):
                pass
        except BlockingIOError:
            pass
        while True:
            try:
                fn, done = self._commands.get_nowait()
            except queue.Empty:
                return
            try:
                with self._lock:
                    fn()
            finally:
                done.set()

    def _drop(self, sock: socket.socket) -> None:
        try:
            self.selector.unregister(sock)
        except (KeyError, ValueError):
            pass
        sock.close()

    def _reset(self, conn: _Conn) -> None:
        try:
            conn.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        except OSError:
            pass
        self._close_conn(conn)

    def _close_conn(self, conn: _Conn) -> None:
        self._conns.pop(conn.sock, None)
        self._drop(conn.sock)

    def _ready_listener(self, lst: Listener) -> None:
        if lst.kind == "udp":
            try:
                payload, peer = lst.sock.recvfrom(65535)
            except (BlockingIOError, OSError):
                return
            reply = lst.handler(payload, peer[:2], lst.sock.getsockname()[:2])
            if reply:
                try:
                    lst.sock.sendto(reply, peer)
                except OSError:
                    pass
            return
        try:
            sock, peer = lst.sock.accept()
        except (BlockingIOError, OSError):
            return
        sock.setblocking(False)
        conn = _Conn(sock, lst, peer[:2], sock.getsockname()[:2])
        self._conns[sock] = conn
        self.selector.register(sock, selectors.EVENT_READ, conn)

    def _ready_conn(self, conn: _Conn) -> None:
        try:
            chunk = conn.sock.recv(65536)
        except BlockingIOError:
            return
        except OSError:
            chunk = b""
        if not chunk:
            self._close_conn(conn)
            return
        conn.buf += chunk
        if conn.listener.kind == "dns-tcp":
            self._dns_tcp(conn)
        else:
            self._http(conn)

    def _send(self, conn: _Conn, data: bytes) -> None:
        conn.sock.setblocking(True)
        conn.sock.settimeout(2.0)
        try:
            conn.sock.sendall(data)
        finally:
            conn.sock.setblocking(False)

    def _dns_tcp(self, conn: _Conn) -> None:
        while len(conn.buf) >= 2:
            size = struct.unpack("!H", conn.buf[:2])[0]
            if len(conn.buf) < 2 + size:
                return
            message, conn.buf = conn.buf[2:2 + size], conn.buf[2 + size:]
            reply = conn.listener.handler(message, conn.peer, conn.local)
            if reply:
                self._send(conn, struct.pack("!H", len(reply)) + reply)

    def _http(self, conn: _Conn) -> None:
        while True:
            head, sep, rest = conn.buf.partition(b"\r\n\r\n")
            if not sep:
                if len(conn.buf) > 65536:
                    self._close_conn(conn)
                return
            lines = head.decode("latin-1").split("\r\n")
            parts = lines[0].split(" ")
            if len(parts) != 3:
                self._close_conn(conn)
                return
            method, target, version = parts
            headers: dict[str, str] = {}
            for line in lines[1:]:
                name, _, value = line.partition(":")
                headers.setdefault(name.strip(), value.strip())
            length = int(next((v for k, v in headers.items() if k.lower() == "content-length"), "0") or 0)
            if len(rest) < length:
                return
            conn.buf = rest[length:]
            tag = None
            for k in list(headers):
                if k.lower() == TAG_HEADER.lower():
                    tag = headers.pop(k)
            answer, who = conn.listener.handler(method, target, headers, conn.peer, conn.local)
            record = Answered(tag, who.get("where", "pod"), who.get("namespace"), who.get("pod"), who.get("node"),
                              conn.peer, conn.local, answer.status if answer else None)
            self._remember(record)
            if answer is None:
                self._close_conn(conn)
                return
            body = answer.body.encode()
            keep = version == "HTTP/1.1" and headers.get("Connection", "").lower() != "close"
            out = [f"HTTP/1.1 {answer.status} {REASONS.get(answer.status, 'Status')}"]
            hdrs = {"Content-Type": "text/plain; charset=utf-8", **answer.headers,
                    "Content-Length": str(len(body)), "Connection": "keep-alive" if keep else "close"}
            out.extend(f"{k}: {v}" for k, v in hdrs.items())
            self._send(conn, ("\r\n".join(out) + "\r\n\r\n").encode("latin-1") + (b"" if method == "HEAD" else body))
            if not keep:
                self._close_conn(conn)
                return

    def _remember(self, record: Answered) -> None:
        with self._lock:
            self._remember_locked(record)

    def _remember_locked(self, record: Answered) -> None:
        if record.tag:
            self.records[record.tag] = record
            if len(self.records) > MAX_RECORDS:
                self.records.popitem(last=False)
        self.by_peer[record.peer] = record
        if len(self.by_peer) > MAX_RECORDS:
            self.by_peer.popitem(last=False)
