"""Every message a student reads, rendered with its slots filled the way its real callers fill them, in English and in
Russian: it renders; the Russian has no English phrase the code wrote and never translated; a translated phrase stands
where Russian asks no case of it; a count is never followed by a word that would have to agree with it; and the
rendered Russian keeps the glossary.

The callers are found with `ast`: for each `tr("…", slot=value)` the value is followed back through local assignments,
loops and the parameters of the enclosing function to what the code itself writes there: another `tr(…)` (a phrase, in
the language chosen), a string literal or an f-string (the code's own words, never translated), or a number it counts.
A value the code computes otherwise (a name, an address, a message from a tool) is stood in for by a sample.
"""
from __future__ import annotations

import ast
import functools
import pathlib
import re
import string
from dataclasses import dataclass, field
from typing import Any, Iterator

import pytest

from labsupport import i18n
from tests.i18n.test_glossary import RULES

ROOT = pathlib.Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "labsupport"
#: How far a value is followed back through the parameters of the functions that pass it on.
DEPTH = 4
#: At most this many different values are tried per slot.
WIDTH = 8
#: The words a literal may bring into a Russian sentence as they are: what Kubernetes, the kernel and HTTP call them
#: (the picture's pod states, kube-proxy's modes, protocols, a refusal's reason), kept in English by the glossary.
KEPT_IN_ENGLISH = {"ready", "not-ready", "terminating", "pending", "serving", "iptables", "nftables", "ipvs", "tcp",
                   "udp", "sctp", "forbidden"}
#: What may follow a count in Russian without agreeing with it: units, and words that never change with a number.
UNITS = {"с", "мс", "мкс", "мин", "ч", "Б", "кБ", "МБ", "ГБ", "ТБ", "КиБ", "МиБ", "ГиБ", "и", "или", "из", "в", "на", "до", "с", "по"}
#: Slots whose numbers name something (a port, an exit code, an HTTP status) rather than count it.
NUMBERS_THAT_NAME = {"port", "dport", "got_port", "code", "status", "id"}
#: A sample for a slot whose value the code computes: by the slot's name, else a name-like word.
STAND_INS: dict[str, Any] = {"ip": "10.96.0.10", "dst": "10.96.0.10", "host": "172.18.0.3", "address": "10.244.1.5:80",
                             "port": 30080, "dport": 80, "node": "lab-worker", "nodes": "lab-worker, lab-worker2",
                             "namespace": "default", "mode": "iptables", "url": "http://web", "path": "/tmp/x",
                             "error": "Connection refused", "status": 200, "code": 1, "pod": "web-7d4b9-x2x5q",
                             "selector": "app=web", "seconds": 30, "count": 3, "n": 3, "replicas": 3}


# --- the code, read once ----------------------------------------------------------------------------------------------
@dataclass
class Module:
    """One source file of the package: its tree and each node's parent."""

    path: pathlib.Path
    tree: ast.Module
    parents: dict[ast.AST, ast.AST] = field(default_factory=dict)

    def where(self, node: ast.AST) -> str:
        return f"{self.path.relative_to(ROOT)}:{getattr(node, 'lineno', 0)}"

    def function(self, node: ast.AST) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
        """The function `node` is in (None at module level)."""
        while node in self.parents:
            node = self.parents[node]
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                return node if not isinstance(node, ast.Lambda) else self.function(node)
        return None


