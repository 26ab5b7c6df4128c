"""A network load balancer for kind: addresses for `type: LoadBalancer` Services, routed (not proxied) to the nodes.

kind has no load-balancer controller, so a LoadBalancer Service's `status.loadBalancer.ingress` would stay empty.
This one works as the network load balancers that keep the client's address do (MetalLB in BGP mode, a cloud's
pass-through balancer): the balancer never terminates a connection, it only routes packets addressed to the
Service's address to nodes, and kube-proxy on the node rewrites them (it already holds rules for the
LoadBalancer address). The reply goes back through the node's conntrack entry.

- **Addresses** come from a pool at the top of the kind Docker network's IPv4 subnet (`address_pool`), never an
  address a container holds; `allocate` keeps the addresses Services already have and hands out the lowest free
  one to each new Service, oldest Service first. A namespace annotated with a block of its own
  (`labsupport.dev/load-balancer-ips: CIDR`, a class's student: `labsupport class cluster --load-balancer-pool`)
  gets addresses from that block only, and no other namespace ever gets one of them. The address is written through
  the status subresource (`ipMode: VIP`) and taken back when the Service is deleted or stops being a LoadBalancer.
  A Service that gets none is told why in an Event (`kubectl describe svc`).
- **Routes** live in the client container only (the "outside" `lab.curl(..., source="client")` runs from), one
  route per address: through every node that takes external traffic for `externalTrafficPolicy: Cluster`; for
  `Local`, through the nodes whose `healthCheckNodePort` answers `/healthz` with 200 (kube-proxy's own health
  check server), re-checked while the controller runs. Several next hops make an ECMP route, and the client's
  `net.ipv4.fib_multipath_hash_policy=1` hashes each connection's ports, so new connections spread over the nodes.
  No node answering: the route is `unreachable`, as a balancer with no healthy backend drops the traffic.

The pure functions (`address_pool`, `allocate`, `health_checks`, `desired_routes`, `parse_routes`,
`route_changes`) need no cluster; `LoadBalancerController` runs them in a background thread against a real one.
"""
from __future__ import annotations

import ipaddress
import json
import threading
import time
from dataclasses import dataclass, field
from typing import Callable, Iterable

from labsupport.errors import APIError, BackendUnavailable, BadRequest, Conflict, NotFound
from labsupport.i18n import tr
from labsupport.kind.runner import CommandResult

#: Nodes with this label take no traffic from external load balancers (kind puts it on its control plane).
EXCLUDE_LABEL = "node.kubernetes.io/exclude-from-external-load-balancers"
#: How many addresses the pool offers at most.
POOL_SIZE = 254
#: How often the health of `Local` Services' nodes is checked again (seconds).
HEALTH_PERIOD = 2
#: How often everything is checked again when nothing changes (seconds).
IDLE_PERIOD = 10
#: How long `wait_assigned` waits for an address by default (seconds).
ASSIGN_TIMEOUT = 30.0
#: The namespace annotation naming the block of addresses (a CIDR) that namespace's Services get theirs from.
NAMESPACE_BLOCK = "labsupport.dev/load-balancer-ips"
#: The reason of the Event a Service gets when it gets no address.
PENDING_REASON = "AddressNotAssigned"
UNREACHABLE = "unreachable"

Key = tuple[str, str]   # (namespace, name) of a Service


def service_key(service: dict) -> Key:
    """A Service's (namespace, name)."""
    meta = service.get("metadata") or {}
    return meta.get("namespace") or "default", meta.get("name") or ""


def is_ours(service: dict) -> bool:
    """Whether this balancer serves the Service: `type: LoadBalancer` and no `loadBalancerClass` of another's."""
    spec = service.get("spec") or {}
    return spec.get("type") == "LoadBalancer" and not spec.get("loadBalancerClass")


def ingress_ips(service: dict) -> list[str]:
    """The addresses in the Service's `status.loadBalancer.ingress`."""
    ingress = ((service.get("status") or {}).get("loadBalancer") or {}).get("ingress") or []
    return [entry["ip"] for entry in ingress if entry.get("ip")]


