"""Charts for the scale lessons: rules kube-proxy writes, rules a new connection walks, bytes a watch ships.

The measurements run kube-proxy's renderers and the data-plane model on synthetic Services, so a lesson can
show how each mode grows without building a big cluster.

>>> counts = rule_counts([5, 10], endpoints=2, modes=("iptables", "nftables"))
>>> counts["iptables"][1] > counts["iptables"][0]
True
>>> cost = connection_cost([5, 50], endpoints=2, modes=("iptables", "nftables"))
>>> cost["iptables"][1] > cost["iptables"][0], cost["nftables"][1] == cost["nftables"][0]
(True, True)
"""
from __future__ import annotations

import base64
import io
from functools import lru_cache
from typing import Iterable, Sequence

from labsupport.proxy.rule_count import count_rules

NODE = {"apiVersion": "v1", "kind": "Node",
        "metadata": {"name": "lab-worker", "labels": {"topology.kubernetes.io/zone": "ru-central1-a"}},
        "spec": {"podCIDR": "10.244.1.0/24"},
        "status": {"addresses": [{"type": "InternalIP", "address": "172.18.0.3"}]}}
CONFIG = {"clusterCIDR": "10.244.0.0/16"}
MODE_COLORS = {"iptables": "#c62828", "ipvs": "#6a1b9a", "nftables": "#2e7d32"}


def _ip(base: int, n: int) -> str:
    value = (base << 24) + n
    return ".".join(str((value >> s) & 255) for s in (24, 16, 8, 0))


