"""Small helpers the lessons call, so that cells stay short: tables, YAML, counts and self-checks.

>>> rows = [{"name": "web-1", "ip": "10.244.1.2"}]
>>> "<td>10.244.1.2</td>" in Table(rows)._repr_html_()
True
"""
from __future__ import annotations

import html
from collections import Counter
from typing import Any, Iterable

import yaml

from labsupport.i18n import tr


class Table:
    """Rows of dicts shown as an HTML table (and as aligned text where HTML is not shown)."""

    def __init__(self, rows: Iterable[dict], columns: list[str] | None = None):
        self.rows = list(rows)
        self.columns = columns or (list(self.rows[0]) if self.rows else [])

    def _repr_html_(self) -> str:
        head = "".join(f"<th>{html.escape(c)}</th>" for c in self.columns)
        body = "".join("<tr>" + "".join(f"<td>{html.escape(str(r.get(c, '')))}</td>" for c in self.columns)
                       + "</tr>" for r in self.rows)
        return f"<table><tr>{head}</tr>{body}</table>"

    def __repr__(self) -> str:
        widths = {c: max([len(c)] + [len(str(r.get(c, ""))) for r in self.rows]) for c in self.columns}
        lines = ["  ".join(c.upper().ljust(widths[c]) for c in self.columns)]
        lines += ["  ".join(str(r.get(c, "")).ljust(widths[c]) for c in self.columns) for r in self.rows]
        return "\n".join(lines)


class Yaml:
    """An object shown as YAML, the way `kubectl get -o yaml` prints it."""

    def __init__(self, obj: Any):
        self.text = yaml.safe_dump(obj, sort_keys=False, default_flow_style=False)

    def __repr__(self) -> str:
        return self.text


def pods(lab: Any, selector: str | None = None, namespace: str = "default") -> Table:
    """The pods as `kubectl get pods -o wide` would list them."""
    from labsupport.widgets.scene import pod_state
    rows = [{"name": p["metadata"]["name"], "state": pod_state(p), "ip": p.get("status", {}).get("podIP", ""),
             "node": p["spec"].get("nodeName", "")}
            for p in lab.get("pods", namespace=namespace, selector=selector)]
    return Table(rows, ["name", "state", "ip", "node"])


def running(lab: Any, selector: str | None = None, *, name: str | None = None, namespace: str = "default") -> int:
    """How many pods (picked by selector, or the one named) run and are not being deleted."""
    found = ([lab.get("pods", name, namespace=namespace)] if name else
             lab.get("pods", namespace=namespace, selector=selector))
    return sum(1 for p in found
               if p.get("status", {}).get("phase") == "Running" and not p["metadata"].get("deletionTimestamp"))


def pod_ips(lab: Any, selector: str, namespace: str = "default") -> list[str]:
    """The IPs of the pods a selector picks (pods being deleted included), sorted."""
    return sorted(p["status"]["podIP"] for p in lab.get("pods", namespace=namespace, selector=selector)
                  if p.get("status", {}).get("podIP"))


def endpoints(lab: Any, service: str, namespace: str = "default") -> Table:
    """Every endpoint in the Service's EndpointSlices with its conditions, one row each."""
    rows = []
    for s in lab.get("endpointslices", namespace=namespace, selector=f"kubernetes.io/service-name={service}"):
        for e in s.get("endpoints") or []:
            c = e.get("conditions") or {}
            rows.append({"slice": s["metadata"]["name"], "address": ",".join(e.get("addresses") or []),
                         "ready": c.get("ready"), "serving": c.get("serving"), "terminating": c.get("terminating"),
                         "node": e.get("nodeName", ""), "zone": e.get("zone", ""),
                         "pod": (e.get("targetRef") or {}).get("name", "")})
    return Table(rows, ["slice", "address", "ready", "serving", "terminating", "node", "zone", "pod"])


def nodes(lab: Any) -> Table:
    """The nodes with their role, zone, InternalIP and pod CIDR."""
    from labsupport.widgets.scene import CONTROL_PLANE_LABEL, ZONE_LABEL, node_ip
    rows = [{"name": n["metadata"]["name"],
             "role": "control-plane" if CONTROL_PLANE_LABEL in n["metadata"].get("labels", {}) else "worker",
             "zone": n["metadata"].get("labels", {}).get(ZONE_LABEL, ""), "ip": node_ip(n),
             "podCIDR": n.get("spec", {}).get("podCIDR", "")} for n in lab.get("nodes")]
    return Table(rows, ["name", "role", "zone", "ip", "podCIDR"])


def spread(lab: Any, url: str, source: str = "client", requests: int = 60, by: str = "pod") -> Counter:
    """Send `requests` new connections and count who answered: by "pod", "node", "zone" or "client_ip"."""
    zones = {n["metadata"]["name"]: n["metadata"].get("labels", {}).get("topology.kubernetes.io/zone", "")
             for n in lab.get("nodes")}
    counts: Counter = Counter()
    for _ in range(requests):
        r = lab.curl(url, source=source)
        if not r.ok:
            counts[tr("({error} error)", error=(r.error or tr("no answer")).split(":")[0])] += 1
        elif by == "node":
            counts[r.node] += 1
        elif by == "zone":
            counts[zones.get(r.node, "")] += 1
        elif by == "client_ip":
            counts[r.client_ip] += 1
        else:
            counts[r.pod] += 1
    return counts


def client_address(lab: Any) -> str:
    """The address requests with `source="client"` come from (a machine next to the nodes, outside the cluster)."""
    return lab.backend.client_ip()


def ready_count(lab: Any, service: str, namespace: str = "default") -> int:
    """How many ready endpoints the Service's slices list."""
    return sum(1 for s in lab.get("endpointslices", namespace=namespace,
                                  selector=f"kubernetes.io/service-name={service}")
               for e in s.get("endpoints") or [] if (e.get("conditions") or {}).get("ready", True))


def self_check(passed: bool, success: str, hint: str) -> str:
    """A lesson's self-check: returns the success note, or raises AssertionError carrying the hint."""
    if not passed:
        from labsupport.checks import CheckFailed
        raise CheckFailed(tr("not yet: {hint}", hint=hint))
    return f"✓ {success}"


__all__ = ["Table", "Yaml", "nodes", "spread", "pods", "running", "client_address", "pod_ips", "endpoints", "ready_count", "self_check"]
