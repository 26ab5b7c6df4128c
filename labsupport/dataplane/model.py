"""Where a connection goes on a node: netfilter semantics interpreted over kube-proxy's rule text.

`trace_packet` answers upstream's question for a new connection (every random branch explored);
`NodeDatapath` carries concrete connections with conntrack, affinity state and IPVS schedulers.

>>> from labsupport.dataplane.model import trace_packet
>>> rules = '''*nat
... :KUBE-SERVICES - [0:0]
... :KUBE-SEP-A - [0:0]
... -A KUBE-SERVICES -d 10.96.0.7 -p tcp -m tcp --dport 80 -j KUBE-SEP-A
... -A KUBE-SEP-A -p tcp -m tcp -j DNAT --to-destination 10.244.1.7:8080
... COMMIT'''
>>> trace_packet("iptables", rules, ["172.18.0.2"], "10.244.2.5", "10.96.0.7", 80).endpoints
['10.244.1.7:8080']
"""
from __future__ import annotations

import random
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Iterable, Optional

from labsupport.dataplane import netfilter as nf
from labsupport.dataplane.netfilter import (ACCEPT, Context, FirstSeen, Hit, Packet, Program, RandomChoices,
                                            ScriptedChoices, State, describe, int_to_ip, ip_to_int, proto_name)
from labsupport.errors import LabError, UnknownProxyMode
from labsupport.shape import PROXY_MODES

MAX_PATHS = 100_000
NEW = frozenset({"NEW"})
NEW_DNAT = frozenset({"NEW", "DNAT"})
ESTABLISHED = frozenset({"ESTABLISHED"})
ESTABLISHED_DNAT = frozenset({"ESTABLISHED", "DNAT"})
TIMEOUTS = {"tcp": 86400.0, "udp": 30.0, "sctp": 432000.0}
#: How long a TCP connection that ended stays tracked, by how it ended (the kernel's nf_conntrack_tcp_timeout_*):
#: closed after an answer (TIME_WAIT), never answered (SYN_SENT), refused with a reset (CLOSE).
ENDED_TIMEOUTS = {"TIME_WAIT": 120.0, "SYN_SENT": 120.0, "CLOSE": 10.0}


def _check_mode(mode: str) -> str:
    if mode not in PROXY_MODES:
        raise UnknownProxyMode(mode, PROXY_MODES)
    return mode


def _local_set(local_ips: Iterable[str]) -> frozenset:
    out = set()
    for ip in local_ips or ():
        try:
            out.add(ip_to_int(str(ip).split("/")[0]))
        except ValueError:
            continue        # IPv6 node addresses do not take part in IPv4 rules
    return frozenset(out)


def compile_rules(mode: str, rules: str) -> Program:
    """Parse a node's rule text for `mode` into a compiled `Program`."""
    _check_mode(mode)
    if mode == "iptables":
        from labsupport.dataplane.iptables_parse import parse_iptables
        return parse_iptables(rules)
    if mode == "nftables":
        from labsupport.dataplane.nft_compiler import compile_ruleset
        from labsupport.dataplane.nft_ruleset import NftRuleset
        return compile_ruleset(NftRuleset.parse(rules))
    from labsupport.dataplane.ipvs_parse import parse_ipvs_bundle
    return parse_ipvs_bundle(rules)


_CACHE: "OrderedDict[tuple[str, str], Program]" = OrderedDict()


def _cached_program(mode: str, rules: str) -> Program:
    key = (mode, rules)
    program = _CACHE.get(key)
    if program is None:
        program = compile_rules(mode, rules)
        _CACHE[key] = program
        if len(_CACHE) > 16:
            _CACHE.popitem(last=False)
    else:
        _CACHE.move_to_end(key)
    return program


@dataclass
class TracePath:
    """One explored way through the rules: its verdict, DNAT target, masquerade flag and matched rules."""

    verdict: str
    endpoint: Optional[str]
    masquerade: bool
    hits: list
    rules_evaluated: int


@dataclass
class Trace:
    """What may happen to a new connection: every endpoint it may reach, masquerade, verdict, paths."""

    endpoints: list
    masquerade: bool
    verdict: str
    paths: list = field(default_factory=list)

    @property
    def rules_evaluated(self) -> int:
        """Rules evaluated on the first explored path (one new connection's cost)."""
        return self.paths[0].rules_evaluated if self.paths else 0


