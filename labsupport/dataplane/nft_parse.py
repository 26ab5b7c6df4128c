"""Read nftables rule text — `nft -f` transactions and `nft list ruleset` output — into a `Program`.

An `NftRuleset` holds the state a kernel would (tables, chains, sets, maps, rules with handles), so
incremental transactions apply on top of what was loaded before; `compile()` turns it into closures.
"""
from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field
from typing import Optional

from labsupport.dataplane import netfilter as nf
from labsupport.dataplane.netfilter import (Chain, Program, Rule, RulesSyntaxError, int_to_ip, ip_to_int, parse_cidr,
                                            proto_name)

WHAT = "nft"
FAMILIES = ("ip", "ip6", "inet", "arp", "bridge", "netdev")
CHAIN_PRIORITY = {"raw": -300, "mangle": -150, "dstnat": -100, "filter": 0, "security": 50, "srcnat": 100}
TYPE_KINDS = {"ipv4_addr": "ip", "inet_proto": "proto", "inet_service": "port", "mark": "int", "verdict": "verdict",
              "ifname": "str", "ether_addr": "str", "ipv6_addr": "str"}
CT_STATES = {"new", "established", "related", "invalid", "untracked"}
_DURATION = re.compile(r"(\d+)(ms|d|h|m|s)")


class Quoted(str):
    """A token that was a double-quoted string literal."""


EOL = "\n"


_LEX = re.compile(r'"((?:[^"\\]|\\.)*)("?)|([{};,])|(#.*)|([^\s{};,"#]+)')


def tokenize(text: str) -> tuple[list, list[int], list[str]]:
    """Split nft text into tokens (`{ } ; , \\n` stand alone; `#` starts a comment).

    Returns the tokens, the positions of the line-end tokens (to map a token back to its line) and the lines.
    """
    lines = text.splitlines()
    out: list = []
    eols: list[int] = []
    append = out.append
    for lineno, line in enumerate(lines, 1):
        for quoted, closed, punct, comment, word in _LEX.findall(line):
            if word:
                append(word)
            elif punct:
                append(punct)
            elif comment:
                break
            else:
                if not closed:
                    raise RulesSyntaxError(WHAT, lineno, line, "unterminated string")
                append(Quoted(quoted))
        eols.append(len(out))
        append(EOL)
    return out, eols, lines


def parse_duration(text: str) -> float:
    """`"10800s"`, `"3h"`, `"1d2h3m4s"` or a bare number of seconds → seconds."""
    if text.isdigit():
        return float(text)
    total, pos = 0.0, 0
    for m in _DURATION.finditer(text):
        if m.start() != pos:
            break
        value, unit = int(m.group(1)), m.group(2)
        total += value * {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400}[unit]
        pos = m.end()
    if pos != len(text) or not text:
        raise ValueError(f"not a duration: {text!r}")
    return total


@dataclass
class NftRuleSource:
    """One rule as written: its tokens, handle and where it came from."""

    tokens: list
    handle: int
    lineno: int
    line: str

    @property
    def text(self) -> str:
        """The rule as `nft list` would show it (tokens joined, strings quoted)."""
        return " ".join(f'"{t}"' if isinstance(t, Quoted) else t for t in self.tokens)


@dataclass
class NftChain:
    """A chain: hook/type/priority/policy for a base chain, and its rules."""

    name: str
    hook: Optional[str] = None
    type: str = "filter"
    priority: int = 0
    policy: str = "accept"
    comment: str = ""
    rules: list = field(default_factory=list)


@dataclass
class NftSet:
    """A named set or map: key types, value type, flags, timeout and elements."""

    name: str
    is_map: bool
    key_kinds: list = field(default_factory=list)
    value_kind: Optional[str] = None
    flags: set = field(default_factory=set)
    timeout: Optional[float] = None
    comment: str = ""
    elements: dict = field(default_factory=dict)     # key -> value tokens (maps) or None (sets)


@dataclass
class NftTable:
    """A table: its family, chains, sets and maps, and the next rule handle."""

    family: str
    name: str
    chains: dict = field(default_factory=dict)
    sets: dict = field(default_factory=dict)
    comment: str = ""
    next_handle: int = 1


