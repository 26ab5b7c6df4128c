"""Reading what real tools print, once for every backend that runs them: nslookup, curl, conntrack and a process's
sockets in /proc.

Each parser turns the text into the result types of `labsupport.results`, so a lesson reads the kernel's answers
(`netns`) and a real cluster's (`kind`, `kube`) the way it reads the embedded one's.
"""
from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass, field

from labsupport.results import NslookupAnswer

# --- nslookup ------------------------------------------------------------------------------------------------

_CANT_FIND = re.compile(r"^\*\* server can't find (\S+?):? (NXDOMAIN|SERVFAIL|REFUSED|NOTIMP|FORMERR)\s*$")
_NO_ANSWER = re.compile(r"^\*\*\* Can't find (\S+?): No answer\s*$")
_BUSYBOX_ADDR = re.compile(r"^Address(?: \d+)?:\s+(\S+)")


def parse_nslookup(text: str, name: str = "") -> NslookupAnswer:
    """Read `nslookup <name>` output (BIND's, as in jessie-dnsutils, or busybox's) into an `NslookupAnswer`.

    Addresses are those printed after a `Name:` line (the server's own `Address:` line is skipped); the rcode is
    the one an error line names, SERVFAIL when no server could be reached, NOERROR otherwise."""
    addresses: list[str] = []
    rcode = "NOERROR"
    found_name = ""
    in_answer = False
    kept: list[str] = []
    for raw in text.splitlines():
        line = raw.rstrip()
        if line.startswith("command terminated with exit code"):
            continue
        kept.append(line)
        stripped = line.strip()
        if stripped.startswith("Name:"):
            in_answer = True
            parts = stripped.split(None, 1)
            if len(parts) > 1 and not found_name:
                found_name = parts[1].strip()
            continue
        m = _CANT_FIND.match(stripped)
        if m:
            if rcode == "NOERROR" and not addresses:
                rcode = m.group(2)
            found_name = found_name or m.group(1)
            continue
        m = _NO_ANSWER.match(stripped)
        if m:
            found_name = found_name or m.group(1)
            continue
        if "no servers could be reached" in stripped or "connection timed out" in stripped:
            rcode = "SERVFAIL"
            continue
        if in_answer:
            m = _BUSYBOX_ADDR.match(stripped)
            if m:
                address = m.group(1)
                if address not in addresses:
                    addresses.append(address)
    while kept and not kept[-1]:
        kept.pop()
    body = "\n".join(kept) + "\n" if kept else ""
    return NslookupAnswer(addresses, rcode, body, found_name or name)


# --- curl ----------------------------------------------------------------------------------------------------

CURL_MARK = "__labsupport_curl__"
CURL_WRITE_OUT = "\n" + CURL_MARK + " %{http_code} %{remote_ip} %{remote_port} %{local_ip} %{local_port}\n"


@dataclass
class CurlOutput:
    """One curl run read back: body, HTTP status, the addresses curl used, and its error line."""

    body: str
    status: int | None
    remote_ip: str | None = None
    remote_port: int | None = None
    local_ip: str | None = None
    local_port: int | None = None
    exit_code: int = 0
    error: str | None = None


def curl_argv(url: str, *, timeout: float = 10, headers: dict | None = None, curl: str = "curl") -> list[str]:
    """The curl command the real backends run: body to stdout, a marker line with status and addresses after it."""
    argv = [curl, "-sS", "--connect-timeout", f"{timeout:g}", "--max-time", f"{timeout + 5:g}",
            "-w", CURL_WRITE_OUT]
    for key, value in (headers or {}).items():
        argv += ["-H", f"{key}: {value}"]
    return argv + [url]


