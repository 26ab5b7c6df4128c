"""The cluster DNS: what CoreDNS's kubernetes plugin answers, a resolv.conf stub resolver, and nslookup's output.

`answer` is a pure function of the Services, EndpointSlices and Pods it is given; records come back as zone-file
text ("web.default.svc.cluster.local.\\t5\\tIN\\tA\\t10.96.12.7") so they read like `dig` output.
"""
from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field
from typing import Callable, Iterable
from labsupport.results import NslookupAnswer
from labsupport.shape import DNS_IP

DNS_VERSION = "1.1.0"
DNS_VERSION_TTL = 28800
SOA_REFRESH, SOA_RETRY, SOA_EXPIRE = 7200, 1800, 86400
DEFAULT_SEARCH = ("default.svc.cluster.local", "svc.cluster.local", "cluster.local")
LABEL_SERVICE_NAME = "kubernetes.io/service-name"


@dataclass
class DNSReply:
    """One DNS response: rcode and the answer, authority and additional sections as zone-file lines."""

    rcode: str = "NOERROR"
    answer: list[str] = field(default_factory=list)
    authority: list[str] = field(default_factory=list)
    additional: list[str] = field(default_factory=list)

    def records(self, rtype: str | None = None) -> list[str]:
        """The answer records, optionally only those of one type."""
        if rtype is None:
            return list(self.answer)
        return [r for r in self.answer if r.split("\t")[3] == rtype.upper()]

    def __str__(self) -> str:
        lines = [f";; status: {self.rcode}"]
        for title, section in (("ANSWER", self.answer), ("AUTHORITY", self.authority),
                               ("ADDITIONAL", self.additional)):
            if section:
                lines.append(f";; {title} SECTION:")
                lines.extend(section)
        return "\n".join(lines)


# ----------------------------------------------------------------------------------------------------------
# the cluster as CoreDNS sees it

def _meta(obj: dict) -> dict:
    return obj.get("metadata") or {}


def _ns(obj: dict) -> str:
    return _meta(obj).get("namespace") or "default"


def _family(ip: str) -> str:
    return "AAAA" if ":" in ip else "A"


def endpoint_hostname(address: str, hostname: str | None = None) -> str:
    """The DNS label of an endpoint: its hostname, else its IP with `.`/`:` turned into `-`."""
    if hostname:
        return hostname
    if "." in address:
        return address.replace(".", "-")
    label = address.replace(":", "-")
    return label + "0" if label.endswith("-") else label


def _ip_key(ip: str) -> tuple:
    try:
        parsed = ipaddress.ip_address(ip)
        return (parsed.version, int(parsed))
    except ValueError:
        return (9, 0)


class _Cluster:
    """Indexes over the objects one query needs."""

    def __init__(self, services, endpointslices, pods, namespaces):
        self.services: dict[tuple[str, str], dict] = {}
        for svc in services:
            self.services[(_ns(svc), _meta(svc).get("name", "").lower())] = svc
        self.slices: dict[tuple[str, str], list[dict]] = {}
        for slice_ in endpointslices:
            name = (_meta(slice_).get("labels") or {}).get(LABEL_SERVICE_NAME)
            if name:
                self.slices.setdefault((_ns(slice_), name.lower()), []).append(slice_)
        self.pods = list(pods)
        if namespaces is None:
            found = {ns for ns, _ in self.services} | {ns for ns, _ in self.slices} | {_ns(p) for p in self.pods}
            self.namespaces = {ns.lower() for ns in found}
        else:
            self.namespaces = {ns.lower() for ns in namespaces}
        serial = 0
        for obj in list(services) + list(endpointslices):
            rv = _meta(obj).get("resourceVersion")
            if isinstance(rv, str) and rv.isdigit():
                serial = max(serial, int(rv))
            elif isinstance(rv, int):
                serial = max(serial, rv)
        self.serial = serial or 1

    def ready_endpoints(self, namespace: str, service: str) -> list[tuple[str, str, list[dict]]]:
        """(address, label, ports) for every ready endpoint address of the Service, in address order."""
        out = []
        for slice_ in self.slices.get((namespace, service), ()):
            if slice_.get("addressType") not in ("IPv4", "IPv6"):
                continue
            ports = slice_.get("ports") or []
            for endpoint in slice_.get("endpoints") or ():
                ready = (endpoint.get("conditions") or {}).get("ready")
                if ready is False:
                    continue
                for address in endpoint.get("addresses") or ():
                    out.append((address, endpoint_hostname(address, endpoint.get("hostname")), ports))
        out.sort(key=lambda item: (_ip_key(item[0]), item[1]))
        return out

    def dns_service_ip(self) -> str | None:
        """The cluster DNS Service's IP (kube-system/kube-dns), for the apex NS glue."""
        svc = self.services.get(("kube-system", "kube-dns"))
        if svc is None:
            return None
        ip = (svc.get("spec") or {}).get("clusterIP")
        return ip if ip and ip != "None" else None


