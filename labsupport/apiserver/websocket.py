"""The server side of WebSocket (RFC 6455) and the Kubernetes channel protocol kubectl speaks for exec/attach."""
from __future__ import annotations

import base64
import hashlib
import json
import struct
from typing import BinaryIO

from labsupport.errors import LabError

GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
#: Protocols in the order the server prefers them.
PROTOCOLS = ("v5.channel.k8s.io", "v4.channel.k8s.io", "v3.channel.k8s.io", "v2.channel.k8s.io",
             "channel.k8s.io")
STDIN, STDOUT, STDERR, ERROR, RESIZE, CLOSE = 0, 1, 2, 3, 4, 255
MAX_FRAME = 16 * 1024 * 1024


class WebSocketClosed(LabError):
    """The peer closed the connection."""


def accept_key(key: str) -> str:
    """The Sec-WebSocket-Accept value for a client's Sec-WebSocket-Key."""
    return base64.b64encode(hashlib.sha1((key + GUID).encode()).digest()).decode()


def choose_protocol(header: str) -> str | None:
    """The best channel protocol both sides speak, or None."""
    offered = [p.strip() for p in (header or "").split(",") if p.strip()]
    for proto in PROTOCOLS:
        if proto in offered:
            return proto
    return None


class WebSocket:
    """One server-side WebSocket over an upgraded HTTP connection's buffered reader and writer."""

    def __init__(self, reader: BinaryIO, writer: BinaryIO, protocol: str):
        self.reader = reader
        self.writer = writer
        self.protocol = protocol
        self.closed = False

    def send(self, payload: bytes, opcode: int = 2) -> None:
        """Send one unmasked frame."""
        header = bytes([0x80 | opcode])
        size = len(payload)
        if size < 126:
            header += bytes([size])
        elif size < 65536:
            header += bytes([126]) + struct.pack("!H", size)
        else:
            header += bytes([127]) + struct.pack("!Q", size)
        self.writer.write(header + payload)
        self.writer.flush()

    def send_channel(self, channel: int, data: bytes) -> None:
        """Send data on a channel of the Kubernetes stream protocol."""
        if data or channel == ERROR:
            self.send(bytes([channel]) + data)

    def send_status(self, code: int, argv: list[str]) -> None:
        """Report the command's end on the error channel, as the kubelet does."""
        if code == 0:
            status = {"metadata": {}, "status": "Success"}
        else:
            status = {"metadata": {}, "status": "Failure",
                      "message": f"command terminated with non-zero exit code: error executing command "
                                 f"[{' '.join(argv)}], exit code {code}",
                      "reason": "NonZeroExitCode",
                      "details": {"causes": [{"reason": "ExitCode", "message": str(code)}]}}
        self.send_channel(ERROR, json.dumps(status).encode())

    def send_error(self, message: str) -> None:
        """Report a failure to run the command at all."""
        status = {"metadata": {}, "status": "Failure", "message": message, "reason": "InternalError",
                  "code": 500}
        self.send_channel(ERROR, json.dumps(status).encode())

    def close(self, code: int = 1000) -> None:
        """Send a close frame (once)."""
        if self.closed:
            return
        self.closed = True
        try:
            self.send(struct.pack("!H", code), opcode=8)
        except OSError:
            pass

    def receive(self) -> tuple[int, bytes]:
        """Read one message (opcode, payload), answering pings; WebSocketClosed at the end."""
        while True:
            head = self.reader.read(2)
            if len(head) < 2:
                raise WebSocketClosed()
            opcode = head[0] & 0x0F
            masked = head[1] & 0x80
            size = head[1] & 0x7F
            if size == 126:
                size = struct.unpack("!H", self.reader.read(2))[0]
            elif size == 127:
                size = struct.unpack("!Q", self.reader.read(8))[0]
            if size > MAX_FRAME:
                raise WebSocketClosed()
            mask = self.reader.read(4) if masked else b""
            payload = self.reader.read(size)
            if masked:
                payload = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
            if opcode == 8:
                self.close()
                raise WebSocketClosed()
            if opcode == 9:
                self.send(payload, opcode=10)
                continue
            if opcode == 10:
                continue
            return opcode, payload
