"""The picture behind ClusterGraph: cluster objects → a networkx graph → a stable layout → inline SVG.

Everything here is plain functions over Kubernetes objects (dicts), so a test or a static export can draw a
cluster without a widget or a kernel.

>>> from labsupport.widgets.scene import build_model, Layout, render_svg
>>> objects = {"nodes": [{"metadata": {"name": "n1", "labels": {"topology.kubernetes.io/zone": "z1"}},
...                       "status": {"addresses": [{"type": "InternalIP", "address": "172.18.0.3"}]}}],
...            "pods": [{"metadata": {"name": "web-1", "namespace": "default", "uid": "u1"},
...                      "spec": {"nodeName": "n1"},
...                      "status": {"phase": "Running", "podIP": "10.244.1.2",
...                                 "conditions": [{"type": "Ready", "status": "True"}]}}],
...            "services": [], "slices": [], "proxies": {}}
>>> model = build_model(objects)
>>> [d["state"] for _, d in model.nodes(data=True) if d["kind"] == "pod"]
['ready']
>>> svg = render_svg(model, Layout().place(model))
>>> svg.startswith("<svg") and 'data-state="ready"' in svg
True
"""
from __future__ import annotations

import functools
import html
import math
import re
import textwrap
from dataclasses import dataclass, field
from typing import Any, Iterable

import networkx as nx

from labsupport import fontmetrics
from labsupport.i18n import tr, translate

CLIENT = "client"
ZONE_LABEL = "topology.kubernetes.io/zone"
CONTROL_PLANE_LABEL = "node-role.kubernetes.io/control-plane"

#: (stroke, fill) per pod state.
POD_COLORS = {
    "ready": ("#2e7d32", "#e8f5e9"),
    "not-ready": ("#e65100", "#fff3e0"),
    "terminating": ("#616161", "#e0e0e0"),
    "pending": ("#1565c0", "#e3f2fd"),
    "completed": ("#9e9e9e", "#fafafa"),
    "failed": ("#b71c1c", "#ffebee"),
}
#: Stroke per endpoint condition in a slice.
ENDPOINT_COLORS = {"ready": "#43a047", "serving": "#fb8c00", "terminating": "#9e9e9e", "not-ready": "#e53935"}
TRACE_COLOR = "#d81b60"
#: Where a node's first row of pods starts, below its title and kube-proxy badge (which ends at 40): the gap
#: between badge and pods holds the step numbers of the legs between a pod and its node.
POD_TOP = 62
#: Where a node's kube-proxy badge ends.
BADGE_BOTTOM = 40


def pod_state(pod: dict) -> str:
    """One word for a pod as the picture shows it: ready, not-ready, terminating, pending, completed or failed."""
    if pod.get("metadata", {}).get("deletionTimestamp"):
        return "terminating"
    status = pod.get("status") or {}
    phase = status.get("phase")
    if phase == "Running":
        ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or [])
        return "ready" if ready else "not-ready"
    if phase == "Succeeded":
        return "completed"
    if phase == "Failed":
        return "failed"
    return "pending"


def endpoint_state(endpoint: dict) -> str:
    """An EndpointSlice endpoint's conditions in one word: ready, serving (terminating), terminating, not-ready."""
    cond = endpoint.get("conditions") or {}
    if cond.get("terminating"):
        return "serving" if cond.get("serving") else "terminating"
    return "ready" if cond.get("ready", True) else "not-ready"


def node_ip(node: dict) -> str:
    """A Node's first InternalIP ('' when it has none)."""
    for address in (node.get("status") or {}).get("addresses") or []:
        if address.get("type") == "InternalIP":
            return address.get("address", "")
    return ""


def service_summary(svc: dict) -> str:
    """One line about a Service: type, ClusterIP and ports as `kubectl get svc` would show them."""
    spec = svc.get("spec") or {}
    kind = spec.get("type", "ClusterIP")
    ip = spec.get("clusterIP") or ""
    ports = []
    for p in spec.get("ports") or []:
        text = f"{p.get('port')}"
        if p.get("nodePort"):
            text += f":{p['nodePort']}"
        ports.append(f"{text}/{p.get('protocol', 'TCP')}")
    if kind == "ExternalName":
        return f"ExternalName {spec.get('externalName', '')}"
    ip_text = tr("None (headless)") if ip == "None" else ip
    return f"{kind} {ip_text} {','.join(ports)}".strip()


def service_badges(svc: dict) -> list[str]:
    """Short tags for the Service's traffic settings worth seeing in the picture."""
    spec = svc.get("spec") or {}
    tags = []
    ingress = ((svc.get("status") or {}).get("loadBalancer") or {}).get("ingress") or []
    for item in ingress:
        if item.get("ip"):
            tags.append(f"LB {item['ip']}")
    if spec.get("type") in ("NodePort", "LoadBalancer"):
        tags.append(f"eTP {spec.get('externalTrafficPolicy', 'Cluster')}")
    if spec.get("healthCheckNodePort"):
        tags.append(f"hc {spec['healthCheckNodePort']}")
    if spec.get("sessionAffinity") == "ClientIP":
        tags.append("affinity ClientIP")
    if spec.get("trafficDistribution"):
        tags.append(spec["trafficDistribution"])
    return tags