@functools.lru_cache(maxsize=1)
def modules() -> tuple[Module, ...]:
    """Every module of the package but the catalogs."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if "locale" in path.relative_to(PACKAGE).parts:
            continue
        module = Module(path, ast.parse(path.read_text(), str(path)))
        for parent in ast.walk(module.tree):
            for child in ast.iter_child_nodes(parent):
                module.parents[child] = parent
        found.append(module)
    return tuple(found)


def callee(call: ast.Call) -> str:
    return call.func.id if isinstance(call.func, ast.Name) else getattr(call.func, "attr", "")


@functools.lru_cache(maxsize=1)
def calls_by_name() -> dict[str, list[tuple[ast.Call, Module]]]:
    """Every call in the package, by the name called."""
    index: dict[str, list[tuple[ast.Call, Module]]] = {}
    for module in modules():
        for node in ast.walk(module.tree):
            if isinstance(node, ast.Call):
                index.setdefault(callee(node), []).append((node, module))
    return index


def is_tr(node: ast.AST) -> bool:
    return (isinstance(node, ast.Call) and callee(node) == "tr" and bool(node.args)
            and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str))


# --- what a slot can hold ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Phrase:
    """A `tr(…)` passed into a slot: translated into the language chosen, with its own slots."""

    key: str
    slots: tuple[tuple[str, tuple[Any, ...]], ...]
    where: str


@dataclass(frozen=True)
class Literal:
    """Words the code writes itself (a string literal, an f-string's own text): never translated."""

    text: str
    words: str
    where: str


@dataclass(frozen=True)
class Number:
    """A number: one the code counts (len(…), a sum, arithmetic) or one it writes (a port, a code)."""

    value: float
    counted: bool = True


NUMERIC_CALLS = {"len", "int", "round", "sum", "float", "abs", "max", "min"}


def values(node: ast.AST, module: Module, depth: int = 0) -> list[Any]:
    """What the expression `node` (in `module`) can put into a slot, as far as the code says."""
    if depth > 3 * DEPTH:       # a variable assigned from itself, or a long chain: stop following
        return []
    if isinstance(node, ast.Constant):
        if isinstance(node.value, str):
            return [Literal(node.value, node.value, module.where(node))]
        numeric = isinstance(node.value, (int, float)) and not isinstance(node.value, bool)
        return [Number(node.value, counted=False)] if numeric else []
    if isinstance(node, ast.JoinedStr):
        text = "".join(str(part.value) if isinstance(part, ast.Constant) else "web" for part in node.values)
        words = " ".join(str(part.value) for part in node.values if isinstance(part, ast.Constant))
        return [Literal(text, words, module.where(node))]
    if is_tr(node):
        slots = tuple((kw.arg, tuple(values(kw.value, module, depth + 1)[:1])) for kw in node.keywords if kw.arg)
        return [Phrase(node.args[0].value, slots, module.where(node))]
    if isinstance(node, ast.Call) and callee(node) in NUMERIC_CALLS:
        return [Number(2)]
    if isinstance(node, ast.Call) and callee(node) == "get" and isinstance(node.func.value, ast.Dict):
        return [v for item in node.func.value.values for v in values(item, module, depth + 1)]
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        return returned(node.func.id, module, depth + 1)
    if isinstance(node, ast.BinOp) and not isinstance(node.op, ast.Mod):
        sides = values(node.left, module, depth) + values(node.right, module, depth)
        return [Number(3)] if sides and all(isinstance(v, Number) for v in sides) else []
    if isinstance(node, ast.IfExp):
        return values(node.body, module, depth) + values(node.orelse, module, depth)
    if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.Or):
        return [v for operand in node.values for v in values(operand, module, depth)]
    if isinstance(node, ast.Name):
        return named(node, module, depth)
    return []


@functools.lru_cache(maxsize=None)
def assignments(scope: ast.AST) -> dict[str, list[ast.AST]]:
    """Every expression a scope assigns to each name (a loop over a literal tuple gives each of its items)."""
    found: dict[str, list[ast.AST]] = {}
    for node in ast.walk(scope):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    found.setdefault(target.id, []).append(node.value)
        elif isinstance(node, (ast.AnnAssign, ast.NamedExpr)) and isinstance(node.target, ast.Name) \
                and node.value is not None:
            found.setdefault(node.target.id, []).append(node.value)
        elif isinstance(node, (ast.For, ast.comprehension)) and isinstance(node.target, ast.Name) \
                and isinstance(node.iter, (ast.Tuple, ast.List)):
            found.setdefault(node.target.id, []).extend(node.iter.elts)
    return found


def named(name: ast.Name, module: Module, depth: int) -> list[Any]:
    """What a variable holds: its assignments in the enclosing function (or loop's items), else what the callers of
    that function pass for it when it is a parameter."""
    function = module.function(name)
    found = [v for value in assignments(function or module.tree).get(name.id, [])
             for v in values(value, module, depth + 1)]
    if function is not None and depth < DEPTH and not isinstance(function, ast.Lambda):
        found += passed(function, name.id, module, depth + 1)
    return found


def returned(function: str, module: Module, depth: int) -> list[Any]:
    """What a function of the same module returns (a lookup table of words, a phrase it builds)."""
    found: list[Any] = []
    for node in module.tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == function:
            found += [v for ret in ast.walk(node) if isinstance(ret, ast.Return) and ret.value is not None
                      for v in values(ret.value, module, depth)]
    return found


def passed(function: ast.FunctionDef, parameter: str, module: Module, depth: int) -> list[Any]:
    """What the callers of `function` pass for `parameter` (private functions: callers in the same module)."""
    params = [a.arg for a in function.args.posonlyargs + function.args.args]
    if parameter not in params + [a.arg for a in function.args.kwonlyargs]:
        return []
    method = bool(params) and params[0] in ("self", "cls")
    found: list[Any] = []
    for call, caller in calls_by_name().get(function.name, []):
        if function.name.startswith("_") and caller is not module:
            continue
        given = next((kw.value for kw in call.keywords if kw.arg == parameter), None)
        if given is None and parameter in params:
            index = params.index(parameter) - (1 if method and isinstance(call.func, ast.Attribute) else 0)
            if 0 <= index < len(call.args) and not isinstance(call.args[index], ast.Starred):
                given = call.args[index]
        if given is not None:
            found += values(given, caller, depth)
    return found