def _cluster_ips(service: dict) -> list[str]:
    spec = service.get("spec") or {}
    ips = [ip for ip in spec.get("clusterIPs") or () if ip and ip != "None"]
    if not ips and spec.get("clusterIP") not in (None, "", "None"):
        ips = [spec["clusterIP"]]
    return ips


def _is_headless(service: dict) -> bool:
    return (service.get("spec") or {}).get("clusterIP") in (None, "", "None")


def _port_matches(port: dict, want_name: str | None, want_proto: str | None) -> bool:
    if want_name is None:
        return True
    return (port.get("name") or "").lower() == want_name and (port.get("protocol") or "TCP").lower() == want_proto


# ----------------------------------------------------------------------------------------------------------
# answer

def answer(qname: str, qtype: str, services: Iterable[dict], endpointslices: Iterable[dict],
           pods: Iterable[dict] = (), *, zone: str = "cluster.local", ttl: int = 5, pods_mode: str = "disabled",
           namespaces: Iterable[str] | None = None) -> DNSReply:
    """What CoreDNS's kubernetes plugin answers for one question."""
    cluster = _Cluster(list(services), list(endpointslices), pods, namespaces)
    return _Answerer(cluster, zone, ttl, pods_mode).ask(qname, qtype.upper(), chase=True)


