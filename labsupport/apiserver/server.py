"""A Kubernetes REST API over the embedded control plane, for the real kubectl and the official clients.

HTTPS on 127.0.0.1 with a fresh self-signed certificate (kubectl sends bearer tokens over TLS only), a random
bearer token, and a kubeconfig in a private temp dir. Waiting requests (watches,
followed logs, attach) move the virtual clock while nothing else happens, so waits finish in real seconds.
"""
from __future__ import annotations

import base64
import json
import os
import secrets
import select
import shutil
import socket
import ssl
import subprocess
import tempfile
import threading
import time
import traceback
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable
from urllib.parse import parse_qs, unquote, urlsplit

import yaml

from labsupport.apiserver import discovery, tables
from labsupport.apiserver.patch import (apply_patch, fields_v1, json_merge_patch, json_patch,
                                        strategic_merge_patch)
from labsupport.apiserver.websocket import (STDERR, STDOUT, WebSocket, WebSocketClosed, accept_key,
                                            choose_protocol)
from labsupport.control.clock import rfc3339
from labsupport.control.store import Gone, clone
from labsupport.errors import APIError, BackendUnavailable, BadRequest, Conflict, MethodNotAllowed, NotFound
from labsupport.model.kinds import KindInfo, by_resource
from labsupport.model.selectors import matches_fields, parse_field_selector, to_selector

MAX_BODY = 3 * 1024 * 1024
DRAIN_LIMIT = 64 * 1024 * 1024
ENDPOINTS_WARNING = '299 - "v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1 EndpointSlice"'
IDLE_STEP = 0.03
DEFAULT_WATCH_SECONDS = 1800
BOOKMARK_SECONDS = 5.0


class TooLarge(APIError):
    """The request body is over the server's limit."""

    code = 413
    reason = "RequestEntityTooLarge"


class Unauthorized(APIError):
    """No valid bearer token."""

    code = 401
    reason = "Unauthorized"


class UnsupportedMediaType(APIError):
    """A PATCH body of a type the server does not apply."""

    code = 415
    reason = "UnsupportedMediaType"


def status_success(details: dict | None = None) -> dict:
    """A Status reporting success."""
    out = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success"}
    if details:
        out["details"] = details
    return out


class Route:
    """What a request path names: a discovery document, a collection, an object or a subresource."""

    def __init__(self, info: KindInfo, namespace: str | None, name: str | None, sub: str | None):
        self.info = info
        self.namespace = namespace
        self.name = name
        self.sub = sub


def parse_route(path: str) -> Route | None:
    """Resolve /api/v1/... and /apis/<group>/<version>/... to a resource route (None: not a resource path)."""
    parts = [unquote(p) for p in path.strip("/").split("/")]
    if parts[0] == "api" and len(parts) >= 3:
        group, version, rest = "", parts[1], parts[2:]
    elif parts[0] == "apis" and len(parts) >= 4:
        group, version, rest = parts[1], parts[2], parts[3:]
    else:
        return None
    namespace = None
    if rest[0] == "namespaces" and len(rest) >= 3 and by_resource(group, version, rest[2]) is not None:
        namespace, rest = rest[1], rest[2:]
    info = by_resource(group, version, rest[0])
    if info is None:
        raise NotFound("the server could not find the requested resource")
    if namespace is not None and not info.namespaced:
        raise NotFound("the server could not find the requested resource")
    name = rest[1] if len(rest) >= 2 else None
    sub = rest[2] if len(rest) >= 3 else None
    if len(rest) > 3 or (sub is not None and sub not in info.subresources):
        raise NotFound("the server could not find the requested resource")
    return Route(info, namespace, name, sub)


def make_certificate(directory: str) -> tuple[str, str]:
    """Write a self-signed certificate for 127.0.0.1 and its key into `directory`; returns (cert, key) paths."""
    cert, key = os.path.join(directory, "server.crt"), os.path.join(directory, "server.key")
    try:
        subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                        "-nodes", "-days", "3650", "-subj", "/CN=labsupport-apiserver",
                        "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost", "-keyout", key, "-out", cert],
                       check=True, capture_output=True, timeout=30)
    except (OSError, subprocess.SubprocessError) as e:
        raise BackendUnavailable("the embedded API server needs the `openssl` command to make its TLS certificate "
                                 "(kubectl sends tokens over TLS only): install openssl") from e
    os.chmod(key, 0o600)
    return cert, key


class TLSServer(ThreadingHTTPServer):
    """A threading HTTP server whose connections speak TLS (handshake in the connection's own thread)."""

    daemon_threads = True
    context: ssl.SSLContext

    def get_request(self):
        """Accept one connection and wrap it in TLS without blocking the accept loop on the handshake."""
        sock, addr = self.socket.accept()
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return self.context.wrap_socket(sock, server_side=True, do_handshake_on_connect=False), addr

    def handle_error(self, request, client_address) -> None:
        """A connection that fails its handshake or drops is not worth a traceback."""


class Watcher:
    """One open watch: the store events it still has to send."""

    def __init__(self, kind: str):
        self.kind = kind
        self.queue: deque = deque()


