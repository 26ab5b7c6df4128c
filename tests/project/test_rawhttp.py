"""Raw HTTP from this machine against loopback servers: answers, keep-alive on one connection, curl's failures."""
from __future__ import annotations

import http.client
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from labsupport import rawhttp


class Echo(BaseHTTPRequestHandler):
    """Answers with the client's port, so a test can tell connections apart; /bye closes after answering."""

    protocol_version = "HTTP/1.1"

    def do_GET(self):
        body = f"{self.client_address[1]} {self.path} {self.headers.get('User-Agent')}".encode()
        status = 404 if self.path == "/missing" else 302 if self.path == "/moved" else 200
        self.send_response(status)
        if status == 302:
            self.send_header("Location", "/elsewhere")
        self.send_header("Content-Length", str(len(body)))
        if self.path == "/bye":
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def server():
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Echo)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_fetch_answers_like_curl(server):
    out = rawhttp.fetch(server + "/hostname?x=1")
    assert out.status == 200 and out.exit_code == 0 and out.error is None
    port, path, agent = out.body.split()
    assert path == "/hostname?x=1" and agent == rawhttp.USER_AGENT
    assert out.remote_ip == "127.0.0.1" and out.local_port == int(port)
    assert rawhttp.fetch(server + "/missing").status == 404
    moved = rawhttp.fetch(server + "/moved", headers={"User-Agent": "probe"})
    assert moved.status == 302 and moved.body.endswith(" /moved probe"), "no redirect followed, as curl without -L"


def test_keep_alive_rides_one_connection(server):
    conn = rawhttp.KeepAlive(server + "/")
    try:
        ports = {conn.get().body.split()[0] for _ in range(3)}
        assert len(ports) == 1
        last = conn.get("/bye")
        assert last.status == 200 and last.body.split()[0] in ports
        after = conn.get("/")
        assert after.status == 200 and after.body.split()[0] not in ports, "a new connection after an orderly close"
    finally:
        conn.close()


def test_refused_and_timed_out_read_as_curl():
    port = _closed_port()
    out = rawhttp.fetch(f"http://127.0.0.1:{port}/")
    assert out.status is None and out.exit_code == 7
    assert out.error.startswith(f"curl: (7) Failed to connect to 127.0.0.1 port {port} after ")
    assert out.error.endswith(" ms: Couldn't connect to server")
    with socket.create_server(("127.0.0.1", 0)) as silent:   # accepts, never answers
        slow = rawhttp.fetch(f"http://127.0.0.1:{silent.getsockname()[1]}/", timeout=0.2, max_time=0.3)
    assert slow.exit_code == 28 and slow.error.startswith("curl: (28) Operation timed out after ")


def test_a_server_that_hangs_up():
    with socket.create_server(("127.0.0.1", 0)) as rude:
        def hang_up():
            conn, _ = rude.accept()
            conn.recv(1024)
            conn.close()
        thread = threading.Thread(target=hang_up, daemon=True)
        thread.start()
        out = rawhttp.fetch(f"http://127.0.0.1:{rude.getsockname()[1]}/")
        thread.join(5)
    assert (out.exit_code, out.error) == (52, "curl: (52) Empty reply from server")


@pytest.mark.parametrize("exc,connected,reused,code,start", [
    (socket.gaierror(-2, "Name or service not known"), False, False, 6, "curl: (6) Could not resolve host: web"),
    (TimeoutError(), False, False, 28, "curl: (28) Failed to connect to web port 80 after 5 ms: Timeout"),
    (ConnectionResetError(104, "reset"), True, True, 56, "curl: (56) Recv failure: Connection reset by peer"),
    (http.client.RemoteDisconnected("gone"), True, True, 56, "curl: (56) Recv failure"),
    (http.client.RemoteDisconnected("gone"), True, False, 52, "curl: (52) Empty reply from server"),
])
def test_curl_error_words(exc, connected, reused, code, start):
    got_code, line = rawhttp.curl_error(exc, "web", 80, 5, connected=connected, reused=reused)
    assert got_code == code and line.startswith(start)


def test_only_http_and_https():
    with pytest.raises(ValueError, match="not 'ftp'"):
        rawhttp.fetch("ftp://127.0.0.1/")


def test_the_kube_backends_keep_alive_connection(server):
    from labsupport.errors import BadRequest
    from labsupport.kind.client import RealKeepAlive

    conn = RealKeepAlive(None, server + "/hostname", "client")
    first_port = conn.first.body.split()[0]
    again = conn.request()
    assert conn.first.status == again.status == 200 and again.body.split()[0] == first_port
    conn.close()
    with pytest.raises(BadRequest, match="open a new one with lab.connect"):
        conn.request()
    refused = RealKeepAlive(None, f"http://127.0.0.1:{_closed_port()}/", "client")
    assert refused.closed and refused.first.exit_code == 7 and refused.first.status is None
