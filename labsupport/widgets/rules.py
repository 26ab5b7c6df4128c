"""RulesView and ConntrackView: a node's kube-proxy rules with the matched ones lit, and its conntrack table."""
from __future__ import annotations

import html
from typing import Any

import ipywidgets as widgets

from labsupport.i18n import tr
from labsupport.proxy.rule_count import count_rules
from labsupport.tool_output import conntrack_rewrites, parse_conntrack_line
from labsupport.widgets.live import LiveView
from labsupport.widgets.present import type_scale
from labsupport.widgets.scene import rules_definition

HIT_STYLE = "background:#fce4ec;border-left:4px solid #d81b60;font-weight:bold"


def matched_lines(rules: str, hits: list) -> set[int]:
    """Indexes of the lines of `rules` that are the rules a trace matched (iptables, nftables or IPVS text)."""
    wanted = set()
    for hit in hits:
        wanted.add(hit.rule.strip())
        wanted.add(f"add rule {hit.table} {hit.chain} {hit.rule}".strip())
    return {i for i, line in enumerate(rules.splitlines()) if line.strip() in wanted}


def _node_names(lab: Any) -> list[str]:
    return [n["metadata"]["name"] for n in lab.get("nodes")]


def _default_node(lab: Any) -> str:
    names = _node_names(lab)
    workers = [n for n in names if "control-plane" not in n]
    return (workers or names)[0]


class RulesView(LiveView):
    """A node's kube-proxy rules as the node prints them; the rules a traced request matched are highlighted."""

    watched_kinds = frozenset({"Service", "EndpointSlice", "Pod", "ConfigMap"})

    def __init__(self, lab: Any, node: str | None = None, *, trace: Any = None, grep: str = "",
                 only_matched: bool = False, max_lines: int = 400, present: bool | None = None,
                 live: bool = True):
        super().__init__(lab, present=present, live=live)
        self.max_lines = max_lines
        self.trace = trace
        #: The kube-proxy mode the trace went through: its rules light up only while the node runs that mode.
        self.trace_mode = lab.proxy_mode if trace is not None else None
        self.node = widgets.Dropdown(options=_node_names(lab), value=node or _default_node(lab),
                                     description=tr("node"))
        self.grep = widgets.Text(value=grep, description="grep", placeholder=tr("e.g. default/web"))
        self.only = widgets.Checkbox(value=only_matched, description=tr("only matched rules"), indent=False)
        self.text = widgets.HTML()
        self.html = ""
        for control in (self.node, self.grep, self.only):
            control.observe(lambda _: self.refresh(), names="value")
        self.children = [widgets.HBox([self.node, self.grep, self.only]), self.text]
        self.refresh()

    def highlight(self, trace: Any) -> None:
        """Light up the rules this `lab.trace(...)` matched on the chosen node."""
        self.trace = trace
        self.trace_mode = self.lab.proxy_mode
        self.refresh()

    def hits(self) -> list:
        """The rules the trace matched on the chosen node (none once kube-proxy runs another mode than then)."""
        if self.trace is None or self.trace_mode != self.lab.proxy_mode:
            return []
        return [hit for hop in self.trace.hops if hop.where == self.node.value for hit in hop.rules]

    def draw(self) -> None:
        """Read the node's rules and render them."""
        rules = self.lab.proxy_rules(self.node.value)
        lines = rules.splitlines()
        lit = matched_lines(rules, self.hits())
        pattern = self.grep.value.strip()
        rows, shown = [], 0
        for i, line in enumerate(lines):
            if self.only.value and i not in lit:
                continue
            if pattern and pattern not in line and i not in lit:
                continue
            shown += 1
            if shown > self.max_lines:
                more = tr("… {count} more lines (narrow them with grep)", count=len(lines) - i)
                rows.append(f"<div>{more}</div>")
                break
            style = f' style="{HIT_STYLE}"' if i in lit else ""
            klass = ' class="rule matched"' if i in lit else ' class="rule"'
            rows.append(f"<div{klass}{style}>{html.escape(line) or '&nbsp;'}</div>")
        size = 12 * type_scale(self.present)
        mode = self.lab.proxy_mode
        summary = tr("{node} — kube-proxy mode {mode}: {rules} rules in {lines} lines, {matched} matched by the "
                     "traced request", node=f"<b>{html.escape(self.node.value)}</b>", mode=f"<code>{mode}</code>",
                     rules=count_rules(mode, rules), lines=len(lines), matched=len(lit))
        if self.trace is not None and self.trace_mode != mode:
            summary += " " + tr("(the traced request went through the {old} rules: trace it again to light the "
                                "{mode} rules)", old=self.trace_mode, mode=mode)
        head = (f"<div style='margin:4px 0'>{summary}</div>"
                f"<div class='rules-definition' style='margin:0 0 4px;color:#616161'>"
                f"{html.escape(rules_definition(mode))}</div>")
        self.html = (f"<div class='labsupport-rules'>{head}<div style=\"font-family:monospace;font-size:{size:.0f}px;"
                     f"white-space:pre;max-height:420px;overflow:auto;border:1px solid #ddd;padding:4px\">"
                     + "".join(rows) + "</div></div>")
        self.text.value = self.html

    def static_html(self) -> str:
        """The rendered rules as HTML."""
        return self.html

    def __repr__(self) -> str:
        return f"<RulesView node={self.node.value!r}>"