class _Answerer:
    def __init__(self, cluster: _Cluster, zone: str, ttl: int, pods_mode: str):
        self.cluster = cluster
        self.zone = zone.strip(".").lower()
        self.ttl = ttl
        self.pods_mode = pods_mode

    # record text ------------------------------------------------------------------------------------------
    def rr(self, owner: str, rtype: str, data: str, ttl: int | None = None) -> str:
        return f"{owner}.\t{self.ttl if ttl is None else ttl}\tIN\t{rtype}\t{data}"

    def soa(self) -> str:
        return self.rr(self.zone, "SOA", f"ns.dns.{self.zone}. hostmaster.{self.zone}. {self.cluster.serial} "
                                         f"{SOA_REFRESH} {SOA_RETRY} {SOA_EXPIRE} {self.ttl}")

    def nxdomain(self) -> DNSReply:
        return DNSReply("NXDOMAIN", authority=[self.soa()])

    def nodata(self) -> DNSReply:
        return DNSReply("NOERROR", authority=[self.soa()])

    # dispatch ---------------------------------------------------------------------------------------------
    def ask(self, qname: str, qtype: str, chase: bool) -> DNSReply:
        owner = qname.rstrip(".")
        name = owner.lower()
        if name != self.zone and not name.endswith("." + self.zone):
            return DNSReply("NXDOMAIN")  # not ours: CoreDNS would forward it, and the lab has no upstream
        labels = name[: -len(self.zone)].rstrip(".").split(".") if name != self.zone else []
        labels.reverse()  # closest to the zone first
        if not labels:
            return self.apex(qtype)
        if any(label == "" for label in labels):
            return self.nxdomain()
        if labels == ["dns-version"]:
            if qtype == "TXT":
                return DNSReply(answer=[self.rr(owner, "TXT", f'"{DNS_VERSION}"', DNS_VERSION_TTL)])
            return self.nodata()
        if labels == ["dns", "ns"]:
            ip = self.cluster.dns_service_ip()
            if ip is None:
                return self.nxdomain()
            if qtype == _family(ip):
                return DNSReply(answer=[self.rr(owner, qtype, ip)])
            return self.nodata()
        if labels == ["dns"] and self.cluster.dns_service_ip():
            return self.nodata()
        if labels[0] == "svc":
            return self.svc(owner, labels[1:], qtype, chase)
        if labels[0] == "pod":
            return self.pod(owner, labels[1:], qtype)
        return self.nxdomain()

    def apex(self, qtype: str) -> DNSReply:
        if qtype == "SOA":
            return DNSReply(answer=[self.soa()])
        if qtype == "NS":
            reply = DNSReply(answer=[self.rr(self.zone, "NS", f"ns.dns.{self.zone}.")])
            ip = self.cluster.dns_service_ip()
            if ip:
                reply.additional.append(self.rr(f"ns.dns.{self.zone}", _family(ip), ip))
            return reply
        return self.nodata()

    # pods -------------------------------------------------------------------------------------------------
    def pod(self, owner: str, labels: list[str], qtype: str) -> DNSReply:
        if not labels:
            return self.nodata()
        namespace = labels[0]
        if len(labels) == 1:
            return self.nodata() if namespace in self.cluster.namespaces else self.nxdomain()
        if len(labels) != 2 or self.pods_mode not in ("insecure", "verified"):
            return self.nxdomain()
        ip = _parse_dashed_ip(labels[1])
        if ip is None:
            return self.nxdomain()
        if self.pods_mode == "verified" and not self._pod_has_ip(namespace, ip):
            return self.nxdomain()
        if qtype in ("A", "AAAA"):
            return DNSReply(answer=[self.rr(owner, qtype, ip)]) if _family(ip) == qtype else self.nodata()
        return self.nodata()

    def _pod_has_ip(self, namespace: str, ip: str) -> bool:
        for pod in self.cluster.pods:
            if _ns(pod).lower() != namespace or _meta(pod).get("deletionTimestamp"):
                continue
            status = pod.get("status") or {}
            ips = {entry.get("ip") for entry in status.get("podIPs") or ()} | {status.get("podIP")}
            for candidate in ips:
                if candidate and _same_ip(candidate, ip):
                    return True
        return False

    # services ---------------------------------------------------------------------------------------------
    def svc(self, owner: str, labels: list[str], qtype: str, chase: bool) -> DNSReply:
        if not labels:
            return self.nodata()
        namespace = labels[0]
        if namespace not in self.cluster.namespaces:
            return self.nxdomain()
        if len(labels) == 1:
            return self.nodata()
        service = self.cluster.services.get((namespace, labels[1]))
        if service is None:
            return self.nxdomain()
        service_name = f"{labels[1]}.{namespace}.svc.{self.zone}"
        rest = labels[2:]
        external = (service.get("spec") or {}).get("type") == "ExternalName"
        if external:
            if rest:
                return self.nxdomain()
            return self.external(owner, service, qtype, chase)
        if len(rest) == 2 and rest[0].startswith("_") and rest[1].startswith("_"):
            return self.service_records(owner, service, service_name, namespace, labels[1], qtype,
                                        port=rest[1][1:], proto=rest[0][1:])
        if len(rest) == 1:
            return self.endpoint_records(owner, rest[0], service_name, namespace, labels[1], qtype)
        if rest:
            return self.nxdomain()
        return self.service_records(owner, service, service_name, namespace, labels[1], qtype)

    def external(self, owner: str, service: dict, qtype: str, chase: bool) -> DNSReply:
        spec = service.get("spec") or {}
        target = (spec.get("externalName") or "").rstrip(".")
        if qtype == "SRV":
            ports = spec.get("ports") or [{"port": 0}]
            n = len(ports)
            records = []
            for port in ports:
                record = self.rr(owner, "SRV", f"0 {100 // n} {port.get('port', 0)} {target}.")
                if record not in records:
                    records.append(record)
            return DNSReply(answer=records)
        if qtype not in ("A", "AAAA", "CNAME"):
            return self.nodata()
        reply = DNSReply(answer=[self.rr(owner, "CNAME", f"{target}.")])
        if qtype != "CNAME" and chase:
            lowered = target.lower()
            if lowered == self.zone or lowered.endswith("." + self.zone):
                followed = self.ask(target, qtype, chase=False)
                reply.answer.extend(r for r in followed.answer if r not in reply.answer)
        return reply

    def service_records(self, owner: str, service: dict, service_name: str, namespace: str, name: str,
                        qtype: str, port: str | None = None, proto: str | None = None) -> DNSReply:
        spec = service.get("spec") or {}
        if _is_headless(service):
            endpoints = self.cluster.ready_endpoints(namespace, name)
            if not endpoints:
                return self.nxdomain()
            if qtype in ("A", "AAAA") and port is None:
                records = [self.rr(owner, qtype, ip) for ip, _, _ in endpoints if _family(ip) == qtype]
                return DNSReply(answer=_unique(records)) if records else self.nodata()
            if qtype != "SRV":
                return self.nodata() if port is None or self._any_port(endpoints, port, proto) else self.nxdomain()
            backends = [(f"{label}.{service_name}", ip, p.get("port"))
                        for ip, label, ports in endpoints for p in ports if _port_matches(p, port, proto)]
            if not backends:
                return self.nodata() if port is None else self.nxdomain()
            return self.srv(owner, backends)
        ips = _cluster_ips(service)
        if qtype in ("A", "AAAA") and port is None:
            records = [self.rr(owner, qtype, ip) for ip in ips if _family(ip) == qtype]
            return DNSReply(answer=records) if records else self.nodata()
        ports = [p for p in spec.get("ports") or () if _port_matches(p, port, proto)]
        if qtype != "SRV":
            return self.nodata() if port is None or ports else self.nxdomain()
        if not ports:
            return self.nodata() if port is None else self.nxdomain()
        backends = [(service_name, ip, p.get("port")) for ip in ips for p in ports]
        return self.srv(owner, backends)

    @staticmethod
    def _any_port(endpoints, port, proto) -> bool:
        return any(_port_matches(p, port, proto) for _, _, ports in endpoints for p in ports)

    def srv(self, owner: str, backends: list[tuple[str, str, int]]) -> DNSReply:
        weight = 100 // len(backends)
        answer_records: list[str] = []
        extra: list[str] = []
        seen: set[tuple[str, int]] = set()
        for target, ip, port in sorted(backends, key=lambda b: (b[0], b[2] or 0, _ip_key(b[1]))):
            if (target, port) not in seen:
                seen.add((target, port))
                answer_records.append(self.rr(owner, "SRV", f"0 {weight} {port} {target}."))
            glue = self.rr(target, _family(ip), ip)
            if glue not in extra:
                extra.append(glue)
        return DNSReply(answer=answer_records, additional=extra)

    def endpoint_records(self, owner: str, label: str, service_name: str, namespace: str, name: str,
                         qtype: str) -> DNSReply:
        matches = [(ip, ports) for ip, ep_label, ports in self.cluster.ready_endpoints(namespace, name)
                   if ep_label.lower() == label]
        if not matches:
            return self.nxdomain()
        if qtype in ("A", "AAAA"):
            records = [self.rr(owner, qtype, ip) for ip, _ in matches if _family(ip) == qtype]
            return DNSReply(answer=_unique(records)) if records else self.nodata()
        if qtype == "SRV":
            target = f"{label}.{service_name}"
            backends = [(target, ip, p.get("port")) for ip, ports in matches for p in ports]
            return self.srv(owner, backends) if backends else self.nodata()
        return self.nodata()


