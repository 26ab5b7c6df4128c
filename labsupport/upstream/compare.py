"""Put the rules the real kube-proxy wrote and the rules labsupport renders side by side, counters removed."""
from __future__ import annotations

import difflib
import re


#: Chains kube-proxy makes only to notice that someone flushed its tables; they hold no rules.
CANARIES = ("KUBE-PROXY-CANARY", "KUBE-KUBELET-CANARY")
BUILTIN = ("INPUT", "OUTPUT", "FORWARD", "PREROUTING", "POSTROUTING")
TABLES = ("filter", "nat")

#: Chains kube-proxy fills walking a Go map, so their rules come in a different order on every sync; like upstream's
#: own tests, compare them grouped by Service (in order within each Service), the catch-all NodePort jump last.
BY_SERVICE = ("KUBE-SERVICES", "KUBE-NODEPORTS", "KUBE-EXTERNAL-SERVICES", "KUBE-PROXY-FIREWALL")
_LAST = "this must be the last rule in this chain"
_SERVICE = re.compile(r'--comment "?([^" ]+)')

_COUNTERS = re.compile(r"^\[\d+:\d+\]\s*")
_NFT_COUNTER = re.compile(r"\s*counter packets \d+ bytes \d+")


def iptables_chains(text: str, tables: tuple[str, ...] = TABLES) -> dict[str, dict[str, list[str]]]:
    """An iptables-save or iptables-restore text as table -> chain -> rules (without `-A chain`), no counters."""
    out: dict[str, dict[str, list[str]]] = {}
    table = None
    for raw in text.splitlines():
        line = _COUNTERS.sub("", raw.strip())
        if not line or line.startswith("#") or line == "COMMIT":
            continue
        if line.startswith("*"):
            table = line[1:]
            out.setdefault(table, {}) if table in tables else None
            continue
        if table not in tables:
            continue
        chains = out[table]
        if line.startswith(":"):
            chains.setdefault(line[1:].split()[0], [])
        elif line.startswith("-A "):
            chain, _, rule = line[3:].partition(" ")
            chains.setdefault(chain, []).append(rule)
    return out


def by_service(rules: list[str]) -> list[str]:
    """Rules grouped by the Service their comment names (stable within a Service); the last-rule jump stays last."""
    last = [r for r in rules if _LAST in r]
    rest = [r for r in rules if _LAST not in r]

    def service(rule: str) -> str:
        found = _SERVICE.search(rule)
        return found.group(1) if found else ""
    return sorted(rest, key=service) + last


def canonical_iptables(text: str, *, with_jumps: bool = True) -> str:
    """The kube-proxy part of an iptables dump as comparable text: KUBE-* chains by name with their rules in
    order, and (with_jumps) the built-in chains' jumps into them; canaries and other programs' rules left out."""
    lines = []
    for table, chains in sorted(iptables_chains(text).items()):
        lines.append(f"*{table}")
        for chain in sorted(chains):
            if chain in CANARIES:
                continue
            if chain in BUILTIN:
                if not with_jumps:
                    continue
                rules = [r for r in chains[chain] if re.search(r"-j KUBE-(?!PROXY-CANARY|KUBELET-CANARY)", r)]
                if not rules:
                    continue
            elif chain in BY_SERVICE:
                rules = by_service(chains[chain])
            elif chain.startswith("KUBE-"):
                rules = chains[chain]
            else:
                continue
            lines.append(f":{chain}")
            lines.extend(f"-A {chain} {r}" for r in rules)
    return "\n".join(lines) + "\n"


def canonical_nft(text: str) -> str:
    """`nft list table` output without counters and handles, its sets, maps and chains sorted by name and each
    set's elements sorted (nft lists objects in the order they were added, which is not part of the ruleset)."""
    blocks: list[tuple[str, list[str]]] = []
    head: list[str] = []
    current: list[str] | None = None
    for raw in text.splitlines():
        line = _NFT_COUNTER.sub("", raw).rstrip()
        line = re.sub(r"\s*# handle \d+", "", line)
        if not line.strip():
            continue
        depth = len(line) - len(line.lstrip("\t"))
        if depth == 1 and line.strip().endswith("{") and current is None:
            current = [line]
            continue
        if current is not None:
            current.append(line)
            if depth == 1 and line.strip() == "}":
                blocks.append((current[0].strip(), _sorted_elements(current)))
                current = None
            continue
        head.append(line)
    out = [h for h in head if h.strip() != "}"]
    for _, block in sorted(blocks):
        out.extend(block)
    return "\n".join(out + ["}"]) + "\n"


def _sorted_elements(block: list[str]) -> list[str]:
    text = "\n".join(block)
    found = re.search(r"elements = \{(.*?)\}", text, re.S)
    if not found:
        return block
    items = sorted(i.strip() for i in _split_elements(found.group(1)))
    text = text[:found.start()] + "elements = { " + ",\n\t\t\t     ".join(items) + " }" + text[found.end():]
    return text.split("\n")


def _split_elements(body: str) -> list[str]:
    """Split on the commas between set elements (a comment may hold none: upstream's are names)."""
    return [part for part in body.replace("\n", " ").split(",") if part.strip()]


def first_differences(expected: str, actual: str, context: int = 3, limit: int = 60) -> str:
    """A unified diff (labsupport's render against the real kube-proxy) cut to its first `limit` lines; empty
    when they are equal."""
    if expected == actual:
        return ""
    diff = list(difflib.unified_diff(expected.splitlines(), actual.splitlines(), "labsupport render",
                                     "real kube-proxy", n=context, lineterm=""))
    more = f"\n… {len(diff) - limit} more diff lines" if len(diff) > limit else ""
    return "\n".join(diff[:limit]) + more
