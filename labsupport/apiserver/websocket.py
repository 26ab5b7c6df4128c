"""The server side of WebSocket (RFC 6455) and the Kubernetes channel protocol kubectl speaks for exec/attach.

The framing — masking, lengths, fragments, pings, the close handshake, malformed frames — is the `websockets`
package's sans-I/O protocol: the request handler owns the socket and has already answered the upgrade, so this
module only feeds the protocol the bytes it reads and writes out the bytes it is given.
"""
from __future__ import annotations

import json
from collections import deque
from typing import BinaryIO

from websockets.exceptions import InvalidState
from websockets.frames import Frame, Opcode
from websockets.protocol import State
from websockets.server import ServerProtocol
from websockets.utils import accept_key as _accept_key

from labsupport.errors import LabError

#: Protocols in the order the server prefers them.
PROTOCOLS = ("v5.channel.k8s.io", "v4.channel.k8s.io", "v3.channel.k8s.io", "v2.channel.k8s.io",
             "channel.k8s.io")
STDIN, STDOUT, STDERR, ERROR, RESIZE, CLOSE = 0, 1, 2, 3, 4, 255
MAX_FRAME = 16 * 1024 * 1024
READ_SIZE = 64 * 1024


class WebSocketClosed(LabError):
    """The peer closed the connection."""


def accept_key(key: str) -> str:
    """The Sec-WebSocket-Accept value for a client's Sec-WebSocket-Key."""
    return _accept_key(key)


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
        self._connection = ServerProtocol(state=State.OPEN, max_size=MAX_FRAME)
        self._frames: deque[Frame] = deque()
        self._fragments: list[bytes] = []
        self._fragment_opcode = 0

    def _flush(self) -> None:
        """Write out what the protocol has queued (frames, pongs, the close reply)."""
        data = b"".join(self._connection.data_to_send())
        if data:
            self.writer.write(data)
            self.writer.flush()

    def send(self, payload: bytes, opcode: int = 2) -> None:
        """Send one unmasked frame: 1 text, 2 binary, 8 close (payload: code and reason), 9 ping, 10 pong."""
        try:
            if opcode == Opcode.BINARY:
                self._connection.send_binary(payload)
            elif opcode == Opcode.TEXT:
                self._connection.send_text(payload)
            elif opcode == Opcode.PING:
                self._connection.send_ping(payload)
            elif opcode == Opcode.PONG:
                self._connection.send_pong(payload)
            elif opcode == Opcode.CLOSE:
                code = int.from_bytes(payload[:2], "big") if len(payload) >= 2 else 1000
                self._connection.send_close(code, payload[2:].decode("utf-8", errors="replace"))
            else:
                raise ValueError(f"not a WebSocket opcode this server sends: {opcode}")
        except InvalidState as e:
            raise WebSocketClosed() from e
        self._flush()

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
            if self._connection.state is State.OPEN:
                self._connection.send_close(code)
            self._flush()
        except (OSError, InvalidState):
            pass

    def receive(self) -> tuple[int, bytes]:
        """Read one message (opcode, payload), answering pings; WebSocketClosed at the end."""
        while True:
            while self._frames:
                message = self._take(self._frames.popleft())
                if message is not None:
                    return message
            if self._connection.state is not State.OPEN:
                self.closed = True
                raise WebSocketClosed()
            data = self._read_once()
            if not data and not self._frames:
                self.closed = True
                raise WebSocketClosed()

    def _read_once(self) -> bytes:
        """Read what the client has sent (b"" at its end), queue the frames it completes and answer its pings."""
        data = self.reader.read1(READ_SIZE)  # type: ignore[attr-defined]
        if data:
            self._connection.receive_data(data)
        else:
            self._connection.receive_eof()
        self._frames.extend(self._connection.events_received())
        try:
            self._flush()
        except OSError:
            pass
        return data

    def receive_available(self) -> list[tuple[int, bytes]]:
        """Read once what the client has sent, answering its pings, and return the messages that completed (none for a
        ping alone: unlike `receive`, it does not wait for the next message); WebSocketClosed at the end."""
        data = self._read_once()
        messages = []
        while self._frames:
            message = self._take(self._frames.popleft())
            if message is not None:
                messages.append(message)
        if not data:
            self.closed = True
            raise WebSocketClosed()
        return messages

    def _take(self, frame: Frame) -> tuple[int, bytes] | None:
        """The message a frame completes, or None (a fragment, a ping, a pong); WebSocketClosed on close."""
        if frame.opcode is Opcode.CLOSE:
            self.closed = True
            raise WebSocketClosed()
        if frame.opcode in (Opcode.PING, Opcode.PONG):
            return None                 # the protocol has queued the pong already
        if frame.opcode is not Opcode.CONT:
            self._fragment_opcode = int(frame.opcode)
            self._fragments = []
        self._fragments.append(bytes(frame.data))
        if not frame.fin:
            return None
        payload, self._fragments = b"".join(self._fragments), []
        return self._fragment_opcode, payload
