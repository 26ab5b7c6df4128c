"""Bad requests get clean 4xx Status answers and change nothing; no token, no access; discovery documents."""
from __future__ import annotations

import json
import random

import pytest


def snapshot(lab) -> tuple:
    store = lab._backend.cluster.store
    return store.rv, tuple((k, store.count(k)) for k in store.kinds())


def test_token_required(api):
    status, _, body = api.request("GET", "/api/v1/pods", token=False)
    assert status == 401
    assert json.loads(body)["reason"] == "Unauthorized"
    assert api.request("GET", "/api/v1/pods", headers={"Authorization": "Bearer wrong"}, token=False)[0] == 401
    assert api.request("GET", "/healthz", token=False)[0] == 200


def test_discovery(api):
    status, _, body = api.request("GET", "/apis", headers={
        "Accept": "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json"})
    doc = json.loads(body)
    assert doc["kind"] == "APIGroupDiscoveryList"
    assert {g["metadata"]["name"] for g in doc["items"]} >= {"apps", "discovery.k8s.io", "networking.k8s.io",
                                                          "authentication.k8s.io", "authorization.k8s.io"}
    status, legacy = api.json("GET", "/api/v1")
    assert {r["name"] for r in legacy["resources"]} >= {"pods", "pods/log", "pods/exec", "services", "endpoints"}
    status, version = api.json("GET", "/version")
    assert version["gitVersion"].startswith("v1.")


BAD_REQUESTS = [
    ("POST", "/api/v1/namespaces/default/services", b"{not json", "application/json"),
    ("POST", "/api/v1/namespaces/default/services", b"kind: [unclosed", "application/yaml"),
    ("POST", "/api/v1/namespaces/default/services", b"[1, 2]", "application/json"),
    ("POST", "/api/v1/namespaces/default/services", b'"text"', "application/json"),
    ("POST", "/api/v1/namespaces/default/services", b"", "application/json"),
    ("POST", "/api/v1/namespaces/default/services", b"\xff\xfe\x00", "application/json"),
    ("POST", "/api/v1/namespaces/default/services", b'{"apiVersion":"v9","kind":"Service","metadata":{"name":"x"}}',
     "application/json"),
    ("POST", "/api/v1/namespaces/default/services", b'{"apiVersion":"v1","kind":"Pod","metadata":{"name":"x"}}',
     "application/json"),
    ("POST", "/api/v1/namespaces/default/services", b'{"apiVersion":"v1","kind":"Service","metadata":[]}',
     "application/json"),
    ("POST", "/api/v1/namespaces/default/services",
     b'{"apiVersion":"v1","kind":"Service","metadata":{"name":"x","namespace":"other"},"spec":{"ports":[{"port":80}]}}',
     "application/json"),
    ("POST", "/api/v1/namespaces/default/services",
     b'{"apiVersion":"v1","kind":"Service","metadata":{"name":"x"},"spec":{"ports":[{"port":"eighty"}]}}',
     "application/json"),
    ("POST", "/api/v1/namespaces/default/services",
     b'{"apiVersion":"v1","kind":"Service","metadata":{"name":"x"},"spec":{"type":"NodePort",'
     b'"ports":[{"port":80,"nodePort":1}]}}', "application/json"),
    ("POST", "/api/v1/namespaces/nowhere/configmaps", b'{"metadata":{"name":"x"}}', "application/json"),
    ("POST", "/apis/example.com/v1/namespaces/default/widgets", b"{}", "application/json"),
    ("GET", "/api/v1/namespaces/default/widgets", None, None),
    ("GET", "/api/v1/namespaces/default/pods?labelSelector=a%20in%20(", None, None),
    ("GET", "/api/v1/namespaces/default/pods?fieldSelector=spec.bogus=1", None, None),
    ("GET", "/api/v1/namespaces/default/pods?watch=true&resourceVersion=abc", None, None),
    ("PUT", "/api/v1/namespaces/default/services/web", b'{"apiVersion":"v1","kind":"Service","metadata":{"name":"zz"}}',
     "application/json"),
    ("PATCH", "/api/v1/namespaces/default/services/web", b"{}", "text/plain"),
    ("PATCH", "/api/v1/namespaces/default/services/web", b'[{"op":"remove","path":"/spec/nope"}]',
     "application/json-patch+json"),
    ("PATCH", "/api/v1/namespaces/default/services/web", b'[{"op":"jump","path":"/spec"}]',
     "application/json-patch+json"),
    ("PATCH", "/api/v1/namespaces/default/services/web", b'{"spec":{"ports":[{"port":80,"nodePort":5}],'
     b'"type":"NodePort"}}', "application/merge-patch+json"),
    ("PATCH", "/api/v1/namespaces/default/services/web", b'{"metadata":{"resourceVersion":"1"},"spec":{}}',
     "application/merge-patch+json"),
    ("PATCH", "/api/v1/namespaces/default/services/web", b'{"kind":"Pod"}', "application/merge-patch+json"),
    ("PATCH", "/api/v1/namespaces/default/services/web", b'{"a":1}', "application/apply-patch+yaml"),
    ("DELETE", "/api/v1/namespaces/default/services/nope", None, None),
    ("DELETE", "/api/v1/namespaces/default/services/web", b'{"gracePeriodSeconds":"soon"}', "application/json"),
    ("DELETE", "/api/v1/namespaces/default/services/web", b'{"propagationPolicy":"Sideways"}', "application/json"),
    ("DELETE", "/api/v1/namespaces/default/services/web", b'{"preconditions":{"uid":"nope"}}', "application/json"),
    ("DELETE", "/api/v1/namespaces/default/services/web", b'{bad', "application/json"),
    ("POST", "/api/v1/namespaces/default/pods/db-0/exec?command=ls", None, None),
    ("GET", "/api/v1/namespaces/default/pods/nope/log", None, None),
    ("GET", "/api/v1/namespaces/default/pods/db-0/log?tailLines=x", None, None),
    ("PUT", "/apis/apps/v1/namespaces/default/deployments/web/scale", b'{"spec":{"replicas":"many"}}',
     "application/json"),
    ("POST", "/labsupport/v1/advance?seconds=-4", None, None),
    ("GET", "/api/v1/namespaces/default/services/web/bogus", None, None),
    ("OPTIONS", "/api/v1/namespaces/default/services/web", None, None),
]


