"""Create nfacct counters in a namespace (what kube-proxy does before it writes `-m nfacct` rules), over netlink."""
from __future__ import annotations

import socket
import struct
import threading

from labsupport.netns.namespaces import KernelError, inside

NETLINK_NETFILTER = 12
NFNL_SUBSYS_ACCT = 7
NFNL_MSG_ACCT_NEW = 0
NFACCT_NAME = 1
NLM_F_REQUEST, NLM_F_ACK, NLM_F_EXCL, NLM_F_CREATE = 0x1, 0x4, 0x200, 0x400
NLMSG_ERROR = 2
EEXIST = 17
#: The counters kube-proxy's iptables mode counts with.
KUBE_PROXY_COUNTERS = ("ct_state_invalid_dropped_pkts", "localhost_nps_accepted_pkts")


def _message(name: str, seq: int) -> bytes:
    value = name.encode() + b"\0"
    attr = struct.pack("=HH", 4 + len(value), NFACCT_NAME) + value
    attr += b"\0" * (-len(attr) % 4)
    body = struct.pack("=BBH", socket.AF_UNSPEC, 0, 0) + attr
    kind = (NFNL_SUBSYS_ACCT << 8) | NFNL_MSG_ACCT_NEW
    flags = NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL
    return struct.pack("=IHHII", 16 + len(body), kind, flags, seq, 0) + body


def create_counters(ns: str, names: tuple[str, ...] = KUBE_PROXY_COUNTERS) -> None:
    """Create the named nfacct counters in namespace `ns` (existing ones are kept)."""
    errors: list[BaseException] = []

    def work() -> None:
        try:
            with inside(ns):
                sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_NETFILTER)
            with sock:
                sock.bind((0, 0))
                for seq, name in enumerate(names, 1):
                    sock.send(_message(name, seq))
                    reply = sock.recv(4096)
                    _, kind = struct.unpack_from("=IH", reply)
                    if kind == NLMSG_ERROR:
                        (code,) = struct.unpack_from("=i", reply, 16)
                        if code not in (0, -EEXIST):
                            raise KernelError(f"creating the nfacct counter {name} in {ns} failed (errno {-code})")
        except BaseException as e:  # noqa: BLE001 - handed to the caller's thread
            errors.append(e)

    thread = threading.Thread(target=work, name="lsk-nfacct")
    thread.start()
    thread.join()
    if errors:
        raise errors[0]
