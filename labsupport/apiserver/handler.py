"""The HTTP side of the API server: authentication, routing, bodies, and the resource verbs."""
from __future__ import annotations

import json
import os
import select
import traceback
from http.server import BaseHTTPRequestHandler
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, urlsplit

import yaml

from labsupport.apiserver import authz, discovery, eventtime, openapi, tables
from labsupport.apiserver.events import PREFIX as EVENTS_V1, EventsV1
from labsupport.apiserver.fields import conflict_error
from labsupport.apiserver.openapi_pb import V2_PROTOBUF
from labsupport.apiserver.patch import apply_patch, json_merge_patch, json_patch, strategic_merge_patch
from labsupport.apiserver.pods import PodStreams
from labsupport.apiserver.portforward import PortForwarding
from labsupport.apiserver.routes import (DRAIN_LIMIT, ENDPOINTS_WARNING, MAX_BODY, NotAcceptable, Route, TooLarge,
                                         Unauthorized, UnsupportedMediaType, parse_route, selected, status_success)
from labsupport.apiserver.schema import check_fields
from labsupport.apiserver.watch import Watching
from labsupport.apiserver.websocket import WebSocketClosed
from labsupport.control.clock import rfc3339
from labsupport.model.objects import clone
from labsupport.errors import APIError, BadRequest, Conflict, MethodNotAllowed, NotFound
from labsupport.model.selectors import parse_field_selector, to_selector

#: The manager of client-side `kubectl apply`; kubectl hands its fields over when switching to server-side apply.
CLIENT_SIDE_APPLY = "kubectl-client-side-apply"

if TYPE_CHECKING:
    from labsupport.apiserver.server import APIServer


