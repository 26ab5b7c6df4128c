"""Reading what real tools print on a real node or pod: nslookup, curl, iptables-save -c, nft, ipvsadm, conntrack.

Each parser turns the text into the objects the `sim` backend returns, so a lesson reads a real cluster the way it
reads the embedded one.
"""
from __future__ import annotations

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


def answering_pod(body: str) -> tuple[str | None, str | None]:
    """(pod name, client address) an app's reply reveals: echoserver's `Hostname:`/`client_address=`, agnhost's
    `/hostname` (a bare name) or `/clientip` (`ip:port`). (None, None) for an app that says nothing about itself."""
    host = re.search(r"^Hostname:\s*(\S+)", body, re.M)
    client = re.search(r"client_address=(\S+)", body)
    if host or client:
        return (host.group(1) if host else None), (client.group(1) if client else None)
    text = body.strip()
    if re.fullmatch(r"\d+\.\d+\.\d+\.\d+:\d+", text) or re.fullmatch(r"\[[0-9a-fA-F:]+\]:\d+", text):
        return None, text.rsplit(":", 1)[0].strip("[]")
    if re.fullmatch(r"[a-z0-9]([-a-z0-9.]*[a-z0-9])?", text) and len(text) <= 253 and "." not in text:
        return text, None
    return None, None


# --- iptables-save -c ----------------------------------------------------------------------------------------

_COUNTED = re.compile(r"^\[(\d+):(\d+)\]\s+(-A\s+(\S+)\s+.*)$")
_POLICY = re.compile(r"^(:\S+\s+\S+)\s+\[(\d+):(\d+)\]\s*$")


@dataclass
class RuleCounter:
    """How many packets and bytes one rule matched (`iptables-save -c`, `nft … counter`, `ipvsadm --stats`)."""

    table: str
    chain: str
    rule: str
    packets: int
    bytes: int


def strip_iptables_counters(text: str) -> tuple[str, list[RuleCounter]]:
    """Split `iptables-save -c` output into plain `iptables-save` text and the counter of every rule."""
    out, counters = [], []
    table = ""
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("*"):
            table = stripped[1:]
        m = _COUNTED.match(stripped)
        if m:
            packets, size, rule, chain = m.groups()
            counters.append(RuleCounter(table, chain, rule, int(packets), int(size)))
            out.append(rule)
            continue
        m = _POLICY.match(stripped)
        if m:
            out.append(m.group(1) + " [0:0]")
            continue
        out.append(line)
    return "\n".join(out) + ("\n" if text.endswith("\n") else ""), counters


# --- nft list ruleset ----------------------------------------------------------------------------------------

_NFT_COUNTER = re.compile(r"\bcounter packets (\d+) bytes (\d+)")


def nft_counters(text: str) -> list[RuleCounter]:
    """The counters of every nft rule that has one (kube-proxy's rules carry none unless nfacct is on)."""
    counters, table, chain = [], "", ""
    for line in text.splitlines():
        stripped = line.strip()
        m = re.match(r"^table\s+(\S+)\s+(\S+)", stripped)
        if m:
            table = f"{m.group(1)} {m.group(2)}"
            continue
        m = re.match(r"^chain\s+(\S+)", stripped)
        if m:
            chain = m.group(1)
            continue
        m = _NFT_COUNTER.search(stripped)
        if m and chain:
            counters.append(RuleCounter(table, chain, stripped, int(m.group(1)), int(m.group(2))))
    return counters


# --- ipvsadm -------------------------------------------------------------------------------------------------

def _hex_ip(text: str) -> str:
    value = int(text, 16)
    return ".".join(str((value >> shift) & 0xFF) for shift in (24, 16, 8, 0))


def proc_ip_vs_to_ipvsadm(text: str) -> str:
    """Rewrite /proc/net/ip_vs (hex addresses) as `ipvsadm -Ln` prints it, for nodes without ipvsadm."""
    out = []
    for line in text.splitlines():
        stripped = line.strip()
        m = re.match(r"^(TCP|UDP|SCTP)\s+([0-9A-Fa-f]{8}):([0-9A-Fa-f]{4})\s+(\S+)(.*)$", stripped)
        if m:
            proto, ip, port, sched, rest = m.groups()
            out.append(f"{proto}  {_hex_ip(ip)}:{int(port, 16)} {sched}{rest.rstrip()}")
            continue
        m = re.match(r"^->\s+([0-9A-Fa-f]{8}):([0-9A-Fa-f]{4})\s+(\S+)\s+(\d+)\s+(\d+)\s+(\d+)$", stripped)
        if m:
            ip, port, method, weight, active, inactive = m.groups()
            out.append(f"  -> {_hex_ip(ip)}:{int(port, 16):<22} {method:<7} {weight:<6} {active:<10} {inactive}")
            continue
        if stripped.startswith("Prot LocalAddress"):
            out.append("Prot LocalAddress:Port Scheduler Flags")
        elif stripped.startswith("-> RemoteAddress"):
            out.append("  -> RemoteAddress:Port           Forward Weight ActiveConn InActConn")
        else:
            out.append(line)
    return "\n".join(out) + "\n"


