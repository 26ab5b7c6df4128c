"""Read an `iptables-save` dump (or `iptables-restore` input) into a compiled `Program`."""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Optional

from labsupport.dataplane import netfilter as nf
from labsupport.dataplane.ipset import IpSet
from labsupport.dataplane.netfilter import (Chain, Program, Rule, RulesSyntaxError, ip_to_int, parse_cidr,
                                            proto_name)

BUILTIN = {
    "raw": {"PREROUTING": ("prerouting", -300), "OUTPUT": ("output", -300)},
    "mangle": {"PREROUTING": ("prerouting", -150), "INPUT": ("input", -150), "FORWARD": ("forward", -150),
               "OUTPUT": ("output", -150), "POSTROUTING": ("postrouting", -150)},
    "nat": {"PREROUTING": ("prerouting", -100), "INPUT": ("input", 100), "OUTPUT": ("output", -100),
            "POSTROUTING": ("postrouting", 100)},
    "filter": {"INPUT": ("input", 0), "FORWARD": ("forward", 0), "OUTPUT": ("output", 0)},
    "security": {"INPUT": ("input", 50), "FORWARD": ("forward", 50), "OUTPUT": ("output", 50)},
}

NEW_ONLY = "-m conntrack --ctstate NEW "
# The jumps kube-proxy installs from the built-in chains (table, chain, rule text, target).
STANDARD_JUMPS = [
    ("nat", "PREROUTING", '-m comment --comment "kubernetes service portals" -j KUBE-SERVICES'),
    ("nat", "OUTPUT", '-m comment --comment "kubernetes service portals" -j KUBE-SERVICES'),
    ("nat", "POSTROUTING", '-m comment --comment "kubernetes postrouting rules" -j KUBE-POSTROUTING'),
    ("filter", "INPUT", NEW_ONLY + '-m comment --comment "kubernetes load balancer firewall" -j KUBE-PROXY-FIREWALL'),
    ("filter", "INPUT", '-m comment --comment "kubernetes health check service ports" -j KUBE-NODEPORTS'),
    ("filter", "INPUT", NEW_ONLY + '-m comment --comment "kubernetes externally-visible service portals" '
                                   '-j KUBE-EXTERNAL-SERVICES'),
    ("filter", "INPUT", "-j KUBE-FIREWALL"),
    ("filter", "FORWARD", NEW_ONLY + '-m comment --comment "kubernetes load balancer firewall" -j KUBE-PROXY-FIREWALL'),
    ("filter", "FORWARD", '-m comment --comment "kubernetes forwarding rules" -j KUBE-FORWARD'),
    ("filter", "FORWARD", NEW_ONLY + '-m comment --comment "kubernetes service portals" -j KUBE-SERVICES'),
    ("filter", "FORWARD", NEW_ONLY + '-m comment --comment "kubernetes externally-visible service portals" '
                                     '-j KUBE-EXTERNAL-SERVICES'),
    ("filter", "OUTPUT", NEW_ONLY + '-m comment --comment "kubernetes load balancer firewall" -j KUBE-PROXY-FIREWALL'),
    ("filter", "OUTPUT", NEW_ONLY + '-m comment --comment "kubernetes service portals" -j KUBE-SERVICES'),
    ("filter", "OUTPUT", "-j KUBE-FIREWALL"),
]

# IPVS mode installs a different set of jumps from the built-in chains.
STANDARD_JUMPS_IPVS = [
    ("nat", "PREROUTING", '-m comment --comment "kubernetes service portals" -j KUBE-SERVICES'),
    ("nat", "OUTPUT", '-m comment --comment "kubernetes service portals" -j KUBE-SERVICES'),
    ("nat", "POSTROUTING", '-m comment --comment "kubernetes postrouting rules" -j KUBE-POSTROUTING'),
    ("filter", "FORWARD", '-m comment --comment "kubernetes forwarding rules" -j KUBE-FORWARD'),
    ("filter", "INPUT", '-m comment --comment "kubernetes health check rules" -j KUBE-NODE-PORT'),
    ("filter", "INPUT", '-m comment --comment "kube-proxy firewall rules" -j KUBE-PROXY-FIREWALL'),
    ("filter", "FORWARD", '-m comment --comment "kube-proxy firewall rules" -j KUBE-PROXY-FIREWALL'),
    ("filter", "INPUT", '-m comment --comment "kubernetes ipvs access filter" -j KUBE-IPVS-FILTER'),
    ("filter", "OUTPUT", '-m comment --comment "kubernetes ipvs access filter" -j KUBE-IPVS-OUT-FILTER'),
]