def _hits(raw: list) -> list:
    return [Hit(r.table, r.chain, r.text, describe(r, note)) for r, note in raw]


def _endpoint(dnat, dport: int) -> Optional[str]:
    """`"ip:port"` of a DNAT target; a DNAT without a port keeps the packet's destination port."""
    if dnat is None:
        return None
    ip, port = dnat
    return f"{int_to_ip(ip)}:{port if port is not None else dport}"


def explore(program: Program, local: frozenset, src: str, dst: str, dport: int, protocol: str = "tcp",
            sport: int = 40000) -> Trace:
    """Walk a new connection through `program`, exploring every random branch; see `trace_packet`."""
    src_i, dst_i, proto = ip_to_int(src), ip_to_int(dst), proto_name(protocol)
    local_src = src_i in local or src_i in program.extra_local or (src_i >> 24) == 127
    prefix: list[int] = []
    paths = []
    state = FirstSeen()
    while True:
        choices = ScriptedChoices(prefix)
        ctx = Context(choices, state, 0.0, local)
        pkt = Packet(src_i, dst_i, sport, int(dport), proto, NEW, local_src)
        verdict = program.traverse(pkt, ctx, True)
        paths.append(TracePath(verdict, _endpoint(ctx.dnat, pkt.dport), ctx.masq_marked or ctx.masqueraded,
                               _hits(ctx.hits), ctx.evaluated))
        taken, sizes = choices.taken, choices.sizes
        j = len(taken) - 1
        while j >= 0 and taken[j] + 1 >= sizes[j]:
            j -= 1
        if j < 0 or len(paths) >= MAX_PATHS:
            break
        prefix = taken[:j] + [taken[j] + 1]
    endpoints = sorted({p.endpoint for p in paths if p.endpoint})
    verdict = next((p.verdict for p in paths if p.verdict != ACCEPT), ACCEPT)
    return Trace(endpoints, any(p.masquerade for p in paths), verdict, paths)


def trace_packet(mode: str, rules: str, local_ips: Iterable[str], src: str, dst: str, dport: int,
                 protocol: str = "tcp") -> Trace:
    """Where a NEW connection src → dst:dport may go on the node whose rules these are.

    `.endpoints`: every "ip:port" it may be DNATed to (all random branches explored), `.masquerade`:
    whether some path marks it for masquerade, `.verdict`: "ACCEPT" | "DROP" | "REJECT".
    """
    program = _cached_program(_check_mode(mode), rules)
    return explore(program, _local_set(local_ips), src, dst, dport, protocol)


# -- concrete connections ---------------------------------------------------------------------------

@dataclass
class ConntrackEntry:
    """One tracked connection: original and reply tuples, its NAT, state and deadline."""

    proto: str
    src: int
    sport: int
    dst: int
    dport: int
    reply_src: int
    reply_sport: int
    reply_dst: int
    reply_dport: int
    masquerade: bool
    dnat: Optional[tuple]
    timeout: float
    last_seen: float
    mark: int = 0
    ipvs: Optional[tuple] = None
    state: str = "ESTABLISHED"

    def line(self, now: float) -> str:
        """The entry as `conntrack -L` prints it."""
        remaining = max(0, int(self.timeout - (now - self.last_seen)))
        number = nf.PROTO_NUMBERS.get(self.proto, 0)
        state = f"{self.state} " if self.proto == "tcp" else ""
        unreplied = "[UNREPLIED] " if self.state == "SYN_SENT" else ""
        flags = "[ASSURED] " if self.proto == "tcp" and self.state in ("ESTABLISHED", "TIME_WAIT") else ""
        return (f"{self.proto:<8} {number} {remaining} {state}src={int_to_ip(self.src)} dst={int_to_ip(self.dst)} "
                f"sport={self.sport} dport={self.dport} {unreplied}src={int_to_ip(self.reply_src)} "
                f"dst={int_to_ip(self.reply_dst)} sport={self.reply_sport} dport={self.reply_dport} "
                f"{flags}mark={self.mark} use=1")


