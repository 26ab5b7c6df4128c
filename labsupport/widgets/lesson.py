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

from labsupport.errors import LabError
from labsupport.formats import truth
from labsupport.i18n import tr


def cell_lines(value: Any) -> list[str]:
    """A table cell's text, one entry per line: a list shows one item a line, a tab (a DNS record's field
    separator) a space, None nothing.

    >>> cell_lines(["web.default.svc.cluster.local.\\t5\\tIN\\tA\\t10.96.0.7"])
    ['web.default.svc.cluster.local. 5 IN A 10.96.0.7']
    """
    if value is None:
        return [""]
    if isinstance(value, (list, tuple)):
        return [line for item in value for line in cell_lines(item)] or [""]
    return [" ".join(line.split("\t")) for line in str(value).splitlines()] or [""]


class Table:
    """Rows of dicts shown as an HTML table (and as aligned text where HTML is not shown).

    `headings` names a column on screen (a column without one shows its key); the rows keep their keys, so
    code reads `row["ip"]` in every language.
    """

    def __init__(self, rows: Iterable[dict], columns: list[str] | None = None,
                 headings: dict[str, str] | None = None):
        self.rows = list(rows)
        self.columns = columns or (list(self.rows[0]) if self.rows else [])
        self.headings = dict(headings or {})

    def heading(self, column: str) -> str:
        """The column's name as the table shows it."""
        return self.headings.get(column, column)

    def _repr_html_(self) -> str:
        head = "".join(f"<th>{html.escape(self.heading(c))}</th>" for c in self.columns)
        body = "".join("<tr>" + "".join("<td>" + "<br>".join(html.escape(line) for line in cell_lines(r.get(c)))
                                        + "</td>" for c in self.columns)
                       + "</tr>" for r in self.rows)
        return f"<table><tr>{head}</tr>{body}</table>"

    def __repr__(self) -> str:
        cells = [{c: ", ".join(cell_lines(r.get(c))) for c in self.columns} for r in self.rows]
        widths = {c: max([len(self.heading(c))] + [len(r[c]) for r in cells]) for c in self.columns}
        lines = ["  ".join(self.heading(c).upper().ljust(widths[c]) for c in self.columns).rstrip()]
        lines += ["  ".join(r[c].ljust(widths[c]) for c in self.columns).rstrip() for r in cells]
        return "\n".join(lines)


def headings() -> dict[str, str]:
    """The lesson tables' column headings in the language chosen now: our words are translated, as on the Lab
    card; what Kubernetes names (podCIDR, an endpoint's conditions ready/serving/terminating) and IP stay."""
    return {"name": tr("name"), "state": tr("state"), "ip": "IP", "node": tr("node"), "role": tr("role"),
            "zone": tr("zone"), "podCIDR": "pod CIDR", "slice": "EndpointSlice", "address": tr("address"),
            "pod": tr("pod")}


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
    return Table(rows, ["name", "state", "ip", "node"], headings())


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
    return Table(rows, ["slice", "address", "ready", "serving", "terminating", "node", "zone", "pod"], headings())


def nodes(lab: Any) -> Table:
    """The nodes with their role, zone, InternalIP and pod CIDR."""
    from labsupport.widgets.scene import CONTROL_PLANE_LABEL, ZONE_LABEL, node_ip
    rows = [{"name": n["metadata"]["name"],
             "role": "control-plane" if CONTROL_PLANE_LABEL in n["metadata"].get("labels", {}) else "worker",
             "zone": n["metadata"].get("labels", {}).get(ZONE_LABEL, ""), "ip": node_ip(n),
             "podCIDR": n.get("spec", {}).get("podCIDR", "")} for n in lab.get("nodes")]
    return Table(rows, ["name", "role", "zone", "ip", "podCIDR"], headings())


class ClientAddresses(Counter):
    """How many requests each client address was seen from, each address said for what it is (a node, a node's
    gateway on its pod network, a pod, the client outside)."""

    def __init__(self, counts: Any = (), owners: dict[str, str] | None = None):
        super().__init__(counts)
        self.owners = dict(owners or {})

    def notes(self) -> list[tuple[str, int, str]]:
        """(address, requests, what the address is) for every address seen, most seen first."""
        return [(address, count, self.owners.get(address, "")) for address, count in self.most_common()]

    def __repr__(self) -> str:
        width = max((len(a) for a in self), default=0)
        return "\n".join(f"{a.ljust(width)}  {n:>4}  {what}".rstrip() for a, n, what in self.notes())

    def _repr_html_(self) -> str:
        return Table([{"address": a, "requests": n, "what": what} for a, n, what in self.notes()],
                     ["address", "requests", "what"],
                     {"address": tr("client address"), "requests": tr("requests"), "what": tr("what it is")}
                     )._repr_html_()