class Cursor:
    """A position in the token list with the small helpers the parser needs."""

    def __init__(self, tokens: list, eols: list[int], lines: list[str]):
        self.tokens = tokens
        self.eols = eols
        self.lines = lines
        self.i = 0

    def lineno(self, index: int) -> int:
        """The 1-based line the token at `index` is on."""
        return bisect.bisect_left(self.eols, index) + 1

    def line(self, index: int) -> str:
        """The text of the line the token at `index` is on."""
        n = self.lineno(index)
        return self.lines[n - 1] if 0 < n <= len(self.lines) else ""

    def peek(self, k: int = 0):
        """The token k places ahead, or None at the end."""
        j = self.i + k
        return self.tokens[j] if j < len(self.tokens) else None

    def next(self):
        """Take the next token (an error at the end of input)."""
        tok = self.peek()
        if tok is None:
            raise self.error("unexpected end of input", self.tokens[-1] if self.tokens else None)
        self.i += 1
        return tok

    def expect(self, value: str):
        """Take the next token, which must be `value`."""
        tok = self.next()
        if tok != value:
            raise self.error(f"expected {value!r}, found {str(tok).strip() or 'end of line'!r}", tok)
        return tok

    def skip_eol(self) -> None:
        """Skip line ends and semicolons."""
        while self.peek() in (EOL, ";"):
            self.i += 1

    def skip_newlines(self) -> None:
        """Skip line ends."""
        while self.peek() == EOL:
            self.i += 1

    def error(self, detail: str, tok=None) -> RulesSyntaxError:
        """An error naming the line of `tok` (default: the current token)."""
        index = min(self.i, len(self.tokens) - 1)
        if tok is not None:
            for j in range(min(self.i, len(self.tokens) - 1), max(-1, self.i - 400), -1):
                if self.tokens[j] is tok:
                    index = j
                    break
        index = max(index, 0)
        return RulesSyntaxError(WHAT, min(self.lineno(index), max(len(self.lines), 1)), self.line(index), detail)