def address_pool(subnet: str, *, ip_range: str | None = None, in_use: Iterable[str] = (),
                 size: int = POOL_SIZE) -> list[str]:
    """The balancer's addresses on a Docker network: the top /24 of its IPv4 subnet (the top half of a smaller
    one), without the broadcast address, Docker's dynamic range (`ip_range`) or addresses containers hold.

    >>> address_pool("172.30.0.0/16")[:2], address_pool("172.30.0.0/16")[-1]
    (['172.30.255.1', '172.30.255.2'], '172.30.255.254')
    >>> address_pool("10.5.0.0/28", in_use=["10.5.0.9"])
    ['10.5.0.10', '10.5.0.11', '10.5.0.12', '10.5.0.13', '10.5.0.14']
    """
    try:
        net = ipaddress.IPv4Network(subnet, strict=False)
    except ValueError as e:
        raise BadRequest(tr("the kind network's subnet {subnet!r} is not an IPv4 network: {error}", subnet=subnet,
                            error=e)) from e
    if net.prefixlen > 29:
        raise BadRequest(tr("the kind network's subnet {subnet} is too small to hold load-balancer addresses "
                            "(it needs a /29 or larger)", subnet=subnet))
    top = list(net.subnets(new_prefix=24))[-1] if net.prefixlen <= 23 else list(net.subnets(prefixlen_diff=1))[-1]
    excluded = ipaddress.IPv4Network(ip_range, strict=False) if ip_range else None
    taken = set(in_use)
    pool = []
    for address in top:
        if address in (net.broadcast_address, top.network_address) or (excluded and address in excluded):
            continue
        if str(address) in taken:
            continue
        pool.append(str(address))
    return pool[:size]


def _created(service: dict) -> tuple[str, str, str]:
    meta = service.get("metadata") or {}
    return meta.get("creationTimestamp") or "", meta.get("namespace") or "", meta.get("name") or ""


@dataclass(frozen=True)
class Allocation:
    """What the balancer's addresses should be: every served Service's address, the Services whose status must
    be written (`ingress`: key → address) and those whose address goes back to the pool (`release`)."""

    assigned: dict[Key, str] = field(default_factory=dict)
    ingress: dict[Key, str] = field(default_factory=dict)
    release: list[Key] = field(default_factory=list)
    unassigned: dict[Key, str] = field(default_factory=dict)


def namespace_blocks(namespaces: Iterable[dict]) -> dict[str, str]:
    """Each namespace that has a block of addresses of its own (`NAMESPACE_BLOCK`), with that block."""
    found = {}
    for ns in namespaces:
        meta = ns.get("metadata") or {}
        block = (meta.get("annotations") or {}).get(NAMESPACE_BLOCK)
        if block:
            found[meta.get("name", "")] = block
    return found


def _owners(pool: list[str], blocks: dict[str, str]) -> dict[str, str]:
    """Each pool address inside a namespace's block, with that namespace (a malformed block reserves nothing)."""
    owners = {}
    for namespace, block in sorted(blocks.items()):
        try:
            network = ipaddress.IPv4Network(block, strict=False)
        except ValueError:
            continue
        for ip in pool:
            if ipaddress.IPv4Address(ip) in network:
                owners.setdefault(ip, namespace)
    return owners