def address_owners(lab: Any) -> dict[str, str]:
    """What each address a pod may see as its client is: nodes, each node's gateway on its pod network, pods,
    and the client outside the cluster."""
    import ipaddress
    from labsupport.widgets.scene import node_ip
    owners: dict[str, str] = {}
    for n in lab.get("nodes"):
        name = n["metadata"]["name"]
        if node_ip(n):
            owners[node_ip(n)] = tr("node {node} (its InternalIP)", node=name)
        cidr = n.get("spec", {}).get("podCIDR")
        if cidr:
            gateway = str(next(ipaddress.ip_network(cidr, strict=False).hosts()))
            owners[gateway] = tr("node {node}'s own address on its pod network {cidr} (the pods' gateway): a node "
                                 "that masquerades a connection to a pod on the same node gives it this source "
                                 "address", node=name, cidr=cidr)
    try:
        pods = lab.get("pods", namespace=None)
    except LabError:            # an account that may list only its own namespace
        pods = lab.get("pods")
    for pod in pods:
        ip = pod.get("status", {}).get("podIP")
        if ip and ip not in owners:
            owners[ip] = tr("pod {name}", name=pod["metadata"]["name"])
    client = client_address(lab)
    if client:
        owners.setdefault(client, tr("the client outside the cluster (its own address, not translated)"))
    return owners


def spread(lab: Any, url: str, source: str = "client", requests: int = 60, by: str = "pod") -> Counter:
    """Send `requests` new connections and count who answered: by "pod", "node", "zone" or "client_ip" (client
    addresses come with what each is)."""
    zones = {n["metadata"]["name"]: n["metadata"].get("labels", {}).get("topology.kubernetes.io/zone", "")
             for n in lab.get("nodes")}
    counts: Counter = ClientAddresses(owners=address_owners(lab)) if by == "client_ip" else Counter()
    for r in lab.backend.curl_batch(url, source, requests):
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


#: The kinds a modelled copy of a lab carries over: what the lessons apply themselves.
MODELLED_KINDS = ("deployments", "statefulsets", "daemonsets", "services", "pods", "configmaps")


def modelled_copy(lab: Any, proxy_mode: str, timeout: float = 120) -> Any:
    """A sim lab in kube-proxy mode `proxy_mode` holding the objects applied to `lab`, as they were applied (their
    last-applied configuration; pods a controller made are made again by the copy's controllers), all running."""
    import json
    from labsupport.model.objects import LAST_APPLIED
    model = type(lab)(backend="sim", proxy_mode=proxy_mode, seed=lab.seed)   # a Lab, as `lab` is
    for kind in MODELLED_KINDS:
        for obj in lab.get(kind):
            applied = (obj["metadata"].get("annotations") or {}).get(LAST_APPLIED)
            if applied:
                model.apply(json.loads(applied))
    model.wait(_settled, timeout=timeout)
    return model


def _settled(lab: Any) -> bool:
    """Every pod running and every Deployment's replicas ready."""
    return all((p.get("status") or {}).get("phase") == "Running" for p in lab.get("pods")) and all(
        (d.get("status") or {}).get("readyReplicas", 0) == d["spec"].get("replicas", 1)
        for d in lab.get("deployments"))


def in_proxy_mode(lab: Any, mode: str) -> Any:
    """Switch the lab's kube-proxy to `mode` and return the lab. Where the cluster cannot run that mode (a kernel
    without IPVS under kind, no cluster-admin on kube), print one line saying so and return a modelled copy instead
    (`modelled_copy`): its rules are the ones kube-proxy would write for the same objects. The lab keeps its mode."""
    from labsupport.errors import BackendUnavailable, ProxyModeUnavailable
    try:
        lab.set_proxy_mode(mode)
        return lab
    except BackendUnavailable as refused:
        reason = refused.reason if isinstance(refused, ProxyModeUnavailable) else str(refused).split(":")[0]
    model = modelled_copy(lab, mode)
    print(tr("This cluster cannot run kube-proxy in {mode} mode ({reason}), so the {mode} rules below are modelled: "
             "a sim cluster with the same objects.", mode=mode, reason=reason))
    return model