def parse_curl(stdout: str, stderr: str = "", exit_code: int = 0) -> CurlOutput:
    """Read the output of `curl_argv()`; a failed connection becomes curl's error line and exit code."""
    body, tail = stdout, ""
    at = stdout.rfind(CURL_MARK + " ")
    if at >= 0:
        body = stdout[:at]
        body = body[:-1] if body.endswith("\n") else body
        tail = stdout[at + len(CURL_MARK) + 1:]
    fields = tail.split()

    def number(i: int) -> int | None:
        return int(fields[i]) if len(fields) > i and fields[i].isdigit() and int(fields[i]) > 0 else None

    status = number(0)
    if at < 0 and exit_code == 0:
        status = 200  # a curl that ignores -w: exit 0 means an answer came, its status is not known
    remote_ip = fields[1] if len(fields) > 1 else None
    local_ip = fields[3] if len(fields) > 3 else None
    error = None
    if exit_code != 0:
        lines = [line for line in stderr.splitlines() if line.startswith("curl:")]
        error = lines[-1] if lines else (stderr.strip().splitlines() or [f"curl: ({exit_code}) failed"])[-1]
        if status is None:
            body = ""
    return CurlOutput(body, status, remote_ip, number(2), local_ip, number(4), exit_code, error)


# --- conntrack -L --------------------------------------------------------------------------------------------

@dataclass
class Tuple:
    """One direction of a tracked connection."""

    src: str
    dst: str
    sport: int | None = None
    dport: int | None = None


@dataclass
class ConntrackRecord:
    """One `conntrack -L` line: protocol, timeout, state, the original and reply tuples, flags."""

    protocol: str
    timeout: int
    state: str | None
    original: Tuple
    reply: Tuple
    flags: list[str] = field(default_factory=list)
    mark: int = 0
    line: str = ""

    @property
    def dnat(self) -> bool:
        """Whether the destination was rewritten (a Service address turned into a pod's)."""
        return self.reply.src != self.original.dst or self.reply.sport != self.original.dport

    @property
    def snat(self) -> bool:
        """Whether the source was rewritten (masquerade)."""
        return self.reply.dst != self.original.src or self.reply.dport != self.original.sport

    @property
    def endpoint(self) -> str:
        """Where the connection really went: the reply's source `ip:port`."""
        return f"{self.reply.src}:{self.reply.sport}" if self.reply.sport is not None else self.reply.src

    @property
    def seen_client(self) -> str:
        """The client address the server saw: the reply's destination."""
        return self.reply.dst


_KV = re.compile(r"(\w+)=(\S+)")


def parse_conntrack_line(line: str) -> ConntrackRecord | None:
    """One line of `conntrack -L` (plain or `-o extended`); None for summary and blank lines."""
    words = line.split()
    if not words or words[0] == "conntrack" or "flow entries" in line:
        return None
    if words[0] in ("ipv4", "ipv6") and len(words) > 2:
        words = words[2:]
    protocol, i = words[0], 1
    if i < len(words) and words[i].isdigit():
        i += 1
    timeout = int(words[i]) if i < len(words) and words[i].isdigit() else 0
    i += 1
    state = words[i] if i < len(words) and "=" not in words[i] and not words[i].startswith("[") else None
    tuples: list[dict[str, str]] = [{}]
    flags, mark = [], 0
    for word in words[i:]:
        if word.startswith("[") and word.endswith("]"):
            flags.append(word.strip("[]"))
            continue
        m = _KV.fullmatch(word)
        if not m:
            continue
        key, value = m.groups()
        if key == "mark":
            mark = int(value, 0)
            continue
        if key in ("src", "dst", "sport", "dport"):
            if key in tuples[-1]:
                tuples.append({})
            tuples[-1][key] = value
    if len(tuples) < 2 or "src" not in tuples[0] or "src" not in tuples[1]:
        return None

    def make(t: dict[str, str]) -> Tuple:
        return Tuple(t.get("src", ""), t.get("dst", ""), int(t["sport"]) if "sport" in t else None,
                     int(t["dport"]) if "dport" in t else None)

    return ConntrackRecord(protocol, timeout, state, make(tuples[0]), make(tuples[1]), flags, mark, line.rstrip())


def parse_conntrack(text: str) -> list[ConntrackRecord]:
    """Every entry of `conntrack -L` output."""
    return [r for r in (parse_conntrack_line(line) for line in text.splitlines()) if r is not None]