def _unique(records: list[str]) -> list[str]:
    out: list[str] = []
    for record in records:
        if record not in out:
            out.append(record)
    return out


def _same_ip(a: str, b: str) -> bool:
    try:
        return ipaddress.ip_address(a) == ipaddress.ip_address(b)
    except ValueError:
        return a == b


def _parse_dashed_ip(label: str) -> str | None:
    """The IP a pod-record label spells (`10-244-1-5`, `fd00--5`), or None when it is not one."""
    if label.count("-") == 3 and "." not in label:
        dotted = label.replace("-", ".")
        try:
            return str(ipaddress.IPv4Address(dotted))
        except ValueError:
            return None
    try:
        return str(ipaddress.IPv6Address(label.replace("-", ":")))
    except ValueError:
        return None


# ----------------------------------------------------------------------------------------------------------
# the stub resolver

Lookup = Callable[[str, str], DNSReply]


@dataclass
class Resolution:
    """The reply a stub resolver settled on, and the fully-qualified name it asked for it."""

    reply: DNSReply
    name: str

    @property
    def rcode(self) -> str:
        """The settled reply's rcode."""
        return self.reply.rcode

    @property
    def answer(self) -> list[str]:
        """The settled reply's answer section."""
        return self.reply.answer


def candidate_names(name: str, search: Iterable[str] = DEFAULT_SEARCH, ndots: int = 5) -> list[str]:
    """The fully-qualified names a resolv.conf stub tries, in order (each ending with a dot)."""
    if name.endswith("."):
        return [name]
    suffixed = [f"{name}.{domain.strip('.')}." for domain in search if domain.strip(".")]
    absolute = f"{name}."
    if name.count(".") >= ndots:
        return [absolute] + suffixed
    return suffixed + [absolute]