_TOKEN = re.compile(r'"((?:[^"\\]|\\.)*)"|(\S+)')


def split_words(line: str) -> list[str]:
    """Split a rule line into words the way iptables-save quotes them (double quotes, backslash escapes)."""
    if '"' not in line:
        return line.split()
    words = []
    for quoted, bare in _TOKEN.findall(line):
        if bare:
            words.append(bare)
        else:
            words.append(re.sub(r"\\(.)", r"\1", quoted))
    return words


@dataclass
class RawRule:
    """A parsed `-A` line before compilation."""

    table: str
    chain: str
    words: list
    text: str
    lineno: int
    line: str


@dataclass
class RawTable:
    """One `*table` section: declared chains (with policies) and rules in order."""

    name: str
    chains: dict = field(default_factory=dict)    # name -> policy ("-" for user chains)
    rules: list = field(default_factory=list)


def parse_tables(text: str, what: str = "iptables-save", first_line: int = 1) -> dict[str, RawTable]:
    """Split an iptables-save dump into tables of raw rules; raise `RulesSyntaxError` on a bad line."""
    tables: dict[str, RawTable] = {}
    current: Optional[RawTable] = None
    for offset, line in enumerate(text.splitlines()):
        lineno = first_line + offset
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        if stripped.startswith("*"):
            name = stripped[1:].strip()
            if name not in BUILTIN:
                raise RulesSyntaxError(what, lineno, line, f"unknown table {name!r}")
            current = tables.setdefault(name, RawTable(name))
            continue
        if current is None:
            raise RulesSyntaxError(what, lineno, line, "a rule or chain outside any table (expected '*nat' or "
                                                       "'*filter' first)")
        if stripped == "COMMIT":
            current = None
            continue
        if stripped.startswith(":"):
            parts = stripped[1:].split()
            if len(parts) < 2:
                raise RulesSyntaxError(what, lineno, line, "a chain line needs a name and a policy")
            policy = parts[1]
            if policy not in ("-", "ACCEPT", "DROP"):
                raise RulesSyntaxError(what, lineno, line, f"unknown chain policy {policy!r}")
            current.chains[parts[0]] = policy
            continue
        try:
            words = split_words(stripped)
        except ValueError as exc:
            raise RulesSyntaxError(what, lineno, line, str(exc)) from exc
        op = words[0]
        if op in ("-A", "--append", "-I", "--insert") and len(words) >= 2:
            chain = words[1]
            rest = words[2:]
            if op in ("-I", "--insert"):
                position = 1
                if rest and rest[0].isdigit():
                    position = int(rest[0])
                    rest = rest[1:]
            if chain not in current.chains and chain not in BUILTIN[current.name]:
                raise RulesSyntaxError(what, lineno, line, f"chain {chain!r} was never declared in table "
                                                           f"{current.name!r}")
            current.chains.setdefault(chain, "ACCEPT")
            raw = RawRule(current.name, chain, rest, stripped, lineno, line)
            if op in ("-I", "--insert"):
                same = [i for i, r in enumerate(current.rules) if r.chain == chain]
                at = same[position - 1] if position - 1 < len(same) else len(current.rules)
                current.rules.insert(at, raw)
            else:
                current.rules.append(raw)
        elif op in ("-X", "--delete-chain", "-F", "--flush") and len(words) <= 2:
            target = words[1] if len(words) == 2 else None
            if op in ("-X", "--delete-chain"):
                if target is None:
                    current.chains = {c: p for c, p in current.chains.items() if c in BUILTIN[current.name]}
                else:
                    current.chains.pop(target, None)
            current.rules = [r for r in current.rules if target is not None and r.chain != target]
        elif op in ("-N", "--new-chain") and len(words) == 2:
            current.chains.setdefault(words[1], "-")
        else:
            raise RulesSyntaxError(what, lineno, line, f"not an iptables-save line (unknown command {op!r})")
    if current is not None:
        # iptables-restore needs COMMIT; a dump cut short is still readable, so accept it.
        pass
    return tables