_ADDRESS = r"\d+\.\d+\.\d+\.\d+"


def rules_of_service(rules: str, service: str, cluster_ip: str = "") -> list[str]:
    r"""The lines of kube-proxy's rules (any mode, as `proxy_rules()` prints them) that belong to the Service
    `service` ("namespace/name"): lines naming it (iptables comments, nftables chains and the lines inside them)
    and, in IPVS mode, the virtual servers of its ClusterIP with their real servers.

    >>> rules_of_service('table ip kube-proxy {\n  chain endpoint-X-default/web/tcp/__10.244.1.2/80 {\n'
    ...                  '    meta l4proto tcp dnat to 10.244.1.2:80\n  }\n}', "default/web")
    ['chain endpoint-X-default/web/tcp/__10.244.1.2/80 {', 'meta l4proto tcp dnat to 10.244.1.2:80']
    """
    import re
    tag = re.compile(r"(?<![\w.])" + re.escape(service) + r"(?![\w.-])")
    lines: list[str] = []
    chain = ""
    virtual = False
    for line in rules.splitlines():
        text = line.strip()
        opened = re.match(r"chain (\S+) \{$", text)   # `nft list` prints a chain's rules inside its block
        if opened:
            chain = opened.group(1)
        elif text == "}":
            chain = ""
        server = re.match(r"(TCP|UDP|SCTP)\s+(" + _ADDRESS + r"):\d+", text)   # ipvsadm -Ln
        if server or not text.startswith("->"):
            virtual = bool(server and cluster_ip) and server.group(2) == cluster_ip
        if tag.search(text) or (chain and tag.search(chain)) or virtual:
            lines.append(text)
    return lines


def service_rules(lab: Any, service: str, node: str | None = None, namespace: str = "default") -> list[str]:
    """The lines of a node's kube-proxy rules that belong to a Service, whatever the mode (`rules_of_service`)."""
    svc = lab.get("svc", service, namespace=namespace)
    return rules_of_service(lab.proxy_rules(node), f"{svc['metadata'].get('namespace') or namespace}/{service}",
                            (svc.get("spec") or {}).get("clusterIP") or "")


def endpoints_in_rules(lines: Iterable[str]) -> list[str]:
    """The endpoints (`ip:port`) rule lines send connections to: iptables DNAT targets, nftables dnat statements
    and maps, IPVS real servers.

    >>> endpoints_in_rules(["dnat ip addr . port to numgen random mod 2 map { 0 : 10.244.2.3 . 80 , "
    ...                     "1 : 10.244.1.2 . 80 }", "-A KUBE-SEP-X -j DNAT --to-destination 10.244.1.7:80"])
    ['10.244.1.2:80', '10.244.1.7:80', '10.244.2.3:80']
    """
    import re
    found: set[str] = set()
    for line in lines:
        found.update(re.findall(r"--to-destination (" + _ADDRESS + r":\d+)", line))
        found.update(re.findall(r"dnat to (" + _ADDRESS + r":\d+)", line))
        found.update(f"{ip}:{port}" for ip, port in re.findall(r"\d+ : (" + _ADDRESS + r") \. (\d+)", line))
        found.update(re.findall(r"^-> (" + _ADDRESS + r":\d+)", line.strip()))
    return sorted(found, key=lambda e: tuple(int(part) for part in re.split(r"[.:]", e)))


def rule_endpoints(lab: Any, service: str, node: str | None = None, namespace: str = "default") -> list[str]:
    """The endpoints (`ip:port`) a node's kube-proxy rules send the Service's new connections to, read from the
    rules of whatever mode kube-proxy runs in."""
    return endpoints_in_rules(service_rules(lab, service, node, namespace))


def affinity_rules(lab: Any, service: str, node: str | None = None, namespace: str = "default") -> list[str]:
    """The rules that keep a client on its pod under `sessionAffinity: ClientIP`, in any mode: iptables' `recent`
    checks (`--rcheck`), nftables' per-endpoint address sets (`ip saddr @affinity-…`), IPVS' `persistent`."""
    return [line for line in service_rules(lab, service, node, namespace)
            if "--rcheck" in line or "ip saddr @affinity-" in line or " persistent " in f"{line} "]


