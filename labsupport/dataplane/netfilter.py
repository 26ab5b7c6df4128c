"""The netfilter engine shared by every proxy mode: compiled rules, hooks, and chain traversal.

Parsers turn rule text into `Program`s made of `Rule`s whose matches are small closures over a
`Packet`; `Program.traverse` walks one packet through the hooks the kernel would use.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Optional

from labsupport.errors import LabError

ACCEPT, DROP, REJECT = "ACCEPT", "DROP", "REJECT"

# Hook priorities as the kernel orders them (NF_IP_PRI_*).
PRIORITY = {"raw": -300, "mangle": -150, "dstnat": -100, "nat": -100, "filter": 0, "security": 50,
            "srcnat": 100}
HOOKS = ("prerouting", "input", "forward", "output", "postrouting")
MASQ_CHAINS = frozenset({"KUBE-MARK-MASQ", "mark-for-masquerade"})
LOOPBACK_NET = (0x7F000000, 0xFF000000)


class RulesSyntaxError(LabError):
    """Rule text the data plane cannot read; the message names the line number and its text."""

    def __init__(self, what: str, lineno: int, line: str, detail: str):
        super().__init__(f"{what} line {lineno}: {detail}: {line.strip()!r}")
        self.lineno = lineno
        self.line = line
        self.detail = detail


def ip_to_int(text: str) -> int:
    """`"10.0.0.1"` → 167772161 (IPv4 only)."""
    parts = text.split(".")
    if len(parts) != 4:
        raise ValueError(f"not an IPv4 address: {text!r}")
    value = 0
    for p in parts:
        n = int(p)
        if not 0 <= n <= 255 or not p.isdigit():
            raise ValueError(f"not an IPv4 address: {text!r}")
        value = (value << 8) | n
    return value


def int_to_ip(value: int) -> str:
    """167772161 → `"10.0.0.1"`."""
    return f"{value >> 24 & 255}.{value >> 16 & 255}.{value >> 8 & 255}.{value & 255}"


def parse_cidr(text: str) -> tuple[int, int]:
    """`"10.0.0.0/8"` → (network, mask) as integers; a bare address gets a /32 mask."""
    if "/" in text:
        addr, _, length = text.partition("/")
        if not length.isdigit() or int(length) > 32:
            raise ValueError(f"not an IPv4 prefix: {text!r}")
        mask = (0xFFFFFFFF << (32 - int(length))) & 0xFFFFFFFF
        return ip_to_int(addr) & mask, mask
    return ip_to_int(text), 0xFFFFFFFF


PROTO_NAMES = {"6": "tcp", "17": "udp", "132": "sctp", "1": "icmp", "tcp": "tcp", "udp": "udp",
               "sctp": "sctp", "icmp": "icmp", "all": "all", "0": "all"}
PROTO_NUMBERS = {"tcp": 6, "udp": 17, "sctp": 132, "icmp": 1}


def proto_name(text: str) -> str:
    """Normalise a protocol given by name or number to its lower-case name."""
    name = PROTO_NAMES.get(text.lower())
    if name is None:
        raise ValueError(f"unknown protocol {text!r}")
    return name


class Packet:
    """One packet's mutable header fields as the rules see them (addresses as integers)."""

    __slots__ = ("src", "dst", "sport", "dport", "proto", "mark", "ct", "local_src")

    def __init__(self, src: int, dst: int, sport: int, dport: int, proto: str, ct: frozenset,
                 local_src: bool):
        self.src = src
        self.dst = dst
        self.sport = sport
        self.dport = dport
        self.proto = proto
        self.mark = 0
        self.ct = ct
        self.local_src = local_src


class Rule:
    """One compiled rule: where it lives, its text, its match closures and its statements."""

    __slots__ = ("table", "chain", "text", "matches", "stmts", "packets", "lineno")

    def __init__(self, table: str, chain: str, text: str, matches: tuple, stmts: tuple, lineno: int = 0):
        self.table = table
        self.chain = chain
        self.text = text
        self.matches = matches
        self.stmts = stmts
        self.packets = 0
        self.lineno = lineno

    def __repr__(self) -> str:
        return f"Rule({self.table}/{self.chain}: {self.text})"