class Connection:
    """The outcome of one concrete connection attempt through a node's data path."""

    __slots__ = ("verdict", "endpoint", "masquerade", "from_conntrack", "rules_evaluated", "rewrites",
                 "client_ip", "_raw_hits", "_hits")

    def __init__(self, verdict: str, endpoint: Optional[str], masquerade: bool, from_conntrack: bool,
                 rules_evaluated: int, rewrites: list, client_ip: Optional[str], raw_hits: list):
        self.verdict = verdict
        self.endpoint = endpoint
        self.masquerade = masquerade
        self.from_conntrack = from_conntrack
        self.rules_evaluated = rules_evaluated
        self.rewrites = rewrites
        self.client_ip = client_ip
        self._raw_hits = raw_hits
        self._hits = None

    @property
    def hits(self) -> list:
        """The rules that matched, in order, as `Hit(table, chain, rule, action)`."""
        if self._hits is None:
            self._hits = _hits(self._raw_hits)
        return self._hits

    def __repr__(self) -> str:
        return (f"Connection(verdict={self.verdict!r}, endpoint={self.endpoint!r}, masquerade={self.masquerade}, "
                f"from_conntrack={self.from_conntrack}, rules_evaluated={self.rules_evaluated})")


class NodeDatapath:
    """One node's stateful data path: the current rules plus conntrack, affinity lists and IPVS state."""

    def __init__(self, mode: str, rules: str, local_ips: Iterable[str], rng: Optional[random.Random] = None):
        self.local_ips = [str(ip) for ip in local_ips]
        self.local = _local_set(self.local_ips)
        self.primary = next(iter(sorted(self.local)), 0) if not self.local_ips else ip_to_int(self.local_ips[0])
        self.rng = rng if rng is not None else random.Random(0)
        self.choices = RandomChoices(self.rng)
        self.state = State()
        self.conntrack: dict[tuple, ConntrackEntry] = {}
        self._sweep_at = 1024
        self.mode = _check_mode(mode)
        self.program: Program = compile_rules(mode, rules)
        self._nft = None

    def load(self, mode: str, rules: str) -> None:
        """Replace the rule set (what kube-proxy just wrote); conntrack and affinity state stay."""
        self.mode = _check_mode(mode)
        self._nft = None
        self.program = compile_rules(mode, rules)

    def apply(self, transaction: str) -> None:
        """Apply an incremental `nft -f` transaction on top of the loaded nftables rule set."""
        if self.mode != "nftables":
            raise LabError("incremental updates apply to nftables mode only; use load() for " + self.mode)
        from labsupport.dataplane.nft_compiler import compile_ruleset
        from labsupport.dataplane.nft_ruleset import NftRuleset
        if self._nft is None:
            self._nft = self.program.source if getattr(self.program, "source", None) else NftRuleset()
        self._nft.apply(transaction)
        self.program = compile_ruleset(self._nft)

    def connect(self, src: str, sport: int, dst: str, dport: int, protocol: str = "tcp",
                now: float = 0.0) -> Connection:
        """Send one packet of connection src:sport → dst:dport; new connections go through the rules."""
        proto = proto_name(protocol)
        src_i, dst_i = ip_to_int(src), ip_to_int(dst)
        key = (proto, src_i, sport, dst_i, dport)
        program = self.program
        local_src = src_i in self.local or src_i in program.extra_local or (src_i >> 24) == 127
        entry = self.conntrack.get(key)
        if entry is not None and (entry.state != "ESTABLISHED" or now - entry.last_seen >= entry.timeout):
            # a new SYN on the tuple of a connection that ended opens a new connection, as the kernel lets it
            self._forget(key, entry)
            entry = None
        ctx = Context(self.choices, self.state, now, self.local)
        if entry is not None:
            entry.last_seen = now
            pkt = Packet(src_i, entry.reply_src, sport, entry.reply_sport, proto,
                         ESTABLISHED_DNAT if entry.dnat else ESTABLISHED, local_src)
            verdict = program.traverse(pkt, ctx, False)
            return Connection(verdict, _endpoint(entry.dnat, entry.reply_sport), entry.masquerade, True,
                              ctx.evaluated, [], _client(entry), ctx.hits)
        pkt = Packet(src_i, dst_i, sport, dport, proto, NEW, local_src)
        verdict = program.traverse(pkt, ctx, True)
        masquerade = ctx.masqueraded
        rewrites = []
        if ctx.dnat is not None:
            rewrites.append(f"DNAT {int_to_ip(dst_i)}:{dport} -> {int_to_ip(pkt.dst)}:{pkt.dport}")
        snat_ip = src_i
        if masquerade:
            snat_ip = ctx.snat if ctx.snat is not None else self.primary
            rewrites.append(f"SNAT {int_to_ip(src_i)}:{sport} -> {int_to_ip(snat_ip)}:{sport}")
        if verdict != ACCEPT:
            if self.program.ipvs is not None:
                self.program.ipvs.release(ctx, self.state)
            return Connection(verdict, None, masquerade, False, ctx.evaluated, rewrites, None, ctx.hits)
        entry = ConntrackEntry(proto, src_i, sport, dst_i, dport, pkt.dst, pkt.dport, snat_ip, sport,
                               masquerade, ctx.dnat, TIMEOUTS.get(proto, 600.0), now, pkt.mark,
                               getattr(ctx, "ipvs_hook", None))
        self.conntrack[key] = entry
        return Connection(verdict, _endpoint(ctx.dnat, pkt.dport), masquerade, False, ctx.evaluated, rewrites,
                          _client(entry), ctx.hits)

    def trace(self, src: str, dst: str, dport: int, protocol: str = "tcp") -> Trace:
        """Every way a new connection may take through the loaded rules (like `trace_packet`)."""
        return explore(self.program, self.local, src, dst, dport, protocol)

    def close(self, src: str, sport: int, dst: str, dport: int, protocol: str = "tcp",
              now: Optional[float] = None, state: str = "TIME_WAIT") -> bool:
        """End a tracked connection; return whether one was tracked.

        Given the time, a TCP entry stays as a real node keeps it, for its `ENDED_TIMEOUTS` seconds: TIME_WAIT after
        a close, SYN_SENT when nothing ever answered, CLOSE after a reset. Other protocols, or an end without a
        time, forget it at once."""
        key = (proto_name(protocol), ip_to_int(src), sport, ip_to_int(dst), dport)
        entry = self.conntrack.get(key)
        if entry is None or entry.state != "ESTABLISHED":
            return False
        if now is None or entry.proto != "tcp":
            self._forget(key, entry)
            return True
        if state not in ENDED_TIMEOUTS:
            raise ValueError(f"a connection ends as one of {', '.join(ENDED_TIMEOUTS)}, not {state!r}")
        self._release(entry)
        entry.state, entry.timeout, entry.last_seen = state, ENDED_TIMEOUTS[state], now
        if len(self.conntrack) > self._sweep_at:        # many short connections: drop the expired ones
            self.expire(now)
            self._sweep_at = max(1024, 2 * len(self.conntrack))
        return True

    def _forget(self, key: tuple, entry: ConntrackEntry) -> None:
        del self.conntrack[key]
        self._release(entry)

    def _release(self, entry: ConntrackEntry) -> None:
        """An IPVS real server no longer counts a connection that has ended."""
        if entry.ipvs is not None:
            active = self.state.__dict__.setdefault("ipvs_active", {})
            active[entry.ipvs] = max(0, active.get(entry.ipvs, 0) - 1)
            entry.ipvs = None

    def expire(self, now: float) -> int:
        """Drop conntrack entries idle for their timeout; return how many went."""
        gone = [(k, e) for k, e in self.conntrack.items() if now - e.last_seen >= e.timeout]
        for k, e in gone:
            self._forget(k, e)
        return len(gone)

    def conntrack_entries(self, now: float = 0.0) -> list[str]:
        """The live entries as `conntrack -L` lines."""
        return [e.line(now) for e in self.conntrack.values() if now - e.last_seen < e.timeout]

    def counters(self) -> list[tuple[str, str, str, int]]:
        """(table, chain, rule text, packets) for every rule of the loaded rule set."""
        return [(r.table, r.chain, r.text, r.packets) for r in self.program.rules()]


def _client(entry: ConntrackEntry) -> str:
    return f"{int_to_ip(entry.reply_dst)}:{entry.reply_dport}"
