"""Label and field selectors: kubectl's `-l` / `--field-selector` syntax, LabelSelector objects, Service selectors.

Which function to use:

* `parse_selector("app=web,tier!=db")` — kubectl `-l` text. The empty string selects everything.
* `from_label_selector({"matchLabels": …, "matchExpressions": […]})` — a LabelSelector (Deployment,
  ReplicaSet …).
  An empty LabelSelector `{}` selects everything; `None` selects nothing (as `metav1.LabelSelectorAsSelector`).
* `from_service_selector(spec.get("selector"))` — a Service's plain map. An empty or missing map selects
  nothing: such a Service gets no EndpointSlices written for it.
* `matches(selector, labels)` — any of the above: a string is kubectl text, a dict with `matchLabels` /
  `matchExpressions` (or `{}`) a LabelSelector, any other dict a plain map (every pair must match; an empty map
  matches everything, as `labels.SelectorFromSet`), and `None` matches everything (no selector given).
  For Services use `service_selects(service, labels)`, which applies the Service rule.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable

from labsupport.errors import BadRequest
from labsupport.model import meta

IN = "in"
NOT_IN = "notin"
EQUALS = "="
DOUBLE_EQUALS = "=="
NOT_EQUALS = "!="
EXISTS = "exists"
DOES_NOT_EXIST = "!"
GREATER_THAN = "gt"
LESS_THAN = "lt"


@dataclass(frozen=True)
class Requirement:
    """One term of a selector: a key, an operator and its values."""

    key: str
    operator: str
    values: tuple[str, ...] = ()

    def matches(self, labels: dict) -> bool:
        """Whether a label map satisfies this term."""
        labels = labels or {}
        op = self.operator
        if op in (IN, EQUALS, DOUBLE_EQUALS):
            return self.key in labels and labels[self.key] in self.values
        if op in (NOT_IN, NOT_EQUALS):
            return self.key not in labels or labels[self.key] not in self.values
        if op == EXISTS:
            return self.key in labels
        if op == DOES_NOT_EXIST:
            return self.key not in labels
        if op in (GREATER_THAN, LESS_THAN):
            if self.key not in labels:
                return False
            try:
                have = int(labels[self.key])
                want = int(self.values[0])
            except (ValueError, IndexError):
                return False
            return have > want if op == GREATER_THAN else have < want
        return False

    def __str__(self) -> str:
        if self.operator == DOES_NOT_EXIST:
            return "!" + self.key
        if self.operator == EXISTS:
            return self.key
        if self.operator in (IN, NOT_IN):
            return f"{self.key} {self.operator} ({','.join(self.values)})"
        if self.operator in (GREATER_THAN, LESS_THAN):
            return f"{self.key}{'>' if self.operator == GREATER_THAN else '<'}{self.values[0]}"
        return f"{self.key}{self.operator}{self.values[0] if self.values else ''}"


@dataclass(frozen=True)
class Selector:
    """A conjunction of requirements; `nothing=True` is the selector that matches no object."""

    requirements: tuple[Requirement, ...] = ()
    nothing: bool = False

    def matches(self, labels: dict | None) -> bool:
        """Whether a label map satisfies every requirement."""
        if self.nothing:
            return False
        return all(r.matches(labels or {}) for r in self.requirements)

    def empty(self) -> bool:
        """True for the selector that matches everything."""
        return not self.nothing and not self.requirements

    def __str__(self) -> str:
        return ",".join(str(r) for r in self.requirements)


EVERYTHING = Selector()
NOTHING = Selector(nothing=True)


def _requirement(key: str, operator: str, values: Iterable[str], *, check: bool = True) -> Requirement:
    """Build one requirement, checking key and values as `labels.NewRequirement` does."""
    values = tuple(sorted(set(values)))
    if check:
        errs = meta.is_label_key(key)
        if errs:
            raise BadRequest(f'key: Invalid value: "{key}": ' + "; ".join(errs))
        if operator in (IN, NOT_IN) and not values:
            raise BadRequest("values: Invalid value: []string{}: for 'in', 'notin' operators, values set can't be "
                             "empty")
        if operator in (EXISTS, DOES_NOT_EXIST) and values:
            raise BadRequest("values: Forbidden: values set must be empty for exists and does not exist")
        if operator in (EQUALS, DOUBLE_EQUALS, NOT_EQUALS) and len(values) != 1:
            raise BadRequest("values: Invalid value: " + "[]string{" + ", ".join(f'"{v}"' for v in values)
                             + "}: exact-match compatibility requires one single value")
        if operator in (GREATER_THAN, LESS_THAN):
            if len(values) != 1:
                raise BadRequest("values: Invalid value: " + "[]string{" + ", ".join(f'"{v}"' for v in values)
                                 + "}: for 'Gt', 'Lt' operators, exactly one value is required")
            try:
                int(values[0])
            except ValueError:
                raise BadRequest(f'values[0]: Invalid value: "{values[0]}": for \'Gt\', \'Lt\' operators, the '
                                 "value must be an integer") from None
        for i, value in enumerate(values):
            errs = meta.is_label_value(value)
            if errs:
                raise BadRequest(f'values[{i}][{key}]: Invalid value: "{value}": ' + "; ".join(errs))
    return Requirement(key, operator, values)


# --- the kubectl `-l` lexer and parser ---------------------------------------------------------------------

_ID, _IN, _NOT_IN, _EQ, _DEQ, _NEQ, _NOT, _GT, _LT, _OPEN, _CLOSE, _COMMA, _END, _ERR = range(14)
_SPECIAL = "=!(),><"
_SYMBOLS = {"!": _NOT, "!=": _NEQ, "(": _OPEN, ")": _CLOSE, ",": _COMMA, "=": _EQ, "==": _DEQ, ">": _GT,
            "<": _LT}
_KEYWORDS = {"in": _IN, "notin": _NOT_IN}


def _lex(text: str) -> list[tuple[int, str]]:
    tokens = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch in " \t\r\n":
            i += 1
        elif ch in _SPECIAL:
            j = i + 1
            while j < n and text[j] in _SPECIAL and text[i:j + 1] in _SYMBOLS:
                j += 1
            lit = text[i:j]
            tokens.append((_SYMBOLS.get(lit, _ERR), lit))
            i = j
        else:
            j = i
            while j < n and text[j] not in _SPECIAL and text[j] not in " \t\r\n":
                j += 1
            lit = text[i:j]
            tokens.append((_KEYWORDS.get(lit, _ID), lit))
            i = j
    tokens.append((_END, ""))
    return tokens


class _Parser:
    def __init__(self, text: str):
        self.tokens = _lex(text)
        self.pos = 0

    def lookahead(self, values: bool) -> tuple[int, str]:
        tok, lit = self.tokens[self.pos]
        if values and tok in (_IN, _NOT_IN):
            tok = _ID
        return tok, lit

    def consume(self, values: bool) -> tuple[int, str]:
        tok, lit = self.lookahead(values)
        if tok != _END:
            self.pos += 1
        return tok, lit

    def parse(self) -> list[Requirement]:
        reqs: list[Requirement] = []
        while True:
            tok, lit = self.lookahead(True)
            if tok in (_ID, _NOT):
                try:
                    reqs.append(self.requirement())
                except BadRequest as err:
                    raise BadRequest(f"unable to parse requirement: {err.message}") from err
                tok, lit = self.consume(True)
                if tok == _END:
                    return reqs
                if tok == _COMMA:
                    tok2, lit2 = self.lookahead(True)
                    if tok2 not in (_ID, _NOT):
                        raise BadRequest(f"found '{lit2}', expected: identifier after ','")
                else:
                    raise BadRequest(f"found '{lit}', expected: ',' or 'end of string'")
            elif tok == _END:
                return reqs
            else:
                raise BadRequest(f"found '{lit}', expected: !, identifier, or 'end of string'")

    def requirement(self) -> Requirement:
        operator = ""
        tok, lit = self.consume(True)
        if tok == _NOT:
            operator = DOES_NOT_EXIST
            tok, lit = self.consume(True)
        if tok != _ID:
            raise BadRequest(f"found '{lit}', expected: identifier")
        key = lit
        errs = meta.is_label_key(key)
        if errs:
            # Upstream reports this one without a field path, which Go prints as "<nil>".
            raise BadRequest(f'<nil>: Invalid value: "{key}": ' + "; ".join(errs))
        if self.lookahead(True)[0] in (_END, _COMMA):
            return _requirement(key, operator or EXISTS, ())
        if operator == DOES_NOT_EXIST:
            return _requirement(key, operator, ())
        tok, lit = self.consume(False)
        operator = {_IN: IN, _NOT_IN: NOT_IN, _EQ: EQUALS, _DEQ: DOUBLE_EQUALS, _NEQ: NOT_EQUALS,
                    _GT: GREATER_THAN, _LT: LESS_THAN}.get(tok, "")
        if not operator:
            # Upstream's wording, including its unbalanced quote before notin.
            raise BadRequest(f"found '{lit}', expected: '=', '!=', '==', 'in', notin'")
        if operator in (IN, NOT_IN):
            values = self.set_values()
        else:
            values = self.exact_value()
        return _requirement(key, operator, values)

    def set_values(self) -> list[str]:
        tok, lit = self.consume(True)
        if tok != _OPEN:
            raise BadRequest(f"found '{lit}' expected: '('")
        tok, lit = self.lookahead(True)
        if tok in (_ID, _COMMA):
            values = self.identifiers()
            tok, lit2 = self.consume(True)
            if tok != _CLOSE:
                raise BadRequest(f"found '{lit2}', expected: ')'")
            return values
        if tok == _CLOSE:
            self.consume(True)
            return [""]
        raise BadRequest(f"found '{lit}', expected: ',', ')' or identifier")

    def identifiers(self) -> list[str]:
        values: list[str] = []
        while True:
            tok, lit = self.consume(True)
            if tok == _ID:
                values.append(lit)
                tok2, lit2 = self.lookahead(True)
                if tok2 == _COMMA:
                    continue
                if tok2 == _CLOSE:
                    return values
                raise BadRequest(f"found '{lit2}', expected: ',' or ')'")
            if tok == _COMMA:
                if not values:
                    values.append("")
                tok2, _ = self.lookahead(True)
                if tok2 == _CLOSE:
                    values.append("")
                    return values
                if tok2 == _COMMA:
                    self.consume(True)
                    values.append("")
                continue
            raise BadRequest(f"found '{lit}', expected: ',', or identifier")

    def exact_value(self) -> list[str]:
        tok, _ = self.lookahead(True)
        if tok in (_END, _COMMA):
            return [""]
        tok, lit = self.consume(True)
        if tok == _ID:
            return [lit]
        raise BadRequest(f"found '{lit}', expected: identifier")


def parse_selector(text: str | None) -> Selector:
    """Parse kubectl `-l` text (`app=web,tier!=db`, `env in (a,b)`, `!canary`); empty text selects everything."""
    if not text or not text.strip():
        return EVERYTHING
    reqs = _Parser(text).parse()
    return Selector(tuple(sorted(reqs, key=lambda r: r.key)))


def from_label_selector(selector: dict | None) -> Selector:
    """A LabelSelector dict as a Selector: `{}` selects everything, `None` selects nothing."""
    if selector is None:
        return NOTHING
    reqs: list[Requirement] = []
    for key, value in sorted((selector.get("matchLabels") or {}).items()):
        reqs.append(_requirement(key, EQUALS, [str(value)]))
    for expr in selector.get("matchExpressions") or []:
        op = expr.get("operator")
        key = expr.get("key", "")
        values = [str(v) for v in expr.get("values") or []]
        mapped = {"In": IN, "NotIn": NOT_IN, "Exists": EXISTS, "DoesNotExist": DOES_NOT_EXIST}.get(op)
        if mapped is None:
            raise BadRequest(f'"{op}" is not a valid label selector operator')
        reqs.append(_requirement(key, mapped, values))
    return Selector(tuple(sorted(reqs, key=lambda r: r.key)))


def from_map(labels: dict | None) -> Selector:
    """A plain `key: value` map as a Selector (every pair must match); an empty map selects everything."""
    return Selector(tuple(Requirement(k, EQUALS, (str(v),)) for k, v in sorted((labels or {}).items())))


def from_service_selector(selector: dict | None) -> Selector:
    """A Service's `spec.selector`: an empty or missing map selects nothing (no endpoints are managed)."""
    if not selector:
        return NOTHING
    return from_map(selector)


