"""IPVS mode: read `ipvsadm -Ln`, `ipset list` / `ipset save` and the remaining iptables rules.

The text is sectioned by header lines — `# ipvsadm -Ln`, `# ipset list` (or `# ipset save`),
`# iptables-save`, optionally `# ip addr show kube-ipvs0` (addresses bound to the dummy interface
count as local) — in any order; a bare iptables-save dump is accepted too. Virtual servers are
scheduled like the kernel's rr, wrr, lc, sh (and mh, treated as sh) with optional persistence.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from math import gcd
from typing import Optional

from labsupport.dataplane.ipset import parse_ipsets
from labsupport.dataplane.iptables_parse import STANDARD_JUMPS_IPVS, parse_iptables
from labsupport.dataplane.netfilter import (REJECT, Chain, Context, Packet, Program, RulesSyntaxError,
                                            ScriptedChoices, int_to_ip, ip_to_int)

SECTION = re.compile(r"^#\s*(ipvsadm|ipset|iptables-save|iptables|iptables-restore|ip)\b")
_ADDR = re.compile(r"\b(\d+\.\d+\.\d+\.\d+)(?:/\d+)?\b")
_VS = re.compile(r"^(TCP|UDP|SCTP)\s+(\d+\.\d+\.\d+\.\d+):(\d+)\s+(\S+)(.*)$")
_RS = re.compile(r"^\s+->\s+(\d+\.\d+\.\d+\.\d+):(\d+)\s+(\S+)\s+(\d+)\s+(\d+)\s+(\d+)\s*$")


@dataclass
class RealServer:
    """One backend of a virtual server."""

    ip: int
    port: int
    weight: int = 1
    method: str = "Masq"

    @property
    def address(self) -> str:
        """`"ip:port"`."""
        return f"{int_to_ip(self.ip)}:{self.port}"


@dataclass
class VirtualServer:
    """An IPVS virtual service: address, scheduler, persistence timeout and real servers."""

    proto: str
    ip: int
    port: int
    scheduler: str = "rr"
    persistent: Optional[float] = None
    reals: list = field(default_factory=list)

    @property
    def key(self) -> tuple:
        """(protocol, ip, port) — how packets find this service."""
        return (self.proto, self.ip, self.port)


def parse_ipvsadm(text: str, first_line: int = 1) -> dict[tuple, VirtualServer]:
    """Parse `ipvsadm -Ln` output into virtual servers keyed by (protocol, ip, port)."""
    services: dict[tuple, VirtualServer] = {}
    current: Optional[VirtualServer] = None
    for offset, line in enumerate(text.splitlines()):
        lineno = first_line + offset
        stripped = line.strip()
        if (not stripped or stripped.startswith("#") or stripped.startswith("IP Virtual Server")
                or stripped.startswith("Prot LocalAddress") or stripped.startswith("-> RemoteAddress")):
            continue
        m = _VS.match(stripped)
        if m:
            proto, ip, port, scheduler, rest = m.groups()
            current = VirtualServer(proto.lower(), ip_to_int(ip), int(port), scheduler)
            words = rest.split()
            if "persistent" in words:
                i = words.index("persistent")
                current.persistent = float(words[i + 1]) if i + 1 < len(words) else 300.0
            services[current.key] = current
            continue
        m = _RS.match(line)
        if m:
            if current is None:
                raise RulesSyntaxError("ipvsadm", lineno, line, "a real server before any virtual server")
            ip, port, method, weight, _, _ = m.groups()
            current.reals.append(RealServer(ip_to_int(ip), int(port), int(weight), method))
            continue
        if stripped.startswith("FWM "):
            current = None
            continue
        raise RulesSyntaxError("ipvsadm", lineno, line, "not an `ipvsadm -Ln` line")
    return services


def split_sections(text: str) -> dict[str, tuple[str, int]]:
    """Cut IPVS-mode text into its sections: name → (text, first line number)."""
    sections: dict[str, list] = {}
    starts: dict[str, int] = {}
    current = None
    lines = text.splitlines()
    for lineno, line in enumerate(lines, 1):
        m = SECTION.match(line.strip())
        if m:
            name = m.group(1)
            current = {"iptables": "iptables-save", "iptables-restore": "iptables-save"}.get(name, name)
            sections.setdefault(current, [])
            starts.setdefault(current, lineno + 1)
            continue
        if current is None:
            stripped = line.strip()
            if not stripped or stripped.startswith("#"):
                continue
            current = "iptables-save"
            sections.setdefault(current, [])
            starts.setdefault(current, lineno)
        sections[current].append(line)
    return {k: ("\n".join(v), starts[k]) for k, v in sections.items()}


class IpvsTable:
    """The kernel's IPVS tables and schedulers, hooked into INPUT and OUTPUT."""

    def __init__(self, services: dict[tuple, VirtualServer]):
        self.services = services

    def handle(self, pkt: Packet, ctx: Context, new: bool) -> Optional[str]:
        """Schedule a new connection to a virtual server onto a real server (DNAT)."""
        if not new:
            return None
        vs = self.services.get((pkt.proto, pkt.dst, pkt.dport))
        if vs is None:
            return None
        live = [r for r in vs.reals if r.weight > 0]
        ctx.evaluated += 1
        if not live:
            ctx.hits.append((_IPVS_RULE(vs), "no destination available: ICMP port unreachable"))
            return REJECT
        if isinstance(ctx.choices, ScriptedChoices):
            real = live[ctx.choices.pick(len(live))]
        else:
            real = self._schedule(vs, live, pkt, ctx)
        ctx.dnat = (real.ip, real.port)
        pkt.dst, pkt.dport = real.ip, real.port
        ctx.ipvs_hook = (vs.key, real.ip, real.port)
        active = ctx.state.__dict__.setdefault("ipvs_active", {})
        active[ctx.ipvs_hook] = active.get(ctx.ipvs_hook, 0) + 1
        ctx.hits.append((_IPVS_RULE(vs), f"IPVS {vs.scheduler}: DNAT to {real.address}"))
        return None

    def release(self, ctx: Context, state) -> None:
        """Undo the active-connection count of a connection that was refused after scheduling."""
        if ctx.ipvs_hook is not None:
            active = state.__dict__.setdefault("ipvs_active", {})
            active[ctx.ipvs_hook] = max(0, active.get(ctx.ipvs_hook, 0) - 1)

    def _schedule(self, vs: VirtualServer, live: list, pkt: Packet, ctx: Context) -> RealServer:
        state = ctx.state.__dict__.setdefault("ipvs", {})
        if vs.persistent:
            persist = state.setdefault(("persist", vs.key), {})
            known = persist.get(pkt.src)
            if known is not None and known[1] >= ctx.now:
                for r in live:
                    if (r.ip, r.port) == known[0]:
                        persist[pkt.src] = (known[0], ctx.now + vs.persistent)
                        return r
        sched = vs.scheduler
        if sched == "rr":
            i = state.get(("rr", vs.key), -1)
            i = (i + 1) % len(live)
            state[("rr", vs.key)] = i
            real = live[i]
        elif sched == "wrr":
            real = self._wrr(state, vs, live)
        elif sched in ("lc", "wlc", "sed", "nq"):
            active = ctx.state.__dict__.setdefault("ipvs_active", {})
            real = min(live, key=lambda r: (active.get((vs.key, r.ip, r.port), 0) / r.weight))
        elif sched in ("sh", "mh", "dh"):
            table = state.get(("sh", vs.key, len(live)))
            if table is None:
                table = []
                while len(table) < 256:
                    for r in live:
                        table.extend([r] * r.weight)
                table = table[:256]
                state[("sh", vs.key, len(live))] = table
            key = pkt.dst if sched == "dh" else pkt.src
            real = table[((key * 2654435761) & 0xFFFFFFFF) >> 24]
        else:
            real = live[ctx.choices.pick(len(live))]
        if vs.persistent:
            state.setdefault(("persist", vs.key), {})[pkt.src] = ((real.ip, real.port), ctx.now + vs.persistent)
        return real

    def _wrr(self, state: dict, vs: VirtualServer, live: list) -> RealServer:
        # The kernel's wrr: walk the list, lowering the current weight by the gcd at each wrap.
        i, cw = state.get(("wrr", vs.key), (-1, 0))
        weights = [r.weight for r in live]
        g = 0
        for w in weights:
            g = gcd(g, w)
        top = max(weights)
        while True:
            i = (i + 1) % len(live)
            if i == 0:
                cw -= g
                if cw <= 0:
                    cw = top
            if weights[i] >= cw:
                state[("wrr", vs.key)] = (i, cw)
                return live[i]