def conntrack_lines(text: str) -> list[str]:
    """The entry lines of `conntrack -L` output, without conntrack's summary line."""
    return [r.line for r in parse_conntrack(text)]


def conntrack_rewrites(line: str) -> list[str]:
    """The NAT a `conntrack -L` line records, in the model's words: `DNAT a:p -> b:q`, `SNAT a:p -> b:q`."""
    record = parse_conntrack_line(line)
    if record is None:
        return []
    o, r = record.original, record.reply
    out = []
    if record.dnat:
        out.append(f"DNAT {o.dst}:{o.dport} -> {r.src}:{r.sport}")
    if record.snat:
        out.append(f"SNAT {o.src}:{o.sport} -> {r.dst}:{r.dport}")
    return out


# --- /proc/net/tcp and a process's descriptors ----------------------------------------------------------------

#: The kernel's TCP states as /proc/net/tcp numbers them (include/net/tcp_states.h), named as `ss` names them.
TCP_STATES = {1: "ESTAB", 2: "SYN-SENT", 3: "SYN-RECV", 4: "FIN-WAIT-1", 5: "FIN-WAIT-2", 6: "TIME-WAIT",
              7: "UNCONN", 8: "CLOSE-WAIT", 9: "LAST-ACK", 10: "LISTEN", 11: "CLOSING", 12: "NEW-SYN-RECV"}


@dataclass(frozen=True)
class TcpSocket:
    """One line of /proc/net/tcp or /proc/net/tcp6: the socket's two ends, its state and its inode."""

    local_ip: str
    local_port: int
    remote_ip: str
    remote_port: int
    state: str
    inode: int


def _proc_address(text: str) -> tuple[str, int]:
    """An `ADDR:PORT` of /proc/net/tcp: the address in hex, 32-bit words in the host's (little-endian) order."""
    addr, _, port = text.partition(":")
    if len(addr) not in (8, 32) or not port:
        raise ValueError(f"not an address of /proc/net/tcp: {text!r}")
    raw = b"".join(bytes.fromhex(addr[i:i + 8])[::-1] for i in range(0, len(addr), 8))
    ip = ipaddress.ip_address(raw)
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return str(ip), int(port, 16)


def parse_proc_net_tcp(text: str) -> list[TcpSocket]:
    """Every socket listed in /proc/net/tcp and /proc/net/tcp6 text (header lines and other lines skipped)."""
    sockets = []
    for line in text.splitlines():
        words = line.split()
        if len(words) < 10 or not words[0].rstrip(":").isdigit():
            continue
        try:
            local, remote = _proc_address(words[1]), _proc_address(words[2])
            state, inode = int(words[3], 16), int(words[9])
        except ValueError:
            continue
        sockets.append(TcpSocket(local[0], local[1], remote[0], remote[1], TCP_STATES.get(state, str(state)), inode))
    return sockets


_SOCKET_LINK = re.compile(r"socket:\[(\d+)\]")


def socket_inodes(text: str) -> list[int]:
    """The socket inodes in `ls -l /proc/<pid>/fd` (or `readlink`) output: each `socket:[N]` link, in order."""
    return [int(m.group(1)) for m in _SOCKET_LINK.finditer(text)]


def process_socket(fd_listing: str, tcp_tables: str) -> TcpSocket | None:
    """The TCP socket a process holds, from its descriptors (`ls -l /proc/<pid>/fd`) and its network namespace's
    /proc/net/tcp and tcp6; None when it holds none (a process holding several gets its first, by descriptor)."""
    by_inode = {s.inode: s for s in parse_proc_net_tcp(tcp_tables)}
    return next((by_inode[i] for i in socket_inodes(fd_listing) if i in by_inode), None)


__all__ = ["parse_nslookup", "CurlOutput", "curl_argv", "parse_curl", "CURL_MARK", "ConntrackRecord", "Tuple",
           "parse_conntrack_line", "parse_conntrack", "conntrack_lines", "conntrack_rewrites", "TcpSocket",
           "TCP_STATES", "parse_proc_net_tcp", "socket_inodes", "process_socket"]