def _is_label_selector(value: dict) -> bool:
    return not value or "matchLabels" in value or "matchExpressions" in value


def to_selector(selector: Any) -> Selector:
    """Any accepted selector form as a Selector: text, LabelSelector dict, plain map, Selector or None (everything)."""
    if selector is None:
        return EVERYTHING
    if isinstance(selector, Selector):
        return selector
    if isinstance(selector, str):
        return parse_selector(selector)
    if isinstance(selector, dict):
        return from_label_selector(selector) if _is_label_selector(selector) else from_map(selector)
    raise TypeError(f"not a selector: {selector!r}")


def matches(selector: Any, labels: dict | None) -> bool:
    """Whether `labels` satisfy `selector` (text, LabelSelector dict, plain map, Selector, or None = everything)."""
    return to_selector(selector).matches(labels or {})


def service_selects(service: dict, labels: dict | None) -> bool:
    """Whether a Service's `spec.selector` selects these pod labels (a Service without a selector selects none)."""
    return from_service_selector((service.get("spec") or {}).get("selector")).matches(labels or {})


def selector_to_text(selector: dict | None) -> str:
    """A LabelSelector or plain map as kubectl text (`app=web,tier in (a,b)`), as `kubectl get -o wide` shows it."""
    if not selector:
        return ""
    return str(to_selector(selector))


