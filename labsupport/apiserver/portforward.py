"""The pod `portforward` subresource: kubectl's SPDY session tunnelled through a WebSocket
(`SPDY/3.1+portforward.k8s.io`), or on the upgraded connection itself (`Upgrade: SPDY/3.1`). Each local connection kubectl accepts opens an error stream and a data stream for
one pod port; what arrives on the data stream is served by the pod's app on that port, as if it came from the
pod's own loopback (127.0.0.1), the way the kubelet's port-forward reaches it."""
from __future__ import annotations

from dataclasses import dataclass, field
from email.utils import formatdate
from typing import Any

from labsupport.apiserver.routes import Route
from labsupport.apiserver.spdy import FLAG_FIN, GOAWAY, PING, RST_STREAM, SYN_STREAM, ProtocolError, Session
from labsupport.apiserver.websocket import WebSocket, WebSocketClosed, accept_key
from labsupport.errors import BadRequest, NotFound

PROTOCOL = "SPDY/3.1+portforward.k8s.io"
REASONS = {200: "OK", 201: "Created", 204: "No Content", 301: "Moved Permanently", 302: "Found",
           304: "Not Modified", 400: "Bad Request", 403: "Forbidden", 404: "Not Found", 405: "Not Allowed",
           500: "Internal Server Error", 502: "Bad Gateway", 503: "Service Unavailable"}
#: The local address port-forwarded connections come from, as the pod's app sees them.
LOOPBACK_PEER = ("127.0.0.1", 50000)


@dataclass
class Forward:
    """One forwarded connection: its error and data streams and the bytes waiting to be served."""

    port: int
    error_stream: int | None = None
    data_stream: int | None = None
    pending: bytes = b""
    done: bool = False


@dataclass
class HttpRequest:
    """One HTTP/1.x request read off a forwarded connection."""

    method: str
    path: str
    headers: dict[str, str] = field(default_factory=dict)


def read_request(buffer: bytes) -> tuple[HttpRequest | None, bytes]:
    """The first complete request in `buffer` and what follows it; None while it is incomplete."""
    head, sep, rest = buffer.partition(b"\r\n\r\n")
    if not sep:
        return None, buffer
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split()
    if len(parts) < 2:
        raise BadRequest(f"not an HTTP request line: {lines[0]!r}")
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().title()] = value.strip()
    size = int(headers.get("Content-Length") or 0)
    if len(rest) < size:
        return None, buffer
    return HttpRequest(parts[0], parts[1], headers), rest[size:]


def http_response(status: int, body: str, headers: dict[str, str], date: str, close: bool) -> bytes:
    """An HTTP/1.1 response as the app's server writes it."""
    data = body.encode()
    lines = [f"HTTP/1.1 {status} {REASONS.get(status, '')}".rstrip()]
    fields = {"Server": headers.get("Server", ""), "Date": date,
              "Content-Type": headers.get("Content-Type", "text/plain; charset=utf-8"),
              "Content-Length": str(len(data)), "Connection": "close" if close else "keep-alive"}
    fields.update({k: v for k, v in headers.items() if k not in fields})
    lines += [f"{k}: {v}" for k, v in fields.items() if v]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + data