def add_standard_jumps(tables: dict[str, RawTable], jumps: Optional[list] = None) -> None:
    """Add kube-proxy's jumps from the built-in chains where the dump shows none (like upstream goldens)."""
    for table, chain, text in (STANDARD_JUMPS if jumps is None else jumps):
        raw = tables.get(table)
        if raw is None:
            continue
        words = split_words(text)
        target = words[-1]
        if target not in raw.chains:
            continue
        already = any(r.chain == chain and _target(r.words) == target for r in raw.rules)
        if already:
            continue
        raw.chains.setdefault(chain, "ACCEPT")
        mine = [i for i, r in enumerate(raw.rules) if r.chain == chain and getattr(r, "standard", False)]
        at = mine[-1] + 1 if mine else next((i for i, r in enumerate(raw.rules) if r.chain == chain),
                                             len(raw.rules))
        rule = RawRule(table, chain, words, f"-A {chain} {text}", 0, f"-A {chain} {text}")
        rule.standard = True  # type: ignore[attr-defined]
        raw.rules.insert(at, rule)


def _target(words: list) -> Optional[str]:
    for i, w in enumerate(words):
        if w in ("-j", "--jump", "-g", "--goto") and i + 1 < len(words):
            return words[i + 1]
    return None


def compile_tables(tables: dict[str, RawTable], program: Program, what: str = "iptables-save",
                   ipsets: Optional[dict] = None) -> None:
    """Compile raw tables into `program` (chains, base chains per hook)."""
    for tname, raw in tables.items():
        for cname, policy in raw.chains.items():
            chain = Chain(cname, tname)
            builtin = BUILTIN[tname].get(cname)
            if builtin:
                chain.hook, chain.priority = builtin
                chain.kind = "nat" if tname == "nat" else "filter"
                chain.policy = "DROP" if policy == "DROP" else nf.ACCEPT
                program.hooks[chain.hook].append(chain)
            program.chains[(tname, cname)] = chain
    for tname, raw in tables.items():
        for r in raw.rules:
            try:
                rule = compile_rule(r, program, ipsets or {})
            except RulesSyntaxError:
                raise
            except (ValueError, IndexError, KeyError) as exc:
                raise RulesSyntaxError(what, r.lineno, r.line, str(exc) or "cannot read this rule") from exc
            program.chains[(tname, r.chain)].rules.append(rule)


def parse_iptables(text: str, local_ips=(), *, what: str = "iptables-save", first_line: int = 1,
                   program: Optional[Program] = None, ipsets: Optional[dict] = None,
                   standard_jumps: bool = True, jumps: Optional[list] = None) -> Program:
    """Parse an iptables-save dump into a compiled `Program` (kube-proxy's built-in jumps added if absent)."""
    tables = parse_tables(text, what, first_line)
    if standard_jumps:
        add_standard_jumps(tables, jumps)
    program = program or Program("iptables")
    compile_tables(tables, program, what, ipsets)
    program.finish()
    return program


# -- one rule ------------------------------------------------------------------------------------

def _addr_match(field_name: str, spec: str, negate: bool):
    nets = [parse_cidr(s) for s in spec.split(",")]
    if len(nets) == 1:
        net, mask = nets[0]
        if field_name == "src":
            if negate:
                return lambda p, c: (p.src & mask) != net
            return lambda p, c: (p.src & mask) == net
        if negate:
            return lambda p, c: (p.dst & mask) != net
        return lambda p, c: (p.dst & mask) == net

    def match(p, c):
        value = p.src if field_name == "src" else p.dst
        hit = any((value & m) == n for n, m in nets)
        return hit != negate
    return match


def _port_match(field_name: str, spec: str, negate: bool):
    ranges = []
    for part in spec.split(","):
        if ":" in part:
            lo, hi = part.split(":")
            ranges.append((int(lo or 0), int(hi or 65535)))
        else:
            ranges.append((int(part), int(part)))
    if len(ranges) == 1 and ranges[0][0] == ranges[0][1]:
        port = ranges[0][0]
        if field_name == "dport":
            return (lambda p, c: p.dport != port) if negate else (lambda p, c: p.dport == port)
        return (lambda p, c: p.sport != port) if negate else (lambda p, c: p.sport == port)

    def match(p, c):
        value = p.dport if field_name == "dport" else p.sport
        return any(lo <= value <= hi for lo, hi in ranges) != negate
    return match


def _int(text: str) -> int:
    return int(text, 0)