# --- field selectors ---------------------------------------------------------------------------------------

FIELD_LABELS: dict[str, tuple[str, ...]] = {
    "": ("metadata.name", "metadata.namespace"),
    "Pod": ("metadata.name", "metadata.namespace", "spec.nodeName", "spec.restartPolicy", "spec.schedulerName",
            "spec.serviceAccountName", "spec.hostNetwork", "status.phase", "status.podIP", "status.nominatedNodeName"),
    "Node": ("metadata.name", "spec.unschedulable"),
    "Service": ("metadata.name", "metadata.namespace", "spec.clusterIP", "spec.type"),
    "Namespace": ("metadata.name", "status.phase"),
    "Event": ("metadata.name", "metadata.namespace", "involvedObject.kind", "involvedObject.namespace",
              "involvedObject.name", "involvedObject.uid", "involvedObject.apiVersion",
              "involvedObject.resourceVersion", "involvedObject.fieldPath", "reason", "reportingComponent",
              "source", "type"),
    "ReplicaSet": ("metadata.name", "metadata.namespace", "status.replicas"),
}


@dataclass(frozen=True)
class FieldRequirement:
    """One field-selector term: `spec.nodeName=worker`, `status.phase!=Running`."""

    field: str
    operator: str
    value: str

    def __str__(self) -> str:
        return f"{self.field}{self.operator}{self.value}"


