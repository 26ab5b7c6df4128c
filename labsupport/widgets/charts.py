"""Charts for the scale lessons: rules kube-proxy writes, rules a new connection walks, bytes a watch ships.

The measurements run kube-proxy's renderers and the data-plane model on synthetic Services, so a lesson can
show how each mode grows without building a big cluster. The charts are SVG the project draws itself
(`labsupport.widgets.plot`), the same in CPython and in the browser.

>>> counts = rule_counts([5, 10], endpoints=2, modes=("iptables", "nftables"))
>>> counts["iptables"][1] > counts["iptables"][0]
True
>>> cost = connection_cost([5, 50], endpoints=2, modes=("iptables", "nftables"))
>>> cost["iptables"][1] > cost["iptables"][0], cost["nftables"][1] == cost["nftables"][0]
(True, True)
"""
from __future__ import annotations

import itertools
import math
import textwrap
from functools import lru_cache
from typing import Callable, Iterable, Sequence

from labsupport import formats
from labsupport.proxy.rule_count import count_rules
from labsupport.widgets.plot import Plot, Scale

NODE = {"apiVersion": "v1", "kind": "Node",
        "metadata": {"name": "lab-worker", "labels": {"topology.kubernetes.io/zone": "ru-central1-a"}},
        "spec": {"podCIDR": "10.244.1.0/24"},
        "status": {"addresses": [{"type": "InternalIP", "address": "172.18.0.3"}]}}
CONFIG = {"clusterCIDR": "10.244.0.0/16"}
MODE_COLORS = {"iptables": "#c62828", "ipvs": "#6a1b9a", "nftables": "#2e7d32"}
#: The lines of series not named after a proxy mode, in turn.
OTHER_COLORS = ("#1565c0", "#ef6c00", "#00838f", "#5d4037", "#ad1457", "#827717")
#: The bars, in turn.
BAR_COLORS = ("#c62828", "#2e7d32", "#1565c0", "#6a1b9a")


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
    """A chart drawn as SVG, shown as that SVG in notebooks, HTML exports and nbgrader feedback."""

    def __init__(self, svg: str, title: str = ""):
        self._svg = svg
        self.title = title

    def svg(self) -> str:
        """The chart as SVG text."""
        return self._svg

    def _repr_mimebundle_(self, include=None, exclude=None) -> dict:
        return {"image/svg+xml": self._svg, "text/plain": f"<Chart {self.title!r}>"}

    def __repr__(self) -> str:
        return "<Chart>"


def line_chart(x: Sequence[float], series: dict[str, Sequence[float]], *, title: str, xlabel: str, ylabel: str,
               logy: bool = False, notes: dict[str, str] | None = None) -> Chart:
    """A line chart with one line per series, a marker on each point (colours follow the proxy modes when the names
    match); `notes` writes a series' note at its last point.

    >>> svg = line_chart([1, 2], {"iptables": [1, 4]}, title="t", xlabel="x", ylabel="y", notes={"iptables": "n"}).svg()
    >>> MODE_COLORS["iptables"] in svg, svg.count('class="marker"'), '<text class="note"' in svg
    (True, 2, True)
    """
    xs, lines = list(x), {name: list(ys) for name, ys in series.items()}
    plot = Plot(Scale.around(xs), Scale.around([v for ys in lines.values() for v in ys], log=logy), title=title,
                xlabel=xlabel, ylabel=ylabel, grid="xy")
    others = itertools.cycle(OTHER_COLORS)
    for name, ys in lines.items():
        mode = name.split()[0] if name.split() else ""
        plot.line(xs, ys, MODE_COLORS.get(mode) or next(others), name=name)
        if notes and name in notes and xs and ys:
            plot.note(xs[-1], ys[-1], notes[name])
    plot.legend()
    return Chart(plot.svg(), title)


def bar_chart(values: dict[str, float], *, title: str, ylabel: str, logy: bool = False,
              fmt: str | Callable[[float], str] | None = None) -> Chart:
    """A bar chart with the value printed on each bar: by `fmt` (a format string, or a function such as
    `human_bytes`), a whole number in the language chosen by default.

    >>> import re
    >>> svg = bar_chart({"a": 20000, "b": 5000}, title="t", ylabel="y").svg()
    >>> re.findall(r'<text class="bar-value"[^>]*>([^<]*)</text>', svg)
    ['20,000', '5,000']
    """
    say = fmt.format if isinstance(fmt, str) else fmt or formats.number
    names, heights = list(values), list(values.values())
    margin = 0.05 * (len(names) - 0.2)         # the x axis holds the bars (0.8 wide) with 5% to spare
    x = Scale(-0.4 - margin, len(names) - 0.6 + margin) if names else Scale(-0.5, 0.5)
    y = _bar_scale([float(h) for h in heights], logy)

    def drawn(labels: list[str]) -> Plot:
        return Plot(x, y, title=title, ylabel=ylabel, categories=labels, grid="y", height=380)

    plot = _fit_labels(drawn, names)
    for i, (h, color) in enumerate(zip(heights, itertools.cycle(BAR_COLORS))):
        plot.bar(i - 0.4, i + 0.4, float(h), color)
        plot.text(i, float(h), say(h), cls="bar-value", dy=-4)
    return Chart(plot.svg(), title)


def _bar_scale(heights: list[float], log: bool) -> Scale:
    """The bars' y scale, with headroom so that the tallest bar's value stays inside the frame (×3 on a log scale,
    ×1.12 on a linear one); a log scale starts a power of ten under half the shortest bar."""
    top = max(heights, default=0.0)
    if log:
        shown = [h for h in heights if h > 0]
        if not shown:
            return Scale(1.0, 10.0, log=True)
        return Scale(10.0 ** math.floor(math.log10(min(shown) / 2)), top * 3, log=True)
    low = min(heights, default=0.0)
    return Scale(low * 1.12 if low < 0 else 0.0, top * 1.12 if top > 0 else 1.0)


def _fit_labels(drawn: Callable[[list[str]], Plot], names: list[str], gap: float = 6.0) -> Plot:
    """The chart `drawn` with the bars' names wrapped at spaces, each line of a name narrower and narrower, until no
    name runs into the next one's (long names such as "EndpointSlice (blog's 300 B × 100 × 3,000)" under neighbouring
    bars)."""
    plot = drawn(names)
    longest = max((len(line) for name in names for line in name.split("\n")), default=0)
    for width in range(longest, 7, -1):
        labels = ["\n".join(textwrap.fill(line, width, break_long_words=False) for line in name.split("\n"))
                  for name in names]
        plot = drawn(labels)
        spans = plot.category_spans()
        if all(left[1] + gap <= right[0] for left, right in zip(spans, spans[1:])):
            return plot
    return plot


def human_bytes(n: float) -> str:
    """Bytes in kB/MB/GB/TB (decimal, as the published numbers use), as the language chosen writes them: 245.3 MB,
    245,3 МБ."""
    return formats.size(n)


__all__ = ["Chart", "line_chart", "bar_chart", "rule_counts", "connection_cost", "synthetic_services", "count_rules",
           "nat_rules",
           "human_bytes"]
