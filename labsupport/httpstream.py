"""HTTP/1.1 over a byte stream that is not a socket of this process (a pipe to `nc` in a pod, for instance).

`request_bytes` writes a request as curl sends it; `ResponseReader` reads the answers back one at a time, each
framed as RFC 9112 section 6 says: no body for HEAD, 1xx, 204 and 304; `Transfer-Encoding: chunked` before
`Content-Length`; otherwise the body runs to the end of the stream. Bytes after one response stay buffered for the
next, so several requests ride one connection. The reader only sees the stream through a `receive()` callable
that returns the next bytes (b"" at the end), so it is tested on plain byte strings.

>>> chunks = iter([b"HTTP/1.1 200 OK\\r\\nContent-Length: 2\\r\\n\\r\\nokHTTP/1.1 204 No Content\\r\\n\\r\\n", b""])
>>> reader = ResponseReader(lambda: next(chunks))
>>> first = reader.read()
>>> first.status, first.body, first.keep_alive
(200, b'ok', True)
>>> reader.read().status
204
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from labsupport.errors import LabError

#: The longest status line plus headers accepted (as servers limit a request's head).
MAX_HEAD = 64 * 1024
#: curl's own User-Agent (the curl of the lessons' images).
USER_AGENT = "curl/8.11.1"


class StreamEnded(LabError):
    """The stream ended before a whole response came: `received` bytes of it had arrived."""

    def __init__(self, message: str, received: int = 0):
        super().__init__(message)
        self.received = received


class MalformedResponse(LabError):
    """What came back is not an HTTP/1.x response; the message quotes the offending part."""


@dataclass(frozen=True)
class HttpResponse:
    """One response as it came over the wire: status line, headers in order, body (de-chunked)."""

    version: str
    status: int
    reason: str
    headers: tuple[tuple[str, str], ...]
    body: bytes
    #: whether the body ran to the end of the stream (no length given), which ends the connection
    to_close: bool = False

    def header(self, name: str) -> str | None:
        """The value of a header (the last one when repeated), any case; None when absent."""
        found = [v for k, v in self.headers if k.lower() == name.lower()]
        return found[-1] if found else None

    @property
    def keep_alive(self) -> bool:
        """Whether the server keeps the connection open for another request after this response."""
        if self.to_close:
            return False
        tokens = {t.strip().lower() for t in (self.header("Connection") or "").split(",")}
        if self.version == "HTTP/1.0":
            return "keep-alive" in tokens
        return "close" not in tokens

    @property
    def text(self) -> str:
        """The body as text (UTF-8, undecodable bytes replaced), as curl prints it to a terminal."""
        return self.body.decode(errors="replace")


def request_bytes(method: str, path: str, host: str, headers: dict[str, str] | None = None) -> bytes:
    """A request as curl writes it: request line, Host, User-Agent, Accept, then the given headers."""
    if not path.startswith("/") and path != "*":
        raise ValueError(f"a request path starts with '/', not {path!r}")
    for text in (method, path, host, *(headers or {}), *(headers or {}).values()):
        if any(c in text for c in "\r\n"):
            raise ValueError(f"a line break inside a request line or header would split the request: {text!r}")
    lines = [f"{method} {path} HTTP/1.1", f"Host: {host}"]
    given = {k.lower() for k in headers or {}}
    if "user-agent" not in given:
        lines.append(f"User-Agent: {USER_AGENT}")
    if "accept" not in given:
        lines.append("Accept: */*")
    lines += [f"{k}: {v}" for k, v in (headers or {}).items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


class ResponseReader:
    """Reads HTTP/1.x responses one after another from a stream; bytes past one response wait for the next."""

    def __init__(self, receive: Callable[[], bytes]):
        self._receive = receive
        self._buffer = b""
        self._ended = False
        #: bytes of the response being read that have arrived (for curl's "… bytes received")
        self.received = 0

    def _more(self) -> bool:
        """Append the stream's next bytes to the buffer; False at the end of the stream."""
        if self._ended:
            return False
        chunk = self._receive()
        if not chunk:
            self._ended = True
            return False
        self._buffer += chunk
        self.received += len(chunk)
        return True

    def read_line(self, limit: int = MAX_HEAD) -> bytes:
        """One line (its CRLF or LF removed); StreamEnded if the stream ends first."""
        while b"\n" not in self._buffer:
            if len(self._buffer) > limit:
                raise MalformedResponse(f"a line longer than {limit} bytes: {self._buffer[:80]!r}…")
            if not self._more():
                raise StreamEnded("the stream ended in the middle of a line", self.received)
        line, _, self._buffer = self._buffer.partition(b"\n")
        return line.removesuffix(b"\r")

    def _take(self, size: int) -> bytes:
        while len(self._buffer) < size:
            if not self._more():
                raise StreamEnded(f"the stream ended {size - len(self._buffer)} byte(s) short of the body's end",
                                  self.received)
        data, self._buffer = self._buffer[:size], self._buffer[size:]
        return data

    def _head(self) -> tuple[str, int, str, list[tuple[str, str]]]:
        first = self.read_line()
        while not first:            # a stray empty line before a response is tolerated (RFC 9112 2.2)
            first = self.read_line()
        text = first.decode("latin-1")
        version, _, rest = text.partition(" ")
        code, _, reason = rest.partition(" ")
        if not version.startswith("HTTP/1.") or len(code) != 3 or not code.isdigit():
            raise MalformedResponse(f"not an HTTP/1.x status line: {text[:120]!r}")
        headers: list[tuple[str, str]] = []
        size = len(first)
        while True:
            line = self.read_line()
            size += len(line) + 2
            if size > MAX_HEAD:
                raise MalformedResponse(f"the response's headers exceed {MAX_HEAD} bytes")
            if not line:
                return version, int(code), reason, headers
            name, colon, value = line.decode("latin-1").partition(":")
            if not colon or not name or name != name.strip():
                raise MalformedResponse(f"not a header line: {line[:120]!r}")
            headers.append((name, value.strip()))

    def read(self, *, method: str = "GET") -> HttpResponse:
        """The next whole response to a request of `method` (interim 1xx answers are skipped)."""
        self.received = len(self._buffer)
        while True:
            version, status, reason, headers = self._head()
            if not (100 <= status < 200) or status == 101:
                break
        response = HttpResponse(version, status, reason, tuple(headers), b"")
        if method.upper() == "HEAD" or 100 <= status < 200 or status in (204, 304):
            return response
        coding = response.header("Transfer-Encoding")
        if coding is not None:
            if coding.replace(" ", "").lower().split(",")[-1] != "chunked":
                return HttpResponse(version, status, reason, tuple(headers), self._to_end(), to_close=True)
            return HttpResponse(version, status, reason, tuple(headers), self._chunked())
        length = response.header("Content-Length")
        if length is not None:
            values = {v.strip() for v in length.split(",")}
            if len(values) != 1 or not next(iter(values)).isdigit():
                raise MalformedResponse(f"invalid Content-Length: {length!r}")
            return HttpResponse(version, status, reason, tuple(headers), self._take(int(values.pop())))
        return HttpResponse(version, status, reason, tuple(headers), self._to_end(), to_close=True)

    def _chunked(self) -> bytes:
        body = b""
        while True:
            line = self.read_line().decode("latin-1")
            size_text = line.split(";", 1)[0].strip()
            try:
                size = int(size_text, 16)
            except ValueError:
                raise MalformedResponse(f"not a chunk size line: {line[:80]!r}") from None
            if size < 0:
                raise MalformedResponse(f"not a chunk size line: {line[:80]!r}")
            if size == 0:
                while self.read_line():     # trailer fields, up to the empty line
                    pass
                return body
            body += self._take(size)
            if self.read_line():
                raise MalformedResponse(f"chunk of {size} bytes not followed by CRLF")

    def _to_end(self) -> bytes:
        while self._more():
            pass
        data, self._buffer = self._buffer, b""
        return data


__all__ = ["HttpResponse", "MalformedResponse", "ResponseReader", "StreamEnded", "request_bytes", "USER_AGENT"]