def _mark_value(spec: str) -> tuple[int, int]:
    if "/" in spec:
        v, m = spec.split("/")
        return _int(v), _int(m)
    return _int(spec), 0xFFFFFFFF


def _ipset_match(sets: dict, name: str, flags: str, negate: bool):
    dirs = flags.split(",")
    if name not in sets:
        # `ipset list` leaves out nothing, but a trimmed listing may omit empty sets: treat them as empty.
        sets[name] = IpSet(name, "hash:" + ",".join(["ip"] * len(dirs)))
    ipset = sets[name]

    def match(p, c):
        return ipset.contains(p, dirs) != negate
    return match


def compile_rule(r: RawRule, program: Program, ipsets: dict) -> Rule:
    """Compile one `-A` rule's words into match closures and statements."""
    words = r.words
    matches: list = []
    stmts: list = []
    negate = False
    proto: Optional[str] = None
    module = None
    i = 0
    n = len(words)
    recent: dict = {}
    statistic: dict = {}
    while i < n:
        w = words[i]
        if w == "!":
            negate = True
            i += 1
            continue
        arg = words[i + 1] if i + 1 < n else None
        if w in ("-s", "--source", "-d", "--destination"):
            matches.append(_addr_match("src" if w in ("-s", "--source") else "dst", arg, negate))
            i += 2
        elif w in ("-p", "--protocol"):
            proto = proto_name(arg)
            if proto != "all":
                want = proto
                matches.append((lambda p, c: p.proto != want) if negate else (lambda p, c: p.proto == want))
            i += 2
        elif w in ("-i", "--in-interface", "-o", "--out-interface"):
            # Interfaces are not modelled: the packet is taken to arrive and leave on the matching ones.
            i += 2
        elif w in ("-m", "--match"):
            module = arg
            if module == "recent":
                recent = {"negate": False}
            if module == "statistic":
                statistic = {}
            i += 2
        elif w in ("--dport", "--destination-port", "--dports", "--destination-ports"):
            matches.append(_port_match("dport", arg, negate))
            i += 2
        elif w in ("--sport", "--source-port", "--sports", "--source-ports"):
            matches.append(_port_match("sport", arg, negate))
            i += 2
        elif w == "--comment":
            i += 2
        elif w in ("--src-type", "--dst-type"):
            if arg not in ("LOCAL", "UNICAST", "BROADCAST", "MULTICAST"):
                raise ValueError(f"unsupported address type {arg!r}")
            kind = arg
            on_src = w == "--src-type"
            neg = negate

            def addrtype(p, c, on_src=on_src, kind=kind, neg=neg):
                value = p.src if on_src else p.dst
                local = c.is_local(value) or value in program.extra_local
                hit = local if kind == "LOCAL" else (not local if kind == "UNICAST" else False)
                return hit != neg
            matches.append(addrtype)
            i += 2
        elif w in ("--limit-iface-in", "--limit-iface-out"):
            i += 1
        elif w == "--mark" and module == "mark":
            value, mask = _mark_value(arg)
            if negate:
                matches.append(lambda p, c: (p.mark & mask) != value)
            else:
                matches.append(lambda p, c: (p.mark & mask) == value)
            i += 2
        elif w in ("--ctstate", "--state"):
            states = frozenset(arg.upper().split(","))
            if negate:
                matches.append(lambda p, c: not (p.ct & states))
            else:
                matches.append(lambda p, c: bool(p.ct & states))
            i += 2
        elif module == "statistic" and w in ("--mode", "--probability", "--every", "--packet"):
            statistic[w] = arg
            statistic["negate"] = negate
            i += 2
        elif module == "recent" and w in ("--name", "--seconds", "--hitcount", "--mask"):
            recent[w] = arg
            i += 2
        elif module == "recent" and w in ("--rcheck", "--update", "--set", "--remove"):
            recent["op"] = w
            recent["negate"] = negate
            i += 1
        elif module == "recent" and w in ("--reap", "--rsource", "--rdest", "--rttl"):
            recent[w] = True
            i += 1
        elif w == "--match-set":
            flags = words[i + 2]
            matches.append(_ipset_match(ipsets, arg, flags, negate))
            i += 3
        elif w == "--nfacct-name":
            i += 2
        elif w in ("-j", "--jump", "-g", "--goto"):
            i = _compile_target(words, i, r, program, stmts)
        else:
            raise ValueError(f"unsupported option {w!r}")
        negate = False
    if statistic:
        matches.append(_statistic_match(statistic))
    if recent:
        matches.append(_recent_match(recent))
    if not stmts:
        stmts.append((nf.S_NOTE,))
    return Rule(r.table, r.chain, r.text, tuple(matches), tuple(stmts), r.lineno)


