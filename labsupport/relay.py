"""Relay the byte streams of every connection a listening socket accepts to a connection made for it elsewhere.

Used where a program must reach a server it cannot reach directly: a loopback port inside a network namespace
relayed to the host's loopback (`labsupport.upstream.forwarder`), a graded kernel's loopback port relayed to the
lab server's unix socket, that socket relayed to the embedded API server. The relay copies bytes and nothing else
(TLS passes through end to end), and no traffic leaves the machine.
"""
from __future__ import annotations

import selectors
import socket
import threading
from typing import Callable

CHUNK = 65536


class SocketRelay:
    """Accept on `listener`; pipe each connection to a socket `connect()` opens, both ways, until either side ends."""

    def __init__(self, listener: socket.socket, connect: Callable[[], socket.socket], *, name: str = "relay"):
        self.listener = listener
        self.connect = connect
        self.name = name
        self._stopping = threading.Event()
        self._threads: list[threading.Thread] = []
        self._open: set[socket.socket] = set()
        self._lock = threading.Lock()

    def start(self) -> "SocketRelay":
        """Relay in background threads."""
        self.listener.settimeout(0.2)
        thread = threading.Thread(target=self._accept, name=f"lsk-{self.name}", daemon=True)
        thread.start()
        self._threads.append(thread)
        return self

    def stop(self) -> None:
        """Stop accepting and close every relayed connection."""
        self._stopping.set()
        for thread in self._threads:
            thread.join(timeout=2)
        self._threads.clear()
        try:
            self.listener.close()
        except OSError:
            pass
        with self._lock:
            for sock in self._open:
                try:
                    sock.close()
                except OSError:
                    pass
            self._open.clear()

    def _accept(self) -> None:
        while not self._stopping.is_set():
            try:
                client, _ = self.listener.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            try:
                upstream = self.connect()
            except OSError:
                client.close()
                continue
            with self._lock:
                self._open.update((client, upstream))
            threading.Thread(target=self._relay, args=(client, upstream), daemon=True,
                             name=f"lsk-{self.name}-conn").start()

    def _relay(self, a: socket.socket, b: socket.socket) -> None:
        for s in (a, b):
            s.setblocking(False)
        sel = selectors.DefaultSelector()
        sel.register(a, selectors.EVENT_READ, b)
        sel.register(b, selectors.EVENT_READ, a)
        try:
            while not self._stopping.is_set():
                for key, _ in sel.select(timeout=0.5):
                    try:
                        data = key.fileobj.recv(CHUNK)
                    except BlockingIOError:
                        continue
                    if not data:
                        return
                    key.data.setblocking(True)
                    key.data.sendall(data)
                    key.data.setblocking(False)
        except OSError:
            return
        finally:
            sel.close()
            with self._lock:
                for s in (a, b):
                    self._open.discard(s)
                    try:
                        s.close()
                    except OSError:
                        pass


def loopback_listener(port: int = 0) -> socket.socket:
    """A TCP socket listening on 127.0.0.1:`port` (0: a free port)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    sock.listen(64)
    return sock


__all__ = ["SocketRelay", "loopback_listener"]