class NftRuleset:
    """The nftables state of one node; parse text into it, apply transactions, compile to a `Program`."""

    def __init__(self):
        self.tables: dict[tuple[str, str], NftTable] = {}

    @classmethod
    def parse(cls, text: str) -> "NftRuleset":
        """A fresh ruleset holding what `text` (a transaction or `nft list` output) describes."""
        ruleset = cls()
        ruleset.apply(text)
        return ruleset

    # -- reading --------------------------------------------------------------------------------
    def apply(self, text: str) -> None:
        """Apply `nft -f` commands or `nft list` blocks to this ruleset."""
        tokens, eols, lines = tokenize(text)
        cur = Cursor(tokens, eols, lines)
        while True:
            cur.skip_eol()
            tok = cur.peek()
            if tok is None:
                return
            if tok == "table":
                cur.next()
                self._table_block(cur)
            elif tok in ("add", "create", "insert", "replace", "delete", "destroy", "flush"):
                cur.next()
                self._command(cur, str(tok))
            elif tok == "list":
                self._skip_statement(cur)
            else:
                raise cur.error(f"unknown command {str(tok)!r} (expected add, create, insert, replace, delete, "
                                f"destroy, flush or a 'table … {{' block)", tok)
            if cur.peek() not in (None, EOL, ";"):
                raise cur.error(f"unexpected {str(cur.peek())!r} after the command")

    def _skip_statement(self, cur: Cursor) -> None:
        while cur.peek() not in (None, EOL, ";"):
            cur.next()

    def _family_and_name(self, cur: Cursor) -> tuple[str, str]:
        tok = cur.next()
        if tok in FAMILIES and cur.peek() not in (None, EOL, ";", "{"):
            return str(tok), str(cur.next())
        return "ip", str(tok)

    def _table(self, cur: Cursor, family: str, name: str, tok) -> NftTable:
        table = self.tables.get((family, name))
        if table is None:
            raise cur.error(f"table {family} {name} does not exist", tok)
        return table

    def _command(self, cur: Cursor, verb: str) -> None:
        what_tok = cur.next()
        what = str(what_tok)
        if what == "ruleset" and verb == "flush":
            self.tables.clear()
            return
        if what not in ("table", "chain", "set", "map", "rule", "element"):
            raise cur.error(f"unknown object {what!r} after {verb!r}", what_tok)
        family, tname = self._family_and_name(cur)
        if what == "table":
            key = (family, tname)
            if verb in ("add", "create"):
                table = self.tables.setdefault(key, NftTable(family, tname))
                if cur.peek() == "{":
                    cur.next()
                    self._table_body(cur, table, inline=True)
            elif verb in ("delete", "destroy"):
                if key not in self.tables and verb == "delete":
                    raise cur.error(f"table {family} {tname} does not exist", what_tok)
                self.tables.pop(key, None)
            elif verb == "flush":
                table = self._table(cur, family, tname, what_tok)
                for chain in table.chains.values():
                    chain.rules.clear()
                for s in table.sets.values():
                    s.elements.clear()
            else:
                raise cur.error(f"cannot {verb} a table", what_tok)
            return
        table = self._table(cur, family, tname, what_tok)
        name_tok = cur.next()
        name_line = cur.lineno(cur.i - 1)
        name = str(name_tok)
        if what == "chain":
            if verb in ("add", "create"):
                chain = table.chains.get(name)
                if chain is None:
                    chain = table.chains[name] = NftChain(name)
                elif verb == "create":
                    raise cur.error(f"chain {name} already exists", name_tok)
                if cur.peek() == "{":
                    cur.next()
                    self._chain_props(cur, chain, inline=True)
            elif verb in ("delete", "destroy"):
                if name not in table.chains and verb == "delete":
                    raise cur.error(f"chain {name} does not exist", name_tok)
                table.chains.pop(name, None)
            elif verb == "flush":
                self._chain(cur, table, name, name_tok).rules.clear()
            else:
                raise cur.error(f"cannot {verb} a chain", what_tok)
        elif what in ("set", "map"):
            if verb in ("add", "create"):
                s = table.sets.get(name)
                if s is None:
                    s = table.sets[name] = NftSet(name, what == "map")
                if cur.peek() == "{":
                    cur.next()
                    self._set_props(cur, s, inline=True)
            elif verb in ("delete", "destroy"):
                table.sets.pop(name, None)
            elif verb == "flush":
                self._set(cur, table, name, name_tok).elements.clear()
            else:
                raise cur.error(f"cannot {verb} a {what}", what_tok)
        elif what == "element":
            s = self._set(cur, table, name, name_tok)
            cur.expect("{")
            elements = self._elements(cur, s, need_values=verb in ("add", "create"))
            for key, value in elements:
                if verb in ("add", "create"):
                    s.elements[key] = value
                elif verb in ("delete", "destroy"):
                    if key not in s.elements and verb == "delete":
                        raise cur.error(f"element {_key_text(key)} is not in {name}", name_tok)
                    s.elements.pop(key, None)
                else:
                    raise cur.error(f"cannot {verb} an element", what_tok)
        else:  # rule
            chain = self._chain(cur, table, name, name_tok)
            handle = None
            position_kind = None
            if cur.peek() in ("handle", "position", "index"):
                position_kind = str(cur.next())
                handle = int(cur.next())
            if verb == "delete":
                if handle is None or position_kind != "handle":
                    raise cur.error("delete rule needs 'handle N'", name_tok)
                chain.rules = [r for r in chain.rules if r.handle != handle]
                return
            start = cur.i
            tokens = self._rule_tokens(cur)
            if not tokens:
                raise cur.error("empty rule", name_tok)
            src = NftRuleSource(tokens, table.next_handle, name_line, cur.lines[name_line - 1])
            del start
            table.next_handle += 1
            if verb == "replace":
                idx = self._rule_index(cur, chain, handle, name_tok)
                src.handle = handle
                chain.rules[idx] = src
            elif verb == "insert":
                idx = 0 if handle is None else (self._rule_index(cur, chain, handle, name_tok)
                                                if position_kind != "index" else handle)
                chain.rules.insert(idx, src)
            else:
                if handle is None:
                    chain.rules.append(src)
                else:
                    idx = (self._rule_index(cur, chain, handle, name_tok) + 1 if position_kind != "index"
                           else handle + 1)
                    chain.rules.insert(idx, src)

    def _rule_index(self, cur: Cursor, chain: NftChain, handle, tok) -> int:
        for i, r in enumerate(chain.rules):
            if r.handle == handle:
                return i
        raise cur.error(f"no rule with handle {handle} in chain {chain.name}", tok)

    def _chain(self, cur: Cursor, table: NftTable, name: str, tok) -> NftChain:
        chain = table.chains.get(name)
        if chain is None:
            raise cur.error(f"chain {name} does not exist in table {table.family} {table.name}", tok)
        return chain

    def _set(self, cur: Cursor, table: NftTable, name: str, tok) -> NftSet:
        s = table.sets.get(name)
        if s is None:
            raise cur.error(f"set {name} does not exist in table {table.family} {table.name}", tok)
        return s

    def _rule_tokens(self, cur: Cursor) -> list:
        tokens = []
        depth = 0
        while True:
            tok = cur.peek()
            if tok is None:
                break
            if depth == 0 and tok in (EOL, ";", "}"):
                break
            if tok == EOL:
                cur.next()
                continue
            if tok == "{":
                depth += 1
            elif tok == "}":
                depth -= 1
            tokens.append(cur.next())
        return tokens

    # -- blocks (`nft list` form, and the `{ … }` parts of commands) ------------------------------
    def _table_block(self, cur: Cursor) -> None:
        family, name = self._family_and_name(cur)
        table = self.tables.setdefault((family, name), NftTable(family, name))
        cur.expect("{")
        self._table_body(cur, table, inline=False)

    def _table_body(self, cur: Cursor, table: NftTable, inline: bool) -> None:
        while True:
            cur.skip_eol()
            tok = cur.next()
            if tok == "}":
                return
            if tok == "comment":
                table.comment = str(cur.next())
            elif tok == "flags":
                self._skip_statement(cur)
            elif tok == "chain" and not inline:
                name = str(cur.next())
                chain = table.chains.setdefault(name, NftChain(name))
                cur.expect("{")
                self._chain_props(cur, chain, inline=False, table=table)
            elif tok in ("set", "map") and not inline:
                name = str(cur.next())
                s = table.sets.setdefault(name, NftSet(name, tok == "map"))
                cur.expect("{")
                self._set_props(cur, s, inline=False)
            else:
                raise cur.error(f"unexpected {str(tok)!r} in table {table.name}", tok)

    def _chain_props(self, cur: Cursor, chain: NftChain, inline: bool, table: Optional[NftTable] = None) -> None:
        while True:
            cur.skip_eol()
            tok = cur.peek()
            if tok == "}":
                cur.next()
                return
            if tok == "type":
                cur.next()
                chain.type = str(cur.next())
                cur.expect("hook")
                chain.hook = str(cur.next())
                if cur.peek() == "device":
                    cur.next()
                    cur.next()
                cur.expect("priority")
                chain.priority = self._priority(cur)
            elif tok == "policy":
                cur.next()
                chain.policy = str(cur.next())
            elif tok == "comment" and (cur.peek(2) in (EOL, ";", "}")):
                cur.next()
                chain.comment = str(cur.next())
            elif tok == "devices":
                self._skip_statement(cur)
            elif inline:
                raise cur.error(f"unexpected {str(tok)!r} in chain {chain.name} properties", tok)
            else:
                lineno = cur.lineno(cur.i)
                tokens = self._rule_tokens(cur)
                src = NftRuleSource(tokens, table.next_handle, lineno, cur.lines[lineno - 1])
                table.next_handle += 1
                chain.rules.append(src)

    def _priority(self, cur: Cursor) -> int:
        tok = str(cur.next())
        try:
            value = int(tok)
        except ValueError:
            if tok not in CHAIN_PRIORITY:
                raise cur.error(f"unknown priority {tok!r}") from None
            value = CHAIN_PRIORITY[tok]
            if cur.peek() in ("+", "-"):
                sign = 1 if cur.next() == "+" else -1
                value += sign * int(cur.next())
        return value

    def _set_props(self, cur: Cursor, s: NftSet, inline: bool) -> None:
        while True:
            cur.skip_eol()
            tok = cur.next()
            if tok == "}":
                return
            if tok == "type":
                kinds = [self._kind(cur, cur.next())]
                while cur.peek() == ".":
                    cur.next()
                    kinds.append(self._kind(cur, cur.next()))
                s.key_kinds = kinds
                if cur.peek() == ":":
                    cur.next()
                    s.value_kind = self._kind(cur, cur.next())
                    s.is_map = True
            elif tok == "typeof":
                self._typeof(cur, s)
            elif tok == "flags":
                s.flags.add(str(cur.next()))
                while cur.peek() == ",":
                    cur.next()
                    s.flags.add(str(cur.next()))
            elif tok == "timeout":
                s.timeout = parse_duration(str(cur.next()))
            elif tok in ("gc-interval", "size", "policy"):
                cur.next()
            elif tok in ("counter", "auto-merge"):
                pass
            elif tok == "comment":
                s.comment = str(cur.next())
            elif tok == "elements":
                cur.expect("=")
                cur.expect("{")
                for key, value in self._elements(cur, s):
                    s.elements[key] = value
            else:
                raise cur.error(f"unexpected {str(tok)!r} in {'map' if s.is_map else 'set'} {s.name}", tok)

    def _typeof(self, cur: Cursor, s: NftSet) -> None:
        kinds = []
        value_kind = None
        words = []
        while cur.peek() not in (EOL, ";", "}"):
            words.append(str(cur.next()))
        side = kinds
        for w in words:
            if w == ":":
                side = []
                value_kind = side
            elif w in ("saddr", "daddr"):
                side.append("ip")
            elif w in ("l4proto", "protocol"):
                side.append("proto")
            elif w in ("dport", "sport"):
                side.append("port")
            elif w == "verdict":
                side.append("verdict")
        s.key_kinds = kinds
        if value_kind is not None:
            s.is_map = True
            s.value_kind = value_kind[0] if value_kind else "verdict"

    def _kind(self, cur: Cursor, tok) -> str:
        kind = TYPE_KINDS.get(str(tok))
        if kind is None:
            raise cur.error(f"unsupported set type {str(tok)!r}", tok)
        return kind

    def _elements(self, cur: Cursor, s: NftSet, need_values: bool = True) -> list:
        """Read `a . b : v, …}` (the opening brace already taken)."""
        out = []
        while True:
            cur.skip_newlines()
            tok = cur.peek()
            if tok == "}":
                cur.next()
                return out
            parts = [cur.next()]
            while cur.peek() == ".":
                cur.next()
                parts.append(cur.next())
            kinds = s.key_kinds or ["ip"] * len(parts)
            if len(parts) != len(kinds):
                raise cur.error(f"element has {len(parts)} parts but {s.name} keys have {len(kinds)}", tok)
            try:
                key = tuple(_value(k, p) for k, p in zip(kinds, parts))
            except ValueError as exc:
                raise cur.error(str(exc), tok) from exc
            key = key[0] if len(key) == 1 else key
            value = None
            while cur.peek() not in (",", "}", None):
                word = cur.next()
                if word == EOL:
                    continue
                if word == ":":
                    value = [cur.next()]
                    if value[0] in ("goto", "jump"):
                        value.append(cur.next())
                elif word in ("timeout", "expires"):
                    cur.next()
                elif word == "comment":
                    cur.next()
                elif word == "counter":
                    if cur.peek() == "packets":
                        for _ in range(4):
                            cur.next()
                else:
                    raise cur.error(f"unexpected {str(word)!r} in the elements of {s.name}", word)
            if cur.peek() == ",":
                cur.next()
            if s.is_map and value is None and need_values:
                raise cur.error(f"map {s.name} element {_key_text(key)} needs ': value'", tok)
            out.append((key, value))

    # -- compiling ------------------------------------------------------------------------------
    def compile(self) -> Program:
        """Compile the IPv4 tables into a `Program` the engine can run."""
        program = Program("nftables")
        program.source = self  # type: ignore[attr-defined]
        for (family, tname), table in self.tables.items():
            if family not in ("ip", "inet"):
                continue
            label = f"{family} {tname}"
            for chain in table.chains.values():
                c = Chain(chain.name, label)
                if chain.hook:
                    if chain.hook not in nf.HOOKS:
                        continue
                    c.hook = chain.hook
                    c.priority = chain.priority
                    c.kind = "nat" if chain.type == "nat" else "filter"
                    c.policy = "DROP" if chain.policy == "drop" else nf.ACCEPT
                    program.hooks[c.hook].append(c)
                program.chains[(label, chain.name)] = c
        for (family, tname), table in self.tables.items():
            if family not in ("ip", "inet"):
                continue
            label = f"{family} {tname}"
            compiler = RuleCompiler(program, table, label)
            for chain in table.chains.values():
                target = program.chains[(label, chain.name)]
                for src in chain.rules:
                    target.rules.append(compiler.compile(src, chain.name))
        program.finish()
        return program


