"""The real CoreDNS (kubernetes plugin) in a network namespace, reading the embedded API server.

Its Corefile is the cluster's own (the `coredns` ConfigMap) with what a namespace of ours needs: the kubernetes
plugin reads the embedded API server's kubeconfig, and the plugins that would send queries off the machine
(`forward`, and `loop`, which needs it) or rewrite the file at run time (`reload`) are left out.
"""
from __future__ import annotations

import os
import re
import shutil
import socket
import tempfile
import threading
import time
from typing import Any

from labsupport.control.dns import DNSReply
from labsupport.netns.namespaces import inside, run_in
from labsupport.upstream.binaries import BUILD_HINT, binary
from labsupport.upstream.kube_proxy import UpstreamError
from labsupport.upstream.process import NamespacedProcess

READY_PORT = 8181
START_TIMEOUT = 60.0
LEFT_OUT = ("forward", "loop", "reload")


def corefile(config_map: dict, kubeconfig: str) -> str:
    """The cluster's Corefile adapted to a namespace: kubeconfig for the kubernetes plugin, no upstream queries."""
    try:
        text = config_map["data"]["Corefile"]
    except (KeyError, TypeError) as e:
        raise UpstreamError("the coredns ConfigMap (kube-system/coredns) has no data.Corefile") from e
    out, skipping = [], 0
    for line in text.splitlines():
        word = line.strip().split(" ")[0] if line.strip() else ""
        if skipping:
            skipping += line.count("{") - line.count("}")
            continue
        if word in LEFT_OUT:
            skipping = line.count("{") - line.count("}")
            continue
        out.append(line)
        if word == "kubernetes" and line.rstrip().endswith("{"):
            indent = re.match(r"\s*", line).group(0)
            out.append(f"{indent}   kubeconfig {kubeconfig} labsupport")
    return "\n".join(out) + "\n"


class UpstreamCoreDNS:
    """The real CoreDNS serving the cluster's zone on port 53 of namespace `ns`."""

    def __init__(self, ns: str, config_map: dict, kubeconfig: str):
        self.ns = ns
        self.config_map = config_map
        self.kubeconfig = kubeconfig
        self.dir: str | None = None
        self.process: NamespacedProcess | None = None

    def start(self, timeout: float = START_TIMEOUT) -> "UpstreamCoreDNS":
        """Start CoreDNS and return once its /ready says the kubernetes plugin has synced."""
        path = binary("coredns")
        if path is None:
            raise UpstreamError(f"the real CoreDNS is not built: {BUILD_HINT}")
        self.dir = tempfile.mkdtemp(prefix="labsupport-coredns-")
        conf = os.path.join(self.dir, "Corefile")
        with open(conf, "w") as fh:
            fh.write(corefile(self.config_map, self.kubeconfig))
        self.process = NamespacedProcess(self.ns, [path, "-conf", conf], os.path.join(self.dir, "coredns.log"))
        deadline = time.monotonic() + timeout
        while True:
            if self.process.poll() is not None:
                log = self.log()
                self.remove()
                raise UpstreamError(f"CoreDNS in {self.ns} exited; its log ends:\n" + log[-3000:])
            ready = run_in(self.ns, ["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "2",
                                     f"http://127.0.0.1:{READY_PORT}/ready"], timeout=10)
            if ready.stdout.strip() == "200" and self._answers():
                return self
            if time.monotonic() > deadline:
                log = self.log()
                self.remove()
                raise UpstreamError(f"CoreDNS in {self.ns} was not ready within {timeout:g} s; its log ends:\n"
                                    + log[-3000:])
            time.sleep(0.1)

    def _answers(self) -> bool:
        """Whether a first question gets an answer: /ready can report the plugin ready a moment before the
        server answers queries for its zone."""
        try:
            self.ask("kubernetes.default.svc.cluster.local.", "A")
        except UpstreamError:
            return False
        return True

    def log(self) -> str:
        """What CoreDNS has logged."""
        return self.process.log() if self.process is not None and self.dir else ""

    def remove(self) -> None:
        """Stop CoreDNS and delete its folder."""
        if self.process is not None:
            self.process.stop()       # the log stays readable until the folder is removed
        if self.dir:
            shutil.rmtree(self.dir, ignore_errors=True)
            self.dir = None

    def ask(self, qname: str, qtype: str) -> DNSReply:
        """One question over UDP to 127.0.0.1:53 inside the namespace, as a DNSReply (zone-file lines)."""
        from dnslib import QTYPE, RCODE, DNSRecord
        query = DNSRecord.question(qname, qtype)
        query.header.rd = 1
        reply_box: list[Any] = []

        def work() -> None:
            try:
                with inside(self.ns):
                    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
                with sock:
                    sock.settimeout(5)
                    sock.sendto(query.pack(), ("127.0.0.1", 53))
                    reply_box.append(sock.recv(65535))
            except BaseException as e:  # noqa: BLE001 - handed to the caller's thread
                reply_box.append(e)

        thread = threading.Thread(target=work, name="lsk-dns-ask")
        thread.start()
        thread.join()
        if isinstance(reply_box[0], BaseException):
            raise UpstreamError(f"CoreDNS in {self.ns} did not answer {qname} {qtype}: {reply_box[0]}")
        reply = DNSRecord.parse(reply_box[0])

        def lines(section) -> list[str]:
            return [f"{rr.rname}\t{rr.ttl}\tIN\t{QTYPE[rr.rtype]}\t{rr.rdata.toZone()}" for rr in section]
        return DNSReply(RCODE[reply.header.rcode], lines(reply.rr), lines(reply.auth), lines(reply.ar))
