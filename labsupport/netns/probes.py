"""The kubelet's probes for real: httpGet and tcpSocket probes sent from the pod's node namespace to the pod's IP."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from labsupport.control.kubelet import PROBE_USER_AGENT
from labsupport.netns.client import read_http_response
from labsupport.netns.pods import PodServers

if TYPE_CHECKING:
    from labsupport.control.kubelet import Kubelet


class KernelProber:
    """Answers the kubelet's httpGet/tcpSocket probes with real connections; exec probes stay with the model."""

    def __init__(self, pods: PodServers, kubelet: "Kubelet"):
        self.pods = pods
        self.kubelet = kubelet

    def probe(self, pod: dict, runtime: Any, app: Any, probe: dict) -> tuple[bool, str] | None:
        """(passed, the kubelet's message) of one probe, or None to let the model answer."""
        if self.pods.closed:
            return None
        kind = "httpGet" if "httpGet" in probe else "tcpSocket" if "tcpSocket" in probe else None
        if kind is None:
            return None
        self.pods.apply_changes()
        box = self.pods.sandboxes.get(runtime.uid)
        if box is None or runtime.ip is None:
            return None
        port = self.kubelet.resolve_port(pod, probe[kind].get("port"))
        if port is None:
            return None
        ip = runtime.ip
        path = probe[kind].get("path", "/")
        url = f"http://{ip}:{port}{path}"
        topology = self.pods.topology
        sock = topology.socket_in(topology.node_ns[box.node])
        sock.settimeout(float(probe.get("timeoutSeconds", 1)))
        try:
            try:
                sock.connect((ip, port))
            except ConnectionRefusedError:
                refused = f"dial tcp {ip}:{port}: connect: connection refused"
                return False, (f'Get "{url}": {refused}' if kind == "httpGet" else refused)
            except OSError:
                return False, (f'Get "{url}": context deadline exceeded '
                               "(Client.Timeout exceeded while awaiting headers)")
            if kind == "tcpSocket":
                return True, ""
            sock.sendall(f"GET {path} HTTP/1.1\r\nHost: {ip}:{port}\r\nUser-Agent: {PROBE_USER_AGENT}\r\n"
                         "Accept: */*\r\nConnection: close\r\n\r\n".encode())
            try:
                status, _ = read_http_response(sock)
            except OSError:
                status = None
            if status is None:
                return False, f'Get "{url}": EOF'
            return 200 <= status < 400, f"HTTP probe failed with statuscode: {status}"
        finally:
            sock.close()


__all__ = ["KernelProber"]