class APIServer:
    """The embedded cluster served as a Kubernetes API on 127.0.0.1 (free port unless given)."""

    def __init__(self, cluster: Any, *, host: str = "127.0.0.1", port: int = 0, token: str | None = None,
                 state_dir: str | None = None, follow_wall_time: bool = False):
        self.cluster = cluster
        self.host = host
        self.port = port
        self.token = token or secrets.token_urlsafe(32)
        self.follow_wall_time = follow_wall_time
        self._state_dir = state_dir
        self._own_dir = state_dir is None
        self.dir: str | None = None
        self._httpd: ThreadingHTTPServer | None = None
        self._threads: list[threading.Thread] = []
        self._cond = threading.Condition()
        self._watchers: set[Watcher] = set()
        self._last_event = time.monotonic()
        self._advance_lock = threading.Lock()
        self._stopping = threading.Event()
        self._unsubscribe: Callable[[], None] | None = None
        self.applied: dict[tuple, dict[str, dict]] = {}
        self.managed: dict[str, list[dict]] = {}

    # --- lifecycle -----------------------------------------------------------------------------------------
    @property
    def url(self) -> str:
        """The server's base URL."""
        return f"https://{self.host}:{self.port}"

    @property
    def kubeconfig_path(self) -> str:
        """Path of the kubeconfig that points kubectl at this server."""
        return os.path.join(self.dir or "", "kubeconfig")

    def start(self) -> "APIServer":
        """Listen, serve in background threads and write the kubeconfig."""
        if self._httpd is not None:
            return self
        self.dir = self._state_dir or tempfile.mkdtemp(prefix="labsupport-apiserver-")
        os.makedirs(self.dir, exist_ok=True)
        self.cert_path, key = make_certificate(self.dir)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(self.cert_path, key)
        context.set_alpn_protocols(["http/1.1"])
        handler = type("Handler", (RequestHandler,), {"api": self})
        self._httpd = TLSServer((self.host, self.port), handler, bind_and_activate=False)
        self._httpd.context = context
        self._httpd.allow_reuse_address = True
        self._httpd.server_bind()
        self._httpd.server_activate()
        self.port = self._httpd.server_address[1]
        self._unsubscribe = self.cluster.store.subscribe(self._on_event)
        self._write_kubeconfig()
        thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.2},
                                  name="labsupport-apiserver", daemon=True)
        thread.start()
        self._threads.append(thread)
        if self.follow_wall_time:
            ticker = threading.Thread(target=self._follow_wall, name="labsupport-clock", daemon=True)
            ticker.start()
            self._threads.append(ticker)
        return self

    def stop(self) -> None:
        """Stop serving, end open watches and remove the kubeconfig's directory."""
        self._stopping.set()
        with self._cond:
            self._cond.notify_all()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
        for thread in self._threads:
            thread.join(timeout=2)
        self._threads.clear()
        if self.dir and self._own_dir:
            shutil.rmtree(self.dir, ignore_errors=True)
        self.dir = None

    def _write_kubeconfig(self) -> None:
        config = {
            "apiVersion": "v1", "kind": "Config", "preferences": {},
            "clusters": [{"name": "labsupport", "cluster": {
                "server": self.url,
                "certificate-authority-data": base64.b64encode(open(self.cert_path, "rb").read()).decode()}}],
            "users": [{"name": "labsupport", "user": {"token": self.token}}],
            "contexts": [{"name": "labsupport", "context": {"cluster": "labsupport", "user": "labsupport",
                                                             "namespace": "default"}}],
            "current-context": "labsupport",
        }
        fd = os.open(self.kubeconfig_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            yaml.safe_dump(config, f, sort_keys=False)

    # --- events and time -----------------------------------------------------------------------------------
    def _on_event(self, event) -> None:
        self._last_event = time.monotonic()
        with self._cond:
            for w in self._watchers:
                if w.kind == event.kind:
                    w.queue.append(event)
            self._cond.notify_all()

    def wait_idle(self, limit: float | None) -> None:
        """Called by a waiting request with nothing to send: after a short real pause with no cluster activity,
        move the virtual clock to its next timer (never past `limit`, a virtual time)."""
        if self.follow_wall_time or self._stopping.is_set():
            return
        if getattr(self.cluster.clock, "_follow_wall", None) is not None:
            # a Lab whose clock follows wall time catches up on every API read; give it one
            self.cluster.list("Namespace")
            return
        if time.monotonic() - self._last_event < IDLE_STEP:
            return
        if not self._advance_lock.acquire(blocking=False):
            return
        try:
            with self.cluster.lock:
                clock = self.cluster.clock
                due = clock.next_due()
                if due is None:
                    return
                target = due if limit is None else min(due, limit)
                if target < clock.now:
                    return
                self.cluster.advance(target - clock.now)
                self._last_event = time.monotonic()
        finally:
            self._advance_lock.release()

    def advance(self, seconds: float) -> None:
        """Move the virtual clock (the /labsupport/v1/advance endpoint)."""
        self.cluster.advance(seconds)

    def _follow_wall(self) -> None:
        last = time.monotonic()
        while not self._stopping.wait(0.1):
            now = time.monotonic()
            try:
                self.cluster.advance(now - last)
            except Exception:  # noqa: BLE001 - the ticker must outlive one bad timer
                traceback.print_exc()
            last = now

    def register(self, kind: str) -> Watcher:
        """Start collecting events of a kind for a watch (call with the cluster lock held)."""
        w = Watcher(kind)
        with self._cond:
            self._watchers.add(w)
        return w

    def unregister(self, w: Watcher) -> None:
        """Stop collecting for a watch."""
        with self._cond:
            self._watchers.discard(w)

    def next_events(self, w: Watcher, timeout: float) -> list:
        """Events queued for a watch, waiting up to `timeout` real seconds for the first."""
        with self._cond:
            if not w.queue and not self._stopping.is_set():
                self._cond.wait(timeout)
            out = list(w.queue)
            w.queue.clear()
        return out

    @property
    def stopping(self) -> bool:
        """Whether the server is shutting down."""
        return self._stopping.is_set()

    # --- managed fields ------------------------------------------------------------------------------------
    def decorate(self, obj: dict) -> dict:
        """Add what the server keeps beside the store (managedFields) to an object it returns."""
        fields = self.managed.get(obj.get("metadata", {}).get("uid", ""))
        if fields:
            obj = dict(obj)
            obj["metadata"] = dict(obj["metadata"], managedFields=fields)
        return obj

    def record_apply(self, obj: dict, manager: str, applied: dict) -> None:
        """Remember what a field manager applied (server-side apply) and publish it as managedFields."""
        uid = obj["metadata"]["uid"]
        entries = [e for e in self.managed.get(uid, []) if e.get("manager") != manager]
        entries.append({"manager": manager, "operation": "Apply", "apiVersion": obj.get("apiVersion"),
                        "time": rfc3339(self.cluster.clock.now), "fieldsType": "FieldsV1",
                        "fieldsV1": fields_v1(applied)})
        self.managed[uid] = entries
        self.applied.setdefault(uid, {})[manager] = clone(applied)


class RequestHandler(BaseHTTPRequestHandler):
    """One connection's requests (HTTP/1.1 keep-alive)."""

    protocol_version = "HTTP/1.1"
    server_version = "labsupport-apiserver"
    api: APIServer

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
        """Stay quiet (a notebook is no place for access logs) unless LABSUPPORT_APISERVER_LOG is set."""
        if os.environ.get("LABSUPPORT_APISERVER_LOG"):
            import sys
            sys.stderr.write("apiserver: " + (format % args) + "\n")

    # every verb goes through one dispatcher that never lets an exception escape
    def do_GET(self) -> None:
        """GET."""
        self._dispatch("GET")

    def do_POST(self) -> None:
        """POST."""
        self._dispatch("POST")

    def do_PUT(self) -> None:
        """PUT."""
        self._dispatch("PUT")

    def do_PATCH(self) -> None:
        """PATCH."""
        self._dispatch("PATCH")

    def do_DELETE(self) -> None:
        """DELETE."""
        self._dispatch("DELETE")

    def do_HEAD(self) -> None:
        """HEAD."""
        self._dispatch("HEAD")

    def do_OPTIONS(self) -> None:
        """OPTIONS."""
        self._dispatch("OPTIONS")

    # --- plumbing ------------------------------------------------------------------------------------------
    def _dispatch(self, method: str) -> None:
        self.warnings: list[str] = []
        self._body_read = False
        try:
            split = urlsplit(self.path)
            self.query = {k: v[-1] for k, v in parse_qs(split.query, keep_blank_values=True).items()}
            self.route_path = split.path
            if split.path not in ("/healthz", "/livez", "/readyz"):
                header = self.headers.get("Authorization", "")
                if not secrets.compare_digest(header.encode(), f"Bearer {self.api.token}".encode()):
                    raise Unauthorized("Unauthorized")
            self._route(method, split.path)
        except (BrokenPipeError, ConnectionResetError, WebSocketClosed):
            self.close_connection = True
        except APIError as e:
            self._send_status(e)
        except RecursionError:
            self._send_status(BadRequest("the request is nested too deeply"))
        except Exception as e:  # noqa: BLE001 - a bad request must never kill the server thread
            traceback.print_exc()
            err = APIError(f"Internal error occurred: {type(e).__name__}: {e}")
            self._send_status(err)

    def _send_status(self, err: APIError) -> None:
        if not self._body_read and int(self.headers.get("Content-Length") or 0) > 0:
            self.close_connection = True
        status = err.status()
        status["code"] = err.code
        try:
            self._send_json(status, code=err.code)
        except OSError:
            self.close_connection = True

    def _send_json(self, obj: Any, code: int = 200, content_type: str = "application/json") -> None:
        body = json.dumps(obj, separators=(",", ":")).encode()
        self._send_bytes(body, code, content_type)

    def _send_bytes(self, body: bytes, code: int = 200, content_type: str = "application/json") -> None:
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-cache, private")
        for w in self.warnings:
            self.send_header("Warning", w)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _start_stream(self, content_type: str) -> None:
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Cache-Control", "no-cache, private")
        for w in self.warnings:
            self.send_header("Warning", w)
        self.end_headers()

    def _chunk(self, data: bytes) -> None:
        if data:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()

    def _end_stream(self) -> None:
        try:
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except OSError:
            self.close_connection = True

    def _client_gone(self) -> bool:
        """Whether the client hung up. An HTTP/1.1 client sends nothing more while a response streams, so any
        readable input (a TLS close alert or EOF) ends it."""
        try:
            readable, _, _ = select.select([self.connection], [], [], 0)
        except (OSError, ValueError):
            return True
        return bool(readable)

    def _read_body(self) -> bytes:
        self._body_read = True
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            data = b""
            while True:
                size = int(self.rfile.readline().strip() or b"0", 16)
                if size == 0:
                    self.rfile.readline()
                    break
                data += self.rfile.read(size)
                self.rfile.readline()
                if len(data) > MAX_BODY:
                    self.close_connection = True
                    raise TooLarge(f"Request entity too large: limit is {MAX_BODY}")
            return data
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_BODY:
            self.close_connection = True
            if length <= DRAIN_LIMIT:
                # read the rest away so the client gets to see the answer instead of a reset
                left = length
                while left > 0:
                    chunk = self.rfile.read(min(left, 1 << 16))
                    if not chunk:
                        break
                    left -= len(chunk)
            raise TooLarge(f"Request entity too large: limit is {MAX_BODY}")
        return self.rfile.read(length) if length else b""

    def _parse_body(self, *, allow_list: bool = False) -> Any:
        raw = self._read_body()
        if not raw.strip():
            raise BadRequest("the request body is empty")
        ctype = self.headers.get("Content-Type", "application/json").split(";")[0].strip()
        if ctype == "application/vnd.kubernetes.protobuf":
            from labsupport.apiserver.protobuf import decode_object
            return decode_object(raw)
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            raise BadRequest(f"the request body is not UTF-8: {e}") from e
        try:
            if "yaml" in ctype:
                value = yaml.safe_load(text)
            else:
                value = json.loads(text)
        except (ValueError, yaml.YAMLError) as e:
            raise BadRequest(f"couldn't get version/kind; json parse error: {str(e).splitlines()[0]}") from e
        if not isinstance(value, (dict, list) if allow_list else dict):
            raise BadRequest("couldn't get version/kind; json parse error: the body is not an object")
        return value

    def _accept(self) -> str:
        return self.headers.get("Accept", "application/json")

    def _wants_table(self) -> bool:
        return "as=Table" in self._accept()

    def _wants_metadata(self) -> bool:
        accept = self._accept()
        return "as=PartialObjectMetadata" in accept and "as=Table" not in accept

    # --- routing -------------------------------------------------------------------------------------------
    def _route(self, method: str, path: str) -> None:
        path = path.rstrip("/") or "/"
        if path in ("/healthz", "/livez", "/readyz"):
            return self._send_bytes(b"ok", content_type="text/plain; charset=utf-8")
        if path == "/version":
            from labsupport.control.cluster import K8S_VERSION
            return self._send_json(discovery.version_info(K8S_VERSION))
        if path == "/labsupport/v1/advance":
            return self._advance(method)
        if path in ("/api", "/apis"):
            core = path == "/api"
            if "apidiscovery.k8s.io" in self._accept() and "v=v2" in self._accept():
                return self._send_json(discovery.aggregated(core), content_type=discovery.AGGREGATED)
            return self._send_json(discovery.api_versions() if core else discovery.api_group_list())
        if path.startswith("/openapi"):
            return self._openapi(path)
        parts = path.strip("/").split("/")
        if parts[0] == "api" and len(parts) == 2:
            doc = discovery.resource_list("", parts[1])
            if doc is None:
                raise NotFound("the server could not find the requested resource")
            return self._send_json(doc)
        if parts[0] == "apis" and len(parts) in (2, 3):
            doc = discovery.api_group(parts[1]) if len(parts) == 2 else discovery.resource_list(parts[1], parts[2])
            if doc is None:
                raise NotFound("the server could not find the requested resource")
            return self._send_json(doc)
        route = parse_route(path)
        if route is None:
            raise NotFound("the server could not find the requested resource")
        if route.info.kind == "Endpoints":
            self.warnings.append(ENDPOINTS_WARNING)
        if route.sub in ("exec", "attach"):
            return self._stream_pod(route)
        if route.sub == "log":
            return self._logs(route)
        if route.sub == "scale":
            return self._scale(method, route)
        if route.name is None:
            if method == "GET":
                if self.query.get("watch") in ("true", "1"):
                    return self._watch(route)
                return self._list(route)
            if method == "POST":
                return self._create(route)
            if method == "DELETE":
                return self._delete_collection(route)
            raise MethodNotAllowed(f"the server does not allow this method on the requested resource")
        if method == "GET":
            return self._get(route)
        if method == "PUT":
            return self._replace(route)
        if method == "PATCH":
            return self._patch(route)
        if method == "DELETE":
            return self._delete(route)
        raise MethodNotAllowed("the server does not allow this method on the requested resource")

    def _openapi(self, path: str) -> None:
        parts = path.strip("/").split("/")
        if parts == ["openapi", "v3"]:
            return self._send_json(discovery.openapi_v3_root())
        if len(parts) >= 4 and parts[1] == "v3":
            if parts[2] == "api" and len(parts) == 4:
                doc = discovery.openapi_v3_document("", parts[3])
            elif parts[2] == "apis" and len(parts) == 5:
                doc = discovery.openapi_v3_document(parts[3], parts[4])
            else:
                doc = None
            if doc is not None:
                return self._send_json(doc)
        raise NotFound("the server could not find the requested resource")

    def _advance(self, method: str) -> None:
        if method != "POST":
            raise MethodNotAllowed("use POST /labsupport/v1/advance?seconds=N")
        try:
            seconds = float(self.query.get("seconds", "0"))
        except ValueError as e:
            raise BadRequest(f"seconds must be a number, not {self.query.get('seconds')!r}") from e
        if not 0 <= seconds <= 86400 * 365:
            raise BadRequest(f"seconds must be between 0 and {86400 * 365}")
        self.api.advance(seconds)
        self._send_json({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                         "details": {"name": "clock", "kind": "advance"},
                         "message": f"now {rfc3339(self.api.cluster.clock.now)}"})

    # --- reads ---------------------------------------------------------------------------------------------
    def _namespace(self, route: Route) -> str | None:
        return route.namespace if route.info.namespaced else None

    def _selectors(self, route: Route) -> tuple[Any, Any]:
        labels = self.query.get("labelSelector") or None
        fields = self.query.get("fieldSelector") or None
        label_sel = to_selector(labels) if labels else None
        field_sel = parse_field_selector(fields) if fields else None
        if field_sel is not None:
            field_sel.check_supported(route.info.kind)
        return label_sel, field_sel

    def _list(self, route: Route) -> None:
        cluster = self.api.cluster
        label_sel, field_sel = self._selectors(route)
        with cluster.lock:
            items = cluster.list(route.info.kind, self._namespace(route))
            rv = str(cluster.store.rv)
            now = cluster.clock.now
        items = [o for o in items if _matches(o, label_sel, field_sel)]
        if self._wants_table():
            include = self.query.get("includeObject", "Metadata")
            return self._send_json(tables.table(route.info.kind, [self.api.decorate(o) for o in items], now,
                                                resource_version=rv, include=include))
        if self._wants_metadata():
            return self._send_json({"kind": "PartialObjectMetadataList", "apiVersion": "meta.k8s.io/v1",
                                    "metadata": {"resourceVersion": rv},
                                    "items": [tables.partial_metadata(o) for o in items]})
        self._send_json({"kind": f"{route.info.kind}List", "apiVersion": route.info.api_version,
                         "metadata": {"resourceVersion": rv}, "items": [self.api.decorate(o) for o in items]})

    def _get(self, route: Route) -> None:
        cluster = self.api.cluster
        with cluster.lock:
            obj = cluster.get(route.info.kind, self._namespace(route), route.name)
            now = cluster.clock.now
        self._send_object(route, obj, now)

    def _send_object(self, route: Route, obj: dict, now: float, code: int = 200) -> None:
        obj = self.api.decorate(obj)
        if self._wants_table():
            include = self.query.get("includeObject", "Metadata")
            return self._send_json(tables.table(route.info.kind, [obj], now, include=include), code)
        if self._wants_metadata():
            return self._send_json(tables.partial_metadata(obj), code)
        self._send_json(obj, code)

    # --- watch ---------------------------------------------------------------------------------------------
    def _watch(self, route: Route) -> None:
        api, cluster = self.api, self.api.cluster
        label_sel, field_sel = self._selectors(route)
        ns = self._namespace(route)
        as_table = self._wants_table()
        include = self.query.get("includeObject", "Metadata")
        try:
            timeout = float(self.query.get("timeoutSeconds") or 0)
        except ValueError as e:
            raise BadRequest("timeoutSeconds must be a number") from e
        rv_text = self.query.get("resourceVersion", "")
        initial_events = self.query.get("sendInitialEvents") == "true"
        bookmarks = self.query.get("allowWatchBookmarks") in ("true", "1")
        with cluster.lock:
            watcher = api.register(route.info.kind)
            try:
                if rv_text in ("", "0") or initial_events:
                    backlog = [("ADDED", o, None) for o in cluster.list(route.info.kind, ns)]
                    start_rv = cluster.store.rv
                else:
                    try:
                        start_rv = int(rv_text)
                    except ValueError as e:
                        raise BadRequest(f"invalid resource version: {rv_text}") from e
                    backlog = [(e.type, e.object, e.old) for e in cluster.store.events_since(start_rv,
                                                                                              [route.info.kind])]
                    # events already replayed must not come twice through the queue
                    watcher.queue.clear()
            except Gone as e:
                api.unregister(watcher)
                self._start_stream("application/json")
                self._send_event("ERROR", e.status())
                return self._end_stream()
            except Exception:
                api.unregister(watcher)
                raise
            now_virtual = cluster.clock.now
        limit = now_virtual + timeout if timeout else None
        wall_end = time.monotonic() + (timeout or DEFAULT_WATCH_SECONDS)
        state = {"columns": True}

        def emit(kind: str, obj: dict, old: dict | None) -> None:
            if ns is not None and obj["metadata"].get("namespace") != ns:
                return
            now_match = _matches(obj, label_sel, field_sel)
            old_match = old is not None and _matches(old, label_sel, field_sel)
            if kind == "MODIFIED" and now_match != old_match:
                kind = "ADDED" if now_match else "DELETED"
            elif not now_match and not (kind == "DELETED" and old_match):
                return
            if as_table:
                payload = tables.table(route.info.kind, [api.decorate(obj)], cluster.clock.now, include=include,
                                       with_columns=state["columns"])
                state["columns"] = False
            else:
                payload = api.decorate(obj)
            self._send_event(kind, payload)

        try:
            self._start_stream("application/json")
            for kind, obj, old in backlog:
                emit(kind, obj, old)
            if initial_events:
                self._send_event("BOOKMARK", {"kind": route.info.kind, "apiVersion": route.info.api_version,
                                              "metadata": {"resourceVersion": str(start_rv),
                                                           "annotations": {"k8s.io/initial-events-end": "true"}}})
            seen = start_rv
            last_sent = time.monotonic()
            while not api.stopping and time.monotonic() < wall_end:
                events = api.next_events(watcher, IDLE_STEP)
                for event in events:
                    if event.rv <= seen:
                        continue
                    seen = event.rv
                    emit(event.type, event.object, event.old)
                    last_sent = time.monotonic()
                if events:
                    continue
                if bookmarks and time.monotonic() - last_sent > BOOKMARK_SECONDS:
                    self._send_event("BOOKMARK", {"kind": route.info.kind, "apiVersion": route.info.api_version,
                                                  "metadata": {"resourceVersion": str(max(seen, start_rv))}})
                    last_sent = time.monotonic()
                if self._client_gone():
                    break
                if limit is not None and cluster.clock.now >= limit:
                    break
                api.wait_idle(limit)
            self._end_stream()
        except OSError:
            self.close_connection = True
        finally:
            api.unregister(watcher)

    def _send_event(self, kind: str, obj: dict) -> None:
        self._chunk(json.dumps({"type": kind, "object": obj}, separators=(",", ":")).encode() + b"\n")

    # --- writes --------------------------------------------------------------------------------------------
    def _dry_run(self) -> bool:
        value = self.query.get("dryRun", "")
        if value and value != "All":
            raise BadRequest(f'Unsupported value: "{value}": supported values: "All"')
        return value == "All"

    def _check_object(self, route: Route, obj: dict, *, name: str | None = None) -> dict:
        info = route.info
        obj.setdefault("apiVersion", info.api_version)
        obj.setdefault("kind", info.kind)
        if obj.get("kind") != info.kind or obj.get("apiVersion") != info.api_version:
            raise BadRequest(f'the API version in the data ({obj.get("apiVersion")}) does not match the expected '
                             f'API version ({info.api_version})' if obj.get("kind") == info.kind else
                             f'the kind in the data ({obj.get("kind")}) does not match the expected kind '
                             f'({info.kind})')
        meta = obj.setdefault("metadata", {})
        if not isinstance(meta, dict):
            raise BadRequest("metadata must be an object")
        if info.namespaced:
            given = meta.get("namespace")
            if given and route.namespace and given != route.namespace:
                raise BadRequest("the namespace of the provided object does not match the namespace sent on the "
                                 "request")
            meta["namespace"] = given or route.namespace or "default"
        if name is not None and meta.get("name") != name:
            raise BadRequest("the name of the object "
                             f"({meta.get('name')}) does not match the name on the URL ({name})")
        return obj

    def _create(self, route: Route) -> None:
        body = self._parse_body()
        obj = self._check_object(route, body)
        dry = self._dry_run()
        cluster = self.api.cluster
        with cluster.lock:
            created = cluster.create(obj, dry_run=dry)
            now = cluster.clock.now
        self._send_object(route, created, now, code=201)

    def _replace(self, route: Route) -> None:
        body = self._parse_body()
        obj = self._check_object(route, body, name=route.name)
        cluster = self.api.cluster
        dry = self._dry_run()
        with cluster.lock:
            if route.sub == "status":
                stored = cluster.replace_status(obj)
            else:
                stored = cluster.replace(obj, dry_run=dry)
            now = cluster.clock.now
        self._send_object(route, stored, now)

    def _patch(self, route: Route) -> None:
        ctype = self.headers.get("Content-Type", "").split(";")[0].strip()
        body = self._parse_body(allow_list=True)
        cluster, info = self.api.cluster, route.info
        dry = self._dry_run()
        ns = self._namespace(route)
        with cluster.lock:
            if ctype == "application/apply-patch+yaml":
                return self._server_side_apply(route, body, dry)
            current = cluster.get(info.kind, ns, route.name)
            new = self._apply_patch_body(ctype, current, body)
            if not isinstance(new, dict):
                raise BadRequest("the patch did not leave an object")
            new = self._check_object(route, new, name=route.name)
            if route.sub == "status":
                stored = cluster.replace_status(new)
            else:
                stored = cluster.replace(new, dry_run=dry)
            now = cluster.clock.now
        self._send_object(route, stored, now)

    @staticmethod
    def _apply_patch_body(ctype: str, current: dict, body: Any) -> Any:
        if ctype == "application/json-patch+json":
            return json_patch(current, body)
        if not isinstance(body, dict):
            raise BadRequest("the patch must be a JSON object")
        if ctype == "application/merge-patch+json":
            return json_merge_patch(current, body)
        if ctype == "application/strategic-merge-patch+json":
            return strategic_merge_patch(current, body)
        raise UnsupportedMediaType(f'the body of the request was in an unknown format - accepted media types '
                                   f'include: application/json-patch+json, application/merge-patch+json, '
                                   f'application/apply-patch+yaml, application/strategic-merge-patch+json')

    def _server_side_apply(self, route: Route, body: Any, dry: bool) -> None:
        api, cluster, info = self.api, self.api.cluster, route.info
        manager = self.query.get("fieldManager")
        if not manager:
            raise BadRequest("PATCH, application/apply-patch+yaml requests must have the fieldManager parameter")
        if not isinstance(body, dict):
            raise BadRequest("the applied configuration must be an object")
        applied = self._check_object(route, clone(body), name=route.name)
        applied["metadata"].pop("managedFields", None)
        current = cluster.store.find(info.kind, self._namespace(route), route.name)
        if current is None:
            created = cluster.create(clone(applied), dry_run=dry)
            if not dry:
                api.record_apply(created, manager, applied)
            return self._send_object(route, created, cluster.clock.now, code=201)
        previous = api.applied.get(current["metadata"]["uid"], {}).get(manager)
        new = apply_patch(current, applied, previous)
        if applied["metadata"].get("resourceVersion") is None:
            new["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
        stored = cluster.replace(new, dry_run=dry)
        if not dry:
            api.record_apply(stored, manager, applied)
        self._send_object(route, stored, cluster.clock.now)

    def _delete_options(self) -> dict:
        options: dict[str, Any] = {}
        if int(self.headers.get("Content-Length") or 0) > 0 or \
                self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            raw = self._read_body()
            if raw.strip():
                try:
                    options = json.loads(raw)
                except ValueError as e:
                    raise BadRequest(f"couldn't get version/kind; json parse error: {e}") from e
                if not isinstance(options, dict):
                    raise BadRequest("DeleteOptions must be an object")
        for key in ("gracePeriodSeconds", "propagationPolicy"):
            if key in self.query and key not in options:
                options[key] = self.query[key]
        if options.get("dryRun") and options["dryRun"] != ["All"]:
            raise BadRequest('Unsupported value: supported values: "All"')
        if self.query.get("dryRun"):
            options["dryRun"] = [self._dry_run() and "All"]
        grace = options.get("gracePeriodSeconds")
        if grace is not None:
            try:
                options["gracePeriodSeconds"] = int(grace)
            except (TypeError, ValueError) as e:
                raise BadRequest(f"gracePeriodSeconds must be an integer, not {grace!r}") from e
        policy = options.get("propagationPolicy") or "Background"
        if policy not in ("Background", "Foreground", "Orphan"):
            raise BadRequest(f'Unsupported value: "{policy}": supported values: "Orphan", "Background", '
                             f'"Foreground"')
        options["propagationPolicy"] = policy
        return options

    def _delete_one(self, route: Route, name: str, options: dict) -> tuple[dict, bool]:
        cluster, info = self.api.cluster, route.info
        ns = self._namespace(route)
        current = cluster.get(info.kind, ns, name)
        pre = options.get("preconditions") or {}
        if pre.get("uid") and pre["uid"] != current["metadata"]["uid"]:
            raise Conflict(f'Operation cannot be fulfilled on {info.resource} "{name}": Precondition failed: '
                           f'UID in precondition: {pre["uid"]}, UID in object meta: {current["metadata"]["uid"]}',
                           kind=info.plural, name=name, group=info.group)
        if pre.get("resourceVersion") and pre["resourceVersion"] != current["metadata"]["resourceVersion"]:
            raise Conflict.stale(info.plural, name, group=info.group)
        result = cluster.delete(info.kind, ns, name, grace_period=options.get("gracePeriodSeconds"),
                                propagation=options["propagationPolicy"], dry_run=bool(options.get("dryRun")))
        still = cluster.store.find(info.kind, ns, name) is not None and not options.get("dryRun")
        return result, still

    def _delete(self, route: Route) -> None:
        options = self._delete_options()
        cluster = self.api.cluster
        with cluster.lock:
            result, still = self._delete_one(route, route.name, options)
            now = cluster.clock.now
        if still or route.info.kind == "Pod":
            return self._send_object(route, result, now)
        self._send_json(status_success({"name": route.name, "group": route.info.group, "kind": route.info.plural,
                                        "uid": result["metadata"].get("uid")}))

    def _delete_collection(self, route: Route) -> None:
        options = self._delete_options()
        label_sel, field_sel = self._selectors(route)
        cluster = self.api.cluster
        with cluster.lock:
            items = [o for o in cluster.list(route.info.kind, self._namespace(route))
                     if _matches(o, label_sel, field_sel)]
            deleted = []
            for obj in items:
                r = Route(route.info, obj["metadata"].get("namespace"), obj["metadata"]["name"], None)
                if cluster.store.find(route.info.kind, r.namespace if route.info.namespaced else None,
                                      r.name) is not None:
                    deleted.append(self._delete_one(r, r.name, options)[0])
            rv = str(cluster.store.rv)
        self._send_json({"kind": f"{route.info.kind}List", "apiVersion": route.info.api_version,
                         "metadata": {"resourceVersion": rv}, "items": deleted})

    # --- scale ---------------------------------------------------------------------------------------------
    def _scale_of(self, obj: dict) -> dict:
        meta = obj["metadata"]
        selector = (obj.get("spec") or {}).get("selector") or {}
        return {"kind": "Scale", "apiVersion": "autoscaling/v1",
                "metadata": {k: meta[k] for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
                             if k in meta},
                "spec": {"replicas": (obj.get("spec") or {}).get("replicas", 1)},
                "status": {"replicas": (obj.get("status") or {}).get("replicas", 0),
                           "selector": tables.format_label_selector(selector).replace("<none>", "")}}

    def _scale(self, method: str, route: Route) -> None:
        cluster, info = self.api.cluster, route.info
        ns = self._namespace(route)
        if method == "GET":
            with cluster.lock:
                return self._send_json(self._scale_of(cluster.get(info.kind, ns, route.name)))
        if method not in ("PUT", "PATCH"):
            raise MethodNotAllowed("the server does not allow this method on the requested resource")
        ctype = self.headers.get("Content-Type", "").split(";")[0].strip()
        body = self._parse_body(allow_list=True)
        dry = self._dry_run()
        with cluster.lock:
            current = cluster.get(info.kind, ns, route.name)
            scale = self._scale_of(current)
            if method == "PUT":
                new_scale = body
            elif ctype == "application/apply-patch+yaml":
                new_scale = json_merge_patch(scale, body)
            else:
                new_scale = self._apply_patch_body(ctype, scale, body)
            if not isinstance(new_scale, dict):
                raise BadRequest("the scale must be an object")
            replicas = (new_scale.get("spec") or {}).get("replicas")
            if not isinstance(replicas, int) or isinstance(replicas, bool):
                raise BadRequest(f"spec.replicas must be an integer, not {replicas!r}")
            new = clone(current)
            new["spec"]["replicas"] = replicas
            given_rv = (new_scale.get("metadata") or {}).get("resourceVersion")
            new["metadata"]["resourceVersion"] = given_rv or current["metadata"]["resourceVersion"]
            stored = cluster.replace(new, dry_run=dry)
            self._send_json(self._scale_of(stored))

    # --- pods: logs, exec, attach --------------------------------------------------------------------------
    def _container(self, pod: dict) -> str:
        names = [c["name"] for c in pod["spec"].get("containers", [])]
        name = self.query.get("container") or ""
        if not name and names:
            return names[0]
        if name not in names:
            raise BadRequest(f"container {name} is not valid for pod {pod['metadata']['name']}")
        return name

    def _running_app(self, pod: dict, container: str):
        rt = self.api.cluster.kubelet.runtime(pod)
        app = rt.apps.get(container) if rt is not None else None
        if app is None:
            reason = "ContainerCreating"
            for cs in (pod.get("status") or {}).get("containerStatuses") or []:
                if cs.get("name") == container:
                    reason = (cs.get("state") or {}).get("waiting", {}).get("reason", reason)
            raise BadRequest(f'container "{container}" in pod "{pod["metadata"]["name"]}" is waiting to start: '
                             f"{reason}")
        return rt, app

    def _logs(self, route: Route) -> None:
        if route.info.kind != "Pod" or self.command != "GET":
            raise MethodNotAllowed("the server does not allow this method on the requested resource")
        cluster = self.api.cluster
        with cluster.lock:
            pod = cluster.get("Pod", route.namespace, route.name)
            container = self._container(pod)
            rt, app = self._running_app(pod, container)
            lines = list(app.log)
        tail = self.query.get("tailLines")
        if tail not in (None, ""):
            try:
                n = int(tail)
            except ValueError as e:
                raise BadRequest(f"tailLines must be an integer, not {tail!r}") from e
            lines = lines[-n:] if n > 0 else []
        text = "".join(line + "\n" for line in lines).encode()
        if self.query.get("follow") not in ("true", "1"):
            return self._send_bytes(text, content_type="text/plain")
        self._start_stream("text/plain")
        self._chunk(text)
        sent = len(app.log)
        try:
            while not self.api.stopping:
                with cluster.lock:
                    current = cluster.store.find("Pod", route.namespace, route.name)
                    alive = current is not None and rt.apps.get(container) is app and container not in rt.exited
                    new = list(app.log[sent:])
                    sent = len(app.log)
                if new:
                    self._chunk("".join(line + "\n" for line in new).encode())
                if not alive:
                    break
                if self._client_gone():
                    break
                time.sleep(IDLE_STEP)
                self.api.wait_idle(None)
            self._end_stream()
        except OSError:
            self.close_connection = True

    def _stream_pod(self, route: Route) -> None:
        if route.info.kind != "Pod":
            raise NotFound("the server could not find the requested resource")
        cluster = self.api.cluster
        argv = [v for k, vs in parse_qs(urlsplit(self.path).query).items() if k == "command" for v in vs]
        with cluster.lock:
            pod = cluster.get("Pod", route.namespace, route.name)
            container = self._container(pod)
            phase = (pod.get("status") or {}).get("phase")
            if phase in ("Succeeded", "Failed"):
                raise BadRequest(f"cannot {route.sub} a container in a completed pod; current phase is {phase}")
            rt, app = self._running_app(pod, container)
        if self.headers.get("Upgrade", "").lower() != "websocket":
            raise BadRequest("Upgrade request required")
        protocol = choose_protocol(self.headers.get("Sec-WebSocket-Protocol", ""))
        if protocol is None:
            raise BadRequest("unable to upgrade connection: no supported stream protocol offered "
                             "(want v5.channel.k8s.io or v4.channel.k8s.io)")
        if route.sub == "exec" and not argv:
            raise BadRequest("you must specify at least 1 command")
        self.send_response(101, "Switching Protocols")
        self.send_header("Upgrade", "websocket")
        self.send_header("Connection", "Upgrade")
        self.send_header("Sec-WebSocket-Accept", accept_key(self.headers.get("Sec-WebSocket-Key", "")))
        self.send_header("Sec-WebSocket-Protocol", protocol)
        self.end_headers()
        self.wfile.flush()
        self.close_connection = True
        ws = WebSocket(self.rfile, self.wfile, protocol)
        tty = self.query.get("tty") in ("true", "1")
        try:
            if route.sub == "exec":
                with cluster.lock:
                    result = cluster.kubelet.exec(cluster.store.get("Pod", route.namespace, route.name),
                                                  container, argv)
                    cluster.settle()
                out, err = result.stdout, result.stderr
                if tty:
                    ws.send_channel(STDOUT, (out + err).replace("\r\n", "\n").replace("\n", "\r\n").encode())
                else:
                    ws.send_channel(STDOUT, out.encode())
                    ws.send_channel(STDERR, err.encode())
                ws.send_status(result.code, argv)
            else:
                self._attach(ws, route, rt, app, container, tty)
        except OSError:
            pass
        finally:
            ws.close()

    def _attach(self, ws: WebSocket, route: Route, rt: Any, app: Any, container: str, tty: bool) -> None:
        cluster = self.api.cluster
        with cluster.lock:
            sent = len(app.log)  # attach sees what the container prints from now on, as with a real kubelet
        code = 0
        while not self.api.stopping:
            with cluster.lock:
                current = cluster.store.find("Pod", route.namespace, route.name)
                new = list(app.log[sent:])
                sent = len(app.log)
                restarted = rt.apps.get(container) is not app
                exited = container in rt.exited
                if exited:
                    code = rt.exited[container]
                done = current is None or exited or restarted or current["metadata"].get("deletionTimestamp")
            if new:
                text = "".join(line + "\n" for line in new)
                if tty:
                    text = text.replace("\n", "\r\n")
                ws.send_channel(STDOUT, text.encode())
            if done:
                break
            if self._client_gone():
                return
            time.sleep(IDLE_STEP)
            self.api.wait_idle(None)
        ws.send_status(code, [])


def _matches(obj: dict, label_sel: Any, field_sel: Any) -> bool:
    if label_sel is not None and not label_sel.matches(obj["metadata"].get("labels") or {}):
        return False
    if field_sel is not None and not matches_fields(field_sel, obj):
        return False
    return True


__all__ = ["APIServer", "parse_route"]