def allocate(services: Iterable[dict], pool: list[str], blocks: dict[str, str] | None = None) -> Allocation:
    """Addresses for the served Services: an address a Service already has stays its own (the older Service keeps
    it when two claim one); a `spec.loadBalancerIP` in the pool is honoured when free; every other Service gets
    the lowest free address, oldest Service first. A namespace with a block of its own (`blocks`: namespace → CIDR)
    gets addresses only from it, and no other namespace gets those. Services no longer served give their pool
    address back.

    >>> svc = lambda name, t, ip=None: {"metadata": {"name": name, "namespace": "a", "creationTimestamp": t},
    ...     "spec": {"type": "LoadBalancer"}, "status": {"loadBalancer": {"ingress": [{"ip": ip}] if ip else []}}}
    >>> allocate([svc("new", "2"), svc("old", "1", "10.0.0.2")], ["10.0.0.1", "10.0.0.2"]).assigned
    {('a', 'old'): '10.0.0.2', ('a', 'new'): '10.0.0.1'}
    """
    in_pool = set(pool)
    blocks = dict(blocks or {})
    owners = _owners(pool, blocks)

    def may_hold(namespace: str, ip: str) -> bool:
        return owners.get(ip) == (namespace if namespace in blocks else None)

    services = sorted(services, key=_created)
    assigned: dict[Key, str] = {}
    holders: dict[str, Key] = {}
    ours = [s for s in services if is_ours(s)]
    for service in ours:   # addresses already held
        for ip in ingress_ips(service):
            if ip in in_pool and ip not in holders and may_hold(service_key(service)[0], ip):
                holders[ip] = service_key(service)
                assigned[service_key(service)] = ip
                break
    unassigned: dict[Key, str] = {}
    free = [ip for ip in pool if ip not in holders]
    for service in ours:
        key = service_key(service)
        if key in assigned:
            continue
        namespace = key[0]
        wanted = (service.get("spec") or {}).get("loadBalancerIP")
        if wanted:
            if wanted in free and may_hold(namespace, wanted):
                free.remove(wanted)
                assigned[key] = wanted
            elif wanted in owners and owners[wanted] != namespace:
                unassigned[key] = tr("spec.loadBalancerIP {ip} belongs to another namespace's addresses: ask for "
                                     "one of your own{block}", ip=wanted,
                                     block=f" ({blocks[namespace]})" if namespace in blocks else "")
            else:
                unassigned[key] = tr("spec.loadBalancerIP {ip} is not a free address of the kind load balancer's "
                                     "pool {first}–{last}", ip=wanted, first=pool[0] if pool else "?",
                                     last=pool[-1] if pool else "?")
            continue
        mine = next((ip for ip in free if may_hold(namespace, ip)), None)
        if mine is None:
            unassigned[key] = (tr("the addresses of namespace {namespace} ({block}) are all in use: delete a "
                                  "LoadBalancer Service you no longer need", namespace=namespace,
                                  block=blocks[namespace]) if namespace in blocks else
                               tr("the kind load balancer's pool ({count} addresses) is used up: delete a "
                                  "LoadBalancer Service you no longer need", count=len(pool)))
            continue
        free.remove(mine)
        assigned[key] = mine
    ingress = {}
    for service in ours:
        key = service_key(service)
        if key in assigned and ingress_ips(service) != [assigned[key]]:
            ingress[key] = assigned[key]
    release = [service_key(s) for s in services
               if (not is_ours(s) or service_key(s) not in assigned) and any(ip in in_pool for ip in ingress_ips(s))]
    return Allocation(assigned, ingress, release, unassigned)


def ingress_status(ip: str | None) -> dict:
    """The Service status the balancer writes: its address with `ipMode: VIP` (kube-proxy handles it on the node),
    or an empty one when the address is taken back."""
    return {"loadBalancer": {"ingress": [{"ip": ip, "ipMode": "VIP"}]} if ip else {}}


def node_addresses(nodes: Iterable[dict]) -> dict[str, str]:
    """The nodes that take external load-balancer traffic (Ready, not labelled to be excluded): name → InternalIP."""
    found = {}
    for node in nodes:
        meta = node.get("metadata") or {}
        if EXCLUDE_LABEL in (meta.get("labels") or {}):
            continue
        status = node.get("status") or {}
        if not any(c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or []):
            continue
        ip = next((a["address"] for a in status.get("addresses") or [] if a.get("type") == "InternalIP"), None)
        if ip:
            found[meta.get("name", ip)] = ip
    return found


def is_local(service: dict) -> bool:
    """Whether the Service keeps external traffic on the node it enters (`externalTrafficPolicy: Local`)."""
    return (service.get("spec") or {}).get("externalTrafficPolicy") == "Local"


def health_checks(services: Iterable[dict], assigned: dict[Key, str], nodes: dict[str, str]) -> list[str]:
    """The health-check URLs to ask: `http://<node>:<healthCheckNodePort>/healthz` of every `Local` Service with
    an address, on every node."""
    urls = []
    for service in services:
        port = (service.get("spec") or {}).get("healthCheckNodePort")
        if service_key(service) in assigned and is_local(service) and port:
            urls += [f"http://{ip}:{port}/healthz" for ip in nodes.values()]
    return urls


def parse_health(text: str) -> dict[str, int]:
    """curl's `-w '%{url_effective} %{http_code}\\n'` lines: URL → HTTP status (0: no answer)."""
    found = {}
    for line in text.splitlines():
        url, _, code = line.strip().rpartition(" ")
        if url.startswith("http") and code.isdigit():
            found[url] = int(code)
    return found


