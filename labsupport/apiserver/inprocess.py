"""The embedded API server without a socket, a thread or a certificate: a request handed over as values is answered
by the same handler the HTTPS server runs, so every answer is byte for byte the one a socket would carry.

Where Python has no sockets or threads (Pyodide in a browser tab) this is how kubectl reaches the embedded cluster:
its HTTP requests come here instead of going to a network.
"""
from __future__ import annotations

import io
import tempfile
import time
from dataclasses import dataclass, field
from typing import Any, Iterable, Protocol


from labsupport.apiserver.handler import RequestHandler
from labsupport.apiserver.kubeconfig import write_kubeconfig
from labsupport.apiserver.server import APIServer

#: The server a kubeconfig of this API names: `.invalid` never resolves, so nothing addressed to it leaves the tab;
#: https, because kubectl sends its token to no other (the requests never meet TLS: they are handed over as values).
URL = "https://labsupport-apiserver.invalid"


class Sink(Protocol):
    """Where a streamed answer goes as the handler writes it (a watch, a followed log)."""

    def head(self, status: int, headers: list[tuple[str, str]]) -> None:
        """The status and headers, once, before any body."""

    def data(self, chunk: bytes) -> None:
        """The next piece of the body (chunked transfer already undone)."""

    def closed(self) -> bool:
        """Whether the client has stopped reading, so the handler may end the stream."""


@dataclass
class Reply:
    """One answer: status, headers in the order sent, and the body (empty when it went to a Sink)."""

    status: int
    reason: str
    headers: list[tuple[str, str]] = field(default_factory=list)
    body: bytes = b""

    def header(self, name: str) -> str | None:
        """The first header of that name (any case), or None."""
        return next((v for k, v in self.headers if k.lower() == name.lower()), None)


class _ResponseReader:
    """The handler's output stream: reads the HTTP/1.1 response it writes, as it writes it."""

    def __init__(self, sink: Sink | None):
        self.sink = sink
        self.reply: Reply | None = None
        self._buffer = b""
        self._left: int | None = None  # bytes of body still expected (Content-Length), None when chunked
        self._chunked = False
        self._chunk_left = 0
        self._chunk_state = "size"
        self._done = False
        self._body = io.BytesIO()

    def write(self, data: bytes) -> int:
        """Take what the handler wrote."""
        self._buffer += bytes(data)
        self._parse()
        return len(data)

    def flush(self) -> None:
        """Nothing is held back."""

    def close(self) -> None:
        """Nothing to release."""

    def _parse(self) -> None:
        while self._buffer and not self._done:
            if self.reply is None:
                end = self._buffer.find(b"\r\n\r\n")
                if end < 0:
                    return
                self._head(self._buffer[:end].decode("iso-8859-1"))
                self._buffer = self._buffer[end + 4:]
            elif self._chunked:
                if not self._next_chunk():
                    return
            else:
                take = self._buffer if self._left is None else self._buffer[:self._left]
                self._buffer = self._buffer[len(take):]
                self._emit(take)
                if self._left is not None:
                    self._left -= len(take)
                    self._done = self._left == 0

    def _head(self, text: str) -> None:
        status_line, *lines = text.split("\r\n")
        _, code, *reason = status_line.split(" ", 2)
        headers = [(k.strip(), v.strip()) for k, v in (line.split(":", 1) for line in lines if ":" in line)]
        self.reply = Reply(int(code), reason[0] if reason else "", headers)
        self._chunked = (self.reply.header("Transfer-Encoding") or "").lower() == "chunked"
        length = self.reply.header("Content-Length")
        self._left = None if self._chunked or length is None else int(length)
        self._done = self._left == 0
        if self.sink is not None:
            self.sink.head(self.reply.status, self.reply.headers)

    def _next_chunk(self) -> bool:
        """Consume one step of chunked framing (a size line, data, the CRLF after it); False when more bytes are
        needed."""
        if self._chunk_state == "size":
            end = self._buffer.find(b"\r\n")
            if end < 0:
                return False
            size = int(self._buffer[:end].split(b";")[0].strip() or b"0", 16)
            if size == 0:
                if len(self._buffer) < end + 4:
                    return False
                self._buffer, self._done = self._buffer[end + 4:], True
                return True
            self._buffer, self._chunk_left, self._chunk_state = self._buffer[end + 2:], size, "data"
        elif self._chunk_state == "data":
            take = self._buffer[:self._chunk_left]
            self._buffer = self._buffer[len(take):]
            self._chunk_left -= len(take)
            self._emit(take)
            if self._chunk_left:
                return False
            self._chunk_state = "crlf"
        else:
            if len(self._buffer) < 2:
                return False
            self._buffer, self._chunk_state = self._buffer[2:], "size"
        return True

    def _emit(self, data: bytes) -> None:
        if not data:
            return
        if self.sink is not None:
            self.sink.data(data)
        else:
            self._body.write(data)

    def result(self) -> Reply:
        """The answer, once the handler is done."""
        if self.reply is None:
            return Reply(502, "Bad Gateway", [("Content-Type", "text/plain")], b"the API server wrote no answer\n")
        self.reply.body = self._body.getvalue()
        return self.reply