def synthetic_services(services: int, endpoints: int = 10, *, kind: str = "ClusterIP") -> tuple[list, list]:
    """`services` Services of `endpoints` ready endpoints each, as the API would return them (with slices)."""
    svcs, slices = [], []
    for i in range(services):
        ip = _ip(10, 0x600000 + 0x10000 + i)            # 10.97.x.y, inside 10.96.0.0/12
        port = {"name": "http", "port": 80, "targetPort": 8080, "protocol": "TCP"}
        if kind != "ClusterIP":
            port["nodePort"] = 30000 + i % 2768
        svcs.append({"apiVersion": "v1", "kind": "Service",
                     "metadata": {"name": f"svc-{i:05d}", "namespace": "default"},
                     "spec": {"type": kind, "clusterIP": ip, "clusterIPs": [ip], "ports": [port],
                              "sessionAffinity": "None", "externalTrafficPolicy": "Cluster",
                              "internalTrafficPolicy": "Cluster"}})
        eps = [{"addresses": [_ip(10, 0xF40000 + 0x200 + i * endpoints + j)],
                "conditions": {"ready": True, "serving": True, "terminating": False}, "nodeName": "lab-worker2",
                "zone": "ru-central1-b"} for j in range(endpoints)]
        slices.append({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
                       "metadata": {"name": f"svc-{i:05d}-x", "namespace": "default",
                                    "labels": {"kubernetes.io/service-name": f"svc-{i:05d}"}},
                       "addressType": "IPv4", "endpoints": eps,
                       "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}]})
    return svcs, slices


def nat_rules(services: int, endpoints: int = 10) -> int:
    """`-A` rules in the iptables nat table for ClusterIP-only Services (upstream's formula is 5 + S·(2 + 3E))."""
    text = _rendered("iptables", services, endpoints)[0]
    return sum(1 for line in text.split("*nat", 1)[1].splitlines() if line.startswith("-A "))


@lru_cache(maxsize=32)
def _rendered(mode: str, services: int, endpoints: int) -> tuple[str, int]:
    """(rule text, rule count) kube-proxy renders for a synthetic cluster; cached, as both charts need it."""
    from labsupport.proxy import render
    text = render(mode, *synthetic_services(services, endpoints), NODE, CONFIG)
    return text, count_rules(mode, text)


def rule_counts(service_counts: Iterable[int], endpoints: int = 10,
                modes: Sequence[str] = ("iptables", "ipvs", "nftables")) -> dict[str, list[int]]:
    """How many rules kube-proxy writes on one node for each number of ClusterIP Services, per mode."""
    sizes = list(service_counts)
    return {mode: [_rendered(mode, n, endpoints)[1] for n in sizes] for mode in modes}


def connection_cost(service_counts: Iterable[int], endpoints: int = 10,
                    modes: Sequence[str] = ("iptables", "ipvs", "nftables")) -> dict[str, list[int]]:
    """Rules a NEW connection to the Service matched last walks through, per mode and number of Services."""
    from labsupport.dataplane.model import trace_packet
    sizes = list(service_counts)
    out: dict[str, list[int]] = {}
    for mode in modes:
        costs = []
        for n in sizes:
            rules = _rendered(mode, n, endpoints)[0]
            svcs, _ = synthetic_services(n, endpoints)
            targets = {svcs[0]["spec"]["clusterIP"], svcs[-1]["spec"]["clusterIP"], svcs[n // 2]["spec"]["clusterIP"]}
            costs.append(max(trace_packet(mode, rules, ["172.18.0.3"], "10.244.1.5", ip, 80).rules_evaluated
                             for ip in targets))
        out[mode] = costs
    return out


class Chart:
    """A matplotlib figure that shows itself as a PNG (in notebooks, HTML exports and nbgrader feedback)."""

    def __init__(self, figure):
        self.figure = figure

    def png(self) -> bytes:
        """The chart as PNG bytes."""
        buffer = io.BytesIO()
        self.figure.savefig(buffer, format="png", dpi=100, bbox_inches="tight")
        return buffer.getvalue()

    def svg(self) -> str:
        """The chart as SVG text."""
        buffer = io.StringIO()
        self.figure.savefig(buffer, format="svg", bbox_inches="tight")
        return buffer.getvalue()

    def _repr_mimebundle_(self, include=None, exclude=None) -> dict:
        title = self.figure.axes[0].get_title() if self.figure.axes else "chart"
        return {"image/png": base64.b64encode(self.png()).decode("ascii"), "text/plain": f"<Chart {title!r}>"}

    def __repr__(self) -> str:
        return "<Chart>"


def _figure(size=(7.5, 4.0)):
    from matplotlib.figure import Figure
    return Figure(figsize=size)


def line_chart(x: Sequence[float], series: dict[str, Sequence[float]], *, title: str, xlabel: str, ylabel: str,
               logy: bool = False, notes: dict[str, str] | None = None) -> Chart:
    """A line chart with one line per series (colours follow the proxy modes when the names match)."""
    fig = _figure()
    ax = fig.add_subplot(1, 1, 1)
    for name, ys in series.items():
        ax.plot(list(x), list(ys), marker="o", label=name, color=MODE_COLORS.get(name.split()[0]))
        if notes and name in notes:
            ax.annotate(notes[name], (list(x)[-1], list(ys)[-1]), textcoords="offset points", xytext=(-10, 8),
                        ha="right", fontsize=8)
    if logy:
        ax.set_yscale("log")
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(True, alpha=0.3)
    ax.legend()
    fig.tight_layout()
    return Chart(fig)


def bar_chart(values: dict[str, float], *, title: str, ylabel: str, logy: bool = False,
              fmt: str = "{:,.0f}") -> Chart:
    """A bar chart with the value printed on each bar."""
    fig = _figure((7.5, 3.8))
    ax = fig.add_subplot(1, 1, 1)
    names, heights = list(values), list(values.values())
    bars = ax.bar(names, heights, color=["#c62828", "#2e7d32", "#1565c0", "#6a1b9a"][:len(names)])
    for bar, h in zip(bars, heights):
        ax.annotate(fmt.format(h), (bar.get_x() + bar.get_width() / 2, h), ha="center", va="bottom", fontsize=9)
    if logy:
        ax.set_yscale("log")
    top = max(heights, default=0)
    if top > 0:     # headroom, so that the tallest bar's value stays inside the frame
        ax.set_ylim(top=top * 3 if logy else top * 1.12)
    ax.set_title(title)
    ax.set_ylabel(ylabel)
    ax.grid(True, axis="y", alpha=0.3)
    fig.tight_layout()
    return Chart(fig)


def human_bytes(n: float) -> str:
    """Bytes in kB/MB/GB/TB (decimal, as the published numbers use)."""
    for unit in ("B", "kB", "MB", "GB", "TB"):
        if abs(n) < 1000 or unit == "TB":
            return f"{n:,.1f} {unit}" if unit != "B" else f"{n:,.0f} B"
        n /= 1000
    return f"{n:,.1f} TB"


__all__ = ["Chart", "line_chart", "bar_chart", "rule_counts", "connection_cost", "synthetic_services", "count_rules",
           "nat_rules",
           "human_bytes"]