class RequestHandler(Watching, PodStreams, PortForwarding, EventsV1, BaseHTTPRequestHandler):
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
            self.identity = authz.ADMIN_IDENTITY
            if split.path not in ("/healthz", "/livez", "/readyz"):
                identity = self.api.identity(self.headers.get("Authorization", ""))
                if identity is None:
                    raise Unauthorized("Unauthorized")
                self.identity = identity
                authz.authorize(identity, authz.attributes(method, split.path, self.query), self.headers)
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
            from labsupport.control.version import K8S_VERSION
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
        if authz.handles(path):
            if method != "POST":
                raise MethodNotAllowed("the server does not allow this method on the requested resource")
            return self._send_json(authz.review(path, self._parse_body(), self.headers, self.identity), code=201)
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
        if path.startswith(EVENTS_V1 + "/"):
            return self._events_v1(method, path)
        route = parse_route(path)
        if route is None:
            raise NotFound("the server could not find the requested resource")
        if route.info.kind == "Endpoints":
            self.warnings.append(ENDPOINTS_WARNING)
        if route.sub in ("exec", "attach"):
            return self._stream_pod(route)
        if route.sub == "portforward":
            return self._port_forward(route)
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
        if parts == ["openapi", "v2"]:
            if "protobuf" in self._accept():
                return self._send_bytes(openapi.v2_document_protobuf(), content_type=V2_PROTOBUF)
            if "json" not in self._accept() and "*/*" not in self._accept():
                raise NotAcceptable("the server was unable to respond with a content type that the client "
                                    "supports")
            return self._send_bytes(openapi.v2_document_text().encode())
        if parts == ["openapi", "v3"]:
            return self._send_json(openapi.v3_root())
        if len(parts) >= 4 and parts[1] == "v3":
            text = openapi.v3_document_text("/".join(parts[2:]))
            if text is not None:
                return self._send_bytes(text.encode())
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
        items = [o for o in items if selected(o, label_sel, field_sel)]
        if self._wants_table():
            include = self.query.get("includeObject", "Metadata")
            return self._send_json(tables.table(route.info.kind, [self.api.decorate(o) for o in items], now,
                                                resource_version=rv, include=include))
        if self._wants_metadata():
            return self._send_json({"kind": "PartialObjectMetadataList", "apiVersion": "meta.k8s.io/v1",
                                    "metadata": {"resourceVersion": rv},
                                    "items": [tables.partial_metadata(o) for o in items]})
        self._send_json({"kind": f"{route.info.kind}List", "apiVersion": route.info.api_version,
                         "metadata": {"resourceVersion": rv},
                         "items": [eventtime.for_client(self.api.decorate(o), now) for o in items]})

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
        self._send_json(eventtime.for_client(obj, now), code)

    # --- watch ---------------------------------------------------------------------------------------------
    def _dry_run(self) -> bool:
        value = self.query.get("dryRun", "")
        if value and value != "All":
            raise BadRequest(f'Unsupported value: "{value}": supported values: "All"')
        return value == "All"

    def _check_object(self, route: Route, obj: dict, *, name: str | None = None, apply: bool = False,
                      stored: dict | None = None) -> dict:
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
        check_fields(obj, self.query.get("fieldValidation"), self.warnings, apply=apply, stored=stored)
        return obj

    def _create(self, route: Route) -> None:
        body = self._parse_body()
        obj = self._check_object(route, body)
        dry = self._dry_run()
        cluster = self.api.cluster
        with cluster.lock:
            created = cluster.create(clone(obj), dry_run=dry)
            if not dry:
                self.api.record_update(created, None, obj, self._manager())
            now = cluster.clock.now
        self._send_object(route, created, now, code=201)

    def _manager(self) -> str:
        """The request's field manager: the fieldManager parameter, else the user agent's name, as upstream."""
        manager = self.query.get("fieldManager")
        if manager:
            if len(manager) > 128:
                raise BadRequest("fieldManager: Too long: may not be more than 128 bytes")
            return manager
        return self._agent()

    def _agent(self) -> str:
        """The client program's name: its user agent up to the first slash (`kube-proxy`, `kubectl`), as upstream
        names a field manager."""
        return (self.headers.get("User-Agent") or "unknown").split("/", 1)[0][:128] or "unknown"

    def _replace(self, route: Route) -> None:
        body = self._parse_body()
        cluster = self.api.cluster
        dry = self._dry_run()
        with cluster.lock:
            old = cluster.get(route.info.kind, self._namespace(route), route.name)
            obj = self._check_object(route, body, name=route.name, stored=old)
            if route.sub == "status":
                stored = cluster.replace_status(clone(obj))
            else:
                stored = cluster.replace(clone(obj), dry_run=dry)
            if not dry:
                self.api.record_update(stored, old, obj, self._manager(), route.sub or "")
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
            new = self._check_object(route, new, name=route.name, stored=current)
            if route.sub == "status":
                stored = cluster.replace_status(clone(new))
            else:
                stored = cluster.replace(clone(new), dry_run=dry)
            if not dry:
                self.api.record_update(stored, current, new, self._manager(), route.sub or "")
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
        applied = self._check_object(route, clone(body), name=route.name, apply=True)
        applied["metadata"].pop("managedFields", None)
        current = cluster.store.find(info.kind, self._namespace(route), route.name)
        if current is None:
            created = cluster.create(clone(applied), dry_run=dry)
            if not dry:
                api.record_apply(created, manager, applied)
            return self._send_object(route, created, cluster.clock.now, code=201)
        if self.query.get("force") not in ("true", "1"):
            found = [c for c in api.fields.conflicts(current, applied, manager)
                     if not (c[0][0] == CLIENT_SIDE_APPLY and manager == "kubectl")]
            if found:
                raise conflict_error(found)
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
                     if selected(o, label_sel, field_sel)]
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
            if not dry:
                self.api.fields.record_paths(stored, [("f:spec", "f:replicas")], self._manager(),
                                             rfc3339(cluster.clock.now), "scale")
            self._send_json(self._scale_of(stored))

    # --- pods: logs, exec, attach --------------------------------------------------------------------------