class _Exchange(RequestHandler):
    """One request handled over in-memory streams instead of a TLS connection."""

    sink: Sink | None = None

    def setup(self) -> None:
        """Streams in memory: the request as bytes in, the response read as it is written."""
        raw, self.sink = self.request
        self.connection = None
        self.rfile = io.BytesIO(raw)
        self.wfile = _ResponseReader(self.sink)

    def finish(self) -> None:
        """Nothing to flush or close."""

    def _client_gone(self) -> bool:
        return self.sink is not None and self.sink.closed()


class InProcessAPI(APIServer):
    """The embedded cluster's API, answered in this process by `handle()`; its kubeconfig names `URL`."""

    def __init__(self, cluster: Any, *, token: str | None = None):
        super().__init__(cluster, token=token)
        self._exchange = type("Exchange", (_Exchange,), {"api": self})
        self._unsubscribe = cluster.store.subscribe(self._on_event)
        self.dir = tempfile.mkdtemp(prefix="labsupport-apiserver-")
        self._write_kubeconfig()

    @property
    def url(self) -> str:
        """The server a client names; requests to it must be handed to `handle()`."""
        return URL

    def start(self) -> "InProcessAPI":
        """Nothing to start: there is no listener."""
        return self

    def handle(self, method: str, target: str, headers: Iterable[tuple[str, str]] = (), body: bytes = b"",
               sink: Sink | None = None) -> Reply:
        """Answer one request (`target`: path and query). A streamed answer (watch, followed log) goes to `sink`
        as it is written, if given; otherwise the whole answer is returned."""
        lines = [f"{method} {target} HTTP/1.1", f"Host: {URL.split('://', 1)[1]}"]
        for name, value in headers:
            if name.lower() not in ("host", "content-length", "transfer-encoding", "connection"):
                lines.append(f"{name}: {value}")
        lines += [f"Content-Length: {len(body)}", "Connection: close"]
        raw = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + bytes(body)
        handler = self._exchange((raw, sink), ("127.0.0.1", 0), None)
        return handler.wfile.result()

    def next_events(self, w: Any, timeout: float) -> list:
        """Events queued for a watch; with none, pause `timeout` seconds (where Python runs in a browser's event
        loop, the pause lets the client read what was sent)."""
        if not w.queue and not self.stopping:
            time.sleep(timeout)
        out = list(w.queue)
        w.queue.clear()
        return out

    def _write_kubeconfig(self) -> None:
        write_kubeconfig(self.kubeconfig_path, {"server": URL}, self.token)


__all__ = ["InProcessAPI", "Reply", "Sink", "URL"]