class _IPVS_RULE:
    """A stand-in rule so IPVS scheduling shows up in a packet story like a matched rule."""

    __slots__ = ("table", "chain", "text", "stmts")

    def __init__(self, vs: VirtualServer):
        self.table = "ipvs"
        self.chain = f"{vs.proto.upper()} {int_to_ip(vs.ip)}:{vs.port}"
        self.text = f"{vs.proto.upper()}  {int_to_ip(vs.ip)}:{vs.port} {vs.scheduler}" + (
            f" persistent {int(vs.persistent)}" if vs.persistent else "")
        self.stmts = ()


def parse_ipvs_bundle(text: str) -> Program:
    """Parse IPVS-mode text (sections for ipvsadm, ipset, iptables-save) into a `Program`."""
    sections = split_sections(text)
    services = parse_ipvsadm(*sections["ipvsadm"]) if "ipvsadm" in sections else {}
    ipsets = parse_ipsets(*sections["ipset"]) if "ipset" in sections else {}
    program = Program("ipvs")
    dummy = {ip_to_int(a) for a in _ADDR.findall(sections["ip"][0])} if "ip" in sections else set()
    program.extra_local = frozenset({vs.ip for vs in services.values()} | dummy)
    ipt_text, first = sections.get("iptables-save", ("", 1))
    parse_iptables(ipt_text, what="iptables-save", first_line=first, program=program, ipsets=ipsets,
                   jumps=STANDARD_JUMPS_IPVS)
    program.ipvs = IpvsTable(services)
    program.ipsets = ipsets  # type: ignore[attr-defined]
    for hook, priority in (("input", 98), ("output", -98)):
        chain = Chain("IPVS", "ipvs", hook=hook, priority=priority, kind="ipvs")
        program.hooks[hook].append(chain)
    program.finish()
    return program


__all__ = ["RealServer", "VirtualServer", "IpvsTable", "parse_ipvsadm",
           "split_sections", "parse_ipvs_bundle"]