def resolve(name: str, qtype: str = "A", *, search: Iterable[str] = DEFAULT_SEARCH, ndots: int = 5,
            lookup: Lookup) -> Resolution:
    """Resolve a name the way a pod's resolver does: walk the search path until a name is not NXDOMAIN."""
    tried = None
    for fqdn in candidate_names(name, search, ndots):
        reply = lookup(fqdn, qtype)
        tried = Resolution(reply, fqdn)
        if reply.rcode != "NXDOMAIN":
            return tried
    assert tried is not None
    return tried


# ----------------------------------------------------------------------------------------------------------
# nslookup

def _fields(record: str) -> tuple[str, str, str]:
    owner, _ttl, _class, rtype, data = record.split("\t", 4)
    return owner.rstrip("."), rtype, data


def _print_answer(reply: DNSReply, lines: list[str], addresses: list[str]) -> None:
    for record in reply.answer:
        owner, rtype, data = _fields(record)
        if rtype == "CNAME":
            lines.append(f"{owner}\tcanonical name = {data}")
        elif rtype in ("A", "AAAA"):
            lines.append(f"Name:\t{owner}")
            lines.append(f"Address: {data}")
            addresses.append(data)


def nslookup(name: str, *, lookup: Lookup, search: Iterable[str] = DEFAULT_SEARCH, ndots: int = 5,
             server: str = DNS_IP) -> NslookupAnswer:
    """Run BIND's `nslookup <name>` against the cluster DNS: A over the search path, then AAAA for the name found."""
    lines = [f"Server:\t\t{server}", f"Address:\t{server}#53", ""]
    addresses: list[str] = []
    first = resolve(name, "A", search=search, ndots=ndots, lookup=lookup)
    textname = name.rstrip(".")
    if first.rcode != "NOERROR":
        lines.append(f"** server can't find {textname}: {first.rcode}")
        return NslookupAnswer([], first.rcode, "\n".join(lines) + "\n", first.name.rstrip("."))
    _print_answer(first.reply, lines, addresses)
    a_noanswer = not first.reply.answer
    second = lookup(first.name, "AAAA")
    fqdn = first.name.rstrip(".")
    if second.rcode != "NOERROR":
        lines.append(f"** server can't find {fqdn}: {second.rcode}")
    elif second.answer:
        _print_answer(second, lines, addresses)
    elif a_noanswer:
        lines.append(f"*** Can't find {fqdn}: No answer")
    return NslookupAnswer(addresses, first.rcode, "\n".join(lines) + "\n", fqdn)
