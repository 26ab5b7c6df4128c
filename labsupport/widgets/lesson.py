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


def self_check(passed: bool, success: str, hint: str) -> Note:
    """A lesson's self-check: returns the success note, or raises AssertionError carrying the hint."""
    if not passed:
        from labsupport.checks import CheckFailed
        raise CheckFailed(tr("not yet: {hint}", hint=hint))
    return Note(f"✓ {success}")


__all__ = ["Table", "Note", "Yaml", "headings", "nodes", "spread", "pods", "running", "client_address", "pod_ips", "endpoints", "ready_count", "self_check",
           "ClientAddresses", "address_owners", "modelled_copy", "in_proxy_mode", "service_rules", "rules_of_service",
           "endpoints_in_rules", "rule_endpoints",
           "affinity_rules"]
