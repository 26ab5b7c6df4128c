"""The kind load balancer's pure parts: the address pool, allocation, health checks, routes — no cluster needed."""
from __future__ import annotations

import json

import pytest

from labsupport.errors import BackendUnavailable, BadRequest
from labsupport.kind.loadbalancer import (EXCLUDE_LABEL, LoadBalancerController, Network, address_pool, allocate,
                                          desired_routes, health_checks, ingress_status, node_addresses,
                                          parse_health, parse_routes, route_changes, route_line)
from labsupport.kind.runner import CommandResult

POOL = address_pool("172.30.0.0/16")


def svc(name: str, created: str, *, ns: str = "lab", type_: str = "LoadBalancer", ip: str | None = None,
        policy: str = "Cluster", hc: int | None = None, **spec) -> dict:
    spec = {"type": type_, "externalTrafficPolicy": policy, **spec}
    if hc:
        spec["healthCheckNodePort"] = hc
    return {"metadata": {"name": name, "namespace": ns, "creationTimestamp": created, "resourceVersion": "7"},
            "spec": spec, "status": {"loadBalancer": {"ingress": [{"ip": ip, "ipMode": "VIP"}] if ip else []}}}


def node(name: str, ip: str, *, ready: bool = True, excluded: bool = False) -> dict:
    return {"metadata": {"name": name, "labels": {EXCLUDE_LABEL: ""} if excluded else {}},
            "status": {"addresses": [{"type": "InternalIP", "address": ip}, {"type": "Hostname", "address": name}],
                       "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}}


NODES = [node("c-control-plane", "172.30.0.2", excluded=True), node("c-worker", "172.30.0.3"),
         node("c-worker2", "172.30.0.4"), node("c-worker3", "172.30.0.5", ready=False)]


def test_pool_is_the_top_of_the_subnet_without_taken_addresses():
    assert POOL[0] == "172.30.255.1" and POOL[-1] == "172.30.255.254" and len(POOL) == 254
    assert "172.30.255.255" not in POOL, "the broadcast address"
    assert address_pool("172.18.0.0/16", in_use=["172.18.255.1"])[0] == "172.18.255.2"
    assert address_pool("10.1.0.0/24") == [f"10.1.0.{i}" for i in range(129, 255)]
    ranged = address_pool("172.30.0.0/23", ip_range="172.30.1.0/25")
    assert ranged[0] == "172.30.1.128" and all(not a.startswith("172.30.0.") for a in ranged)


@pytest.mark.parametrize("subnet,words", [("fd00::/64", "not an IPv4 network"), ("10.0.0.0/30", "too small"),
                                          ("kind", "not an IPv4 network")])
def test_pool_refuses_a_subnet_it_cannot_use(subnet, words):
    with pytest.raises(BadRequest, match=words) as info:
        address_pool(subnet)
    assert subnet in str(info.value)


def test_allocation_keeps_held_addresses_and_gives_the_lowest_free_one_oldest_first():
    services = [svc("c", "2026-01-03T00:00:00Z"), svc("b", "2026-01-02T00:00:00Z"),
                svc("a", "2026-01-01T00:00:00Z", ip=POOL[0]), svc("plain", "2026-01-01T00:00:00Z", type_="ClusterIP")]
    result = allocate(services, POOL)
    assert result.assigned == {("lab", "a"): POOL[0], ("lab", "b"): POOL[1], ("lab", "c"): POOL[2]}
    assert result.ingress == {("lab", "b"): POOL[1], ("lab", "c"): POOL[2]}, "a's status is already right"
    assert result.release == [] and result.unassigned == {}


def test_two_services_claiming_one_address_leave_it_to_the_older():
    services = [svc("young", "2026-01-02T00:00:00Z", ip=POOL[5]), svc("old", "2026-01-01T00:00:00Z", ip=POOL[5])]
    result = allocate(services, POOL)
    assert result.assigned == {("lab", "old"): POOL[5], ("lab", "young"): POOL[0]}
    assert result.ingress == {("lab", "young"): POOL[0]}


def test_a_service_that_is_no_longer_a_load_balancer_gives_its_address_back():
    services = [svc("was-lb", "2026-01-01T00:00:00Z", type_="NodePort", ip=POOL[0]),
                svc("other-class", "2026-01-01T00:00:00Z", ip="203.0.113.7", loadBalancerClass="example.com/lb"),
                svc("lb", "2026-01-02T00:00:00Z")]
    result = allocate(services, POOL)
    assert result.release == [("lab", "was-lb")], "another class's address is not ours to take"
    assert result.assigned == {("lab", "lb"): POOL[0]}, "the released address is free again"
    assert ingress_status(None) == {"loadBalancer": {}}
    assert ingress_status(POOL[0]) == {"loadBalancer": {"ingress": [{"ip": POOL[0], "ipMode": "VIP"}]}}


def test_requested_addresses_and_an_empty_pool_are_explained():
    pool = POOL[:1]
    services = [svc("wants", "2026-01-01T00:00:00Z", loadBalancerIP=POOL[0]),
                svc("wants-outside", "2026-01-02T00:00:00Z", loadBalancerIP="10.9.9.9"),
                svc("late", "2026-01-03T00:00:00Z")]
    result = allocate(services, pool)
    assert result.assigned == {("lab", "wants"): POOL[0]}
    assert "10.9.9.9 is not a free address" in result.unassigned[("lab", "wants-outside")]
    assert "used up" in result.unassigned[("lab", "late")]


def test_only_ready_nodes_that_take_external_traffic_carry_it():
    assert node_addresses(NODES) == {"c-worker": "172.30.0.3", "c-worker2": "172.30.0.4"}


def test_routes_go_to_every_node_for_cluster_and_to_healthy_nodes_for_local():
    services = [svc("spread", "1", ip=POOL[0]), svc("keep", "2", ip=POOL[1], policy="Local", hc=31999),
                svc("nothing-here", "3", ip=POOL[2], policy="Local", hc=32000)]
    assigned = allocate(services, POOL).assigned
    nodes = node_addresses(NODES)
    urls = health_checks(services, assigned, nodes)
    assert urls == ["http://172.30.0.3:31999/healthz", "http://172.30.0.4:31999/healthz",
                    "http://172.30.0.3:32000/healthz", "http://172.30.0.4:32000/healthz"]
    health = parse_health("http://172.30.0.3:31999/healthz 503\nhttp://172.30.0.4:31999/healthz 200\n"
                          "http://172.30.0.3:32000/healthz 000\nhttp://172.30.0.4:32000/healthz 503\n")
    assert health["http://172.30.0.3:32000/healthz"] == 0
    routes = desired_routes(services, assigned, nodes, health)
    assert routes == {POOL[0]: ("172.30.0.3", "172.30.0.4"), POOL[1]: ("172.30.0.4",), POOL[2]: ()}
    assert [route_line(ip, hops) for ip, hops in routes.items()] == [
        f"route replace {POOL[0]}/32 nexthop via 172.30.0.3 nexthop via 172.30.0.4",
        f"route replace {POOL[1]}/32 via 172.30.0.4", f"route replace unreachable {POOL[2]}/32"]


IP_ROUTE = f"""default via 172.30.0.1 dev eth0
172.30.0.0/16 dev eth0 proto kernel scope link src 172.30.0.9
{POOL[0]}
\tnexthop via 172.30.0.3 dev eth0 weight 1
\tnexthop via 172.30.0.4 dev eth0 weight 1
{POOL[1]} via 172.30.0.4 dev eth0
unreachable {POOL[2]}
10.99.0.1 via 172.30.0.3 dev eth0
"""


def test_routes_are_read_back_from_ip_route_and_only_changes_are_written():
    current = parse_routes(IP_ROUTE, POOL)
    assert current == {POOL[0]: ("172.30.0.3", "172.30.0.4"), POOL[1]: ("172.30.0.4",), POOL[2]: ()}
    assert route_changes(current, current) == []
    desired = {POOL[0]: ("172.30.0.4", "172.30.0.3"), POOL[1]: ("172.30.0.3", "172.30.0.4")}
    assert route_changes(desired, current) == [
        f"route replace {POOL[1]}/32 nexthop via 172.30.0.3 nexthop via 172.30.0.4", f"route del {POOL[2]}/32"]


NETWORK = json.dumps([{"Name": "kind", "IPAM": {"Config": [
    {"Subnet": "fc00:f853:ccd:e793::/64"}, {"Subnet": "172.18.0.0/16", "Gateway": "172.18.0.1"}]},
    "Containers": {"abc": {"Name": "c-worker", "IPv4Address": "172.18.0.3/16"},
                   "def": {"Name": "odd", "IPv4Address": "172.18.255.1/16"}}}])


def test_the_network_is_read_from_docker_network_inspect():
    network = Network.from_inspect(NETWORK)
    assert network.subnet == "172.18.0.0/16" and "172.18.0.3" in network.in_use
    assert network.pool()[0] == "172.18.255.2", "a container already holds .1"
    with pytest.raises(BackendUnavailable, match="no IPv4 subnet"):
        Network.from_inspect(json.dumps([{"IPAM": {"Config": [{"Subnet": "fd00::/64"}]}}]))


class FakeCluster:
    """An API of Services and Nodes kept in memory (PUT status stores), and a client container that keeps routes
    and answers health checks from a table: enough to drive the controller's passes."""

    def __init__(self, services: list[dict], healthy: set[str] = frozenset()):
        self.services = {(s["metadata"]["namespace"], s["metadata"]["name"]): s for s in services}
        self.healthy = set(healthy)
        self.routes: dict[str, str] = {}
        self.batches: list[str] = []
        self.events: list[dict] = []
        self.namespaces: list[dict] = []

    def api(self, method: str, path: str, body=None, query=None) -> dict:
        if method == "GET" and path == "/api/v1/services":
            return {"metadata": {"resourceVersion": "42"}, "items": list(self.services.values())}
        if method == "GET" and path == "/api/v1/nodes":
            return {"items": NODES}
        if method == "GET" and path == "/api/v1/namespaces":
            return {"items": self.namespaces}
        if method == "POST" and path.endswith("/events"):
            self.events.append(body)
            return body
        parts = path.strip("/").split("/")
        key = (parts[3], parts[5])
        if method == "PUT" and parts[-1] == "status":
            self.services[key] = {**self.services[key], "status": body["status"]}
            return self.services[key]
        return self.services[key]

    def client(self, argv: list[str], input: str | None) -> CommandResult:
        if argv[0] == "ip" and "-batch" in argv:
            self.batches.append(input or "")
            for line in (input or "").splitlines():
                words = line.split()
                dst = next(w for w in words if w.endswith("/32")).removesuffix("/32")
                if words[1] == "del":
                    self.routes.pop(dst)
                else:
                    self.routes[dst] = line
            return CommandResult(argv, 0)
        if argv[0] == "ip":
            out = "default via 172.30.0.1 dev eth0\n"
            for dst, line in self.routes.items():
                hops = [w for w in line.split()[3:] if w[0].isdigit()]
                if "unreachable" in line:
                    out += f"unreachable {dst}\n"
                elif "nexthop" in line:
                    out += f"{dst}\n" + "".join(f"\tnexthop via {h} dev eth0 weight 1\n" for h in hops)
                else:
                    out += f"{dst} via {hops[-1]} dev eth0\n"
            return CommandResult(argv, 0, out)
        assert argv[0] == "curl" and argv[argv.index("-w") + 1] == "%{url_effective} %{http_code}\n"
        urls = [argv[i + 1] for i, word in enumerate(argv[:-1]) if word == "/dev/null"]
        return CommandResult(argv, 7, "".join(f"{u} {200 if u in self.healthy else 503}\n" for u in urls))


def test_the_controller_assigns_routes_and_releases():
    cluster = FakeCluster([svc("web-lb", "1"), svc("echo-lb", "2", policy="Local", hc=31000)],
                          healthy={"http://172.30.0.4:31000/healthz"})
    lb = LoadBalancerController(cluster.api, cluster.client, Network("172.30.0.0/16"))
    _, period = lb.reconcile()
    assert period == 2, "Local Services are checked again soon"
    assert cluster.services[("lab", "web-lb")]["status"] == ingress_status(POOL[0])
    assert cluster.services[("lab", "echo-lb")]["status"] == ingress_status(POOL[1])
    assert lb.next_hops(POOL[0]) == ("172.30.0.3", "172.30.0.4") and lb.next_hops(POOL[1]) == ("172.30.0.4",)
    assert len(cluster.batches) == 1
    lb.reconcile()
    assert len(cluster.batches) == 1, "nothing changed: nothing written"
    cluster.healthy = {"http://172.30.0.3:31000/healthz"}   # the pod moved
    lb.reconcile()
    assert lb.next_hops(POOL[1]) == ("172.30.0.3",) and cluster.batches[-1] == f"route replace {POOL[1]}/32 via 172.30.0.3\n"
    cluster.services[("lab", "web-lb")]["spec"]["type"] = "ClusterIP"
    _, period = lb.reconcile()
    assert cluster.services[("lab", "web-lb")]["status"] == {"loadBalancer": {}}
    assert POOL[0] not in cluster.routes and cluster.batches[-1] == f"route del {POOL[0]}/32\n"
    del cluster.services[("lab", "echo-lb")]
    _, period = lb.reconcile()
    assert cluster.routes == {} and period == 10


def test_waiting_for_an_address_names_the_reason_it_cannot_come():
    cluster = FakeCluster([svc("far", "1", loadBalancerIP="10.9.9.9")])
    lb = LoadBalancerController(cluster.api, cluster.client, Network("172.30.0.0/16"))
    with pytest.raises(BadRequest, match=r"lab/far gets no load-balancer address: spec.loadBalancerIP 10.9.9.9"):
        lb.wait_assigned("lab", "far", timeout=1)
    cluster.services[("lab", "near")] = svc("near", "2")
    assert lb.wait_assigned("lab", "near", timeout=1)["status"] == ingress_status(POOL[0])


def test_a_namespace_with_a_block_of_its_own_gets_addresses_from_it_and_no_one_else_does():
    blocks = {"lab-ann": "172.30.255.8/30", "lab-ben": "172.30.255.12/30", "lab-bad": "not-a-cidr"}
    services = [svc("plain", "1", ns="other"), svc("a1", "2", ns="lab-ann"), svc("a2", "3", ns="lab-ann"),
                svc("steal", "4", ns="lab-ann", loadBalancerIP="172.30.255.13"),
                svc("b1", "5", ns="lab-ben", loadBalancerIP="172.30.255.14"),
                svc("squatter", "0", ns="other", ip="172.30.255.15"),
                svc("outsider", "6", ns="other", loadBalancerIP="172.30.255.9")]
    result = allocate(services, POOL, blocks)
    assert result.assigned[("other", "plain")] == POOL[1], "the rest of the pool is everyone else's"
    assert result.assigned[("lab-ann", "a1")] == "172.30.255.8" and result.assigned[("lab-ann", "a2")] == \
        "172.30.255.9"
    assert result.assigned[("lab-ben", "b1")] == "172.30.255.14", "an address of one's own block may be asked for"
    assert "belongs to another namespace's addresses" in result.unassigned[("lab-ann", "steal")]
    assert "(172.30.255.8/30)" in result.unassigned[("lab-ann", "steal")]
    assert "belongs to another namespace's addresses" in result.unassigned[("other", "outsider")]
    assert result.assigned[("other", "squatter")] == POOL[0], "a held address of someone's block is given back"
    assert result.ingress[("other", "squatter")] == POOL[0]
    more = [svc(f"a{i}", str(4 + i), ns="lab-ann") for i in range(3, 6)]   # created 7, 8, 9
    crowded = allocate(services + more, POOL, blocks)
    assert "the addresses of namespace lab-ann (172.30.255.8/30) are all in use" in \
        crowded.unassigned[("lab-ann", "a5")]


def test_a_service_without_an_address_is_told_why_in_an_event_once():
    cluster = FakeCluster([svc("far", "1", loadBalancerIP="10.9.9.9")])
    lb = LoadBalancerController(cluster.api, cluster.client, Network("172.30.0.0/16"))
    lb.reconcile()
    lb.reconcile()
    [event] = cluster.events
    assert event["involvedObject"] == {"apiVersion": "v1", "kind": "Service", "name": "far", "namespace": "lab",
                                       "uid": None}
    assert event["type"] == "Warning" and event["reason"] == "AddressNotAssigned"
    assert "spec.loadBalancerIP 10.9.9.9 is not a free address" in event["message"]
