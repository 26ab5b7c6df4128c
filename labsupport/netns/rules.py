"""kube-proxy → kernel: each sync of a node's agent applied in that node's namespace the way kube-proxy applies it.

iptables mode: `iptables-restore --noflush --counters` of the full dump (declaring and deleting chains that are
gone) or of the partial one, plus the jumps from the built-in chains once; nftables mode: `nft -f` of the
incremental transaction, or of the whole table after a gap. A failed load marks the node for a full reload.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from labsupport.netns.namespaces import run_in

if TYPE_CHECKING:
    from labsupport.proxy.daemon import KubeProxyDaemons

NFT_RESET = "add table ip kube-proxy\ndelete table ip kube-proxy\n"


@dataclass
class NodeRules:
    """What is loaded in a node's namespace: the mode, the agent's sync count, iptables chains and jumps."""

    mode: str | None = None
    syncs: int = -1
    chains: dict = field(default_factory=dict)
    jumps: bool = False
    unsupported: str = ""


class RuleLoader:
    """Loads every node's kube-proxy rules into its namespace and remembers what each kernel holds."""

    def __init__(self, node_ns: dict[str, str], proxies: "KubeProxyDaemons"):
        self.node_ns = node_ns
        self.proxies = proxies
        self.states: dict[str, NodeRules] = {}
        self.closed = False

    def on_rules(self, node_name: str, agent, change) -> None:
        """kube-proxy's agent on `node_name` synced: apply what it wrote (None: load its whole rule set)."""
        if self.closed or node_name not in self.node_ns:
            return
        try:
            self._apply_rules(node_name, agent, change)
        except Exception:
            self.states[node_name].mode = None       # what the kernel holds is unknown now: reload it all next time
            self.proxies.dirty.add(node_name)
            raise

    def _apply_rules(self, node_name: str, agent, change) -> None:
        state = self.states.setdefault(node_name, NodeRules())
        if change is None:
            if agent.rules and agent.mode in ("iptables", "nftables"):
                self._load(node_name, agent.mode, agent.rules, full=True)
            state.syncs = agent.syncs
            return
        kind, payload = change
        if kind == "cleanup":
            self._cleanup(node_name, payload)
            return
        if not payload.applied:
            return
        if payload.mode in ("iptables", "nftables"):
            # A delta only applies on top of the previous sync; after a gap (a sync whose result kube-proxy's
            # daemon did not pass on, a mode switch) load the complete rule set instead.
            if state.mode != payload.mode or agent.syncs != state.syncs + 1:
                self._load(node_name, payload.mode, agent.rules, full=True)
            elif payload.text:
                self._load(node_name, payload.mode, payload.text, full=False)
            if payload.mode == "iptables":
                state.chains = _declared_chains(agent.rules)
        else:
            state.unsupported = payload.mode
        state.syncs = agent.syncs

    def _load(self, node_name: str, mode: str, text: str, *, full: bool) -> None:
        ns = self.node_ns[node_name]
        state = self.states[node_name]
        if mode == "iptables":
            if full:
                chains = _declared_chains(text)
                stale = {t: sorted(c - chains.get(t, set())) for t, c in state.chains.items()}
                text = _with_deletions(text, stale)
                state.chains = chains
            run_in(ns, ["iptables-restore", "--noflush", "--counters"], input=text, check=True)
            if not state.jumps:
                from labsupport.proxy.iptables import JUMP_RULES
                jumps = "".join(f"*{table}\n" + "".join(f"-A {chain} {rule}\n" for chain, rule in rules) + "COMMIT\n"
                                for table, rules in JUMP_RULES.items())
                run_in(ns, ["iptables-restore", "--noflush"], input=jumps, check=True)
                state.jumps = True
        else:
            run_in(ns, ["nft", "-f", "-"], input=(NFT_RESET + text) if full else text, check=True)
        state.mode = mode
        state.unsupported = ""

    def _cleanup(self, node_name: str, switch) -> None:
        ns = self.node_ns[node_name]
        state = self.states[node_name]
        if switch.cleanup_tool.startswith("iptables-restore"):
            without_jumps = "".join(line + "\n" for line in switch.cleanup.splitlines() if not line.startswith("-D "))
            proc = run_in(ns, ["iptables-restore", "--noflush"], input=switch.cleanup if state.jumps else without_jumps)
            if proc.returncode != 0:
                run_in(ns, ["iptables-restore", "--noflush"], input=without_jumps)
        elif switch.cleanup_tool.startswith("nft"):
            run_in(ns, ["nft", "-f", "-"], input=NFT_RESET)
        self.states[node_name] = NodeRules()

    def mode(self, node_name: str) -> str | None:
        """The mode whose rules the node's kernel holds (None: unknown or nothing loaded)."""
        state = self.states.get(node_name)
        return state.mode if state else None

    def forget(self) -> None:
        """The kernel's state is unknown (a load failed): load every node's rules in full at the next sync."""
        for state in self.states.values():
            state.mode = None

    def unsupported(self) -> dict[str, str]:
        """Nodes whose agent runs a mode this kernel cannot load, and that mode."""
        return {n: st.unsupported for n, st in self.states.items() if st.unsupported}


def _declared_chains(dump: str) -> dict[str, set[str]]:
    chains: dict[str, set[str]] = {}
    table = ""
    for line in dump.splitlines():
        if line.startswith("*"):
            table = line[1:].strip()
            chains.setdefault(table, set())
        elif line.startswith(":"):
            chains.setdefault(table, set()).add(line[1:].split()[0])
    return chains


def _with_deletions(dump: str, stale: dict[str, list[str]]) -> str:
    """The dump plus, per table, the declaration and deletion of chains that no longer exist (as kube-proxy does)."""
    if not any(stale.values()):
        return dump
    out = []
    table = ""
    seen = set()
    for line in dump.splitlines():
        if line.startswith("*"):
            table = line[1:].strip()
            seen.add(table)
            out.append(line)
            out.extend(f":{c} - [0:0]" for c in stale.get(table, []))
        elif line.strip() == "COMMIT":
            out.extend(f"-X {c}" for c in stale.get(table, []))
            out.append(line)
        else:
            out.append(line)
    for t, chains in stale.items():
        if t not in seen and chains:
            out.append(f"*{t}")
            out.extend(f":{c} - [0:0]" for c in chains)
            out.extend(f"-X {c}" for c in chains)
            out.append("COMMIT")
    return "\n".join(out) + "\n"


__all__ = ["RuleLoader", "NodeRules", "NFT_RESET"]
