"""Fixtures for the API server tests: an embedded cluster served over HTTPS, the real kubectl, raw requests."""
from __future__ import annotations

import base64
import http.client
import json
import ssl
import time
from dataclasses import dataclass

import pytest
import yaml

from labsupport import Lab
from tests.conftest import DB_STATEFULSET, WEB  # noqa: F401  (the tests import WEB from here)

DB = DB_STATEFULSET


@dataclass
class Endpoint:
    """Where the server listens and how to reach it, read back from the kubeconfig it wrote."""

    host: str
    port: int
    token: str
    context: ssl.SSLContext

    def request(self, method: str, path: str, body: bytes | str | dict | None = None,
                headers: dict | None = None, token: bool = True, timeout: float = 30) -> tuple[int, dict, bytes]:
        """One HTTPS request; returns (status, headers, body)."""
        conn = http.client.HTTPSConnection(self.host, self.port, context=self.context, timeout=timeout)
        hdrs = dict(headers or {})
        if token:
            hdrs.setdefault("Authorization", f"Bearer {self.token}")
        if isinstance(body, dict):
            body = json.dumps(body)
            hdrs.setdefault("Content-Type", "application/json")
        if isinstance(body, str):
            body = body.encode()
        try:
            conn.request(method, path, body=body, headers=hdrs)
            resp = conn.getresponse()
            return resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read()
        finally:
            conn.close()

    def json(self, method: str, path: str, body=None, **kw) -> tuple[int, dict]:
        """One request whose answer is JSON."""
        status, _, data = self.request(method, path, body, **kw)
        return status, json.loads(data)


def endpoint_of(kubeconfig: str) -> Endpoint:
    """The Endpoint a kubeconfig names."""
    with open(kubeconfig) as f:
        config = yaml.safe_load(f)
    cluster = config["clusters"][0]["cluster"]
    ctx = ssl.create_default_context(cadata=base64.b64decode(cluster["certificate-authority-data"]).decode())
    hostport = cluster["server"].split("://", 1)[1]
    host, port = hostport.rsplit(":", 1)
    return Endpoint(host, int(port), config["users"][0]["user"]["token"], ctx)


@pytest.fixture(scope="module")
def lab():
    """One embedded cluster per test module, with the lesson's `web` Deployment/Service and headless `db`."""
    with Lab(backend="sim", seed=0) as lab:
        lab.apply(WEB)
        lab.apply(DB)
        lab.wait(lambda l: sum(1 for p in l.get("pods") if _ready(p)) == 6)
        yield lab


def _ready(pod: dict) -> bool:
    return any(c["type"] == "Ready" and c["status"] == "True" for c in pod.get("status", {}).get("conditions", []))


@pytest.fixture(scope="module")
def api(lab) -> Endpoint:
    """Raw HTTPS access to the lab's API server."""
    return endpoint_of(lab.kubeconfig)


@pytest.fixture(scope="module")
def kubectl(lab):
    """Run the real kubectl against the lab; returns the result (stdout, stderr, returncode)."""
    def run(command, input: str | None = None, ok: bool = True):
        result = lab.kubectl(command, show=False, input=input)
        if ok:
            assert result.returncode == 0, f"kubectl {command} failed: {result.stderr}"
        return result
    return run


def wait_until(predicate, timeout: float = 10.0, step: float = 0.02):
    """Poll (real time) until predicate() is truthy; returns its value."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(step)
    raise AssertionError("condition not met in time")