def _key_text(key) -> str:
    parts = key if isinstance(key, tuple) else (key,)
    return " . ".join(int_to_ip(p) if isinstance(p, int) and p > 65535 else str(p) for p in parts)


def _value(kind: str, tok) -> object:
    """Parse one element component of the given kind (ip → int or (net, mask) for a prefix)."""
    text = str(tok)
    if kind == "ip":
        if "/" in text:
            net, mask = parse_cidr(text)
            return net if mask == 0xFFFFFFFF else ("cidr", net, mask)
        if "-" in text:
            lo, hi = text.split("-")
            return ("range", ip_to_int(lo), ip_to_int(hi))
        return ip_to_int(text)
    if kind == "proto":
        return proto_name(text)
    if kind == "port":
        if "-" in text:
            lo, hi = text.split("-")
            return ("range", int(lo), int(hi))
        return int(text)
    if kind == "int":
        return int(text, 0)
    return text


# -- rules ------------------------------------------------------------------------------------------

class RuleCompiler:
    """Turns one nft rule's tokens into match closures and statements for the engine."""

    def __init__(self, program: Program, table: NftTable, label: str):
        self.program = program
        self.table = table
        self.label = label
        self._vmaps: dict[str, dict] = {}

    def compile(self, src: NftRuleSource, chain: str) -> Rule:
        """Compile one rule; syntax it cannot read raises `RulesSyntaxError` with the rule's line."""
        self.toks = src.tokens
        self.i = 0
        self.src = src
        matches: list = []
        stmts: list = []
        try:
            while self.i < len(self.toks):
                self._item(matches, stmts)
        except RulesSyntaxError:
            raise
        except (ValueError, KeyError, IndexError) as exc:
            raise RulesSyntaxError(WHAT, src.lineno, src.line, str(exc) or "cannot read this rule") from exc
        if not stmts:
            stmts.append((nf.S_NOTE,))
        return Rule(self.label, chain, src.text, tuple(matches), tuple(stmts), src.lineno)

    def fail(self, detail: str) -> RulesSyntaxError:
        """An error pointing at this rule's line."""
        return RulesSyntaxError(WHAT, self.src.lineno, self.src.line, detail)

    def peek(self, k: int = 0):
        """The rule token k places ahead, or None at the end of the rule."""
        j = self.i + k
        return str(self.toks[j]) if j < len(self.toks) else None

    def take(self) -> str:
        """Take the next rule token."""
        if self.i >= len(self.toks):
            raise self.fail("rule ends too early")
        tok = self.toks[self.i]
        self.i += 1
        return str(tok)

    def chain(self, name: str) -> Chain:
        """The compiled chain a jump or goto names."""
        chain = self.program.chains.get((self.label, name))
        if chain is None:
            raise self.fail(f"chain {name!r} does not exist")
        return chain

    def verdict(self, words: list) -> tuple:
        """A verdict statement from its words (`goto x`, `drop`, …)."""
        word = words[0]
        if word in ("goto", "jump"):
            return (nf.S_GOTO if word == "goto" else nf.S_JUMP, self.chain(str(words[1])))
        simple = {"accept": nf.S_ACCEPT, "drop": nf.S_DROP, "return": nf.S_RETURN, "reject": nf.S_REJECT}
        if word not in simple:
            raise self.fail(f"not a verdict: {word!r}")
        return (simple[word],)

    def _item(self, matches: list, stmts: list) -> None:
        tok = self.peek()
        if tok == "counter":
            self.take()
            if self.peek() == "packets":
                for _ in range(4):
                    self.take()
            return
        if tok == "comment":
            self.take()
            self.take()
            return
        if tok in ("jump", "goto"):
            self.take()
            stmts.append(self.verdict([tok, self.take()]))
            return
        if tok in ("accept", "drop", "return", "continue"):
            self.take()
            if tok != "continue":
                stmts.append(self.verdict([tok]))
            return
        if tok == "reject":
            self.take()
            if self.peek() == "with":
                while self.i < len(self.toks) and self.peek() not in ("comment", "counter"):
                    self.take()
            stmts.append((nf.S_REJECT,))
            return
        if tok == "dnat":
            self.take()
            if self.peek() in ("ip", "inet"):
                self.take()
            if self.take() != "to":
                raise self.fail("dnat needs 'to address[:port]'")
            dest = self.take()
            ip, _, port = dest.partition(":")
            stmts.append((nf.S_DNAT, ip_to_int(ip), int(port) if port else None))
            return
        if tok == "snat":
            self.take()
            if self.peek() in ("ip", "inet"):
                self.take()
            if self.take() != "to":
                raise self.fail("snat needs 'to address'")
            stmts.append((nf.S_SNAT, ip_to_int(self.take().split(":")[0])))
            return
        if tok == "masquerade":
            self.take()
            while self.peek() in ("fully-random", "random", "persistent", ","):
                self.take()
            stmts.append((nf.S_MASQ, None))
            return
        if tok in ("log", "notrack"):
            self.take()
            while self.peek() in ("prefix", "level", "flags", "group"):
                self.take()
                self.take()
            return
        if tok in ("update", "add") and (self.peek(1) or "").startswith("@"):
            self.take()
            stmts.append(self._set_update())
            return
        if tok in ("mark", "meta") and self._is_mark_set():
            stmts.append(self._mark_set())
            return
        self._expression(matches, stmts)

    def _is_mark_set(self) -> bool:
        if self.peek() == "mark":
            return self.peek(1) == "set"
        return self.peek(1) == "mark" and self.peek(2) == "set"

    def _mark_set(self):
        if self.take() == "meta":
            self.take()
        self.take()  # set
        word = self.take()
        if word in ("mark", "meta"):
            if word == "meta":
                self.take()
            op = self.take()
            value = int(self.take(), 0)
            if op in ("or", "|"):
                return (nf.S_MARK, lambda m: m | value)
            if op in ("xor", "^"):
                return (nf.S_MARK, lambda m: m ^ value)
            if op in ("and", "&"):
                return (nf.S_MARK, lambda m: m & value)
            raise self.fail(f"unsupported mark operation {op!r}")
        value = int(word, 0)
        return (nf.S_MARK, lambda m: value)

    def _set_update(self):
        ref = self.take()
        s = self._named_set(ref)
        if self.take() != "{":
            raise self.fail("set update needs '{ expression }'")
        getter, kinds, _ = self._selector_concat()
        timeout = s.timeout
        if self.peek() == "timeout":
            self.take()
            timeout = parse_duration(self.take())
        if self.take() != "}":
            raise self.fail("set update: expected '}'")
        name = f"{self.label}/{s.name}"

        def update(p, c):
            c.state.dynset_update(name, getter(p, c), c.now, timeout)
        return (nf.S_CALL, update, f"update @{s.name}")

    def _named_set(self, ref: str) -> NftSet:
        s = self.table.sets.get(ref[1:])
        if s is None:
            raise self.fail(f"set {ref[1:]!r} does not exist")
        return s

    # -- selectors and comparisons --------------------------------------------------------------
    def _selector(self):
        """Read one selector; return (getter, kind, implied protocol or None)."""
        w = self.take()
        if w == "ip":
            f = self.take()
            if f == "saddr":
                return (lambda p, c: p.src), "ip", None
            if f == "daddr":
                return (lambda p, c: p.dst), "ip", None
            if f == "protocol":
                return (lambda p, c: p.proto), "proto", None
            raise self.fail(f"unsupported selector 'ip {f}'")
        if w in ("th", "tcp", "udp", "sctp"):
            f = self.take()
            if f not in ("dport", "sport"):
                raise self.fail(f"unsupported selector '{w} {f}'")
            getter = (lambda p, c: p.dport) if f == "dport" else (lambda p, c: p.sport)
            return getter, "port", (None if w == "th" else w)
        if w == "meta":
            f = self.take()
            if f in ("l4proto", "protocol"):
                return (lambda p, c: p.proto), "proto", None
            if f == "mark":
                return (lambda p, c: p.mark), "int", None
            if f in ("iifname", "oifname", "iif", "oif"):
                return None, "iface", None
            raise self.fail(f"unsupported selector 'meta {f}'")
        if w in ("iifname", "oifname"):
            return None, "iface", None
        if w == "mark":
            return (lambda p, c: p.mark), "int", None
        if w == "ct":
            f = self.take()
            if f == "state":
                return (lambda p, c: p.ct), "ctstate", None
            raise self.fail(f"unsupported selector 'ct {f}'")
        if w == "fib":
            f = self.take()
            while self.peek() in (".", "iif", "oif"):
                self.take()
            if self.take() != "type":
                raise self.fail("fib supports only '… type'")
            on_dst = f == "daddr"
            extra = self.program.extra_local

            def fib(p, c):
                value = p.dst if on_dst else p.src
                return "local" if (c.is_local(value) or value in extra) else "unicast"
            return fib, "addrtype", None
        if w == "numgen":
            if self.take() != "random" or self.take() != "mod":
                raise self.fail("numgen supports only 'random mod N'")
            mod = int(self.take())
            offset = 0
            if self.peek() == "offset":
                self.take()
                offset = int(self.take())
            return ("numgen", mod, offset), "int", None
        raise self.fail(f"unsupported expression {w!r}")

    def _selector_concat(self):
        """Read `a . b . c`; return (getter, kinds, protocols implied by `tcp dport`-style selectors)."""
        getters, kinds, protos = [], [], []
        while True:
            g, k, pr = self._selector()
            getters.append(g)
            kinds.append(k)
            if pr:
                protos.append(pr)
            if self.peek() != ".":
                break
            self.take()
        if len(getters) == 1:
            return getters[0], kinds, protos
        if any(not callable(g) for g in getters):
            raise self.fail("this expression cannot be part of a concatenation")
        if len(getters) == 3:
            a, b, d = getters
            return (lambda p, c: (a(p, c), b(p, c), d(p, c))), kinds, protos
        if len(getters) == 2:
            a, b = getters
            return (lambda p, c: (a(p, c), b(p, c))), kinds, protos
        gs = tuple(getters)
        return (lambda p, c: tuple(g(p, c) for g in gs)), kinds, protos

    def _expression(self, matches: list, stmts: list) -> None:
        start = self.i
        getter, kinds, protos = self._selector_concat()
        for want in protos:
            matches.append(lambda p, c, want=want: p.proto == want)
        if isinstance(getter, tuple) and getter[0] == "numgen":
            mod, offset = getter[1], getter[2]
            if self.peek() != "vmap":
                raise self.fail("numgen is supported with 'vmap { … }' only")
            self.take()
            table = self._anonymous_vmap(["int"])
            table = {k + 0: v for k, v in table.items()}
            shifted = {k - offset: v for k, v in table.items()}
            stmts.append((nf.S_NUMGEN, mod, shifted))
            return
        if getter is None:      # interface names are not modelled; the comparison always holds
            self._skip_value()
            return
        # bitwise mask, e.g. `mark and 0x4000 == 0`
        if self.peek() in ("and", "&"):
            self.take()
            mask = int(self.take(), 0)
            inner = getter
            getter = lambda p, c: inner(p, c) & mask  # noqa: E731
        if self.peek() == "vmap":
            self.take()
            if (self.peek() or "").startswith("@"):
                mapping = self._named_vmap(self.take())
            else:
                mapping = self._anonymous_vmap(kinds)
            stmts.append(self._vmap_stmt(getter, mapping))
            return
        negate = False
        op = self.peek()
        if op in ("==", "eq"):
            self.take()
        elif op in ("!=", "ne"):
            self.take()
            negate = True
        elif op in ("<", ">", "<=", ">=", "lt", "gt", "le", "ge"):
            self.take()
            bound = int(self.take(), 0)
            cmp = {"<": int.__lt__, "lt": int.__lt__, ">": int.__gt__, "gt": int.__gt__,
                   "<=": int.__le__, "le": int.__le__, ">=": int.__ge__, "ge": int.__ge__}[op]
            matches.append(lambda p, c: cmp(getter(p, c), bound))
            return
        if self.i >= len(self.toks):
            raise self.fail(f"expression {' '.join(map(str, self.toks[start:self.i]))!r} needs a value")
        matches.append(self._comparison(getter, kinds, negate))

    def _skip_value(self) -> None:
        if self.peek() in ("==", "!="):
            self.take()
        if self.peek() == "{":
            while self.take() != "}":
                pass
        else:
            self.take()

    def _comparison(self, getter, kinds: list, negate: bool):
        tok = self.peek()
        if tok.startswith("@"):
            self.take()
            s = self._named_set(tok)
            return self._set_match(getter, s, negate)
        if tok == "{" and kinds == ["ctstate"]:
            self.take()
            states = set()
            while self.peek() != "}":
                word = self.take()
                if word != ",":
                    states.update(w.upper() for w in word.split(","))
            self.take()
            states = frozenset(states)
            if negate:
                return lambda p, c: not (getter(p, c) & states)
            return lambda p, c: bool(getter(p, c) & states)
        if tok == "{":
            self.take()
            temp = NftSet("anonymous", False, key_kinds=list(kinds))
            values = []
            while True:
                word = self.peek()
                if word == "}":
                    self.take()
                    break
                if word == ",":
                    self.take()
                    continue
                parts = [self.take()]
                while self.peek() == ".":
                    self.take()
                    parts.append(self.take())
                values.append(parts)
            for parts in values:
                key = self._key(kinds, parts)
                temp.elements[key] = None
            return self._set_match(getter, temp, negate)
        word = self.take()
        if kinds == ["ctstate"]:
            states = frozenset(s.upper() for s in word.split(","))
            if negate:
                return lambda p, c: not (getter(p, c) & states)
            return lambda p, c: bool(getter(p, c) & states)
        if kinds == ["addrtype"]:
            want = word
            return (lambda p, c: getter(p, c) != want) if negate else (lambda p, c: getter(p, c) == want)
        parts = [word]
        while self.peek() == ".":
            self.take()
            parts.append(self.take())
        key = self._key(kinds, parts)
        if isinstance(key, tuple) and key and key[0] in ("cidr", "range"):
            temp = NftSet("anonymous", False, key_kinds=list(kinds))
            temp.elements[key] = None
            return self._set_match(getter, temp, negate)
        if negate:
            return lambda p, c: getter(p, c) != key
        return lambda p, c: getter(p, c) == key

    def _key(self, kinds: list, parts: list):
        if len(parts) != len(kinds):
            raise self.fail(f"value has {len(parts)} parts, expression has {len(kinds)}")
        if kinds == ["ctstate"]:
            return frozenset(p.upper() for p in parts)
        key = tuple(_value(k, p) for k, p in zip(kinds, parts))
        return key[0] if len(key) == 1 else key

    def _set_match(self, getter, s: NftSet, negate: bool):
        exact = set()
        spans = []
        for key in s.elements:
            if isinstance(key, tuple) and key and key[0] == "cidr":
                spans.append(("cidr", key[1], key[2]))
            elif isinstance(key, tuple) and key and key[0] == "range":
                spans.append(("range", key[1], key[2]))
            else:
                exact.add(key)
        dynamic = "dynamic" in s.flags or s.timeout is not None
        name = f"{self.label}/{s.name}"
        if not spans and not dynamic:
            if negate:
                return lambda p, c: getter(p, c) not in exact
            return lambda p, c: getter(p, c) in exact

        def member(p, c):
            value = getter(p, c)
            if value in exact:
                hit = True
            elif dynamic and c.state.dynset_contains(name, value, c.now):
                hit = True
            else:
                hit = False
                for kind, a, b in spans:
                    if kind == "cidr" and isinstance(value, int) and (value & b) == a:
                        hit = True
                        break
                    if kind == "range" and isinstance(value, int) and a <= value <= b:
                        hit = True
                        break
            return hit != negate
        return member

    def _named_vmap(self, ref: str) -> dict:
        name = ref[1:]
        cached = self._vmaps.get(name)
        if cached is not None:
            return cached
        s = self._named_set(ref)
        if not s.is_map:
            raise self.fail(f"{name} is a set, not a verdict map")
        mapping = {}
        for key, value in s.elements.items():
            mapping[key] = self.verdict(value)
        self._vmaps[name] = mapping
        return mapping

    def _anonymous_vmap(self, kinds: list) -> dict:
        if self.take() != "{":
            raise self.fail("vmap needs '{ key : verdict, … }' or '@map'")
        mapping = {}
        while True:
            word = self.peek()
            if word == "}":
                self.take()
                return mapping
            if word == ",":
                self.take()
                continue
            parts = [self.take()]
            while self.peek() == ".":
                self.take()
                parts.append(self.take())
            if self.take() != ":":
                raise self.fail("vmap element needs 'key : verdict'")
            verdict_words = [self.take()]
            if verdict_words[0] in ("goto", "jump"):
                verdict_words.append(self.take())
            mapping[self._key(kinds, parts)] = self.verdict(verdict_words)

    def _vmap_stmt(self, getter, mapping: dict):
        spans = [(k, v) for k, v in mapping.items() if isinstance(k, tuple) and k and k[0] in ("cidr", "range")]
        if not spans:
            return (nf.S_VMAP, lambda p: getter(p, None), mapping)
        exact = {k: v for k, v in mapping.items() if not (isinstance(k, tuple) and k and k[0] in ("cidr", "range"))}
        return (nf.S_VMAP, lambda p: getter(p, None), SpanVmap(exact, spans))


class SpanVmap:
    """A verdict map whose keys include prefixes or ranges: exact keys first, then each span in order."""

    def __init__(self, exact: dict, spans: list):
        self.exact = exact
        self.spans = spans

    def get(self, value, default=None):
        """The verdict for `value`, or `default`."""
        hit = self.exact.get(value)
        if hit is not None:
            return hit
        if isinstance(value, int):
            for (kind, a, b), verdict in self.spans:
                if (kind == "cidr" and (value & b) == a) or (kind == "range" and a <= value <= b):
                    return verdict
        return default
