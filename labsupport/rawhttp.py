"""Raw HTTP from this machine, on one client (the standard library's `http.client`), answered as curl reports it.

`fetch` is one request on a connection of its own; `KeepAlive` sends every request on one connection and, unlike a
pooling client, does not quietly replace a connection that broke: a reset shows as curl's `Recv failure`, which is
the lesson of a kept-alive connection whose pod went away. Neither follows redirects (curl does not without `-L`).
Failures come back in a `CurlOutput` with curl's exit code and error line.
"""
from __future__ import annotations

import http.client
import socket
import time
from urllib.parse import urlsplit

from labsupport.tool_output import CurlOutput

USER_AGENT = "curl/8.11.1"


def curl_error(exc: BaseException, host: str, port: int, elapsed_ms: int, *, connected: bool,
               reused: bool = False) -> tuple[int, str]:
    """curl's exit code and error line for an exception raised while connecting (or, once connected, reading).

    `reused`: the request rode a connection an earlier request opened, so a silent close reads as a broken one.
    """
    if isinstance(exc, socket.gaierror):
        return 6, f"curl: (6) Could not resolve host: {host}"
    if isinstance(exc, (socket.timeout, TimeoutError)):
        if connected:
            return 28, f"curl: (28) Operation timed out after {elapsed_ms} milliseconds with 0 bytes received"
        return 28, f"curl: (28) Failed to connect to {host} port {port} after {elapsed_ms} ms: Timeout was reached"
    if isinstance(exc, ConnectionRefusedError) and not connected:
        return 7, f"curl: (7) Failed to connect to {host} port {port} after {elapsed_ms} ms: Couldn't connect to server"
    if isinstance(exc, http.client.RemoteDisconnected) and not reused:
        return 52, "curl: (52) Empty reply from server"
    if isinstance(exc, (ConnectionResetError, BrokenPipeError)):
        return 56, "curl: (56) Recv failure: Connection reset by peer"
    if connected:
        return 56, f"curl: (56) Recv failure: {exc}"
    return 7, f"curl: (7) Failed to connect to {host} port {port} after {elapsed_ms} ms: {exc}"


def _connection(url: str, timeout: float) -> tuple[http.client.HTTPConnection, str, int]:
    parts = urlsplit(url if "://" in url else f"http://{url}")
    if parts.scheme not in ("http", "https"):
        raise ValueError(f"curl here speaks http and https, not {parts.scheme!r} (in {url!r})")
    host = parts.hostname or ""
    port = parts.port or (443 if parts.scheme == "https" else 80)
    cls = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
    return cls(host, port, timeout=timeout), host, port


def _path(url: str) -> str:
    parts = urlsplit(url if "://" in url else f"http://{url}")
    return (parts.path or "/") + (f"?{parts.query}" if parts.query else "")


def _exchange(conn: http.client.HTTPConnection, path: str, headers: dict, host: str, port: int,
              read_timeout: float) -> CurlOutput:
    """One GET on `conn` (connecting first if it is not); the answer, or curl's words for what went wrong."""
    started = time.monotonic()
    connected = reused = conn.sock is not None
    try:
        if not connected:
            conn.connect()
            connected = True
        conn.sock.settimeout(read_timeout)
        remote = conn.sock.getpeername()[:2]
        local = conn.sock.getsockname()[:2]
        conn.request("GET", path, headers={"User-Agent": USER_AGENT, **headers})
        response = conn.getresponse()
        body = response.read().decode(errors="replace")
    except (OSError, http.client.HTTPException) as e:
        conn.close()
        code, line = curl_error(e, host, port, int((time.monotonic() - started) * 1000), connected=connected,
                                reused=reused)
        return CurlOutput(body="", status=None, exit_code=code, error=line)
    return CurlOutput(body=body, status=response.status, remote_ip=remote[0], remote_port=remote[1],
                      local_ip=local[0], local_port=local[1])


def fetch(url: str, *, headers: dict | None = None, timeout: float = 10, max_time: float | None = None) -> CurlOutput:
    """One GET from this machine, as `curl --connect-timeout T --max-time T+5 URL` would report it."""
    conn, host, port = _connection(url, timeout)
    try:
        return _exchange(conn, _path(url), dict(headers or {}), host, port,
                         timeout + 5 if max_time is None else max_time)
    finally:
        conn.close()


class KeepAlive:
    """One HTTP/1.1 connection from this machine that every request rides while the server keeps it open."""

    def __init__(self, url: str, *, timeout: float = 10):
        self.url = url
        self.timeout = timeout
        self._conn, self._host, self._port = _connection(url, timeout)

    def get(self, path: str | None = None, headers: dict | None = None) -> CurlOutput:
        """Send one GET on the connection (a new one only after the server ended the last in good order)."""
        return _exchange(self._conn, path or _path(self.url), dict(headers or {}), self._host, self._port,
                         self.timeout + 5)

    def close(self) -> None:
        """Close the connection."""
        self._conn.close()