def desired_routes(services: Iterable[dict], assigned: dict[Key, str], nodes: dict[str, str],
                   health: dict[str, int]) -> dict[str, tuple[str, ...]]:
    """Each address → the node IPs its packets go to: all nodes for `Cluster`; for `Local`, the nodes whose
    health check answered 200. An empty tuple: no node may take it (the route is `unreachable`)."""
    routes = {}
    for service in services:
        key = service_key(service)
        if key not in assigned:
            continue
        if is_local(service):
            port = (service.get("spec") or {}).get("healthCheckNodePort")
            hops = [ip for ip in nodes.values() if health.get(f"http://{ip}:{port}/healthz") == 200]
        else:
            hops = list(nodes.values())
        routes[assigned[key]] = tuple(sorted(hops, key=ipaddress.IPv4Address))
    return routes


def parse_routes(text: str, pool: Iterable[str]) -> dict[str, tuple[str, ...]]:
    """The balancer's routes in `ip -4 route show` output: address in the pool → its next hops (`()` for an
    `unreachable` route)."""
    in_pool = set(pool)
    routes: dict[str, list[str]] = {}
    current: str | None = None
    for line in text.splitlines():
        if not line.strip():
            continue
        words = line.split()
        if not line[0].isspace():
            kind = words[0] if words[0] in (UNREACHABLE, "blackhole", "prohibit") else None
            dst = (words[1] if kind and len(words) > 1 else words[0]).removesuffix("/32")
            current = dst if dst in in_pool else None
            if current is not None:
                routes[current] = []
        if current is None:
            continue
        routes[current] += [words[i + 1] for i, word in enumerate(words[:-1]) if word == "via"]
    return {ip: tuple(sorted(hops, key=ipaddress.IPv4Address)) for ip, hops in routes.items()}


def route_line(ip: str, hops: tuple[str, ...]) -> str:
    """One `ip -batch` line that sets the route of an address (ECMP with several next hops)."""
    if not hops:
        return f"route replace {UNREACHABLE} {ip}/32"
    if len(hops) == 1:
        return f"route replace {ip}/32 via {hops[0]}"
    return f"route replace {ip}/32 " + " ".join(f"nexthop via {hop}" for hop in hops)


def route_changes(desired: dict[str, tuple[str, ...]], current: dict[str, tuple[str, ...]]) -> list[str]:
    """The `ip -batch` lines that turn the client's balancer routes from `current` into `desired`.

    >>> route_changes({"10.0.0.1": ("172.30.0.3", "172.30.0.2")}, {"10.0.0.9": ()})
    ['route replace 10.0.0.1/32 nexthop via 172.30.0.3 nexthop via 172.30.0.2', 'route del 10.0.0.9/32']
    """
    lines = [route_line(ip, hops) for ip, hops in sorted(desired.items())
             if tuple(sorted(current.get(ip, ("-",)))) != tuple(sorted(hops))]
    lines += [f"route del {ip}/32" for ip in sorted(current) if ip not in desired]
    return lines


# --- against a cluster -----------------------------------------------------------------------------------------
@dataclass
class Network:
    """The kind Docker network as the balancer sees it: its IPv4 subnet, Docker's dynamic range, used addresses."""

    subnet: str
    ip_range: str | None = None
    in_use: tuple[str, ...] = ()

    @classmethod
    def from_inspect(cls, text: str) -> "Network":
        """Read `docker network inspect <name>` (its JSON list) for the IPv4 subnet and the addresses in use."""
        try:
            doc = json.loads(text)
        except ValueError as e:
            raise BackendUnavailable(tr("`docker network inspect` printed no JSON: {text!r}", text=text[:200])) from e
        doc = doc[0] if isinstance(doc, list) and doc else doc
        configs = ((doc or {}).get("IPAM") or {}).get("Config") or []
        v4 = next((c for c in configs if ":" not in (c.get("Subnet") or ":")), None)
        if v4 is None:
            raise BackendUnavailable(tr("the kind network has no IPv4 subnet, so the kind load balancer has no "
                                        "addresses to hand out"))
        in_use = tuple(c.get("IPv4Address", "").split("/")[0] for c in ((doc or {}).get("Containers") or {}).values()
                       if c.get("IPv4Address"))
        gateway = v4.get("Gateway")
        return cls(v4["Subnet"], v4.get("IPRange") or None, in_use + ((gateway,) if gateway else ()))

    def pool(self) -> list[str]:
        """The balancer's addresses on this network."""
        return address_pool(self.subnet, ip_range=self.ip_range, in_use=self.in_use)