def _field_value(obj: dict, path: str) -> str:
    cur: Any = obj
    for part in path.split("."):
        if not isinstance(cur, dict):
            return ""
        cur = cur.get(part)
    if cur is None:
        return ""
    if isinstance(cur, bool):
        return "true" if cur else "false"
    return str(cur)


@dataclass(frozen=True)
class FieldSelector:
    """A conjunction of field requirements, as `kubectl --field-selector` takes them."""

    requirements: tuple[FieldRequirement, ...] = field(default=())

    def matches_fields(self, obj: dict) -> bool:
        """Whether an object's fields satisfy every requirement."""
        for req in self.requirements:
            have = _field_value(obj, req.field)
            if req.operator == "!=":
                if have == req.value:
                    return False
            elif have != req.value:
                return False
        return True

    def check_supported(self, kind: str) -> None:
        """Refuse a field the API server does not index for this kind (`field label not supported: …`)."""
        allowed = FIELD_LABELS.get(kind, FIELD_LABELS[""])
        for req in self.requirements:
            if req.field not in allowed:
                raise BadRequest(f"field label not supported: {req.field}")

    def __str__(self) -> str:
        return ",".join(str(r) for r in self.requirements)


def _split_unescaped(text: str, sep: str) -> list[str]:
    parts, cur, i = [], "", 0
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text):
            cur += text[i:i + 2]
            i += 2
            continue
        if ch == sep:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
        i += 1
    parts.append(cur)
    return parts


def _unescape(value: str) -> str:
    out, i = "", 0
    while i < len(value):
        if value[i] == "\\" and i + 1 < len(value):
            out += value[i + 1]
            i += 2
        else:
            out += value[i]
            i += 1
    return out


def parse_field_selector(text: str | None) -> FieldSelector:
    """Parse `--field-selector` text (`metadata.name=x,spec.nodeName=n,status.phase!=Running`)."""
    if not text or not text.strip():
        return FieldSelector()
    reqs = []
    for term in _split_unescaped(text, ","):
        if not term:
            continue
        for op in ("!=", "==", "="):
            idx = term.find(op)
            if idx > 0:
                reqs.append(FieldRequirement(term[:idx].strip(), "!=" if op == "!=" else "=",
                                             _unescape(term[idx + len(op):])))
                break
        else:
            raise BadRequest(f"invalid selector: '{text}'; can't understand '{term}'")
    return FieldSelector(tuple(reqs))


def matches_fields(selector: FieldSelector | str | None, obj: dict) -> bool:
    """Whether an object satisfies a field selector (text or parsed; None matches everything)."""
    if selector is None:
        return True
    if isinstance(selector, str):
        selector = parse_field_selector(selector)
    return selector.matches_fields(obj)
