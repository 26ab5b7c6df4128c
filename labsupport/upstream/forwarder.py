"""Make a loopback port of the host reachable on the same loopback port inside a network namespace.

The embedded API server listens on the host's 127.0.0.1; a program in a namespace of ours reaches it at the same
address, so the one kubeconfig (and the server certificate, issued for 127.0.0.1) is valid in both places. The
listening socket is made inside the namespace and every connection is relayed to the host's loopback: no traffic
leaves loopback.
"""
from __future__ import annotations

import selectors
import socket
import threading

from labsupport.netns.namespaces import inside

CHUNK = 65536


class LoopbackForwarder:
    """Relay connections to 127.0.0.1:`port` inside namespace `ns` to 127.0.0.1:`port` of the host."""

    def __init__(self, ns: str, port: int, target_port: int | None = None):
        self.ns = ns
        self.port = port
        self.target_port = target_port or port
        self._listener: socket.socket | None = None
        self._stopping = threading.Event()
        self._threads: list[threading.Thread] = []
        self._open: set[socket.socket] = set()
        self._lock = threading.Lock()

    def start(self) -> "LoopbackForwarder":
        """Listen inside the namespace and relay in background threads."""
        made: list[socket.socket] = []
        errors: list[BaseException] = []

        def listen() -> None:
            try:
                with inside(self.ns):
                    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                sock.bind(("127.0.0.1", self.port))
                sock.listen(64)
                sock.settimeout(0.2)
                made.append(sock)
            except BaseException as e:  # noqa: BLE001 - handed to the caller's thread
                errors.append(e)

        # a thread of its own enters the namespace, so the caller's thread never changes namespace
        maker = threading.Thread(target=listen, name="lsk-forward-listen")
        maker.start()
        maker.join()
        if errors:
            raise errors[0]
        self._listener = made[0]
        thread = threading.Thread(target=self._accept, name=f"lsk-forward-{self.ns}", daemon=True)
        thread.start()
        self._threads.append(thread)
        return self

    def stop(self) -> None:
        """Stop listening and close every relayed connection."""
        self._stopping.set()
        for thread in self._threads:
            thread.join(timeout=2)
        self._threads.clear()
        if self._listener is not None:
            self._listener.close()
            self._listener = None
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
                client, _ = self._listener.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            try:
                upstream = socket.create_connection(("127.0.0.1", self.target_port), timeout=5)
            except OSError:
                client.close()
                continue
            with self._lock:
                self._open.update((client, upstream))
            threading.Thread(target=self._relay, args=(client, upstream), daemon=True,
                             name="lsk-forward-relay").start()

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
