"""kubectl port-forward: the pod's app answers on a local port, through lab.kubectl and from a terminal."""
from __future__ import annotations

import socket
import subprocess
import urllib.error
import urllib.request

import pytest

from labsupport.apiserver.portforward import read_request
from labsupport.apiserver.spdy import DICTIONARY, Session


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def forward(lab):
    started = []

    def run(target: str, remote: int):
        port = free_port()
        result = lab.kubectl(f"port-forward {target} {port}:{remote}", show=False)
        started.append(result)
        return port, result
    yield run
    for result in started:
        result.stop()


def test_the_pods_app_answers_on_the_local_port(lab, forward):
    pod = lab.get("pods", selector="app=web")[0]["metadata"]["name"]
    port, result = forward(f"pod/{pod}", 80)
    assert result.ok and f"Forwarding from 127.0.0.1:{port} -> 80" in result.stdout and result.running
    for _ in range(2):
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=10) as answer:
            assert answer.status == 200 and b"Welcome to nginx!" in answer.read()
    with pytest.raises(urllib.error.HTTPError) as missing:
        urllib.request.urlopen(f"http://127.0.0.1:{port}/nope", timeout=10)
    assert missing.value.code == 404
    log = lab.kubectl(f"logs {pod} --tail=1", show=False).stdout
    assert log.startswith('127.0.0.1 - - [') and '"GET /nope HTTP/1.1" 404' in log
    result.stop()
    assert not result.running


def test_curl_from_a_terminal_through_a_service(lab, forward):
    port, result = forward("svc/web", 80)
    assert result.ok, result.stderr
    curl = subprocess.run(["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", f"localhost:{port}/"],
                          capture_output=True, text=True, timeout=30)
    assert curl.stdout == "200"


def test_a_port_nothing_listens_on(lab, forward):
    pod = lab.get("pods", selector="app=web")[0]["metadata"]["name"]
    port, result = forward(f"pod/{pod}", 8081)
    assert result.ok
    with pytest.raises((urllib.error.URLError, ConnectionError, OSError)):
        urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=10).read()


def test_a_pod_that_does_not_run(kubectl, lab):
    result = kubectl("port-forward pod/nosuch 18999:80", ok=False)
    assert result.returncode == 1 and 'pods "nosuch" not found' in result.stderr


def test_requests_are_read_whole():
    request, rest = read_request(b"GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nhiGET")
    assert request.method == "GET" and request.headers["Host"] == "x" and rest == b"GET"
    assert read_request(b"GET / HTTP/1.1\r\nHost: x\r\n")[0] is None


def test_spdy_header_blocks_round_trip():
    import zlib
    assert len(DICTIONARY) == 1423
    server, client = Session(), Session()
    reply = server.syn_reply(3, {"streamtype": "data", "port": "80"})
    frame = client.feed(reply)[0]
    assert frame.stream == 3 and frame.headers == {"streamtype": "data", "port": "80"}
    assert zlib.adler32(DICTIONARY) == 0xE3C6A7C2


def test_the_older_spdy_transport_also_forwards(lab, monkeypatch):
    pod = lab.get("pods", selector="app=web")[0]["metadata"]["name"]
    port = free_port()
    monkeypatch.setenv("KUBECTL_PORT_FORWARD_WEBSOCKETS", "false")  # kubectl's switch back to plain SPDY
    result = lab.kubectl(f"port-forward pod/{pod} {port}:80", show=False)
    try:
        assert result.ok, result.stderr
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=10) as answer:
            assert answer.status == 200
    finally:
        result.stop()