def rules_definition(mode: str) -> str:
    """What the picture and RulesView count as one rule in `mode`, and why the count can differ between nodes."""
    if mode == "nftables":
        return tr("rules: the add rule and add element lines of the nft output (the declarations of the table, "
                  "chains, sets and maps are not counted); the hairpin-connections set has one element per port of "
                  "each endpoint pod on this node, so the count differs from node to node")
    if mode == "ipvs":
        return tr("rules: the IPVS virtual and real servers plus the -A lines of the iptables rules IPVS mode still "
                  "needs (headings, ipset members and kube-ipvs0's addresses are not counted)")
    return tr("rules: the -A lines of iptables-save (table headers, chain declarations and COMMIT are not counted)")


def build_model(objects: dict, namespaces: Iterable[str] | None = ("default",)) -> nx.DiGraph:
    """The cluster as a graph: zones contain nodes, nodes run pods, Services own slices, slices list pods.

    `objects` holds lists under "nodes", "pods", "services", "slices" and a "proxies" dict
    {node name: {"mode": …, "running": …, "rules": …}}; `namespaces` limits the pods and Services shown
    (None shows every namespace).
    """
    home = objects.get("home") or "default"
    wanted = None if namespaces is None else {home if n == "default" else n for n in namespaces}
    graph = nx.DiGraph()
    graph.add_node(CLIENT, kind="client", label=tr("client (outside the cluster)"))
    proxies = objects.get("proxies") or {}
    for node in objects.get("nodes") or []:
        meta = node["metadata"]
        labels = meta.get("labels") or {}
        zone = labels.get(ZONE_LABEL, tr("no zone"))
        zone_id = f"zone:{zone}"
        if zone_id not in graph:
            graph.add_node(zone_id, kind="zone", label=zone)
        proxy = proxies.get(meta["name"]) or {}
        graph.add_node(f"node:{meta['name']}", kind="node", label=meta["name"], ip=node_ip(node), zone=zone,
                       control_plane=CONTROL_PLANE_LABEL in labels, proxy_mode=proxy.get("mode"),
                       proxy_running=proxy.get("running"), rule_count=proxy.get("rules"),
                       proxy_pending=bool(proxy.get("pending")),
                       created=meta.get("creationTimestamp", ""))
        graph.add_edge(zone_id, f"node:{meta['name']}", kind="contains")
    pod_ids: dict[str, str] = {}
    for pod in objects.get("pods") or []:
        meta = pod["metadata"]
        ns = meta.get("namespace", "default")
        if wanted is not None and ns not in wanted:
            continue
        node_name = (pod.get("spec") or {}).get("nodeName")
        pid = f"pod:{ns}/{meta['name']}"
        ip = (pod.get("status") or {}).get("podIP", "")
        graph.add_node(pid, kind="pod", label=meta["name"], namespace=ns, ip=ip, state=pod_state(pod),
                       uid=meta.get("uid", pid), node=node_name, labels=meta.get("labels") or {})
        if ip:
            pod_ids[f"{ns}/{ip}"] = pid
        if node_name and f"node:{node_name}" in graph:
            graph.add_edge(f"node:{node_name}", pid, kind="runs")
    for svc in objects.get("services") or []:
        meta = svc["metadata"]
        ns = meta.get("namespace", "default")
        if wanted is not None and ns not in wanted:
            continue
        if ns == "default" and meta["name"] == "kubernetes":
            continue
        graph.add_node(f"svc:{ns}/{meta['name']}", kind="service", label=meta["name"], namespace=ns,
                       summary=service_summary(svc), badges=service_badges(svc),
                       created=meta.get("creationTimestamp", ""))
    for eps in objects.get("slices") or []:
        meta = eps["metadata"]
        ns = meta.get("namespace", "default")
        owner = (meta.get("labels") or {}).get("kubernetes.io/service-name")
        sid = f"svc:{ns}/{owner}"
        if sid not in graph:
            continue
        slice_id = f"slice:{ns}/{meta['name']}"
        endpoints = eps.get("endpoints") or []
        graph.add_node(slice_id, kind="slice", label=meta["name"], namespace=ns, size=len(endpoints),
                       ready=sum(1 for e in endpoints if endpoint_state(e) == "ready"))
        graph.add_edge(sid, slice_id, kind="owns")
        for ep in endpoints:
            target = ep.get("targetRef") or {}
            pid = (f"pod:{target.get('namespace', ns)}/{target['name']}" if target.get("name") else
                   pod_ids.get(f"{ns}/{(ep.get('addresses') or [''])[0]}"))
            if pid and pid in graph:
                graph.add_edge(slice_id, pid, kind="endpoint", state=endpoint_state(ep))
    return graph