@dataclass
class Chain:
    """A chain: its rules, and for a base chain the hook, priority, type and policy."""

    name: str
    table: str
    rules: list = field(default_factory=list)
    hook: Optional[str] = None
    priority: int = 0
    kind: str = "filter"            # "filter" | "nat" | "route"
    policy: str = ACCEPT


@dataclass(frozen=True)
class Hit:
    """One rule that matched on a packet's way: table, chain, rule text and what it did."""

    table: str
    chain: str
    rule: str
    action: str


class Choices:
    """Where random decisions come from: a seeded generator, or a scripted path for exploration."""

    def pick(self, n: int, probability: Optional[float] = None) -> int:
        """Choose one of n branches (for a statistic match: 0 = match, 1 = no match)."""
        raise NotImplementedError


class RandomChoices(Choices):
    """Random decisions from a `random.Random`, as the kernel's prandom would make them."""

    def __init__(self, rng):
        self.rng = rng

    def pick(self, n: int, probability: Optional[float] = None) -> int:
        """A random branch: a statistic match holds with `probability`, else one of n uniformly."""
        if probability is not None:
            return 0 if self.rng.random() < probability else 1
        return self.rng.randrange(n) if n > 1 else 0


class ScriptedChoices(Choices):
    """Replays a fixed prefix of choices and records every later choice point (takes branch 0)."""

    def __init__(self, prefix: list[int]):
        self.prefix = prefix
        self.taken: list[int] = []
        self.sizes: list[int] = []

    def pick(self, n: int, probability: Optional[float] = None) -> int:
        """The scripted branch at this choice point (branch 0 beyond the prefix); impossible branches skipped."""
        if probability is not None:
            if probability >= 1.0:
                return 0
            if probability <= 0.0:
                return 1
            n = 2
        i = len(self.taken)
        choice = self.prefix[i] if i < len(self.prefix) else 0
        self.taken.append(choice)
        self.sizes.append(n)
        return choice


class State:
    """Per-node dynamic state rules consult: `-m recent` lists and nft dynamic sets (with timeouts)."""

    def __init__(self):
        self.recent: dict[str, dict[int, float]] = {}
        self.dynsets: dict[str, dict[object, float]] = {}

    def recent_check(self, name: str, key: int, now: float, seconds: Optional[float], update: bool) -> bool:
        """Whether `key` was seen in list `name` within `seconds` of `now`."""
        seen = self.recent.get(name)
        if not seen or key not in seen:
            return False
        last = seen[key]
        if seconds is not None and now - last > seconds:
            return False
        if update:
            seen[key] = now
        return True

    def recent_set(self, name: str, key: int, now: float) -> None:
        """Record `key` in list `name` at `now`."""
        self.recent.setdefault(name, {})[key] = now

    def recent_remove(self, name: str, key: int) -> None:
        """Forget `key` in list `name`."""
        self.recent.get(name, {}).pop(key, None)

    def dynset_contains(self, name: str, key: object, now: float) -> bool:
        """Whether a dynamic set holds `key` at `now` (entries expire at their deadline)."""
        entries = self.dynsets.get(name)
        if not entries:
            return False
        deadline = entries.get(key)
        if deadline is None:
            return False
        if deadline < now:
            del entries[key]
            return False
        return True

    def dynset_update(self, name: str, key: object, now: float, timeout: Optional[float]) -> None:
        """Add or refresh `key` in a dynamic set, expiring `timeout` seconds from `now`."""
        self.dynsets.setdefault(name, {})[key] = now + timeout if timeout else float("inf")


class FirstSeen(State):
    """State for a never-seen client: affinity lookups miss and updates are not kept."""

    def recent_check(self, name, key, now, seconds, update):
        """Never seen."""
        return False

    def recent_set(self, name, key, now):
        """Not remembered."""

    def dynset_contains(self, name, key, now):
        """Never present."""
        return False

    def dynset_update(self, name, key, now, timeout):
        """Not remembered."""