class PortForwarding:
    """The portforward subresource of the request handler."""

    api: Any
    query: dict

    def _port_forward(self, route: Route) -> None:
        if route.info.kind != "Pod":
            raise NotFound("the server could not find the requested resource")
        cluster = self.api.cluster
        with cluster.lock:
            pod = cluster.get("Pod", route.namespace, route.name)
            phase = (pod.get("status") or {}).get("phase")
            if phase != "Running":
                raise BadRequest(f"pod {route.name} is not running (phase {phase})")
        upgrade = self.headers.get("Upgrade", "").lower()
        if upgrade == "spdy/3.1" and "portforward.k8s.io" in self.headers.get("X-Stream-Protocol-Version", ""):
            return self._spdy_upgrade(route)
        offered = [p.strip() for p in self.headers.get("Sec-WebSocket-Protocol", "").split(",")]
        if upgrade != "websocket" or PROTOCOL not in offered:
            raise BadRequest(f"Upgrade request required: port-forward here speaks SPDY/3.1, or WebSocket with the "
                             f"{PROTOCOL} subprotocol")
        self.send_response(101, "Switching Protocols")
        self.send_header("Upgrade", "websocket")
        self.send_header("Connection", "Upgrade")
        self.send_header("Sec-WebSocket-Accept", accept_key(self.headers.get("Sec-WebSocket-Key", "")))
        self.send_header("Sec-WebSocket-Protocol", PROTOCOL)
        self.end_headers()
        self.wfile.flush()
        self.close_connection = True
        ws = WebSocket(self.rfile, self.wfile, PROTOCOL)
        try:
            self._forward(lambda: ws.receive()[1], ws.send, route)
        except (OSError, WebSocketClosed, ProtocolError):
            pass
        finally:
            ws.close()

    def _spdy_upgrade(self, route: Route) -> None:
        """The older transport: the connection itself switches to SPDY/3.1."""
        self.send_response(101, "Switching Protocols")
        self.send_header("Connection", "Upgrade")
        self.send_header("Upgrade", "SPDY/3.1")
        self.send_header("X-Stream-Protocol-Version", "portforward.k8s.io")
        self.end_headers()
        self.wfile.flush()
        self.close_connection = True

        def receive() -> bytes:
            data = self.rfile.read1(65536)
            if not data:
                raise WebSocketClosed()
            return data

        def send(data: bytes) -> None:
            self.wfile.write(data)
            self.wfile.flush()
        try:
            self._forward(receive, send, route)
        except (OSError, WebSocketClosed, ProtocolError):
            pass

    def _forward(self, receive, send, route: Route) -> None:
        session = Session()
        forwards: dict[str, Forward] = {}
        by_stream: dict[int, Forward] = {}
        while not self.api.stopping:
            payload = receive()
            out = b""
            for frame in session.feed(payload):
                if frame.kind == PING:
                    out += session.ping(frame)
                elif frame.kind == GOAWAY:
                    return
                elif frame.kind == SYN_STREAM:
                    headers = frame.headers or {}
                    try:
                        port = int(headers.get("port", ""))
                    except ValueError:
                        out += session.reset(frame.stream, 1)
                        continue
                    forward = forwards.setdefault(headers.get("requestid", str(frame.stream)), Forward(port))
                    by_stream[frame.stream] = forward
                    if headers.get("streamtype") == "error":
                        forward.error_stream = frame.stream
                    else:
                        forward.data_stream = frame.stream
                    out += session.syn_reply(frame.stream)
                    if forward.data_stream is not None and forward.error_stream is not None:
                        out += self._check_port(session, route, forward)
                elif frame.kind == RST_STREAM:
                    by_stream.pop(frame.stream, None)
                elif frame.kind is None:
                    forward = by_stream.get(frame.stream)
                    if forward is None or frame.stream != forward.data_stream or forward.done:
                        continue
                    forward.pending += frame.data
                    out += self._serve(session, route, forward, fin=bool(frame.flags & FLAG_FIN))
                    if frame.data:
                        out += session.window_update(frame.stream, len(frame.data))
            if out:
                send(out)

    def _app_on(self, route: Route, port: int):
        cluster = self.api.cluster
        pod = cluster.store.find("Pod", route.namespace, route.name)
        runtime = cluster.kubelet.runtime(pod) if pod is not None else None
        if runtime is None:
            return pod, None
        for app in runtime.apps.values():
            if ("TCP", port) in app.listens():
                return pod, app
        return pod, None

    def _check_port(self, session: Session, route: Route, forward: Forward) -> bytes:
        with self.api.cluster.lock:
            pod, app = self._app_on(route, forward.port)
        if app is not None:
            return b""
        forward.done = True
        uid = (pod or {}).get("metadata", {}).get("uid", "")
        message = (f"error forwarding port {forward.port} to pod {uid}, uid : failed to connect to "
                   f"localhost:{forward.port} inside the pod's network namespace: dial tcp4 "
                   f"127.0.0.1:{forward.port}: connect: connection refused")
        return (session.data(forward.error_stream, message.encode(), fin=True) +
                session.data(forward.data_stream, b"", fin=True))

    def _serve(self, session: Session, route: Route, forward: Forward, fin: bool) -> bytes:
        out = b""
        cluster = self.api.cluster
        while True:
            request, forward.pending = read_request(forward.pending)
            if request is None:
                break
            with cluster.lock:
                _, app = self._app_on(route, forward.port)
                answer = app.http(request.method, request.path, LOOPBACK_PEER, forward.port,
                                  request.headers) if app is not None else None
                now = cluster.clock.now
                cluster.settle()
            close = request.headers.get("Connection", "").lower() == "close"
            if answer is None:
                forward.done = True
                break
            out += session.data(forward.data_stream,
                                http_response(answer.status, answer.body, answer.headers,
                                              formatdate(now, usegmt=True), close))
            if close:
                forward.done = True
                break
        if fin or forward.done:
            forward.done = True
            out += session.data(forward.data_stream, b"", fin=True)
            out += session.data(forward.error_stream, b"", fin=True)
        return out
