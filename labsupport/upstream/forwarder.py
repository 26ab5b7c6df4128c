"""Make a loopback port of the host reachable on the same loopback port inside a network namespace.

The embedded API server listens on the host's 127.0.0.1; a program in a namespace of ours reaches it at the same
address, so the one kubeconfig (and the server certificate, issued for 127.0.0.1) is valid in both places. The
listening socket is made inside the namespace and every connection is relayed to the host's loopback: no traffic
leaves loopback.
"""
from __future__ import annotations

import socket
import threading

from labsupport.netns.namespaces import inside
from labsupport.relay import SocketRelay, loopback_listener


class LoopbackForwarder:
    """Relay connections to 127.0.0.1:`port` inside namespace `ns` to 127.0.0.1:`port` of the host."""

    def __init__(self, ns: str, port: int, target_port: int | None = None):
        self.ns = ns
        self.port = port
        self.target_port = target_port or port
        self._relay: SocketRelay | None = None

    def start(self) -> "LoopbackForwarder":
        """Listen inside the namespace and relay in background threads."""
        made: list[socket.socket] = []
        errors: list[BaseException] = []

        def listen() -> None:
            try:
                with inside(self.ns):
                    made.append(loopback_listener(self.port))
            except BaseException as e:  # noqa: BLE001 - handed to the caller's thread
                errors.append(e)

        # a thread of its own enters the namespace, so the caller's thread never changes namespace
        maker = threading.Thread(target=listen, name="lsk-forward-listen")
        maker.start()
        maker.join()
        if errors:
            raise errors[0]
        self._relay = SocketRelay(made[0], lambda: socket.create_connection(("127.0.0.1", self.target_port),
                                                                            timeout=5),
                                  name=f"forward-{self.ns}").start()
        return self

    def stop(self) -> None:
        """Stop listening and close every relayed connection."""
        if self._relay is not None:
            self._relay.stop()
            self._relay = None