class Context:
    """Everything one traversal needs besides the packet: choices, state, clock, node addresses, record."""

    __slots__ = ("choices", "state", "now", "local", "hits", "evaluated", "dnat", "masq_marked",
                 "masqueraded", "snat", "record", "ipvs_hook")

    def __init__(self, choices: Choices, state: State, now: float, local: frozenset, record: bool = True):
        self.choices = choices
        self.state = state
        self.now = now
        self.local = local
        self.hits: list = []
        self.evaluated = 0
        self.dnat: Optional[tuple[int, Optional[int]]] = None
        self.masq_marked = False
        self.masqueraded = False
        self.snat: Optional[int] = None
        self.record = record
        self.ipvs_hook = None

    def is_local(self, ip: int) -> bool:
        """Whether `ip` is one of this node's own addresses (loopback included)."""
        return ip in self.local or (ip & LOOPBACK_NET[1]) == LOOPBACK_NET[0]


# Statement kinds. Each statement is a tuple whose first item is one of these.
S_JUMP, S_GOTO, S_RETURN, S_ACCEPT, S_DROP, S_REJECT = range(6)
S_DNAT, S_SNAT, S_MASQ, S_MARK, S_VMAP, S_NUMGEN, S_CALL, S_NOTE, S_DNAT_MAP = range(6, 15)


