"""The backend that is a client of a lab server: every Lab verb becomes one request over a unix socket."""
from __future__ import annotations

import base64
import itertools
import json
import os
import shutil
import socket
import tempfile
import threading
from typing import Any, Callable

from labsupport.errors import BackendUnavailable, LabError
from labsupport.i18n import tr
from labsupport.kubectl import KubectlResult, run_kubectl
from labsupport.relay import SocketRelay, loopback_listener
from labsupport.remote import wire
from labsupport.results import ClusterSnapshot, CurlResult, NslookupAnswer, Trace


#: The environment variable with the seconds one request may take (unset: no limit); the grader sets it.
TIMEOUT_ENV = "LABSUPPORT_LAB_TIMEOUT"


class RemoteConnection:
    """A keep-alive connection held by the lab server; requests stay on one pod until it closes."""

    def __init__(self, backend: "RemoteBackend", key: int, state: dict):
        self.backend = backend
        self.key = key
        self.url, self.source = state.get("url", ""), state.get("source", "")
        self._update(state)

    def _update(self, state: dict) -> None:
        self.first: CurlResult = state["first"]
        self.closed: bool = state["closed"]
        self._pod = state["pod"]

    @property
    def pod(self) -> str | None:
        """The pod this connection is stuck to."""
        return self._pod

    def request(self, path: str | None = None) -> CurlResult:
        """Send one more request on this connection."""
        state = self.backend.call("connection_request", self.key, path)
        self._update(state)
        return state["result"]

    def close(self) -> None:
        """Close the connection (its conntrack entries go)."""
        self._update(self.backend.call("connection_close", self.key))

    def __repr__(self) -> str:
        return f"<KeepAlive {self.url} from {self.source} → pod {self.pod!r}{' (closed)' if self.closed else ''}>"


