"""The server side of SPDY/3.1 framing, as kubectl's port-forward speaks it (tunnelled inside WebSocket binary
messages): streams opened by the client, their headers, data with FIN, pings and resets.

Header blocks are zlib streams primed with the dictionary SPDY/3 defines; each direction keeps one stream for the
whole session.
"""
from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass

from labsupport.errors import LabError

SYN_STREAM, SYN_REPLY, RST_STREAM, SETTINGS, PING, GOAWAY, HEADERS, WINDOW_UPDATE = 1, 2, 3, 4, 6, 7, 8, 9
FLAG_FIN = 0x01
VERSION = 3

_HEADER_NAMES = (
    "options head post put delete trace accept accept-charset accept-encoding accept-language accept-ranges age "
    "allow authorization cache-control connection content-base content-encoding content-language content-length "
    "content-location content-md5 content-range content-type date etag expect expires from host if-match "
    "if-modified-since if-none-match if-range if-unmodified-since last-modified location max-forwards pragma "
    "proxy-authenticate proxy-authorization range referer retry-after server te trailer transfer-encoding upgrade "
    "user-agent vary via warning www-authenticate method get status").split()
_TAIL_WORDS = ("200 OK", "version", "HTTP/1.1", "url", "public", "set-cookie", "keep-alive", "origin")
_TAIL = ("100101201202205206300302303304305306307402405406407408409410411412413414415416417502504505"
         "203 Non-Authoritative Information204 No Content301 Moved Permanently400 Bad Request401 Unauthorized"
         "403 Forbidden404 Not Found500 Internal Server Error501 Not Implemented503 Service Unavailable"
         "Jan Feb Mar Apr May Jun Jul Aug Sept Oct Nov Dec 00:00:00 Mon, Tue, Wed, Thu, Fri, Sat, Sun, GMT"
         "chunked,text/html,image/png,image/jpg,image/gif,application/xml,application/xhtml+xml,text/plain,"
         "text/javascript,publicprivatemax-age=gzip,deflate,sdchcharset=utf-8charset=iso-8859-1,utf-,*,enq=0.")
#: The SPDY/3 header compression dictionary: length-prefixed header names and values, then common text.
DICTIONARY = b"".join(struct.pack("!I", len(w)) + w.encode() for w in (*_HEADER_NAMES, *_TAIL_WORDS)) + \
    _TAIL.encode()


class ProtocolError(LabError):
    """The peer sent something that is not SPDY/3.1."""


@dataclass
class Frame:
    """One frame: a control frame (`kind` set) or a data frame (`stream` and `data`)."""

    kind: int | None
    flags: int
    stream: int
    data: bytes
    headers: dict[str, str] | None = None


class Session:
    """Frames in from a byte stream, frames out as bytes; keeps the two header-compression contexts."""

    def __init__(self):
        self.buffer = b""
        self.inflate = zlib.decompressobj(zdict=DICTIONARY)
        self.deflate = zlib.compressobj(zdict=DICTIONARY)

    def feed(self, data: bytes) -> list[Frame]:
        """The complete frames in what has arrived so far."""
        self.buffer += data
        frames = []
        while len(self.buffer) >= 8:
            first, second = struct.unpack("!II", self.buffer[:8])
            length = second & 0xFFFFFF
            if len(self.buffer) < 8 + length:
                break
            payload, self.buffer = self.buffer[8:8 + length], self.buffer[8 + length:]
            flags = second >> 24
            if first & 0x80000000:
                version, kind = (first >> 16) & 0x7FFF, first & 0xFFFF
                if version != VERSION:
                    raise ProtocolError(f"SPDY version {version} is not 3")
                frames.append(self._control(kind, flags, payload))
            else:
                frames.append(Frame(None, flags, first & 0x7FFFFFFF, payload))
        return frames

    def _control(self, kind: int, flags: int, payload: bytes) -> Frame:
        if kind in (SYN_STREAM, SYN_REPLY, HEADERS):
            stream = struct.unpack("!I", payload[:4])[0] & 0x7FFFFFFF
            block = payload[10:] if kind == SYN_STREAM else payload[4:]
            return Frame(kind, flags, stream, payload, self._headers(block))
        if kind in (RST_STREAM, WINDOW_UPDATE):
            return Frame(kind, flags, struct.unpack("!I", payload[:4])[0] & 0x7FFFFFFF, payload)
        return Frame(kind, flags, 0, payload)

    def _headers(self, block: bytes) -> dict[str, str]:
        try:
            raw = self.inflate.decompress(block)
        except zlib.error as e:
            raise ProtocolError(f"header block does not decompress: {e}") from e
        count = struct.unpack("!I", raw[:4])[0]
        pos, out = 4, {}
        for _ in range(count):
            size = struct.unpack("!I", raw[pos:pos + 4])[0]
            name = raw[pos + 4:pos + 4 + size].decode()
            pos += 4 + size
            size = struct.unpack("!I", raw[pos:pos + 4])[0]
            value = raw[pos + 4:pos + 4 + size].decode()
            pos += 4 + size
            out[name.lower()] = value.split("\0", 1)[0]
        return out

    # --- frames out ----------------------------------------------------------------------------------------
    @staticmethod
    def _control_frame(kind: int, flags: int, payload: bytes) -> bytes:
        return struct.pack("!HHI", 0x8000 | VERSION, kind, flags << 24 | len(payload)) + payload

    def syn_reply(self, stream: int, headers: dict[str, str] | None = None, fin: bool = False) -> bytes:
        """Accept a stream the peer opened."""
        pairs = list((headers or {}).items())
        raw = struct.pack("!I", len(pairs)) + b"".join(
            struct.pack("!I", len(k)) + k.encode() + struct.pack("!I", len(v)) + v.encode() for k, v in pairs)
        block = self.deflate.compress(raw) + self.deflate.flush(zlib.Z_SYNC_FLUSH)
        return self._control_frame(SYN_REPLY, FLAG_FIN if fin else 0, struct.pack("!I", stream) + block)

    @staticmethod
    def data(stream: int, payload: bytes, fin: bool = False) -> bytes:
        """Data on a stream (FIN: nothing more will come from this side)."""
        return struct.pack("!II", stream & 0x7FFFFFFF, (FLAG_FIN if fin else 0) << 24 | len(payload)) + payload

    def ping(self, frame: Frame) -> bytes:
        """The answer to a ping: the same frame back."""
        return self._control_frame(PING, 0, frame.data)

    def reset(self, stream: int, status: int = 5) -> bytes:
        """Abort a stream (5: CANCEL)."""
        return self._control_frame(RST_STREAM, 0, struct.pack("!II", stream, status))

    def window_update(self, stream: int, delta: int) -> bytes:
        """Let the peer send `delta` more bytes on a stream."""
        return self._control_frame(WINDOW_UPDATE, 0, struct.pack("!II", stream, delta))