class Note(str):
    """A line for the student: shown as its text, not as a quoted Python string."""

    def __repr__(self) -> str:
        return str(self)

    def _repr_html_(self) -> str:
        return f"<span class='labsupport-note'>{html.escape(self)}</span>"


class NotedTable(Table):
    """A table with a line for the student under it."""

    def __init__(self, rows: Iterable[dict], columns: list[str], headings: dict[str, str], note: str):
        super().__init__(rows, columns, headings)
        self.note = note

    def _repr_html_(self) -> str:
        return super()._repr_html_() + "<p>" + Note(self.note)._repr_html_() + "</p>"

    def __repr__(self) -> str:
        return super().__repr__() + "\n" + self.note


def _entry_bytes(entries: list) -> float:
    """The mean bytes one entry of a list adds to an object's JSON (its text and the comma before it)."""
    import json
    return sum(len(json.dumps(e, separators=(",", ":"))) + 1 for e in entries) / len(entries) if entries else 0.0


def write_sizes(lab: Any, meter: Any, service: str, counts: Iterable[int] = (100, 1000), namespace: str = "default",
                limit: int = 100) -> NotedTable:
    """Bytes one write of the Service's Endpoints object and one write of its EndpointSlice ship to each watcher:
    measured by `meter` with the pods the Service has now, and estimated for `counts` pods from what one more
    endpoint adds to each (the Endpoints object lists every pod; a slice at most `limit`)."""
    from labsupport.widgets.charts import human_bytes

    def seen() -> bool:
        return all((meter.by_kind.get(kind) or {}).get("events") for kind in ("Endpoints", "EndpointSlice"))

    if not seen():      # on a real cluster a watch event can come a moment after the wait that preceded this
        try:
            lab.wait(lambda _: seen(), timeout=30)
        except TimeoutError:
            raise LabError(tr("the meter saw no write of the Service's Endpoints and EndpointSlice within 30 s: "
                              "scale the Service's workload after lab.meter(...), then call this again")) from None
    per_write = {kind: v["bytes"] / v["events"] / meter.watchers for kind, v in meter.by_kind.items() if v["events"]}
    endpoints = lab.get("endpoints", service, namespace=namespace)
    addresses = [a for s in endpoints.get("subsets") or [] for a in (s.get("addresses") or []) +
                 (s.get("notReadyAddresses") or [])]
    found = lab.get("endpointslices", namespace=namespace, selector=f"kubernetes.io/service-name={service}")
    largest = max((len(s.get("endpoints") or []) for s in found), default=0)
    per_address, per_endpoint = _entry_bytes(addresses), _entry_bytes([e for s in found for e in s.get("endpoints")
                                                                       or []])
    now = len(addresses)

    def sizes(pods: int) -> tuple[float, float]:
        return (per_write["Endpoints"] + (pods - now) * per_address,
                per_write["EndpointSlice"] + (min(pods, limit) - largest) * per_endpoint)

    rows = [{"pods": pods, "Endpoints": human_bytes(sizes(pods)[0]), "EndpointSlice": human_bytes(sizes(pods)[1]),
             "how": tr("measured") if pods == now else tr("estimated from the bytes one more endpoint adds")}
            for pods in (now, *counts)]
    cross = next((pods for pods in range(now, 100 * limit) if sizes(pods)[0] > sizes(pods)[1]), None)
    endpoints_now, slice_now = sizes(now)
    if slice_now > endpoints_now and cross is not None:
        note = tr("At {pods} pods one slice write ({slice}) is larger than one Endpoints write ({endpoints}): a slice "
                  "says more about each endpoint (its conditions, node, zone and pod). But an Endpoints write carries "
                  "every pod of the Service, a slice at most {limit}: from about {cross} pods on the slice is the "
                  "smaller write, and every pod more widens the gap.", pods=now, slice=human_bytes(slice_now),
                  endpoints=human_bytes(endpoints_now), limit=limit, cross=cross)
    else:
        note = tr("An Endpoints write carries every pod of the Service, a slice at most {limit}: every pod more "
                  "widens the gap.", limit=limit)
    return NotedTable(rows, ["pods", "Endpoints", "EndpointSlice", "how"],
                      {"pods": tr("pods"), "Endpoints": tr("one Endpoints write"),
                       "EndpointSlice": tr("one EndpointSlice write"), "how": tr("how")}, note)