def ipvs_stats(text: str) -> list[RuleCounter]:
    """Per virtual and real server counters from `ipvsadm -Ln --stats` (connections as `packets` is wrong: the
    RuleCounter holds InPkts and InBytes; the rule text names the service and the real server)."""
    counters, service = [], ""
    for line in text.splitlines():
        stripped = line.strip()
        m = re.match(r"^(TCP|UDP|SCTP)\s+(\S+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)", stripped)
        if m:
            service = f"{m.group(1)} {m.group(2)}"
            counters.append(RuleCounter("ipvs", service, service, int(m.group(4)), int(m.group(6))))
            continue
        m = re.match(r"^->\s+(\S+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)", stripped)
        if m and service and not stripped.startswith("-> RemoteAddress"):
            counters.append(RuleCounter("ipvs", service, f"{service} -> {m.group(1)}", int(m.group(3)),
                                        int(m.group(5))))
    return counters


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


# --- the kube-proxy part of a node's rules --------------------------------------------------------------------

def _rule_target(rule: str) -> str | None:
    words = rule.split()
    for i, word in enumerate(words):
        if word in ("-j", "--jump", "-g", "--goto") and i + 1 < len(words):
            return words[i + 1]
    return None


BUILTIN_CHAINS = ("PREROUTING", "INPUT", "FORWARD", "OUTPUT", "POSTROUTING")


def kube_proxy_iptables(text: str) -> str:
    """Keep kube-proxy's part of an `iptables-save` dump: its KUBE-* chains and the jumps into them.

    Docker's, kind's and the CNI's own chains (DOCKER_OUTPUT, KIND-MASQ-AGENT, CNI-…) go, as do comments and
    tables kube-proxy writes nothing into, so the text has the shape the `sim` backend shows."""
    text, _ = strip_iptables_counters(text)
    out: list[str] = []
    table: list[str] = []
    kept_rules = 0
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        if stripped.startswith("*"):
            table, kept_rules = [stripped], 0
            continue
        if stripped == "COMMIT":
            if kept_rules or any(d.startswith(":KUBE-") for d in table[1:]):
                table = [d for d in table if not d.startswith(":") or d[1:].split()[0] not in BUILTIN_CHAINS
                         or any(r.startswith(f"-A {d[1:].split()[0]} ") for r in table)]
                out.extend(table + ["COMMIT"])
            table = []
            continue
        if stripped.startswith(":"):
            name = stripped[1:].split()[0]
            if name in BUILTIN_CHAINS or (name.startswith("KUBE-") and "CANARY" not in name and "HINT" not in name):
                table.append(stripped)
            continue
        if stripped.startswith("-A "):
            chain = stripped.split()[1]
            target = _rule_target(stripped) or ""
            if chain.startswith("KUBE-") or target.startswith("KUBE-"):
                table.append(stripped)
                kept_rules += 1
    return "\n".join(out) + ("\n" if out else "")


def ipvs_bundle(ipvsadm: str, kube_ipvs0: str, ipset: str, iptables: str) -> str:
    """The IPVS-mode text in the sections the `sim` backend prints: ipvsadm -Ln, kube-ipvs0, ipsets, iptables."""
    return ("# ipvsadm -Ln\n" + ipvsadm.rstrip("\n") + "\n"
            + "\n# ip -brief addr show kube-ipvs0\n" + kube_ipvs0.strip() + "\n"
            + "\n# ipset list\n" + ipset.rstrip("\n") + "\n"
            + "\n# iptables-save\n" + kube_proxy_iptables(iptables))


def nft_table(text: str, family: str = "ip", name: str = "kube-proxy") -> str:
    """One table out of `nft list ruleset` output (by default kube-proxy's), or "" when it is absent."""
    lines = text.splitlines()
    out: list[str] = []
    depth = 0
    inside = False
    for line in lines:
        stripped = line.strip()
        if not inside and depth == 0 and stripped.startswith(f"table {family} {name} ") and stripped.endswith("{"):
            inside = True
        if inside:
            out.append(line)
        depth += line.count("{") - line.count("}")
        if inside and depth == 0:
            break
    return "\n".join(out) + ("\n" if out else "")
