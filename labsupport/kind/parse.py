"""Reading what a real node shows: iptables-save -c, nft, ipvsadm and /proc/net/ip_vs, and what apps reply.

The parsers of nslookup, curl and conntrack output, shared with `netns`, are in `labsupport.tool_output`.

Each parser turns the text into the objects the `sim` backend returns, so a lesson reads a real cluster the way it
reads the embedded one.
"""
from __future__ import annotations

import re
from dataclasses import dataclass


# --- what an app's reply reveals ------------------------------------------------------------------------------

def request_path(url: str) -> str:
    """The path of a request's URL (a URL without a scheme is taken as http://…)."""
    from urllib.parse import urlsplit
    return urlsplit(url if "://" in url or url.startswith("/") else f"http://{url}").path or "/"


def answering_pod(body: str, path: str | None = None) -> tuple[str | None, str | None]:
    """(pod name, client address) an app's reply reveals: echoserver's `Hostname:`/`client_address=` (its own
    fields, before anything of the request it echoes), agnhost's `/hostname` (a bare name) or `/clientip` (`ip:port`).
    When the request's `path` is known, a bare reply counts only from the path that makes it (agnhost's `/echo`
    replies with whatever it was sent). (None, None) for an app that says nothing about itself."""
    host = re.search(r"^Hostname:\s*(\S+)", body, re.M)
    client = re.search(r"^\s*client_address=(\S+)", body, re.M)
    if host or client:
        return (host.group(1) if host else None), (client.group(1) if client else None)
    text = body.strip()
    if path in (None, "/clientip") and (re.fullmatch(r"\d+\.\d+\.\d+\.\d+:\d+", text)
                                        or re.fullmatch(r"\[[0-9a-fA-F:]+\]:\d+", text)):
        return None, text.rsplit(":", 1)[0].strip("[]")
    if path in (None, "/hostname") and re.fullmatch(r"[a-z0-9]([-a-z0-9.]*[a-z0-9])?", text) and len(text) <= 253 \
            and "." not in text:
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


# --- kube-proxy's /metrics -------------------------------------------------------------------------------------

#: When kube-proxy last queued a sync of its rules (a Service or EndpointSlice change it must write).
SYNC_QUEUED = "kubeproxy_sync_proxy_rules_last_queued_timestamp_seconds"
#: When kube-proxy last finished writing its rules.
SYNC_DONE = "kubeproxy_sync_proxy_rules_last_timestamp_seconds"
_SAMPLE = re.compile(r"^([A-Za-z_:][\w:]*)(?:\{[^}]*\})?[ \t]+(\S+)", re.M)


def sync_marks(metrics: str) -> tuple[float, float] | None:
    """(last queued, last synced) from kube-proxy's Prometheus text, seconds since the epoch: the latest queued and
    the earliest synced over its IP families, so a family still behind counts as pending. None when either is absent
    (not kube-proxy's metrics)."""
    found: dict[str, list[float]] = {SYNC_QUEUED: [], SYNC_DONE: []}
    for m in _SAMPLE.finditer(metrics):
        if m.group(1) in found:
            try:
                found[m.group(1)].append(float(m.group(2)))
            except ValueError:
                continue
    if not found[SYNC_QUEUED] or not found[SYNC_DONE]:
        return None
    return max(found[SYNC_QUEUED]), min(found[SYNC_DONE])


# --- several curls in one command ----------------------------------------------------------------------------

#: A shell loop that runs one command ("$@") `$2` times, one after another, and frames each run as a line
#: `<boundary> <exit code>`, the command's output, a line `<boundary>`, its errors; a last `<boundary>` line ends it.
REPEAT_SCRIPT = r"""b="$1"; n="$2"; shift 2
d="$(mktemp -d)" || exit 125
i=0
while [ "$i" -lt "$n" ]; do
    i=$((i + 1))
    "$@" > "$d/out" 2> "$d/err"
    code=$?
    printf '\n%s %s\n' "$b" "$code"
    cat "$d/out"
    printf '\n%s\n' "$b"
    cat "$d/err"
done
printf '\n%s\n' "$b"
rm -rf "$d"
"""


def repeat_argv(argv: list[str], count: int, boundary: str) -> list[str]:
    """The command that runs `argv` `count` times in one shell (`REPEAT_SCRIPT`), framed by `boundary`."""
    return ["sh", "-c", REPEAT_SCRIPT, "sh", boundary, str(count), *argv]


def repeated_runs(stdout: str, boundary: str) -> list[tuple[int, str, str]]:
    """(exit code, output, errors) of each run `repeat_argv` framed, in order. A run counts once the next boundary
    line follows it: runs cut off by a timeout or a failed shell are left out, so the list may be shorter than the
    count asked for."""
    parts = stdout.split("\n" + boundary)
    runs = []
    for at in range(1, len(parts) - 2, 2):
        code, newline, output = parts[at].partition("\n")
        errors = parts[at + 1]
        if not newline or not code.strip().lstrip("-").isdigit() or not errors.startswith("\n"):
            break
        runs.append((int(code), output, errors[1:]))
    return runs
# --- kube-proxy's health server ---------------------------------------------------------------------------------

def _rfc3339(stamp: str) -> float | None:
    """Seconds since the epoch of an RFC 3339 time as Go writes it (nanoseconds, `Z` or an offset)."""
    from datetime import datetime
    m = re.fullmatch(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d+))?(Z|[+-]\d\d:\d\d)", str(stamp or "").strip())
    if not m:
        return None
    base, fraction, zone = m.groups()
    zone = "+00:00" if zone == "Z" else zone
    return datetime.fromisoformat(base + zone).timestamp() + (float("0." + fraction) if fraction else 0.0)


def proxy_sync_age(text: str) -> float | None:
    """Seconds since kube-proxy last wrote its rules, from its health server's answer (`/healthz` on port 10256):
    `status.<family>.lastUpdated` (the oldest over its IP families, so a family still behind counts) against its
    `currentTime`, both on the node's clock. None when the answer is not kube-proxy's or says neither.

    >>> proxy_sync_age('{"lastUpdated":"2026-12-06T10:00:09Z","currentTime":"2026-12-06T10:00:09.5Z",'
    ...                '"status":{"IPv4":{"lastUpdated":"2026-12-06T10:00:07.25Z","healthy":true}}}')
    2.25
    """
    import json
    try:
        doc = json.loads(text)
    except ValueError:
        return None
    if not isinstance(doc, dict):
        return None
    now = _rfc3339(doc.get("currentTime", ""))
    synced = [_rfc3339((family or {}).get("lastUpdated", "")) for family in (doc.get("status") or {}).values()
              if isinstance(family, dict)]
    if now is None or not synced or None in synced:
        return None
    return round(now - min(s for s in synced if s is not None), 6)