class LoadBalancerController:
    """Runs the balancer against one kind cluster: assigns addresses, keeps the client container's routes, and
    follows the Services (a watch from the last list's resourceVersion) until `stop()`.

    `api(method, path, body=None, query=None)` calls the API server; `client(argv, input)` runs a command in the
    client container. Several controllers on one cluster (one per Lab) agree: each computes the same addresses
    and routes from the same objects, and writes only what differs."""

    def __init__(self, api: Callable[..., dict], client: Callable[[list[str], str | None], CommandResult],
                 network: Network, watch: Callable[[str | None, int], None] | None = None):
        self.api = api
        self.client = client
        self.network = network
        self.pool = network.pool()
        if not self.pool:
            raise BackendUnavailable(tr("the kind network {subnet} leaves no address free for the kind load "
                                        "balancer", subnet=network.subnet))
        self.watch = watch
        self.routes: dict[str, tuple[str, ...]] = {}
        self.unassigned: dict[Key, str] = {}
        self._told: dict[Key, str] = {}
        self.error: Exception | None = None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def reconcile(self) -> tuple[str | None, int]:
        """One pass: addresses, routes, statuses. Returns the Services' resourceVersion and how long to wait
        before the next pass when nothing changes."""
        with self._lock:
            # the routes are read before the Services are listed: a route another controller has just added is
            # then always for a Service this list shows, so no pass takes away a route it has not heard of yet
            current = self._read_routes()
            listed = self.api("GET", "/api/v1/services")
            services = listed.get("items") or []
            version = (listed.get("metadata") or {}).get("resourceVersion")
            blocks = namespace_blocks(self.api("GET", "/api/v1/namespaces").get("items") or [])
            alloc = allocate(services, self.pool, blocks)
            self.unassigned = dict(alloc.unassigned)
            nodes = node_addresses(self.api("GET", "/api/v1/nodes").get("items") or [])
            urls = health_checks(services, alloc.assigned, nodes)
            desired = desired_routes(services, alloc.assigned, nodes, self._health(urls) if urls else {})
            lines = route_changes(desired, current)
            if lines:
                done = self.client(["ip", "-force", "-batch", "-"], "\n".join(lines) + "\n")
                after = self._read_routes() if not done.ok else desired
                if any(after.get(ip) != hops for ip, hops in desired.items()):
                    raise BackendUnavailable(tr("setting the kind load balancer's routes in the client container "
                                                "failed: {output}", output=(done.stderr or done.stdout).strip()[:300]))
            self.routes = desired
            by_key = {service_key(s): s for s in services}
            for key, ip in alloc.ingress.items():
                self._write_status(by_key[key], ip)
            for key in alloc.release:
                self._write_status(by_key[key], None)
            for key, why in alloc.unassigned.items():
                if self._told.get(key) != why:
                    self._tell(by_key[key], why)
            self._told = dict(alloc.unassigned)
            return version, HEALTH_PERIOD if urls else IDLE_PERIOD

    def _read_routes(self) -> dict[str, tuple[str, ...]]:
        """The balancer's routes in the client container now."""
        done = self.client(["ip", "-4", "route", "show"], None)
        if not done.ok:
            raise BackendUnavailable(tr("reading the client container's routes failed: {output}",
                                        output=(done.stderr or done.stdout).strip()[:300]))
        return parse_routes(done.stdout, self.pool)

    def _health(self, urls: list[str]) -> dict[str, int]:
        """Ask every health-check URL at once from the client container (where a balancer's checks come from)."""
        argv = ["curl", "-s", "-Z", "--connect-timeout", "1", "--max-time", "2",
                "-w", "%{url_effective} %{http_code}\n"]
        for url in urls:
            argv += ["-o", "/dev/null", url]
        return parse_health(self.client(argv, None).stdout)

    def _tell(self, service: dict, why: str) -> None:
        """An Event on a Service that gets no address, saying why (`kubectl describe svc` shows it)."""
        import secrets
        from datetime import datetime, timezone
        namespace, name = service_key(service)
        now = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        event = {"apiVersion": "v1", "kind": "Event",
                 "metadata": {"name": f"{name}.{secrets.token_hex(8)}", "namespace": namespace},
                 "involvedObject": {"apiVersion": "v1", "kind": "Service", "name": name, "namespace": namespace,
                                    "uid": (service.get("metadata") or {}).get("uid")},
                 "reason": PENDING_REASON, "message": why, "type": "Warning", "count": 1,
                 "firstTimestamp": now, "lastTimestamp": now,
                 "source": {"component": "labsupport-kind-loadbalancer"}}
        try:
            self.api("POST", f"/api/v1/namespaces/{namespace}/events", body=event)
        except (APIError, BackendUnavailable):
            pass   # the reason still reaches lab.apply's wait; an Event is a courtesy

    def _write_status(self, service: dict, ip: str | None) -> None:
        namespace, name = service_key(service)
        body = {"apiVersion": "v1", "kind": "Service",
                "metadata": {"name": name, "namespace": namespace,
                             "resourceVersion": service["metadata"].get("resourceVersion")},
                "spec": service.get("spec"), "status": {**(service.get("status") or {}), **ingress_status(ip)}}
        try:
            self.api("PUT", f"/api/v1/namespaces/{namespace}/services/{name}/status", body=body)
        except (Conflict, NotFound):
            pass   # changed or gone meanwhile: the next pass sees it as it is now

    # --- the thread ---------------------------------------------------------------------------------------------
    def start(self) -> None:
        """Run the controller in a background thread (once)."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, daemon=True, name="labsupport-kind-loadbalancer")
            self._thread.start()

    def stop(self) -> None:
        """Stop the background thread; the routes and addresses stay (the next controller carries on)."""
        self._stop.set()

    @property
    def running(self) -> bool:
        """Whether the background thread runs."""
        return self._thread is not None and self._thread.is_alive() and not self._stop.is_set()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                version, period = self.reconcile()
                self.error = None
            except Exception as e:  # the API server or Docker out of reach for a moment: try again shortly
                self.error = e
                if self._stop.wait(2.0):
                    return
                continue
            if self._stop.is_set():
                return
            if self.watch is not None:
                try:
                    self.watch(version, period)
                    continue
                except Exception:  # a watch that failed at once: fall back to waiting the period out
                    pass
            self._stop.wait(period)

    def wait_assigned(self, namespace: str, name: str, timeout: float = ASSIGN_TIMEOUT) -> dict:
        """Run a pass now, then wait until the Service has its address; the Service as stored then."""
        deadline = time.monotonic() + timeout
        path = f"/api/v1/namespaces/{namespace}/services/{name}"
        while True:
            try:
                self.reconcile()
            except (APIError, BackendUnavailable) as e:
                self.error = e
            service = self.api("GET", path)
            if not is_ours(service) or ingress_ips(service):
                return service
            why = self.unassigned.get((namespace, name))
            if why:
                raise BadRequest(tr("Service {namespace}/{name} gets no load-balancer address: {why}",
                                    namespace=namespace, name=name, why=why))
            if time.monotonic() > deadline:
                raise TimeoutError(tr("Service {namespace}/{name} got no load-balancer address within {timeout:g} s "
                                      "(the kind load balancer's last error: {error}); `kubectl get svc {name}` "
                                      "shows its EXTERNAL-IP", namespace=namespace, name=name, timeout=timeout,
                                      error=self.error or tr("none")))
            time.sleep(0.2)

    def next_hops(self, ip: str) -> tuple[str, ...]:
        """The node IPs the client's route to a balancer address goes through (as last set)."""
        return self.routes.get(ip, ())


__all__ = ["address_pool", "allocate", "Allocation", "ingress_status", "node_addresses", "health_checks",
           "parse_health", "desired_routes", "parse_routes", "route_line", "route_changes", "Network",
           "LoadBalancerController", "EXCLUDE_LABEL", "service_key", "is_ours", "ingress_ips", "namespace_blocks",
           "NAMESPACE_BLOCK", "PENDING_REASON"]