class RemoteBackend:
    """A client of a lab server (`labsupport.remote.server`): the cluster lives in the server's process."""

    name = "remote"

    def __init__(self, path: str, *, seed: int = 0, proxy_mode: str = "iptables", hello: bool = True,
                 timeout: float | None = None):
        self.path = path
        if timeout is None and os.environ.get(TIMEOUT_ENV):
            timeout = float(os.environ[TIMEOUT_ENV])
        self.timeout = timeout
        self._relay: SocketRelay | None = None
        self._folder: str | None = None
        self._kubeconfig: str | None = None
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            self._sock.connect(path)
        except OSError as e:
            self._sock.close()
            raise BackendUnavailable(tr("cannot reach the lab server at {path}: {error}; it runs only while a "
                                        "notebook is graded (unset LABSUPPORT_LAB_SOCKET to use a local cluster)",
                                        path=path, error=e.strerror or e)) from e
        self._sock.settimeout(timeout)
        self._stream = self._sock.makefile("rb")
        if hello:
            self.call("hello", seed, proxy_mode)

    def call(self, method: str, *args: Any, **kwargs: Any) -> Any:
        """One request to the server; its error is raised here with the server's class and message."""
        message = {"id": next(self._ids), "method": method, "args": wire.encode(list(args)),
                   "kwargs": wire.encode(kwargs)}
        with self._lock:
            try:
                self._sock.sendall(wire.dumps(message))
                reply = wire.read_message(self._stream)
            except TimeoutError as e:
                self._sock.close()             # a late reply must not be taken for the next request's
                raise LabError(tr("the lab server did not answer {method} within {seconds:g} s", method=method,
                                  seconds=self.timeout)) from e
            except (OSError, ValueError) as e:
                raise LabError(f"the lab server at {self.path} stopped answering: {e}") from e
        if reply is None:
            raise LabError(f"the lab server at {self.path} closed the connection")
        if "error" in reply:
            raise wire.decode_error(reply["error"])
        return wire.decode(reply.get("result"))

    # --- objects -------------------------------------------------------------------------------------------
    def apply(self, obj: dict, field_validation: str = "Strict") -> dict:
        """Create or update the object on the server's cluster."""
        return self.call("apply", obj, field_validation=field_validation)

    def create(self, obj: dict, field_validation: str = "Strict") -> dict:
        """Create one object."""
        return self.call("create", obj, field_validation=field_validation)

    def get(self, kind: str, name: str, namespace: str | None) -> dict:
        """One object, or NotFound."""
        return self.call("get", kind, name, namespace)

    def list(self, kind: str, namespace: str | None, selector: Any) -> list[dict]:
        """Objects of a kind."""
        return self.call("list", kind, namespace, selector)

    def delete(self, kind: str, name: str, namespace: str | None, grace_period: int | None = None) -> dict:
        """Delete one object."""
        return self.call("delete", kind, name, namespace, grace_period=grace_period)

    def scale(self, name: str, replicas: int, namespace: str) -> dict:
        """Set replicas."""
        return self.call("scale", name, replicas, namespace)

    def refused(self, text: str) -> list[dict]:
        """The requests the server refused with exactly this message: verb, kind, name, namespace, reason and field
        errors of each (empty: it never said it; the grader's connection only)."""
        return self.call("refused", text)

    # --- time ----------------------------------------------------------------------------------------------
    def advance(self, seconds: float) -> None:
        """Move the server's virtual clock."""
        self.call("advance", seconds)

    def now(self) -> float:
        """The server's virtual clock."""
        return self.call("now")

    def wait(self, condition: Callable[[], bool], timeout: float) -> float:
        """Move the clock timer by timer until `condition()` holds (it is evaluated here, between steps)."""
        __tracebackhide__ = True     # a student's predicate fails on their own line
        start = self.now()
        deadline = start + timeout
        now = start
        while not condition():
            now = self.call("wait_step", deadline, timeout)
        return now - start

    def follow_wall_time(self) -> None:
        """A graded cluster keeps its virtual clock."""
        raise LabError("a graded cluster runs on its virtual clock: follow_wall_time is not available")

    # --- the network ---------------------------------------------------------------------------------------
    def nslookup(self, name: str, pod: str | None) -> NslookupAnswer:
        """nslookup through the cluster's DNS."""
        return self.call("nslookup", name, pod)

    def curl(self, url: str, source: str, **options: Any) -> CurlResult:
        """One request on the server's cluster."""
        return self.call("curl", url, source, **options)

    def curl_batch(self, url: str, source: str, count: int, **options: Any) -> list[CurlResult]:
        """`count` requests one after another on the server's cluster."""
        return [self.curl(url, source, **options) for _ in range(count)]

    def connect(self, url: str, source: str) -> RemoteConnection:
        """A keep-alive connection held by the server."""
        state = self.call("connect", url, source)
        return RemoteConnection(self, state["id"], {**state, "url": url, "source": source})

    def trace(self, url: str, source: str) -> Trace:
        """The path one new connection takes."""
        return self.call("trace", url, source)

    def proxy_rules(self, node: str | None) -> str:
        """A node's kube-proxy rules."""
        return self.call("proxy_rules", node)

    def conntrack(self, node: str | None) -> list[str]:
        """A node's conntrack entries."""
        return self.call("conntrack", node)

    # --- kube-proxy ----------------------------------------------------------------------------------------
    def proxy_mode(self) -> str:
        """kube-proxy's mode on the first worker."""
        return self.call("proxy_mode")

    def set_proxy_mode(self, mode: str) -> None:
        """Change kube-proxy's mode everywhere."""
        self.call("set_proxy_mode", mode)

    def stop_kube_proxy(self, node: str | None) -> None:
        """Stop kube-proxy on a node."""
        self.call("stop_kube_proxy", node)

    def start_kube_proxy(self, node: str | None) -> None:
        """Start kube-proxy again on a node."""
        self.call("start_kube_proxy", node)

    # --- pods ----------------------------------------------------------------------------------------------
    def exec(self, pod: str, argv: list[str], namespace: str, container: str | None) -> Any:
        """Run a command in a container."""
        return self.call("exec", pod, list(argv), namespace, container)

    def logs(self, pod: str, namespace: str, container: str | None) -> str:
        """What a container has printed."""
        return self.call("logs", pod, namespace, container)

    # --- tools ---------------------------------------------------------------------------------------------
    def kubeconfig(self) -> str:
        """A kubeconfig of this client's own for the server's API server, reached through a loopback port that
        relays to the server's API socket (the token is the student's on the student socket: the API server checks
        every request against the student role)."""
        if self._kubeconfig is None:
            access = self.call("kubectl_access")
            folder = tempfile.mkdtemp(prefix="labsupport-kubectl-")
            path = access["socket"]
            listener = loopback_listener()
            self._relay = SocketRelay(listener, lambda: _unix_connection(path), name="kubectl").start()
            config = {
                "apiVersion": "v1", "kind": "Config", "preferences": {},
                "clusters": [{"name": "graded", "cluster": {
                    "server": f"https://127.0.0.1:{listener.getsockname()[1]}",
                    "certificate-authority-data": base64.b64encode(access["certificate"].encode()).decode()}}],
                "users": [{"name": access["user"], "user": {"token": access["token"]}}],
                "contexts": [{"name": "graded", "context": {"cluster": "graded", "user": access["user"],
                                                             "namespace": "default"}}],
                "current-context": "graded"}
            target = os.path.join(folder, "kubeconfig")
            fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w") as f:
                json.dump(config, f)
            self._folder, self._kubeconfig = folder, target
        return self._kubeconfig

    def kubectl(self, command: str | list[str], *, show: bool = True, input: str | None = None,
                timeout: float | None = None, events: int | None = None) -> KubectlResult:
        """kubectl, run here (in the graded kernel's sandbox, with its limits) against the server's API server,
        which allows the student what the student role allows; a watch stops after `events` rows or `timeout`
        seconds, as locally."""
        return run_kubectl(self.kubeconfig(), command, show=show, input=input, timeout=timeout, events=events)

    def meter(self, kinds: tuple[str, ...], watchers: int | None) -> Any:
        """Watch-traffic meters stay with a local cluster."""
        raise LabError("lab.meter() needs a local cluster: it is not available on a graded cluster")

    def summary_html(self) -> str:
        """The server cluster's card."""
        return self.call("summary_html")

    def client_ip(self) -> str:
        """The address requests from "client" come from."""
        return self.call("client_ip")

    # --- the picture ---------------------------------------------------------------------------------------
    def snapshot(self, *, rule_counts: bool = True) -> ClusterSnapshot:
        """What the picture draws."""
        return self.call("snapshot", rule_counts=rule_counts)

    def subscribe(self, callback: Callable[[str], None]) -> Callable[[], None]:
        """No push from the server: the picture redraws after each cell."""
        return lambda: None

    def sync_proxies(self) -> None:
        """Let the server's kube-proxies catch up."""
        self.call("sync_proxies")

    def close(self) -> None:
        """Hang up (the server and its cluster stay for the grader); stop kubectl's relay and remove its files."""
        if self._relay is not None:
            self._relay.stop()
            self._relay = None
        if self._folder is not None:
            shutil.rmtree(self._folder, ignore_errors=True)
            self._folder = self._kubeconfig = None
        try:
            self._stream.close()
            self._sock.close()
        except OSError:
            pass


def _unix_connection(path: str) -> socket.socket:
    """A connection to the unix socket at `path`."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(path)
    except OSError:
        sock.close()
        raise
    return sock


__all__ = ["RemoteBackend", "RemoteConnection"]