def answers(lab: Any, targets: dict[str, str], source: str = "client") -> Table:
    """One request to each URL of `targets` (label → URL) from `source`, and what came back, in full: who answered
    and the client address it saw, or curl's error."""
    rows = []
    for label, url in targets.items():
        result = lab.curl(url, source=source)
        said = (tr("{status} from {pod} (client IP seen: {client_ip})", status=result.status, pod=result.pod,
                   client_ip=result.client_ip) if result.ok else result.error or tr("no answer"))
        rows.append({"to": label, "answer": said})
    return Table(rows, ["to", "answer"], {"to": tr("to"), "answer": tr("answer")})


def slice_fill(lab: Any, service: str, namespace: str = "default", limit: int = 100) -> Note:
    """How many endpoints each of the Service's EndpointSlices holds, and why there can be more slices than
    endpoints / `limit` (the controller's default: 100 per slice)."""
    import math
    found = lab.get("endpointslices", namespace=namespace, selector=f"kubernetes.io/service-name={service}")
    sizes = sorted((len(s.get("endpoints") or []) for s in found), reverse=True)
    total, fewest = sum(sizes), max(1, math.ceil(sum(sizes) / limit))
    said = tr("{count} slices hold {endpoints} endpoints ({sizes}), at most {limit} each.", count=len(sizes),
              endpoints=total, sizes=", ".join(map(str, sizes)), limit=limit)
    if len(sizes) <= fewest:
        return Note(said)
    return Note(said + " " + tr(
        "Not {fewest} full ones: the pods became ready a few at a time, and at each change the EndpointSlice controller "
        "puts the new endpoints into a slice it rewrites anyway, or into the one closest to full, else into a new "
        "slice. It never moves endpoints from one slice to another to pack them: that would rewrite slices nothing "
        "changed in, the very traffic slices exist to save.", fewest=fewest))


def why_failed(result: Any) -> Note:
    """A failed request's curl error in the words the lessons use: exit code 7 ("Couldn't connect to server") is a
    refused connection, 28 a timeout (dropped, or an address nobody has), 6 a name DNS does not know."""
    code = getattr(result, "exit_code", 0)
    if getattr(result, "ok", True) or not code:
        return Note("")
    if code == 7:
        return Note(tr("curl's exit code 7, \"Couldn't connect to server\", is a refused connection (\"connection "
                       "refused\"): an answer came at once that nothing takes it, from a REJECT rule or from a port "
                       "nothing listens on."))
    if code == 28:
        return Note(tr("curl's exit code 28, a timeout: nothing answered at all, the packets were dropped (a DROP "
                       "rule) or went to an address nobody has."))
    if code == 6:
        return Note(tr("curl's exit code 6: the name does not resolve, so no packet was sent."))
    return Note("")


def search_walk(answer: Any) -> Note:
    """Why busybox's `nslookup <short name>` prints NXDOMAIN lines around its answer: it asks the name with every
    search domain (and as it is) and prints every reply, where a program resolving through the C library stops at the
    first answer. Read from what the answer shows."""
    import re
    text = getattr(answer, "text", str(answer))
    answered = list(dict.fromkeys(re.findall(r"^Name:\s*(\S+)", text, re.M)))
    missed = list(dict.fromkeys(re.findall(r"^\*\* server can't find (\S+): NXDOMAIN", text, re.M)))
    if not missed or not answered:
        return Note("")
    return Note(tr("busybox's nslookup asks the name with each search domain of the pod's /etc/resolv.conf, and as it "
                   "is, and prints every reply: {answered} answered; {missed} do not exist (NXDOMAIN). A program that "
                   "resolves through the C library (curl, wget) takes the search domains in the same order and stops "
                   "at the first answer.", answered=", ".join(answered), missed=", ".join(missed)))


def self_check(passed: bool, success: str, hint: str) -> Note:
    """A lesson's self-check: returns the success note, or raises AssertionError carrying the hint."""
    if not passed:
        from labsupport.checks import CheckFailed
        raise CheckFailed(tr("not yet: {hint}", hint=hint))
    return Note(f"✓ {success}")


__all__ = ["Table", "Note", "Yaml", "headings", "nodes", "spread", "pods", "running", "client_address", "pod_ips", "endpoints", "ready_count", "self_check",
           "ClientAddresses", "address_owners", "why_failed", "search_walk", "slice_fill", "write_sizes", "answers", "NotedTable", "modelled_copy", "in_proxy_mode", "service_rules", "rules_of_service",
           "endpoints_in_rules", "rule_endpoints",
           "affinity_rules", "truth"]
