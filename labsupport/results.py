"""The results of the network verbs and the picture's snapshot, shared by every backend.

They live below all backends, so `sim`, `netns`, `kind`, `kube` and a lab server's client name the same types.
"""
from __future__ import annotations

import html
from dataclasses import dataclass, field

from labsupport.i18n import tr


@dataclass
class Hop:
    """One place a packet passed: a node's netfilter, a route, or the app that answered."""

    where: str
    what: str
    rules: list = field(default_factory=list)
    rewrites: list[str] = field(default_factory=list)

    def text(self) -> str:
        """The hop as a few lines of text."""
        lines = [f"{self.where}: {self.what}"]
        for hit in self.rules:
            lines.append(f"    [{hit.table}/{hit.chain}] {hit.rule}" + (f"  => {hit.action}" if hit.action else ""))
        for rw in self.rewrites:
            lines.append(f"    {rw}")
        return "\n".join(lines)


@dataclass
class CurlResult:
    """What one request got: HTTP status and body, which pod answered, and the client IP that pod saw.

    Connection refused and timeouts are results: `status` is None and `error` says what happened."""

    url: str
    source: str
    status: int | None = None
    body: str = ""
    pod: str | None = None
    namespace: str | None = None
    node: str | None = None
    client_ip: str | None = None
    client_port: int | None = None
    error: str | None = None
    exit_code: int = 0
    hops: list[Hop] = field(default_factory=list)
    endpoint: str | None = None

    @property
    def ok(self) -> bool:
        """Whether an HTTP answer came back."""
        return self.status is not None

    @property
    def refused(self) -> bool:
        """Whether the connection was refused."""
        return self.exit_code == 7

    @property
    def timed_out(self) -> bool:
        """Whether the connection timed out (dropped)."""
        return self.exit_code == 28

    @property
    def text(self) -> str:
        """What curl prints: the body, or curl's error line."""
        return self.body if self.ok else self.error or ""

    def __repr__(self) -> str:
        if self.ok:
            return tr("<CurlResult {status} from pod {pod!r} on {node!r}, client_ip={client_ip!r}>",
                      status=self.status, pod=self.pod, node=self.node, client_ip=self.client_ip)
        return tr("<CurlResult error: {error}>", error=self.error)

    def _repr_html_(self) -> str:
        head = (tr("{status} from pod {pod} on {node}; the app saw client {client_ip}",
                   status=f"<b>{self.status}</b>", pod=f"<code>{html.escape(self.pod or '')}</code>",
                   node=f"<code>{html.escape(self.node or '')}</code>", client_ip=f"<code>{self.client_ip}</code>")
                if self.ok else f"<b style='color:#b00'>{html.escape(self.error or '')}</b>")
        return f"<div>{head}<pre>{html.escape(self.body[:2000])}</pre></div>"


@dataclass
class Trace:
    """The story of one new connection: every hop, every rule that matched, every NAT rewrite."""

    url: str
    source: str
    result: CurlResult

    @property
    def hops(self) -> list[Hop]:
        """The hops in order."""
        return self.result.hops

    @property
    def rewrites(self) -> list[str]:
        """Every NAT rewrite along the way."""
        return [rw for hop in self.hops for rw in hop.rewrites]

    @property
    def rules(self) -> list:
        """Every rule that matched, in order."""
        return [hit for hop in self.hops for hit in hop.rules]

    def text(self) -> str:
        """The whole trace as text."""
        end = ("=> " + tr("answered by {pod} (saw client {client_ip})",
                          pod=f"{self.result.namespace}/{self.result.pod}", client_ip=self.result.client_ip)
               if self.result.ok else f"=> {self.result.error}")
        return "\n".join([tr("trace {url} from {source}", url=self.url, source=self.source),
                          *(h.text() for h in self.hops), end])

    def __str__(self) -> str:
        return self.text()

    def __repr__(self) -> str:
        return self.text()

    def _repr_html_(self) -> str:
        return f"<pre>{html.escape(self.text())}</pre>"



@dataclass
class NslookupAnswer:
    """What `nslookup <name>` shows: the addresses found, the rcode, and the text exactly as printed."""

    addresses: list[str]
    rcode: str
    text: str
    name: str = ""

    def __repr__(self) -> str:
        return self.text

    def _repr_pretty_(self, printer, cycle) -> None:
        printer.text(self.text)



def masquerade_rewrite(before: str, after: str) -> str:
    """How a trace writes a masquerade (`SNAT before -> after (masquerade)`). When the packet already had the address
    masquerading gives it (a node's own connection to a ClusterIP), it says that nothing changed and why the rule
    still ran, so `SNAT x -> x` does not read as a mistake."""
    if before != after:
        return f"SNAT {before} -> {after} (masquerade)"
    return f"SNAT {before} -> {after} (masquerade: " + tr(
        "kube-proxy masquerades a connection to a Service that does not come from a pod; this one comes from the "
        "node itself, which already has the address it would get, so nothing changes") + ")"


@dataclass(frozen=True)
class ProxyStatus:
    """What the picture shows of one node's kube-proxy: its mode, whether it runs, its rule count, a pending sync."""

    mode: str
    running: bool
    rules: int | None = None
    pending: bool = False


@dataclass(frozen=True)
class ClusterSnapshot:
    """A read-only copy of what the picture draws, taken at one moment."""

    nodes: list[dict]
    pods: list[dict]
    services: list[dict]
    endpointslices: list[dict]
    workloads: list[dict]
    proxies: dict[str, ProxyStatus]
    #: the namespace a verb's "default" stands for: the lab's own on a shared cluster (`kube`, a kind namespace)
    home: str = "default"


__all__ = ["Hop", "CurlResult", "Trace", "NslookupAnswer", "masquerade_rewrite", "ProxyStatus", "ClusterSnapshot"]
