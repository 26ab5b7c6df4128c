"""The nft compiler: an `NftRuleset`'s IPv4 tables into the model's `Program` of chains and rule closures."""
from __future__ import annotations

from labsupport.dataplane import netfilter as nf
from labsupport.dataplane.netfilter import Chain, Program, Rule, RulesSyntaxError, ip_to_int
from labsupport.dataplane.nft_lexer import WHAT, parse_duration
from labsupport.dataplane.nft_ruleset import NftRuleset, NftRuleSource, NftSet, NftTable, element_value


CT_DNAT = frozenset({"DNAT"})
NO_STATUS: frozenset = frozenset()


def compile_ruleset(ruleset: NftRuleset) -> Program:
    """Compile the ruleset's IPv4 tables into a `Program` the engine can run (its `source` is the ruleset)."""
    program = Program("nftables")
    program.source = ruleset  # type: ignore[attr-defined]
    for (family, tname), table in ruleset.tables.items():
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
    for (family, tname), table in ruleset.tables.items():
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
            if self.peek() == "addr":
                stmts.append(self._dnat_map())
                return
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

    def _dnat_map(self):
        """`dnat ip addr . port to numgen random mod N map { i : address . port , … }`: a random endpoint, every
        branch explored by a trace, as `numgen … vmap` is."""
        for want in ("addr", ".", "port", "to"):
            if self.take() != want:
                raise self.fail("dnat to an address and port from a map needs 'dnat ip addr . port to …'")
        getter, kinds, _ = self._selector_concat()
        if not (isinstance(getter, tuple) and getter[0] == "numgen"):
            raise self.fail("dnat ip addr . port to … is supported with 'numgen random mod N map { … }' only")
        mod, offset = getter[1], getter[2]
        if self.take() != "map" or self.take() != "{":
            raise self.fail("numgen here needs 'map { index : address . port , … }'")
        targets = {}
        while True:
            word = self.take()
            if word == "}":
                break
            if word == ",":
                continue
            if self.take() != ":":
                raise self.fail("a dnat map element needs 'index : address . port'")
            address = self.take()
            if self.take() != ".":
                raise self.fail("a dnat map element needs 'index : address . port'")
            targets[int(word, 0) - offset] = (ip_to_int(address), int(self.take()))
        return (nf.S_DNAT_MAP, mod, targets)

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
            if op in ("or", "|"):     # kube-proxy's one use of it: marking a connection for masquerade
                return (nf.S_MARK, lambda m: m | value, True)
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
            if f == "status":        # only the NAT done so far on the packet's way is modelled
                return (lambda p, c: CT_DNAT if c.dnat is not None else NO_STATUS), "ctstate", None
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
            self._skipelement_value()
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

    def _skipelement_value(self) -> None:
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
        key = tuple(element_value(k, p) for k, p in zip(kinds, parts))
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
