"""The exec/attach WebSocket over a socket pair: frames a real client sends are read, ours reach it, closes end it."""
from __future__ import annotations

import json
import socket

import pytest
from websockets.client import ClientProtocol
from websockets.frames import Opcode
from websockets.protocol import State
from websockets.uri import parse_uri

from labsupport.apiserver.websocket import ERROR, STDOUT, WebSocket, WebSocketClosed, accept_key, choose_protocol
from labsupport.errors import LabError


class Peer:
    """The client end: a sans-I/O client protocol (it masks its frames, as kubectl does) on one socket."""

    def __init__(self, sock: socket.socket):
        self.sock = sock
        self.protocol = ClientProtocol(parse_uri("ws://127.0.0.1/exec"), state=State.OPEN)

    def push(self) -> None:
        for chunk in self.protocol.data_to_send():
            if chunk:
                self.sock.sendall(chunk)

    def frames(self) -> list:
        got = []
        while not got:
            data = self.sock.recv(65536)
            if not data:
                self.protocol.receive_eof()
                return list(self.protocol.events_received())
            self.protocol.receive_data(data)
            got = list(self.protocol.events_received())
        return got


@pytest.fixture
def pair():
    server_sock, client_sock = socket.socketpair()
    server_sock.settimeout(5)
    client_sock.settimeout(5)
    reader = server_sock.makefile("rb")
    writer = server_sock.makefile("wb", buffering=0)
    ws = WebSocket(reader, writer, "v5.channel.k8s.io")
    try:
        yield ws, Peer(client_sock)
    finally:
        reader.close()
        writer.close()
        server_sock.close()
        client_sock.close()


def test_handshake_helpers():
    assert accept_key("dGhlIHNhbXBsZSBub25jZQ==") == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="     # RFC 6455, section 1.3
    assert choose_protocol("v4.channel.k8s.io, v5.channel.k8s.io") == "v5.channel.k8s.io"
    assert choose_protocol("channel.k8s.io") == "channel.k8s.io"
    assert choose_protocol("nope") is None and choose_protocol("") is None


def test_reads_masked_messages_fragments_and_answers_pings(pair):
    ws, peer = pair
    peer.protocol.send_binary(bytes([0]) + b"ls -l\n")
    peer.protocol.send_ping(b"are you there")
    peer.protocol.send_text(b"part one, ", fin=False)
    peer.protocol.send_continuation(b"part two", fin=True)
    peer.push()
    assert ws.receive() == (2, b"\x00ls -l\n")
    assert ws.receive() == (1, b"part one, part two")
    (pong,) = peer.frames()
    assert pong.opcode is Opcode.PONG and pong.data == b"are you there"


def test_what_is_available_is_read_without_waiting_for_more(pair):
    """A ping alone (kubectl's heartbeat while attached) is answered, and the read returns: no message, no wait."""
    ws, peer = pair
    peer.protocol.send_ping(b"heartbeat")
    peer.push()
    assert ws.receive_available() == []
    (pong,) = peer.frames()
    assert pong.opcode is Opcode.PONG and pong.data == b"heartbeat"
    peer.protocol.send_binary(bytes([4]) + b'{"Width":80,"Height":24}')
    peer.push()
    assert ws.receive_available() == [(2, b'\x04{"Width":80,"Height":24}')]
    peer.protocol.send_close()
    peer.push()
    with pytest.raises(WebSocketClosed):
        ws.receive_available()


def test_channel_frames_reach_the_client(pair):
    ws, peer = pair
    ws.send_channel(STDOUT, b"hello\n")
    ws.send_channel(STDOUT, b"")           # nothing to say: no frame
    ws.send_status(2, ["ls", "/nope"])
    frames = peer.frames()
    while len(frames) < 2:
        frames += peer.frames()
    assert [f.opcode for f in frames] == [Opcode.BINARY, Opcode.BINARY]
    assert frames[0].data == b"\x01hello\n"
    assert frames[1].data[0] == ERROR
    status = json.loads(frames[1].data[1:])
    assert status["reason"] == "NonZeroExitCode"
    assert status["message"].endswith("error executing command [ls /nope], exit code 2")


def test_close_from_the_client_ends_the_stream(pair):
    ws, peer = pair
    peer.protocol.send_close(1000)
    peer.push()
    with pytest.raises(WebSocketClosed):
        ws.receive()
    (reply,) = peer.frames()
    assert reply.opcode is Opcode.CLOSE
    assert ws.closed
    with pytest.raises(WebSocketClosed):
        ws.send_channel(STDOUT, b"too late")


def test_close_from_the_server_is_sent_once(pair):
    ws, peer = pair
    ws.close()
    ws.close()
    (frame,) = peer.frames()
    assert frame.opcode is Opcode.CLOSE and frame.data[:2] == (1000).to_bytes(2, "big")


def test_an_unmasked_client_frame_is_refused(pair):
    ws, peer = pair
    peer.sock.sendall(b"\x82\x03abc")      # an unmasked client frame breaks RFC 6455
    with pytest.raises(WebSocketClosed):
        ws.receive()
    (refusal,) = peer.frames()
    assert refusal.opcode is Opcode.CLOSE and int.from_bytes(refusal.data[:2], "big") == 1002


def test_end_of_input_is_a_close(pair):
    ws, peer = pair
    peer.sock.shutdown(socket.SHUT_WR)
    with pytest.raises(WebSocketClosed) as err:
        ws.receive()
    assert isinstance(err.value, LabError)
