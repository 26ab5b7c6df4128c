"""A lab server and its client: the embedded cluster in one process, the code that uses it in another.

`server` runs the cluster behind unix sockets (a student socket limited to the student role, a grader socket);
`client.RemoteBackend` is the backend `Lab()` uses when LABSUPPORT_LAB_SOCKET names a server's student socket.
"""
from labsupport.remote.client import RemoteBackend

#: The environment variable that points `Lab()` at a lab server's student socket.
SOCKET_ENV = "LABSUPPORT_LAB_SOCKET"

__all__ = ["RemoteBackend", "SOCKET_ENV"]
