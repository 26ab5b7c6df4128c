"""What counts as one of kube-proxy's rules, defined once for the picture, RulesView and the charts.

iptables: each `-A` line of `iptables-save` (table headers, chain declarations and COMMIT are not rules);
nftables: each `add rule` and each `add element` line (a map or set element steers packets as a rule does; the
declarations of the table, chains, sets and maps are not rules); IPVS: each virtual and each real server of
`ipvsadm -Ln`, plus the `-A` lines of the iptables rules IPVS mode still needs (ipset members, kube-ipvs0's
addresses and headings are not rules).
"""
from __future__ import annotations

IPVS_SERVICE = ("TCP ", "UDP ", "SCTP ")


def is_rule(mode: str, line: str) -> bool:
    """Whether this line of kube-proxy's output (in `mode`) is one rule."""
    if mode == "nftables":
        return line.startswith(("add rule ", "add element "))
    if line.startswith("-A "):
        return True
    if mode == "ipvs":
        return line.startswith(IPVS_SERVICE) or (line.startswith("  -> ") and "RemoteAddress" not in line)
    return False


def rule_lines(mode: str, text: str) -> list[int]:
    """The indexes of the lines of `text` that are rules."""
    return [i for i, line in enumerate(text.splitlines()) if is_rule(mode, line)]


def count_rules(mode: str, text: str) -> int:
    """How many rules kube-proxy's output holds."""
    return len(rule_lines(mode, text))


__all__ = ["is_rule", "rule_lines", "count_rules"]