# --- the messages and their callers -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Site:
    """One `tr(…)` call: its English text and what each slot can hold."""

    key: str
    where: str
    slots: dict[str, list[Any]]


def slot_names(text: str) -> dict[str, str]:
    """A format string's slots → their format spec."""
    return {name: spec or "" for _, name, spec, _ in string.Formatter().parse(text) if name}


@functools.lru_cache(maxsize=1)
def sites() -> tuple[Site, ...]:
    """Every `tr(…)` of the package with its slots' values, deduplicated, at most WIDTH a slot."""
    found = []
    for module in modules():
        for node in ast.walk(module.tree):
            if not is_tr(node):
                continue
            given = {kw.arg: kw.value for kw in node.keywords if kw.arg}
            slots = {}
            for name in slot_names(node.args[0].value):
                seen = list(dict.fromkeys(values(given[name], module))) if name in given else []
                slots[name] = seen[:WIDTH]
            found.append(Site(node.args[0].value, module.where(node), slots))
    return tuple(found)


def stand_in(slot: str, spec: str) -> Any:
    """A sample for a slot whose value the code computes."""
    if spec and spec[-1] in "gdfe%":
        return 0.25 if spec.endswith("%") else 12.5
    return STAND_INS.get(slot, "web")


def rendered(value: Any, slot: str, spec: str) -> Any:
    """What a slot's value is in the language chosen now."""
    if isinstance(value, Phrase):
        inner, given = slot_names(value.key), dict(value.slots)
        return i18n.tr(value.key, **{name: rendered(given[name][0] if given.get(name) else None, name, inner[name])
                                     for name in inner})
    if isinstance(value, Literal):
        return value.text
    if isinstance(value, Number):
        return value.value
    return stand_in(slot, spec)


def variants(site: Site) -> Iterator[tuple[str, Any, dict[str, Any]]]:
    """(slot varied, its value, every slot's value): each slot's every value, the others at their first."""
    base = {name: (found[0] if found else None) for name, found in site.slots.items()}
    yield "", None, base
    for name, found in site.slots.items():
        for value in found[1:]:
            yield name, value, {**base, name: value}


def render(site: Site, chosen: dict[str, Any]) -> str:
    specs = slot_names(site.key)
    return i18n.tr(site.key, **{name: rendered(value, name, specs[name]) for name, value in chosen.items()})


def russian(key: str) -> str:
    return i18n.catalog("ru").get(key, key)


# --- where a slot stands in a Russian sentence ------------------------------------------------------------------------
#: Before a slot that asks no case of its phrase: the start, another slot, or punctuation that opens a clause or a
#: label (after an optional space).
FREE_BEFORE = re.compile(r"(?:^|[:;,.?!—(«\"'`\n]|\})\s*$")
#: After such a slot: the end, another slot, or punctuation that closes it.
FREE_AFTER = re.compile(r"^\s*(?:$|[:;,.?!—)»\"'`(\n]|\{)")


def around(template: str, slot: str) -> list[tuple[str, str]]:
    """(text before, text after) every occurrence of `{slot…}` in a format string."""
    return [(template[:m.start()], template[m.end():])
            for m in re.finditer(r"\{" + re.escape(slot) + r"(?:![rsa])?(?::[^}]*)?\}", template)]


def quoted(template: str, slot: str) -> bool:
    """Whether every occurrence of the slot stands inside backticks or quotes (code, a label, a name)."""
    return all(re.search(r"[`«\"']$", before) and re.match(r"^[`»\"']", after) for before, after in
               around(template, slot))


def case_free(template: str, slot: str) -> bool:
    """Whether every occurrence of the slot stands where Russian asks no case of a phrase put there."""
    return all(FREE_BEFORE.search(before) and FREE_AFTER.match(after) for before, after in around(template, slot))


def english_words(text: str) -> list[str]:
    """The English words of a literal the code wrote (HTML tags, code in backticks and kept terms aside)."""
    text = re.sub(r"<[^>]+>|`[^`]*`|\S*://\S*", " ", text)
    if text.strip() in KEPT_IN_ENGLISH:
        return []
    return re.findall(r"(?<![\w.\-/=$])[a-z]{3,}(?![\w.\-/=(])", text)


def count_then_word(template: str, slot: str) -> list[str]:
    """The Russian words that follow a count directly and would have to agree with it."""
    return [m.group(1) for _, after in around(template, slot)
            for m in [re.match(r"^ ([А-Яа-яЁё]+)", after)] if m and m.group(1) not in UNITS]


