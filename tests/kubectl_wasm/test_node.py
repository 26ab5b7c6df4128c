"""kubectl.wasm, run under Node through the browser's glue, prints byte for byte what the native kubectl prints.

Two labs with the same seed take the same steps: the native kubectl (the oracle) talks to one over HTTPS, kubectl
built for WebAssembly talks to the other through the in-process API (its fetches relayed to it here). Every command
the lessons and the course run, in the lessons' order, must give the same stdout, stderr and exit code.
"""
from __future__ import annotations

import json
import os
import select
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from labsupport import Lab
from labsupport.apiserver.inprocess import URL, InProcessAPI
from labsupport.kubectl import is_watch
from tests.conftest import WEB
from tests.kubectl_wasm.conftest import WASM_DIR, require_tier

SERVICES = """
apiVersion: v1
kind: Service
metadata: {name: web-lb}
spec:
  type: LoadBalancer
  selector: {app: web}
  ports: [{port: 80, targetPort: 80}]
---
apiVersion: v1
kind: Service
metadata: {name: web-np2}
spec:
  type: NodePort
  selector: {app: web}
  ports: [{port: 80, targetPort: 80, nodePort: 30080}]
"""
CONFIGMAP = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\ndata: {greeting: hello}\n"


class _Relay(BaseHTTPRequestHandler):
    """Hands each request to the in-process API and streams its answer back (chunked)."""

    protocol_version = "HTTP/1.1"
    api: InProcessAPI

    def log_message(self, format, *args):  # noqa: A002 - the base class's name
        pass

    def _any(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        relay = self

        class Sink:
            def head(self, status, headers):
                relay.send_response(status)
                for name, value in headers:
                    if name.lower() not in ("content-length", "transfer-encoding", "connection", "date",
                                            "server"):
                        relay.send_header(name, value)
                relay.send_header("Transfer-Encoding", "chunked")
                relay.end_headers()

            def data(self, chunk):
                relay.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                relay.wfile.flush()

            def closed(self):
                return bool(select.select([relay.connection], [], [], 0)[0])

        self.api.handle(self.command, self.path, list(self.headers.items()), body, sink=Sink())
        try:
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except OSError:
            pass
        self.close_connection = True

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = _any


class WasmKubectl:
    """One Node process running kubectl.wasm jobs, one at a time."""

    def __init__(self, api: InProcessAPI, relay: str, home: Path):
        self.api, self.home = api, home
        self.proc = subprocess.Popen(["node", str(Path(__file__).with_name("run_node.mjs")), str(WASM_DIR), URL,
                                      relay], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True)

    def __call__(self, command: list[str], stdin: str | None = None, events: int | None = None,
                 timeout: float | None = None) -> dict:
        job = {"args": command, "stdin": stdin or "", "events": events, "cwd": str(self.home),
               "timeoutMs": int((timeout or 0) * 1000), "streams": is_watch(command),
               "env": {"KUBECONFIG": self.api.kubeconfig_path, "HOME": str(self.home),
                       "KUBECACHEDIR": os.path.join(os.path.dirname(self.api.kubeconfig_path), "cache")}}
        self.proc.stdin.write(json.dumps(job) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise AssertionError(f"the Node runner ended: {self.proc.stderr.read()}")
        return json.loads(line)

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    """(native lab, wasm kubectl, wasm's lab): two labs with the same seed and the lessons' Deployment."""
    require_tier("node")
    with Lab(backend="sim", seed=0) as native, Lab(backend="sim", seed=0) as other:
        api = InProcessAPI(other._backend.cluster)
        handler = type("Relay", (_Relay,), {"api": api})
        server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        server.daemon_threads = True
        threading.Thread(target=server.serve_forever, daemon=True).start()
        wasm = WasmKubectl(api, f"http://127.0.0.1:{server.server_address[1]}", tmp_path_factory.mktemp("home"))
        try:
            for lab in (native, other):
                lab.apply(WEB)
                lab.wait(lambda l: sum(1 for p in l.get("pods", selector="app=web")
                                       if p["status"].get("podIP")) == 3)
            yield native, wasm, other
        finally:
            wasm.close()
            server.shutdown()
            api.stop()


def same(pair, command: str, stdin: str | None = None, **kw) -> dict:
    """Run a command on both labs; assert the same stdout, stderr and exit code; return the wasm run."""
    native, wasm, _ = pair
    expected = native.kubectl(command, show=False, input=stdin, **kw)
    got = wasm(command.split(), stdin=stdin, **kw)
    assert (got["stdout"], got["stderr"], got["code"]) == (expected.stdout, expected.stderr, expected.returncode), \
        f"kubectl {command}"
    return got


def both(pair, step) -> None:
    """Take a step on both labs."""
    step(pair[0])
    step(pair[2])


# the lessons' kubectl commands, both editions, in the order the lessons run them (grep lab.kubectl notebooks/)
READS = [
    "get nodes -L topology.kubernetes.io/zone",
    "get pods -o wide",
    "get pods -l app=web -o wide",
    "get svc web",
    "get endpointslices -l kubernetes.io/service-name=web",
    "get endpoints web",
    "get pods -n kube-system -l k8s-app=kube-proxy -o wide",
    "describe endpointslices -l kubernetes.io/service-name=web",
    "get endpointslices -l kubernetes.io/service-name=typo",
]


def test_lesson_reads(pair):
    for command in READS:
        same(pair, command)


def test_one_slice_as_yaml(pair):
    name = pair[0].get("endpointslices", selector="kubernetes.io/service-name=web")[0]["metadata"]["name"]
    assert name == pair[2].get("endpointslices", selector="kubernetes.io/service-name=web")[0]["metadata"]["name"]
    got = same(pair, f"get endpointslice {name} -o yaml")
    assert "addressType: IPv4" in got["stdout"]


def test_node_port_and_load_balancer_services(pair):
    both(pair, lambda lab: lab.apply(SERVICES))
    same(pair, "get svc web-lb")
    same(pair, "get svc web-np2")


def test_delete_a_pod_and_watch_the_replacement(pair):
    victim = pair[0].get("pods", selector="app=web")[0]["metadata"]["name"]
    same(pair, f"delete pod {victim} --wait=false")
    same(pair, "get pods -l app=web -o wide")
    both(pair, lambda lab: lab.advance(5))
    same(pair, "get pods -l app=web -o wide")


def test_run_a_throwaway_pod(pair):
    same(pair, "run dnsutils --image=registry.k8s.io/e2e-test-images/jessie-dnsutils:1.7 --restart=Never"
               " -- nslookup web")
    both(pair, lambda lab: lab.wait(lambda l: l.get("pod", "dnsutils")["status"].get("phase") == "Succeeded"))
    same(pair, "get pod dnsutils")


def test_apply_from_stdin_and_read_back(pair):
    same(pair, "apply -f -", stdin=CONFIGMAP)
    same(pair, "get configmap settings -o yaml")
    same(pair, "apply -f -", stdin=CONFIGMAP.replace("hello", "bye"))
    same(pair, "get configmap settings -o jsonpath={.data.greeting}")


def test_kubectls_own_errors(pair):
    assert same(pair, "get pod no-such-pod")["code"] == 1
    assert same(pair, "gte pods")["code"] == 1
    assert same(pair, "apply -f -", stdin="apiVersion: v1\nkind: Service\nmetadata: {name: bad}\n"
                                          "spec: {ports: [{port: 80, protcol: TCP}]}\n")["code"] == 1


def test_a_watch_stops_after_the_rows_asked_for(pair):
    got = same(pair, "get pods -l app=web -w", events=3, timeout=60)
    assert got["stdout"].splitlines()[0].split()[:3] == ["NAME", "READY", "STATUS"]


def test_what_the_docs_promise_in_a_tab(pair):
    pod = pair[0].get("pods", selector="app=web")[0]["metadata"]["name"]
    same(pair, "auth can-i list pods")
    same(pair, "auth whoami")
    same(pair, "explain service.spec.type")
    same(pair, f"logs {pod}")
    same(pair, f"logs {pod} --tail=2")
    same(pair, "get events --sort-by=.metadata.creationTimestamp")
    same(pair, "rollout status deployment/web")
    same(pair, f"wait --for=condition=Ready pod/{pod} --timeout=30s")
    # last: a followed log, stopped by its timeout (a stop after N rows cuts wherever the pipe's reads happen to
    # fall), moves each lab's virtual clock while it waits, by as much as its real seconds allow
    same(pair, f"logs {pod} -f", timeout=3)