def _statistic_match(opts: dict):
    mode = opts.get("--mode", "random")
    if mode == "random":
        probability = float(opts.get("--probability", "0.5"))
    else:
        probability = 1.0 / int(opts.get("--every", "1"))
    neg = opts.get("negate", False)

    def statistic(p, c):
        return (c.choices.pick(2, probability) == 0) != neg
    return statistic


def _recent_match(opts: dict):
    name = opts.get("--name", "DEFAULT")
    op = opts.get("op", "--rcheck")
    seconds = float(opts["--seconds"]) if "--seconds" in opts else None
    use_dst = bool(opts.get("--rdest"))
    mask = ip_to_int(opts["--mask"]) if "--mask" in opts else 0xFFFFFFFF
    neg = opts.get("negate", False)

    def recent(p, c):
        key = (p.dst if use_dst else p.src) & mask
        if op == "--set":
            c.state.recent_set(name, key, c.now)
            return not neg
        if op == "--remove":
            hit = c.state.recent_check(name, key, c.now, None, False)
            c.state.recent_remove(name, key)
            return hit != neg
        return c.state.recent_check(name, key, c.now, seconds, op == "--update") != neg
    return recent


def _compile_target(words: list, i: int, r: RawRule, program: Program, stmts: list) -> int:
    jump = words[i] in ("-j", "--jump")
    target = words[i + 1]
    i += 2
    opts: dict = {}
    while i < len(words) and words[i].startswith("--"):
        key = words[i]
        if i + 1 < len(words) and not words[i + 1].startswith("--"):
            opts[key] = words[i + 1]
            i += 2
        else:
            opts[key] = True
            i += 1
    if target == "ACCEPT":
        stmts.append((nf.S_ACCEPT,))
    elif target == "DROP":
        stmts.append((nf.S_DROP,))
    elif target == "REJECT":
        stmts.append((nf.S_REJECT, opts.get("--reject-with", "icmp-port-unreachable")))
    elif target == "RETURN":
        stmts.append((nf.S_RETURN,))
    elif target == "DNAT":
        dest = opts.get("--to-destination")
        if not isinstance(dest, str):
            raise ValueError("DNAT needs --to-destination ip[:port]")
        ip, _, port = dest.partition(":")
        stmts.append((nf.S_DNAT, ip_to_int(ip), int(port.split("-")[0]) if port else None))
    elif target == "SNAT":
        dest = opts.get("--to-source")
        if not isinstance(dest, str):
            raise ValueError("SNAT needs --to-source ip")
        stmts.append((nf.S_SNAT, ip_to_int(dest.split(":")[0])))
    elif target == "MASQUERADE":
        stmts.append((nf.S_MASQ, None))
    elif target == "MARK":
        stmts.append((nf.S_MARK, _mark_op(opts)))
    elif target in ("LOG", "NFLOG", "CT", "NOTRACK", "CONNMARK", "TRACE"):
        stmts.append((nf.S_NOTE,))
    else:
        chain = program.chains.get((r.table, target))
        if chain is None:
            raise ValueError(f"jump to chain {target!r}, which does not exist in table {r.table!r}")
        stmts.append((nf.S_JUMP if jump else nf.S_GOTO, chain))
    return i


def _mark_op(opts: dict):
    if "--or-mark" in opts:
        v = _int(opts["--or-mark"])
        return lambda m: m | v
    if "--xor-mark" in opts:
        v = _int(opts["--xor-mark"])
        return lambda m: m ^ v
    if "--and-mark" in opts:
        v = _int(opts["--and-mark"])
        return lambda m: m & v
    if "--set-xmark" in opts:
        v, mask = _mark_value(opts["--set-xmark"])
        return lambda m: (m & ~mask & 0xFFFFFFFF) ^ v
    if "--set-mark" in opts:
        v, mask = _mark_value(opts["--set-mark"])
        return lambda m: (m & ~mask & 0xFFFFFFFF) | v
    raise ValueError("MARK needs --or-mark, --xor-mark, --and-mark, --set-xmark or --set-mark")