# --- tests ------------------------------------------------------------------------------------------------------------
def test_the_callers_are_found():
    found = sites()
    assert len(found) > 300
    kinds = {type(v).__name__ for site in found for vs in site.slots.values() for v in vs}
    assert kinds == {"Phrase", "Literal", "Number"}, kinds


def test_a_phrase_passed_on_through_a_parameter_is_found():
    site = next(s for s in sites() if s.key.startswith("{what} needs access to the cluster's nodes"))
    keys = {v.key for v in site.slots["what"] if isinstance(v, Phrase)}
    assert {"stopping kube-proxy", "lab.trace (the node's rules and conntrack)"} <= keys, keys


def test_the_slot_rules_catch_what_they_should():
    assert not case_free("{what} нужен доступ к нодам кластера", "what")
    assert case_free("{what}: нужен доступ к нодам кластера", "what")
    assert not case_free("возможен DNAT на {endpoints}{masquerade}", "endpoints")
    assert case_free("цели DNAT: {endpoints}{masquerade} (правила)", "endpoints")
    assert case_free("цели DNAT: {endpoints}{masquerade} (правила)", "masquerade")
    assert count_then_word("правил {rules} в {lines} строках", "lines") == ["строках"]
    assert count_then_word("правил: {rules}, строк: {lines}", "lines") == []
    assert count_then_word("за {seconds:g} с", "seconds") == []
    assert english_words("starting the client container web") == ["starting", "the", "client", "container", "web"]
    assert english_words("<code>web</code>") == ["web"] and english_words("`kind create cluster`") == []
    assert english_words("not-ready") == [] and english_words("ClusterIP") == []


@pytest.fixture(params=["en", "ru"])
def language(request, monkeypatch):
    monkeypatch.setenv(i18n.VARIABLE, request.param)
    return request.param


def test_every_message_renders_with_what_its_callers_pass(language):
    broken = []
    for site in sites():
        for slot, value, chosen in variants(site):
            try:
                text = render(site, chosen)
            except (KeyError, IndexError, ValueError, TypeError) as e:
                broken.append(f"{site.where}: {site.key!r} with {slot}={value!r}: {type(e).__name__}: {e}")
                continue
            if language == "en" and re.search(r"[А-Яа-яЁё]", text):
                broken.append(f"{site.where}: Russian in the English message {text!r}")
    assert not broken, "\n".join(broken)


def test_no_english_phrase_of_the_code_reaches_a_russian_sentence():
    leaks = []
    for site in sites():
        template = russian(site.key)
        for slot, found in site.slots.items():
            for value in found:
                if isinstance(value, Literal) and not quoted(template, slot) and english_words(value.words):
                    leaks.append(f"{value.where} passes {value.text!r} into {{{slot}}} of {site.where}: «{template}»")
    assert not leaks, "English the code writes, put into Russian sentences untranslated:\n" + "\n".join(leaks)


def test_a_translated_phrase_stands_where_russian_asks_no_case_of_it():
    wrong = []
    for site in sites():
        template = russian(site.key)
        for slot, found in site.slots.items():
            phrases = [v for v in found if isinstance(v, Phrase)]
            if phrases and not quoted(template, slot) and not case_free(template, slot):
                wrong.append(f"{site.where}: {{{slot}}} takes «{russian(phrases[0].key)}» ({phrases[0].where}) in "
                             f"«{template}»")
    assert not wrong, ("a phrase put where Russian needs another case (put it after a colon or a dash, or in "
                       "parentheses):\n" + "\n".join(wrong))


def test_a_count_is_not_followed_by_a_word_that_must_agree_with_it():
    wrong = []
    for site in sites():
        template, specs = russian(site.key), slot_names(site.key)
        for slot, found in site.slots.items():
            counted = slot not in NUMBERS_THAT_NAME and (any(isinstance(v, Number) and v.counted for v in found)
                                                          or specs.get(slot, "")[-1:] in ("g", "d"))
            words = count_then_word(template, slot) if counted else []
            if words:
                wrong.append(f"{site.where}: «{template}» ({{{slot}}} {words[0]})")
    assert not wrong, ("a count followed by a word that agrees with it only for some numbers (write «строк: {n}», "
                       "not «{n} строк»):\n" + "\n".join(wrong))


def test_the_rendered_russian_keeps_the_glossary(monkeypatch):
    monkeypatch.setenv(i18n.VARIABLE, "ru")
    found = []
    for site in sites():
        for slot, value, chosen in variants(site):
            text = render(site, chosen)
            found += [f"{site.where}: «{m.group()}» in «{text}» → {r.write}" for r in RULES
                      for m in r.pattern.finditer(text)]
    assert not found, "\n".join(dict.fromkeys(found))