@pytest.mark.parametrize("method,path,body,ctype", BAD_REQUESTS)
def test_bad_requests_are_clean_4xx(lab, api, method, path, body, ctype):
    before = snapshot(lab)
    headers = {"Content-Type": ctype} if ctype else {}
    status, _, data = api.request(method, path, body, headers=headers)
    assert 400 <= status < 500, (status, data)
    answer = json.loads(data)
    assert answer["kind"] == "Status" and answer["status"] == "Failure" and answer["code"] == status
    assert snapshot(lab) == before


def test_oversized_body(lab, api):
    before = snapshot(lab)
    big = b'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"big"},"data":{"x":"' + b"a" * (3 * 1024 * 1024) \
        + b'"}}'
    status, _, data = api.request("POST", "/api/v1/namespaces/default/configmaps", big,
                                  headers={"Content-Type": "application/json"})
    assert status == 413 and json.loads(data)["reason"] == "RequestEntityTooLarge"
    assert snapshot(lab) == before
    assert api.request("GET", "/api/v1/namespaces/default/pods")[0] == 200


def test_random_garbage_never_breaks_the_server(lab, api):
    rng = random.Random(7)
    before = snapshot(lab)
    paths = ["/api/v1/namespaces/default/services", "/api/v1/namespaces/default/services/web",
             "/apis/apps/v1/namespaces/default/deployments/web", "/api/v1/namespaces/default/configmaps"]
    ctypes = ["application/json", "application/yaml", "application/merge-patch+json",
              "application/strategic-merge-patch+json", "application/json-patch+json"]
    for _ in range(150):
        body = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 200)))
        method = rng.choice(["POST", "PUT", "PATCH"])
        status, _, _ = api.request(method, rng.choice(paths), body, headers={"Content-Type": rng.choice(ctypes)})
        assert 400 <= status < 500
    assert snapshot(lab) == before
    assert api.request("GET", "/api/v1/namespaces/default/services/web")[0] == 200


def test_stale_resource_version_conflicts(api):
    status, svc = api.json("GET", "/api/v1/namespaces/default/services/web")
    svc["metadata"]["resourceVersion"] = "5"
    status, answer = api.json("PUT", "/api/v1/namespaces/default/services/web", svc)
    assert status == 409 and answer["reason"] == "Conflict"
    assert "the object has been modified" in answer["message"]


def test_plain_http_and_garbage_connections(api):
    import socket
    for payload in (b"GET /api HTTP/1.1\r\nHost: x\r\n\r\n", b"\x16\x03\x01\x00\x05hello", b"\x00" * 100, b""):
        with socket.create_connection((api.host, api.port), timeout=5) as sock:
            try:
                sock.sendall(payload)
                sock.shutdown(socket.SHUT_WR)
                sock.recv(100)
            except OSError:
                pass  # the server may hang up first; all that matters is that it keeps serving
    assert api.request("GET", "/api/v1/namespaces/default/services/web")[0] == 200


def test_bad_websocket_upgrades(api):
    status, _, data = api.request("GET", "/api/v1/namespaces/default/pods/db-0/exec?command=ls")
    assert status == 400 and json.loads(data)["message"] == "Upgrade request required"
    status, _, data = api.request("GET", "/api/v1/namespaces/default/pods/db-0/exec?command=ls", headers={
        "Upgrade": "websocket", "Connection": "Upgrade", "Sec-WebSocket-Key": "x", "Sec-WebSocket-Protocol": "nope"})
    assert status == 400
