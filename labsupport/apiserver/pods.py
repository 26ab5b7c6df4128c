"""Pod subresources that stream: logs (with follow), and exec/attach over the WebSocket channel protocol."""
from __future__ import annotations

import time
from typing import Any
from urllib.parse import parse_qs, urlsplit

from labsupport.apiserver.routes import IDLE_STEP, MAX_BODY, Route
from labsupport.apiserver.terminal import InteractiveShell
from labsupport.apiserver.websocket import (CLOSE, STDERR, STDIN, STDOUT, WebSocket, WebSocketClosed, accept_key,
                                            choose_protocol)
from labsupport.apps import NOT_STARTED, ExecResult
from labsupport.errors import BadRequest, MethodNotAllowed, NotFound


def start_failure(runtime_message: str) -> str:
    """What the kubelet reports when the runtime cannot start an exec'd program (containerd's wording)."""
    import hashlib
    exec_id = hashlib.sha256(runtime_message.encode()).hexdigest()
    return (f"Internal error occurred: error executing command in container: failed to exec in container: "
            f"failed to start exec \"{exec_id}\": {runtime_message.strip()}")


class PodStreams:
    """The log, exec and attach subresources of the request handler."""

    api: Any
    query: dict

    def _container(self, pod: dict) -> str:
        names = [c["name"] for c in pod["spec"].get("containers", [])]
        name = self.query.get("container") or ""
        if not name and names:
            return names[0]
        if name not in names:
            raise BadRequest(f"container {name} is not valid for pod {pod['metadata']['name']}")
        return name

    @staticmethod
    def _line_end(pod: dict, container: str) -> str:
        """How the container's output ends a line: a container with a TTY (`tty: true`) writes through a terminal,
        which turns each NL into CR NL, in its logs as on an attach; without one, NL."""
        spec = next((c for c in pod["spec"].get("containers", []) if c.get("name") == container), {})
        return "\r\n" if spec.get("tty") else "\n"

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
            end = self._line_end(pod, container)
        tail = self.query.get("tailLines")
        if tail not in (None, ""):
            try:
                n = int(tail)
            except ValueError as e:
                raise BadRequest(f"tailLines must be an integer, not {tail!r}") from e
            lines = lines[-n:] if n > 0 else []
        text = "".join(line + end for line in lines).encode()
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
                    self._chunk("".join(line + end for line in new).encode())
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
            if route.sub == "exec" and tty and self.query.get("stdin") in ("true", "1") and \
                    len(argv) == 1 and argv[0].rsplit("/", 1)[-1] in app.image.shells():
                self._interactive(ws, app, argv)
            elif route.sub == "exec":
                stdin = self._read_stdin(ws) if self.query.get("stdin") in ("true", "1") else ""
                if stdin and len(argv) == 1 and argv[0].rsplit("/", 1)[-1] in ("sh", "bash", "ash"):
                    argv = [argv[0], "-c", stdin]
                with cluster.lock:
                    if stdin and argv == ["cat"]:
                        result = ExecResult(0, stdin, "")
                    else:
                        result = cluster.kubelet.exec(cluster.store.get("Pod", route.namespace, route.name),
                                                      container, argv)
                        cluster.settle()
                out, err = result.stdout, result.stderr
                if result.code == NOT_STARTED and out.startswith("OCI runtime exec failed"):
                    ws.send_error(start_failure(out))
                    return
                if tty:
                    ws.send_channel(STDOUT, (out + err).replace("\r\n", "\n").replace("\n", "\r\n").encode())
                else:
                    ws.send_channel(STDOUT, out.encode())
                    ws.send_channel(STDERR, err.encode())
                ws.send_status(result.code, argv)
            elif app.interactive and self.query.get("stdin") in ("true", "1"):
                self._interactive(ws, app, app.argv or [app.image.entrypoint], ends=(route, container))
            else:
                self._attach(ws, route, rt, app, container, self._line_end(pod, container))
        except OSError:
            pass
        finally:
            ws.close()

    def _interactive(self, ws: WebSocket, app: Any, argv: list[str],
                     ends: tuple[Route, str] | None = None) -> None:
        """`kubectl exec -it POD -- sh`: a shell session on a TTY until the shell exits or the client goes.
        Attached to a container whose main process is the shell (`ends`), its exit ends the container."""
        cluster = self.api.cluster

        def locked(work):
            with cluster.lock:
                result = work()
                cluster.settle()
            return result

        style = "bash" if argv[0].rsplit("/", 1)[-1] == "bash" else app.image.prompt_style
        session = InteractiveShell(app.shell(), style, run=locked)
        ws.send_channel(STDOUT, session.prompt())
        while session.exit_code is None and not self.api.stopping:
            try:
                _, payload = ws.receive()
            except WebSocketClosed:
                return
            if not payload:
                continue
            if payload[0] == STDIN:
                ws.send_channel(STDOUT, session.feed(payload[1:]))
            elif payload[0] == CLOSE:
                break
        code = session.exit_code or 0
        if ends is not None and session.exit_code is not None:
            route, container = ends
            with cluster.lock:
                pod = cluster.store.find("Pod", route.namespace, route.name)
                if pod is not None:
                    cluster.kubelet.process_ended(pod, container, code)
                    cluster.settle()
        ws.send_status(code, argv)

    def _read_stdin(self, ws: WebSocket) -> str:
        """What the client sends on stdin until it closes it (v5), or until it goes quiet (older protocols)."""
        data = b""
        quiet = 0.3 if ws.protocol != "v5.channel.k8s.io" else 5.0
        self.connection.settimeout(quiet)
        try:
            while len(data) < MAX_BODY:
                opcode, payload = ws.receive()
                if not payload:
                    continue
                if payload[0] == STDIN:
                    data += payload[1:]
                elif payload[0] == CLOSE and payload[1:2] == bytes([STDIN]):
                    break
        except (OSError, WebSocketClosed):
            pass
        finally:
            self.connection.settimeout(None)
        return data.decode("utf-8", errors="replace")

    def _attach(self, ws: WebSocket, route: Route, rt: Any, app: Any, container: str, end: str) -> None:
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
                ws.send_channel(STDOUT, "".join(line + end for line in new).encode())
            if done:
                break
            if self._client_gone() and not self._drain_input(ws):
                return
            time.sleep(IDLE_STEP)
            self.api.wait_idle(None)
        ws.send_status(code, [])

    def _drain_input(self, ws: WebSocket) -> bool:
        """Read what an attached client sent (stdin, resize, its stdin-closed signal, the heartbeat pings kubectl sends
        every few seconds); False once it has hung up. The containers here read no input, so it is dropped."""
        self.connection.settimeout(1.0)
        try:
            ws.receive_available()
            return True
        except (OSError, WebSocketClosed):
            return False
        finally:
            self.connection.settimeout(None)