def parse_conntrack(line: str) -> dict | None:
    """One `conntrack -L` line as the table shows it: proto, timeout, state, both tuples and the NAT they imply."""
    record = parse_conntrack_line(line)
    if record is None:
        return None
    o, r = record.original, record.reply
    return {"proto": record.protocol, "timeout": record.timeout, "state": record.state or "",
            "original": f"{o.src}:{o.sport} → {o.dst}:{o.dport}", "reply": f"{r.src}:{r.sport} → {r.dst}:{r.dport}",
            "nat": "; ".join(rw.replace(" -> ", " → ") for rw in conntrack_rewrites(line))}


class ConntrackView(LiveView):
    """The conntrack entries of a node (or of every node), with the NAT each connection carries."""

    watched_kinds = frozenset({"Service", "EndpointSlice", "Pod"})

    def __init__(self, lab: Any, node: str | None = None, *, present: bool | None = None, live: bool = True):
        super().__init__(lab, present=present, live=live)
        self.node = widgets.Dropdown(options=[(tr("all nodes"), "all nodes")] + [(n, n) for n in _node_names(lab)],
                                     value=node or "all nodes", description=tr("node"))
        self.refresh_button = widgets.Button(description=tr("refresh"))
        self.refresh_button.on_click(lambda _: self.refresh())
        self.node.observe(lambda _: self.refresh(), names="value")
        self.table = widgets.HTML()
        self.html = ""
        self.children = [widgets.HBox([self.node, self.refresh_button]), self.table]
        self.refresh()

    def entries(self) -> list[tuple[str, dict]]:
        """(node, parsed entry) for every live conntrack entry shown."""
        nodes = _node_names(self.lab) if self.node.value == "all nodes" else [self.node.value]
        out = []
        for name in nodes:
            for line in self.lab.conntrack(name):
                parsed = parse_conntrack(line)
                if parsed is not None:
                    out.append((name, parsed))
        return out

    def draw(self) -> None:
        """Read the tables and render them."""
        rows = []
        for node, e in self.entries():
            nat = html.escape(e["nat"]) or "—"
            rows.append(f"<tr><td>{html.escape(node)}</td><td>{e['proto']}</td><td>{e['timeout']}</td>"
                        f"<td>{e['state']}</td><td>{html.escape(e['original'])}</td><td>{html.escape(e['reply'])}</td>"
                        f"<td>{nat}</td></tr>")
        size = 12 * type_scale(self.present)
        body = "".join(rows) or "<tr><td colspan='7'><i>" + tr("no tracked connections") + "</i></td></tr>"
        self.html = (f"<table class='labsupport-conntrack' style='font-family:monospace;font-size:{size:.0f}px'>"
                     f"<tr><th>{tr('node')}</th><th>proto</th><th>ttl s</th><th>state</th><th>original</th>"
                     f"<th>reply</th><th>NAT</th></tr>{body}</table>")
        self.table.value = self.html

    def static_html(self) -> str:
        """The table as HTML."""
        return self.html

    def __repr__(self) -> str:
        return f"<ConntrackView node={self.node.value!r}>"


__all__ = ["RulesView", "ConntrackView", "matched_lines", "parse_conntrack"]