class Program:
    """A node's compiled rule set: chains by (table, name) and base chains by hook, in priority order."""

    def __init__(self, mode: str):
        self.mode = mode
        self.chains: dict[tuple[str, str], Chain] = {}
        self.hooks: dict[str, list] = {h: [] for h in HOOKS}
        self.extra_local: frozenset = frozenset()
        self.ipvs = None

    def rules(self):
        """Every compiled rule, chain by chain."""
        for chain in self.chains.values():
            yield from chain.rules

    def finish(self) -> None:
        """Order each hook's base chains by priority (stable: iptables tables keep their order)."""
        for hook in HOOKS:
            self.hooks[hook] = sorted(self.hooks[hook], key=lambda c: c.priority)

    # -- traversal -------------------------------------------------------------------------------
    def run_chain(self, chain: Chain, pkt: Packet, ctx: Context) -> Optional[str]:
        """Walk one base chain; return a final verdict, or None to continue with the next base chain."""
        rules = chain.rules
        stack: list = []
        i = 0
        record = ctx.record
        while True:
            if i >= len(rules):
                if not stack:
                    return None if chain.policy == ACCEPT else chain.policy
                rules, i = stack.pop()
                continue
            rule = rules[i]
            i += 1
            ctx.evaluated += 1
            for m in rule.matches:
                if not m(pkt, ctx):
                    break
            else:
                rule.packets += 1
                note = None
                for st in rule.stmts:
                    kind = st[0]
                    if kind == S_JUMP or kind == S_GOTO:
                        target = st[1]
                        if record:
                            ctx.hits.append((rule, note))
                        if target.name in MASQ_CHAINS:
                            ctx.masq_marked = True
                        if kind == S_JUMP:
                            stack.append((rules, i))
                        rules = target.rules
                        i = 0
                        break
                    elif kind == S_VMAP or kind == S_NUMGEN:
                        if kind == S_VMAP:
                            verdict = st[2].get(st[1](pkt))
                        else:
                            verdict = st[2].get(ctx.choices.pick(st[1]))
                        if verdict is None:
                            rule.packets -= 1
                            break
                        vkind = verdict[0]
                        if record:
                            ctx.hits.append((rule, verdict_text(verdict)))
                        if vkind == S_JUMP or vkind == S_GOTO:
                            target = verdict[1]
                            if target.name in MASQ_CHAINS:
                                ctx.masq_marked = True
                            if vkind == S_JUMP:
                                stack.append((rules, i))
                            rules = target.rules
                            i = 0
                            break
                        if vkind == S_RETURN:
                            if not stack:
                                return None
                            rules, i = stack.pop()
                            break
                        return _VERDICTS[vkind]
                    elif kind == S_RETURN:
                        if record:
                            ctx.hits.append((rule, note))
                        if not stack:
                            return None
                        rules, i = stack.pop()
                        break
                    elif kind == S_ACCEPT:
                        if record:
                            ctx.hits.append((rule, note))
                        return None
                    elif kind == S_DROP or kind == S_REJECT:
                        if record:
                            ctx.hits.append((rule, note))
                        return _VERDICTS[kind]
                    elif kind == S_DNAT or kind == S_DNAT_MAP:
                        if kind == S_DNAT:
                            ip, port = st[1], st[2]
                        else:
                            target = st[2].get(ctx.choices.pick(st[1]))
                            if target is None:      # a map miss: the statement fails, the rule ends
                                rule.packets -= 1
                                break
                            ip, port = target
                        ctx.dnat = (ip, port)
                        pkt.dst = ip
                        if port is not None:
                            pkt.dport = port
                        note = f"DNAT to {int_to_ip(ip)}" + (f":{port}" if port is not None else "")
                        if record:
                            ctx.hits.append((rule, note))
                        return None
                    elif kind == S_SNAT or kind == S_MASQ:
                        ctx.masqueraded = True
                        ctx.snat = st[1] if kind == S_SNAT else None
                        if record:
                            ctx.hits.append((rule, "MASQUERADE" if kind == S_MASQ else
                                             f"SNAT to {int_to_ip(st[1])}"))
                        return None
                    elif kind == S_MARK:
                        pkt.mark = st[1](pkt.mark)
                        if len(st) > 2:
                            ctx.masq_marked = True
                        note = f"mark now {pkt.mark:#x}"
                    elif kind == S_CALL:
                        st[1](pkt, ctx)
                        note = st[2]
                    # S_NOTE: nothing to do (counter, comment, log)
                else:
                    if record:
                        ctx.hits.append((rule, note))

    def traverse(self, pkt: Packet, ctx: Context, new: bool) -> str:
        """Send one packet through the hooks a real node would use; return its final verdict."""
        local_src = pkt.local_src
        if local_src:
            route = ("output", None, "postrouting")
        else:
            route = ("prerouting", None, None)
        verdict = self._run_hook(route[0], pkt, ctx, new)
        if verdict:
            return verdict
        if local_src:
            verdict = self._run_hook("postrouting", pkt, ctx, new)
            if verdict:
                return verdict
            if self._delivered_here(pkt, ctx):
                verdict = self._run_hook("input", pkt, ctx, new, filter_only=True)
            return verdict or ACCEPT
        if self._delivered_here(pkt, ctx):
            verdict = self._run_hook("input", pkt, ctx, new)
            if verdict:
                return verdict
            if ctx.dnat is not None and not self._delivered_here(pkt, ctx):
                # IPVS rewrote the destination in LOCAL_IN: the packet now leaves the node.
                verdict = self._run_hook("postrouting", pkt, ctx, new)
            return verdict or ACCEPT
        verdict = self._run_hook("forward", pkt, ctx, new)
        if verdict:
            return verdict
        return self._run_hook("postrouting", pkt, ctx, new) or ACCEPT

    def _delivered_here(self, pkt: Packet, ctx: Context) -> bool:
        return ctx.is_local(pkt.dst) or pkt.dst in self.extra_local

    def _run_hook(self, hook: str, pkt: Packet, ctx: Context, new: bool, filter_only: bool = False) -> Optional[str]:
        for chain in self.hooks[hook]:
            if chain.kind == "nat" and (not new or filter_only):
                continue
            if chain.kind == "ipvs":
                if filter_only:
                    continue
                verdict = self.ipvs.handle(pkt, ctx, new)
            else:
                verdict = self.run_chain(chain, pkt, ctx)
            if verdict:
                return verdict
        return None


_VERDICTS = {S_ACCEPT: None, S_DROP: DROP, S_REJECT: REJECT}


def verdict_text(verdict: tuple) -> str:
    """How a verdict tuple reads in a packet story: `goto service-…`, `drop`."""
    kind = verdict[0]
    if kind == S_JUMP:
        return f"jump {verdict[1].name}"
    if kind == S_GOTO:
        return f"goto {verdict[1].name}"
    return {S_RETURN: "return", S_ACCEPT: "accept", S_DROP: "drop", S_REJECT: "reject"}.get(kind, "?")


def describe(rule: Rule, note: Optional[str]) -> str:
    """What a matched rule did, for a hit record."""
    if note:
        return note
    for st in rule.stmts:
        kind = st[0]
        if kind == S_JUMP:
            return f"jump {st[1].name}"
        if kind == S_GOTO:
            return f"goto {st[1].name}"
        if kind in (S_RETURN, S_ACCEPT, S_DROP, S_REJECT):
            return {S_RETURN: "return", S_ACCEPT: "accept", S_DROP: "drop", S_REJECT: "reject"}[kind]
    return "continue"


MatchFn = Callable[[Packet, Context], bool]
