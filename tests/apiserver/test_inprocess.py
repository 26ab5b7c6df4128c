"""The in-process entry into the API server answers as the HTTPS server does, byte for byte, without a socket."""
from __future__ import annotations

import json
import threading

import pytest
import yaml

from labsupport.apiserver.inprocess import URL, InProcessAPI, Reply

TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"

# what kubectl asks of the lessons' cluster, and answers whose headers matter (a warning, a Status error)
GETS = [
    ("/api", "application/json"),
    ("/apis", "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json"),
    ("/api/v1/namespaces/default/pods?limit=500", TABLE),
    ("/api/v1/namespaces/default/services/web", "application/json"),
    ("/apis/discovery.k8s.io/v1/namespaces/default/endpointslices?labelSelector=kubernetes.io%2Fservice-name%3Dweb",
     TABLE),
    ("/api/v1/namespaces/default/endpoints/web", TABLE),
    ("/api/v1/nodes?limit=500", TABLE),
    ("/api/v1/namespaces/default/pods/no-such-pod", "application/json"),
    ("/openapi/v3", "application/json"),
]


@pytest.fixture(scope="module")
def inproc(lab):
    """An in-process API on the same cluster the HTTPS server serves."""
    server = InProcessAPI(lab._backend.cluster)
    yield server
    server.stop()


def _headers(token: str, accept: str) -> list[tuple[str, str]]:
    return [("Accept", accept), ("Authorization", f"Bearer {token}"), ("User-Agent", "kubectl/v1.37.1")]


@pytest.mark.parametrize("path,accept", GETS)
def test_answers_are_the_https_servers_bytes(lab, api, inproc, path, accept):
    status, headers, body = api.request("GET", path, headers={"Accept": accept})
    reply = inproc.handle("GET", path, _headers(inproc.token, accept))
    assert (reply.status, reply.body) == (status, body)
    assert reply.header("Content-Type") == headers["content-type"]
    assert reply.header("Warning") == headers.get("warning")


def test_a_write_and_its_refusal(lab, inproc):
    manifest = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "inproc"}, "data": {"a": "1"}}
    headers = _headers(inproc.token, "application/json") + [("Content-Type", "application/json")]
    created = inproc.handle("POST", "/api/v1/namespaces/default/configmaps", headers, json.dumps(manifest).encode())
    assert created.status == 201
    assert lab.get("configmap", "inproc")["data"] == {"a": "1"}
    again = inproc.handle("POST", "/api/v1/namespaces/default/configmaps", headers, json.dumps(manifest).encode())
    assert again.status == 409
    assert json.loads(again.body)["message"] == 'configmaps "inproc" already exists'
    assert inproc.handle("DELETE", "/api/v1/namespaces/default/configmaps/inproc", headers).status == 200


def test_no_token_no_answer(inproc):
    reply = inproc.handle("GET", "/api/v1/pods", [("Accept", "application/json")])
    assert reply.status == 401


def test_kubeconfig_names_the_server_and_token_only(inproc):
    with open(inproc.kubeconfig_path) as f:
        config = yaml.safe_load(f)
    assert config["clusters"][0]["cluster"] == {"server": URL}
    assert config["users"][0]["user"] == {"token": inproc.token}


class Collect:
    """A sink that keeps what it is sent and says the client is gone after `rows` watch events."""

    def __init__(self, rows: int):
        self.rows = rows
        self.status: int | None = None
        self.chunks: list[bytes] = []

    def head(self, status, headers):
        self.status = status

    def data(self, chunk):
        self.chunks.append(chunk)

    def closed(self):
        return b"".join(self.chunks).count(b"\n") >= self.rows


def test_a_watch_streams_to_its_sink_until_the_client_goes(lab, inproc):
    pods = lab.get("pods", selector="app=web")
    sink = Collect(rows=len(pods) + 1)
    victim = pods[0]["metadata"]["name"]
    timer = threading.Timer(0.3, lambda: lab.delete("pod", victim))
    timer.start()
    try:
        reply = inproc.handle("GET", "/api/v1/namespaces/default/pods?watch=true&labelSelector=app%3Dweb",
                              _headers(inproc.token, "application/json"), sink=sink)
    finally:
        timer.join()
    assert isinstance(reply, Reply) and reply.body == b""
    assert sink.status == 200
    events = [json.loads(line) for line in b"".join(sink.chunks).splitlines()]
    assert [e["type"] for e in events[:len(pods)]] == ["ADDED"] * len(pods)
    assert events[len(pods)]["type"] == "MODIFIED"
    assert events[len(pods)]["object"]["metadata"]["name"] == victim