@dataclass
class Box:
    """Where one picture element sits: top-left corner, width and height."""

    x: float
    y: float
    w: float
    h: float

    @property
    def center(self) -> tuple[float, float]:
        """The middle of the box."""
        return self.x + self.w / 2, self.y + self.h / 2


@dataclass
class Layout:
    """A stable layout: zones are columns, nodes stack in their zone, each pod keeps its slot while it lives.

    The same cluster always gets the same picture, and a change moves only what changed.
    """

    scale: float = 1.0
    zone_width: float = 330.0
    pod_size: tuple[float, float] = (90.0, 38.0)
    slots: dict[str, dict[str, int]] = field(default_factory=dict)
    #: The widest the picture may be: zones get narrower (their pods wrap) so that every zone fits.
    max_width: float | None = None
    width: float = 0.0
    height: float = 0.0

    def _slot(self, node: str, uid: str, alive: set[str]) -> int:
        taken = self.slots.setdefault(node, {})
        for gone in [u for u in taken if u not in alive]:
            del taken[gone]
        if uid not in taken:
            used = set(taken.values())
            slot = 0
            while slot in used:
                slot += 1
            taken[uid] = slot
        return taken[uid]

    def place(self, graph: nx.DiGraph) -> dict[str, Box]:
        """Boxes for every element of the graph (and the picture's width and height on the Layout)."""
        s = self.scale
        margin, gap = 14 * s, 8 * s
        pw, ph = self.pod_size[0] * s, self.pod_size[1] * s
        zones = sorted(n for n, d in graph.nodes(data=True) if d["kind"] == "zone")
        cw = self.zone_width * s
        if self.max_width and zones:
            cw = max(min(cw, (self.max_width - 2 * margin) / len(zones)), pw + 40 * s)
        width = max(2 * margin + len(zones) * cw, min(760 * s, self.max_width or 760 * s))
        boxes: dict[str, Box] = {}
        top = 34 * s
        boxes[CLIENT] = Box(margin, top, 170 * s, 40 * s)
        services = sorted((n for n, d in graph.nodes(data=True) if d["kind"] == "service"),
                          key=lambda n: (graph.nodes[n].get("created", ""), n))
        sw, x, y, row_h = 236 * s, margin + 186 * s, top, 0.0
        for sid in services:
            slices = sorted(graph.successors(sid))
            h = (48 + 20 * len(slices)) * s + (12 * s if graph.nodes[sid]["badges"] else 0)
            if x + sw > width - margin:
                x, y, row_h = margin + 186 * s, y + row_h + gap, 0.0
            boxes[sid] = Box(x, y, sw, h)
            sy = y + (44 + (12 if graph.nodes[sid]["badges"] else 0)) * s
            for sl in slices:
                boxes[sl] = Box(x + 8 * s, sy, sw - 16 * s, 17 * s)
                sy += 20 * s
            x += sw + gap
            row_h = max(row_h, h)
        nodes_top = max(y + row_h, top + 40 * s) + 46 * s
        bottom = nodes_top
        for zi, zid in enumerate(zones):
            zx = margin + zi * cw
            boxes[zid] = Box(zx, nodes_top, cw - gap, 0)
            ny = nodes_top + 26 * s
            members = sorted(graph.successors(zid), key=lambda n: (not graph.nodes[n].get("control_plane"), n))
            for nid in members:
                nw = cw - gap - 16 * s
                cols = max(1, int((nw - 10 * s) // (pw + 6 * s)))
                pods = [p for p in graph.successors(nid) if graph.nodes[p]["kind"] == "pod"]
                alive = {graph.nodes[p]["uid"] for p in pods}
                slots = {p: self._slot(nid, graph.nodes[p]["uid"], alive) for p in pods}
                rows = (max(slots.values()) // cols + 1) if slots else 0
                nh = (POD_TOP - 2) * s + rows * (ph + 6 * s) + (6 * s if rows else 0)
                boxes[nid] = Box(zx + 8 * s, ny, nw, nh)
                for p, slot in slots.items():
                    r, c = divmod(slot, cols)
                    boxes[p] = Box(zx + 8 * s + 8 * s + c * (pw + 6 * s), ny + POD_TOP * s + r * (ph + 6 * s), pw, ph)
                ny += nh + gap
            boxes[zid].h = ny - nodes_top
            bottom = max(bottom, ny)
        self.width, self.height = width, bottom + 34 * s
        return boxes


# --- the trace overlay -----------------------------------------------------------------------------------------

@dataclass
class Step:
    """One leg of a traced connection: from one picture element to the next, and what happened there."""

    start: str
    end: str
    text: str
    rewrites: list[str] = field(default_factory=list)
    #: False when no packet left (a name that did not resolve): the caption tells it, no arrow is drawn.
    drawn: bool = True


_DELIVERED = re.compile(r"delivered to pod (\S+?)/(\S+) at ")


def _delivered_here() -> re.Pattern:
    """The hop that hands a connection to a pod, as the backends write it in the language chosen now."""
    head = translate("delivered to pod {pod} at {address}").split("{address}")[0]
    return re.compile(re.escape(head).replace(re.escape("{pod}"), r"(\S+?)/(\S+)"))


def trace_steps(trace: Any, graph: nx.DiGraph) -> list[Step]:
    """Turn a `lab.trace(...)` result into legs between picture elements, each with its NAT rewrites."""
    source = getattr(trace, "source", "client")
    kind, _, rest = source.partition("/")
    if kind == "pod":
        ns, _, name = rest.rpartition("/")
        here = f"pod:{ns or 'default'}/{name}"
    elif kind == "node":
        here = f"node:{rest}"
    else:
        here = CLIENT
    if here not in graph:
        here = CLIENT
    steps: list[Step] = []
    notes: list[str] = []
    rewrites: list[str] = []
    delivered = _delivered_here()
    for hop in getattr(trace, "hops", []):
        where, what = hop.where, hop.what
        match = _DELIVERED.search(what) or delivered.search(what)
        target = None
        if match:
            target = f"pod:{match.group(1)}/{match.group(2)}"
        elif f"node:{where}" in graph:
            target = f"node:{where}"
        notes.append(f"{where}: {what}")
        rewrites.extend(hop.rewrites)
        if target and target in graph and target != here:
            steps.append(Step(here, target, "; ".join(notes), list(rewrites)))
            here, notes, rewrites = target, [], []
        elif target == here and (hop.rewrites or match):
            if steps:
                steps[-1].text += "; " + "; ".join(notes)
                steps[-1].rewrites.extend(rewrites)
            else:
                steps.append(Step(here, here, "; ".join(notes), list(rewrites)))
            notes, rewrites = [], []
    result = getattr(trace, "result", None)
    end = ""
    if result is not None:
        end = (tr("answered by {pod} (it saw client {client_ip})", pod=result.pod, client_ip=result.client_ip)
               if result.ok else (result.error or tr("no answer")))
    if notes or rewrites or end:
        if steps:
            steps[-1].text += ("; " + "; ".join(notes) if notes else "")
            steps[-1].rewrites.extend(rewrites)
        else:
            steps.append(Step(here, here, "; ".join(notes), list(rewrites), drawn=bool(getattr(trace, "hops", []))))
        steps[-1].text = " ⇒ ".join(part for part in (steps[-1].text, end) if part)
    return steps


# --- SVG -------------------------------------------------------------------------------------------------------

def _esc(text: Any) -> str:
    return html.escape(str(text), quote=True)


def _short(name: str, limit: int = 13) -> str:
    if len(name) <= limit:
        return name
    head = name.split("-")[0][:limit - 7]
    return f"{head}…{name[-5:]}"


def _anchor(graph: nx.DiGraph, boxes: dict[str, Box], element: str, scale: float) -> tuple[float, float]:
    """Where a trace line aims at an element: a node's kube-proxy badge (its netfilter), else the middle."""
    box = boxes[element]
    if element in graph and graph.nodes[element]["kind"] == "node":
        return box.x + box.w / 2, box.y + 31.5 * scale
    return box.center


def _outline(graph: nx.DiGraph, boxes: dict[str, Box], element: str, scale: float) -> tuple[float, ...]:
    """The rectangle a trace line stops at: a node's kube-proxy badge, else the element's box."""
    box = boxes[element]
    if element in graph and graph.nodes[element]["kind"] == "node":
        return box.x + 8 * scale, box.y + 23 * scale, box.w - 16 * scale, 17 * scale
    return box.x, box.y, box.w, box.h


def _text_areas(graph: nx.DiGraph, boxes: dict[str, Box], scale: float) -> list[tuple[float, ...]]:
    """Where the picture writes names: pods, nodes' title lines and kube-proxy badges, services, the client."""
    areas: list[tuple[float, ...]] = []
    for nid, box in boxes.items():
        kind = graph.nodes[nid]["kind"] if nid in graph else ("client" if nid == CLIENT else "")
        if kind in ("pod", "service", "client"):
            areas.append((box.x, box.y, box.w, box.h))
        elif kind == "node":
            areas.append((box.x, box.y, box.w, 40 * scale))
    return areas


def _node_of(graph: nx.DiGraph, element: str) -> str | None:
    """The picture node a pod runs on (None for anything else)."""
    if element in graph and graph.nodes[element]["kind"] == "pod":
        node = graph.nodes[element].get("node")
        return f"node:{node}" if node else None
    return None


def _corridor(boxes: dict[str, Box], graph: nx.DiGraph, scale: float) -> float:
    """The height of the free band above the zones, where a leg between nodes of different zones runs."""
    tops = [b.y for n, b in boxes.items() if n in graph and graph.nodes[n]["kind"] == "zone"]
    return (min(tops) if tops else 0) - 14 * scale


def _zone_of(graph: nx.DiGraph, element: str) -> str | None:
    if element in graph and graph.nodes[element]["kind"] == "node":
        return f"zone:{graph.nodes[element].get('zone')}"
    return None


def leg_route(graph: nx.DiGraph, boxes: dict[str, Box], start: str, end: str,
              scale: float) -> tuple[list[tuple[float, float]], tuple[float, float]]:
    """The points of the line a trace leg is drawn along, and where its number goes.

    A leg between a pod and the node it runs on is a short vertical line between the pod and the node's kube-proxy
    badge, its number in the gap just above that pod; a leg between nodes (or from the client) runs in the margins
    beside the node boxes and, between zones, in the free band above them, so it crosses no other node's pods;
    its number sits at its last turn, beside the node it enters.
    """
    s = scale
    if _node_of(graph, start) == end or _node_of(graph, end) == start:
        pod, node = (start, end) if _node_of(graph, start) == end else (end, start)
        pb, nb = boxes[pod], boxes[node]
        up = pod == start
        x = pb.x + pb.w / 2 + (-10 if up else 10) * s
        gap = nb.y + (BADGE_BOTTOM + (POD_TOP - BADGE_BOTTOM) / 2) * s
        points = [(x, pb.y), (x, nb.y + BADGE_BOTTOM * s)]
        return (points if up else points[::-1]), (x + (-11 if up else 11) * s, gap)
    kinds = {graph.nodes[e]["kind"] if e in graph else "" for e in (start, end)}
    if kinds <= {"node", "client"} and graph.nodes[end]["kind"] == "node":
        return _margin_route(graph, boxes, start, end, s)
    a, b = _anchor(graph, boxes, start, s), _anchor(graph, boxes, end, s)
    p1 = _border(_outline(graph, boxes, start, s), a, b)
    p2 = _border(_outline(graph, boxes, end, s), b, a)
    return [p1, p2], ((p1[0] + p2[0]) / 2, (p1[1] + p2[1]) / 2)


def _margin_route(graph: nx.DiGraph, boxes: dict[str, Box], start: str, end: str,
                  s: float) -> tuple[list[tuple[float, float]], tuple[float, float]]:
    """From the client or a node's badge to another node's badge, around every node box and over the zones; the number
    sits at the last turn, beside the node the leg enters (a long stretch's middle could be beside another node)."""
    sb, eb = boxes[start], boxes[end]
    badge = (BADGE_BOTTOM - 8.5) * s        # the middle of a node's kube-proxy badge, from the node's top
    end_y = eb.y + badge
    from_node = graph.nodes[start]["kind"] == "node"
    if from_node and _zone_of(graph, start) == _zone_of(graph, end):
        x = sb.x + sb.w + 4 * s             # down (or up) the zone's right margin
        points = [(sb.x + sb.w - 8 * s, sb.y + badge), (x, sb.y + badge), (x, end_y), (eb.x + eb.w - 8 * s, end_y)]
        return points, points[-2]
    rightward = eb.center[0] >= sb.center[0]
    end_x = eb.x - 4 * s if rightward else eb.x + eb.w + 4 * s
    into = (eb.x + 8 * s, end_y) if rightward else (eb.x + eb.w - 8 * s, end_y)
    if from_node:
        out_x = sb.x + sb.w + 4 * s if rightward else sb.x - 4 * s
        points = [(sb.x + sb.w - 8 * s if rightward else sb.x + 8 * s, sb.y + badge), (out_x, sb.y + badge)]
        # straight across at the badges' height when no other node box is in the way (neighbouring zones)
        direct = points + [(end_x, sb.y + badge), (end_x, end_y), into]
        others = [b for n, b in boxes.items() if n not in (start, end) and n in graph
                  and graph.nodes[n]["kind"] == "node"]
        if not any(_segment_hits(p1, p2, b) for p1, p2 in zip(direct[1:], direct[2:-1]) for b in others):
            return direct, direct[-2]
    else:
        out_x = sb.x + sb.w / 2
        points = [(out_x, sb.y + sb.h)]
    band = _corridor(boxes, graph, s)
    points += [(out_x, band), (end_x, band), (end_x, end_y), into]
    return points, points[-2]


def _segment_hits(p1: tuple[float, float], p2: tuple[float, float], box: Box) -> bool:
    """Whether an axis-parallel segment passes through the box."""
    (x1, y1), (x2, y2) = p1, p2
    return (min(x1, x2) < box.x + box.w and max(x1, x2) > box.x and
            min(y1, y2) < box.y + box.h and max(y1, y2) > box.y)


def _free_spot(x: float, y: float, direction: tuple[float, float], r: float,
               areas: list[tuple[float, ...]]) -> tuple[float, float]:
    """The point nearest (x, y), across the line, where a circle of radius r covers none of the areas."""
    dx, dy = direction
    length = math.hypot(dx, dy) or 1.0
    px, py = -dy / length, dx / length

    def free(cx: float, cy: float) -> bool:
        return not any(ax - r < cx < ax + aw + r and ay - r < cy < ay + ah + r for ax, ay, aw, ah in areas)

    for k in (0, 1, -1, 2, -2, 3, -3, 4, -4, 5, -5):
        cx, cy = x + px * k * r * 1.2, y + py * k * r * 1.2
        if free(cx, cy):
            return cx, cy
    return x, y


def _border(rect: tuple[float, ...], inside: tuple[float, float], toward: tuple[float, float]) -> tuple[float, float]:
    """Where the line from `inside` (in rect) to `toward` leaves the rectangle (so it never crosses its text)."""
    x, y, w, h = rect
    (x1, y1), (x2, y2) = inside, toward
    dx, dy = x2 - x1, y2 - y1
    t = 1.0
    if dx:
        t = min(t, max((x - x1) / dx, (x + w - x1) / dx))
    if dy:
        t = min(t, max((y - y1) / dy, (y + h - y1) / dy))
    t = max(0.0, t)
    return x1 + dx * t, y1 + dy * t


@functools.lru_cache(maxsize=4096)
def text_width(text: str, size: float, bold: bool = False) -> float:
    """How wide `text` is drawn in the picture's font (DejaVu Sans, the first the SVG asks for), at `size` user
    units: matplotlib's measure, from the table `labsupport.fontmetrics` ships."""
    return fontmetrics.text_width(text, size, bold)


def _text(x: float, y: float, text: str, size: float, *, weight: str = "normal", fill: str = "#212121",
          anchor: str = "start", cls: str = "") -> str:
    klass = f' class="{cls}"' if cls else ""
    return (f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size:.1f}" font-weight="{weight}" fill="{fill}" '
            f'text-anchor="{anchor}"{klass}>{_esc(text)}</text>')


def render_svg(graph: nx.DiGraph, boxes: dict[str, Box], *, steps: list[Step] | None = None,
               reveal: int | None = None, scale: float = 1.0, title: str = "",
               width: float | None = None, height: float | None = None, fit: bool = False) -> str:
    """The picture as one inline SVG document (no scripts, no external resources); `fit` shrinks it to the page."""
    s = scale
    fs = 11.5 * s
    if width is None or height is None:
        right = max((b.x + b.w for b in boxes.values()), default=600)
        low = max((b.y + b.h for b in boxes.values()), default=300)
        width, height = right + 14 * s, low + 34 * s
    steps = steps or []
    shown = steps if reveal is None else steps[:max(0, reveal)]
    limit = max(40, int(width / (6.6 * s)))
    caption: list[tuple[str, bool]] = []
    for i, step in enumerate(shown, 1):
        for j, line in enumerate(textwrap.wrap(f"{i}. {step.text}", limit, subsequent_indent="    ")):
            caption.append((line, False))
        if step.rewrites:
            for line in textwrap.wrap("NAT: " + "; ".join(step.rewrites), limit - 4):
                caption.append(("    " + line, True))
    caption_h = (24 + 16 * len(caption)) * s if steps else 0
    total_h = height + caption_h
    style = ' style="max-width:100%;height:auto"' if fit else ""
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" class="cluster-graph" width="{width:.0f}" '
           f'height="{total_h:.0f}" viewBox="0 0 {width:.0f} {total_h:.0f}"{style} '
           f'font-family="DejaVu Sans, Helvetica, Arial, sans-serif">',
           '<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" '
           f'orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="{TRACE_COLOR}"/></marker></defs>',
           f'<rect x="0" y="0" width="{width:.0f}" height="{total_h:.0f}" fill="#ffffff"/>']
    if title:
        out.append(_text(14 * s, 22 * s, title, 14 * s, weight="bold"))
    data = graph.nodes
    # zones and nodes
    for nid, box in boxes.items():
        kind = data[nid]["kind"] if nid in data else ""
        if kind == "zone":
            out.append(f'<g class="zone" data-name="{_esc(data[nid]["label"])}">'
                       f'<rect x="{box.x:.1f}" y="{box.y:.1f}" width="{box.w:.1f}" height="{box.h:.1f}" rx="8" '
                       f'fill="#f5f7fb" stroke="#c5cae9" stroke-dasharray="4 3"/>'
                       + _text(box.x + 10 * s, box.y + 17 * s, tr("zone {name}", name=data[nid]['label']), fs,
                               weight="bold", fill="#3949ab") + "</g>")
    for nid, box in boxes.items():
        if nid not in data or data[nid]["kind"] != "node":
            continue
        d = data[nid]
        role = tr(" (control plane)") if d.get("control_plane") else ""
        name_width = text_width(d["label"], fs, bold=True)
        if role and 8 * s + name_width + text_width(role, fs * 0.85) + 6 * s + text_width(d.get("ip", ""), fs * 0.9) \
                + 8 * s > box.w:
            role = ""           # a narrow box (presenter mode): the name says it, the IP must stay readable
        out.append(f'<g class="node" data-name="{_esc(d["label"])}">'
                   f'<rect x="{box.x:.1f}" y="{box.y:.1f}" width="{box.w:.1f}" height="{box.h:.1f}" rx="6" '
                   f'fill="#ffffff" stroke="#90a4ae"/>')
        out.append(_text(box.x + 8 * s, box.y + 16 * s, d["label"], fs, weight="bold"))
        if role:
            out.append(_text(box.x + 8 * s + name_width + text_width(" ", fs * 0.85), box.y + 16 * s, role.strip(),
                             fs * 0.85, fill="#546e7a", cls="node-role"))
        out.append(_text(box.x + box.w - 8 * s, box.y + 16 * s, d.get("ip", ""), fs * 0.9, anchor="end",
                         fill="#546e7a"))
        mode, running = d.get("proxy_mode"), d.get("proxy_running")
        if mode is not None:
            if running:
                rules = d.get("rule_count")
                label = f"kube-proxy ● {mode}" + (tr(" · {rules} rules", rules=rules) if rules is not None else "")
                if d.get("proxy_pending"):
                    label += tr(" (sync pending)")
                color = "#00695c"
            else:
                label = tr("kube-proxy ■ stopped — {mode} rules stay in the kernel", mode=mode)
                color = "#c62828"
            out.append(f'<g class="kube-proxy" data-running="{str(bool(running)).lower()}">'
                       f'<title>{_esc(rules_definition(mode))}</title><rect x="{box.x + 8 * s:.1f}" y="{box.y + 23 * s:.1f}" width="{box.w - 16 * s:.1f}" '
                       f'height="{17 * s:.1f}" rx="4" fill="#e0f2f1" stroke="{color}"/>'
                       + _text(box.x + 14 * s, box.y + 35.5 * s, label, fs * 0.85, fill=color) + "</g>")
        out.append("</g>")
    # endpoint lines under the pods
    for a, b, e in graph.edges(data=True):
        if e.get("kind") != "endpoint" or a not in boxes or b not in boxes:
            continue
        sa, pb = boxes[a], boxes[b]
        x1, y1 = sa.x + sa.w / 2, sa.y + sa.h
        x2, y2 = pb.x + pb.w / 2, pb.y
        state = e.get("state", "ready")
        dash = ' stroke-dasharray="5 4"' if state != "ready" else ""
        out.append(f'<path class="endpoint" data-state="{state}" d="M{x1:.1f},{y1:.1f} C{x1:.1f},{(y1 + y2) / 2:.1f} '
                   f'{x2:.1f},{(y1 + y2) / 2:.1f} {x2:.1f},{y2:.1f}" fill="none" '
                   f'stroke="{ENDPOINT_COLORS.get(state, "#999")}" stroke-opacity="0.55" stroke-width="{1.2 * s:.1f}"'
                   f'{dash}/>')
    # pods
    for nid, box in boxes.items():
        if nid not in data or data[nid]["kind"] != "pod":
            continue
        d = data[nid]
        stroke, fill = POD_COLORS.get(d["state"], ("#999", "#fff"))
        dash = ' stroke-dasharray="4 3"' if d["state"] in ("terminating", "pending") else ""
        out.append(f'<g class="pod {d["state"]}" data-name="{_esc(d["label"])}" data-state="{d["state"]}">'
                   f'<title>{_esc(d["namespace"])}/{_esc(d["label"])} {d["ip"]} — {d["state"]}</title>'
                   f'<rect x="{box.x:.1f}" y="{box.y:.1f}" width="{box.w:.1f}" height="{box.h:.1f}" rx="5" '
                   f'fill="{fill}" stroke="{stroke}" stroke-width="{1.5 * s:.1f}"{dash}/>'
                   + _text(box.x + 5 * s, box.y + 14 * s, _short(d["label"]), fs * 0.85, weight="bold")
                   + _text(box.x + 5 * s, box.y + 29 * s, d["ip"] or d["state"], fs * 0.8, fill="#455a64")
                   + (_text(box.x + box.w - 4 * s, box.y + 29 * s, "✕" if d["state"] == "terminating" else "!",
                            fs * 0.85, anchor="end", fill=stroke) if d["state"] in ("terminating", "not-ready")
                      else "")
                   + "</g>")
    # client, services, slices
    cb = boxes.get(CLIENT)
    if cb is not None:
        out.append(f'<g class="client"><rect x="{cb.x:.1f}" y="{cb.y:.1f}" width="{cb.w:.1f}" height="{cb.h:.1f}" '
                   f'rx="6" fill="#fffde7" stroke="#f9a825"/>'
                   + _text(cb.x + 8 * s, cb.y + 16 * s, tr("client"), fs, weight="bold")
                   + _text(cb.x + 8 * s, cb.y + 31 * s, tr("outside the cluster"), fs * 0.85, fill="#795548") + "</g>")
    for nid, box in boxes.items():
        if nid not in data or data[nid]["kind"] != "service":
            continue
        d = data[nid]
        out.append(f'<g class="service" data-name="{_esc(d["label"])}">'
                   f'<rect x="{box.x:.1f}" y="{box.y:.1f}" width="{box.w:.1f}" height="{box.h:.1f}" rx="7" '
                   f'fill="#ede7f6" stroke="#5e35b1"/>'
                   + _text(box.x + 8 * s, box.y + 16 * s, f"svc/{d['label']}", fs, weight="bold", fill="#4527a0")
                   + _text(box.x + 8 * s, box.y + 32 * s, d["summary"], fs * 0.82, fill="#311b92"))
        if d["badges"]:
            out.append(_text(box.x + 8 * s, box.y + 45 * s, " · ".join(d["badges"]), fs * 0.78, fill="#6a1b9a"))
        out.append("</g>")
    for nid, box in boxes.items():
        if nid not in data or data[nid]["kind"] != "slice":
            continue
        d = data[nid]
        out.append(f'<g class="slice" data-name="{_esc(d["label"])}">'
                   f'<rect x="{box.x:.1f}" y="{box.y:.1f}" width="{box.w:.1f}" height="{box.h:.1f}" rx="4" '
                   f'fill="#ffffff" stroke="#7e57c2"/>'
                   + _text(box.x + 6 * s, box.y + 12.5 * s,
                           tr("slice {name}: {ready}/{size} ready", name=d['label'], ready=d['ready'], size=d['size']),
                           fs * 0.78, fill="#4527a0") + "</g>")
    # the traced connection
    trace_from = len(out)
    if steps:
        obstacles = _text_areas(graph, boxes, s)
        for i, step in enumerate(shown, 1):
            if step.start not in boxes or step.end not in boxes or not step.drawn:
                continue
            if step.start == step.end:
                rect = _outline(graph, boxes, step.start, s)
                x1, y1 = rect[0] + rect[2] - 12 * s, rect[1]
                points = [(x1, y1), (x1 + 22 * s, y1 - 20 * s)]
                mx, my = _free_spot(x1 + 11 * s, y1 - 10 * s, (22 * s, -20 * s), 9 * s, obstacles)
            else:
                points, (mx, my) = leg_route(graph, boxes, step.start, step.end, s)
                if len(points) == 2 and not _node_of(graph, step.start) == step.end \
                        and not _node_of(graph, step.end) == step.start:
                    (x1, y1), (x2, y2) = points     # a straight leg: its number nudged off any name it would cover
                    mx, my = _free_spot(mx, my, (x2 - x1, y2 - y1), 9 * s, obstacles)
            path = " ".join(f"{x:.1f},{y:.1f}" for x, y in points)
            out.append(f'<g class="trace-step" data-step="{i}"><polyline points="{path}" fill="none" '
                       f'stroke="{TRACE_COLOR}" stroke-width="{3.2 * s:.1f}" stroke-opacity="0.85" '
                       f'stroke-linejoin="round" marker-end="url(#arrow)"/>'
                       f'<circle class="trace-number" cx="{mx:.1f}" cy="{my:.1f}" r="{9 * s:.1f}" '
                       f'fill="{TRACE_COLOR}" stroke="#ffffff" stroke-width="{1.5 * s:.1f}"/>'
                       + _text(mx, my + 4 * s, str(i), fs * 0.9, weight="bold", fill="#ffffff", anchor="middle")
                       + "</g>")
        # names stay readable: the picture's labels again, over the path, on a white halo
        labels = re.findall(r"<text [^>]*>[^<]*</text>", "".join(out[:trace_from]))
        out.append(f'<g class="trace-labels" paint-order="stroke" stroke="#ffffff" stroke-width="{3 * s:.1f}" '
                   f'stroke-linejoin="round">' + "".join(labels) + "</g>")
        cy = height + 4 * s
        title = tr("the traced connection ({shown}/{steps} steps)", shown=len(shown), steps=len(steps))
        out.append(_text(14 * s, cy + 8 * s, title, fs, weight="bold", fill=TRACE_COLOR))
        for line, is_nat in caption:
            cy += 16 * s
            out.append(f'<text x="{14 * s:.1f}" y="{cy + 8 * s:.1f}" font-size="{fs * 0.85:.1f}" '
                       f'fill="{TRACE_COLOR if is_nat else "#212121"}" font-weight="{"bold" if is_nat else "normal"}" '
                       f'class="trace-caption" xml:space="preserve">{_esc(line)}</text>')
    # legend
    ly = height - 12 * s
    lx = 14 * s
    for state in ("ready", "not-ready", "terminating", "pending"):
        stroke, fill = POD_COLORS[state]
        out.append(f'<rect x="{lx:.1f}" y="{ly - 10 * s:.1f}" width="{12 * s:.1f}" height="{12 * s:.1f}" rx="2" '
                   f'fill="{fill}" stroke="{stroke}"/>'
                   + _text(lx + 16 * s, ly, tr("pod {state}", state=state), fs * 0.85))
        lx += 110 * s
    for note in (tr("lines: slice endpoints (green ready, orange serving+terminating, grey/red not ready)"),
                 tr("lines: endpoints (green ready, orange terminating, grey not ready)")):
        if lx + len(note) * fs * 0.8 * 0.5 <= width - 14 * s:      # only what fits on the line
            out.append(_text(lx, ly, note, fs * 0.8, fill="#616161"))
            break
    out.append("</svg>")
    return "".join(out)
