"""A client on a real socket in a source's namespace: a keep-alive HTTP connection, and reading one HTTP response."""
from __future__ import annotations

import socket
import time
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from labsupport.errors import BadRequest
from labsupport.netns.servers import TAG_HEADER
from labsupport.results import CurlResult

if TYPE_CHECKING:
    from labsupport.netns.network import KernelNetwork

#: What the keep-alive client announces itself as (the curl of the lesson's images).
CURL_AGENT = "curl/7.88.1"


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
        sock = net.topology.socket_in(origin.ns)
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




__all__ = ["KernelKeepAlive", "read_http_response", "CURL_AGENT"]
