"""The nftables state of one node and the transaction commands that change it.

`NftRuleset` holds what a kernel would (tables, chains, sets, maps, their elements, rules with handles): `apply()` runs
`nft -f` commands — add, create, insert, replace, delete, destroy and flush of tables, chains, sets, maps, elements
and rules — or reads `nft list` blocks, on top of what was loaded before. `nft_compiler` turns it into a `Program`.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from labsupport.dataplane.netfilter import int_to_ip, ip_to_int, parse_cidr, proto_name
from labsupport.dataplane.nft_lexer import EOL, Cursor, Quoted, parse_duration, tokenize

FAMILIES = ("ip", "ip6", "inet", "arp", "bridge", "netdev")
CHAIN_PRIORITY = {"raw": -300, "mangle": -150, "dstnat": -100, "filter": 0, "security": 50, "srcnat": 100}
TYPE_KINDS = {"ipv4_addr": "ip", "inet_proto": "proto", "inet_service": "port", "mark": "int", "verdict": "verdict",
              "ifname": "str", "ether_addr": "str", "ipv6_addr": "str"}


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


class NftRuleset:
    """The nftables state of one node: parse text into it, apply transactions on top."""

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
                        raise cur.error(f"element {key_text(key)} is not in {name}", name_tok)
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
            tokens = self._rule_tokens(cur)
            if not tokens:
                raise cur.error("empty rule", name_tok)
            src = NftRuleSource(tokens, table.next_handle, name_line, cur.lines[name_line - 1])
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
                key = tuple(element_value(k, p) for k, p in zip(kinds, parts))
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
                raise cur.error(f"map {s.name} element {key_text(key)} needs ': value'", tok)
            out.append((key, value))


def key_text(key: object) -> str:
    """An element key as nft prints it (`10.0.0.1 . tcp . 80`)."""
    parts = key if isinstance(key, tuple) else (key,)
    return " . ".join(int_to_ip(p) if isinstance(p, int) and p > 65535 else str(p) for p in parts)


def element_value(kind: str, tok: object) -> object:
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
