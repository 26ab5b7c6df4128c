"""The kind load balancer on the tier's real cluster: addresses assigned and taken back, `Local` keeping the client's
address through the balancer, `Cluster` spreading new connections over the nodes."""
from __future__ import annotations

import ipaddress

import pytest

from labsupport import Lab

pytestmark = pytest.mark.kind

ECHO = """
apiVersion: apps/v1
kind: Deployment
metadata: {{name: echo}}
spec:
  replicas: {replicas}
  selector: {{matchLabels: {{app: echo}}}}
  template:
    metadata: {{labels: {{app: echo}}}}
    spec:
      containers:
      - name: app
        image: registry.k8s.io/e2e-test-images/agnhost:2.53
        args: [netexec, --http-port=8080]
"""


def balancer(name: str, policy: str = "Cluster") -> dict:
    """A LoadBalancer Service in front of the echo pods."""
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name},
            "spec": {"type": "LoadBalancer", "externalTrafficPolicy": policy, "selector": {"app": "echo"},
                     "ports": [{"port": 80, "targetPort": 8080}]}}


def start_echo(lab: Lab, replicas: int) -> None:
    lab.apply(ECHO.format(replicas=replicas))
    lab.wait(lambda l: sum(1 for p in l.get("pods", selector="app=echo") if p["status"].get("phase") == "Running"
                           and all(s.get("ready") for s in p["status"].get("containerStatuses", []))) == replicas,
             timeout=180)


def client_routes(lab: Lab) -> str:
    """The client container's routing table, where the balancer's routes live."""
    return lab.backend.kind_cluster.client_exec(["ip", "-4", "route", "show"]).stdout


def first_answer(lab: Lab, url: str, timeout: float = 60):
    """The first good answer (kube-proxy writes a new Service's rules within its sync period)."""
    replies = []
    lab.wait(lambda l: replies.append(l.curl(url)) or replies[-1].ok, timeout=timeout)
    return replies[-1]


def entry_node(lab: Lab, seen: str) -> str:
    """The node a `Cluster` request entered, from the address the pod saw: the node's own (masqueraded on its way
    to another node) or its pod network's gateway (masqueraded to a pod on the same node)."""
    for n in lab.get("nodes"):
        ip = next(a["address"] for a in n["status"]["addresses"] if a["type"] == "InternalIP")
        gateway = str(next(ipaddress.ip_network(n["spec"]["podCIDR"]).hosts()))
        if seen in (ip, gateway):
            return n["metadata"]["name"]
    raise AssertionError(f"{seen} is no node's address")


def test_addresses_are_assigned_routed_and_taken_back(kind_ns):
    start_echo(kind_ns, 2)
    pool = kind_ns.backend.load_balancer.pool
    first = kind_ns.apply(balancer("first"))[0]
    ingress = first["status"]["loadBalancer"]["ingress"]
    assert len(ingress) == 1 and ingress[0]["ipMode"] == "VIP" and ingress[0]["ip"] in pool, ingress
    ip = ingress[0]["ip"]
    answer = first_answer(kind_ns, f"http://{ip}/hostname")
    assert answer.body in {p["metadata"]["name"] for p in kind_ns.get("pods", selector="app=echo")}
    assert f"{ip} " in client_routes(kind_ns) or f"{ip}\n" in client_routes(kind_ns)
    # kubectl (in the lab's namespace, as lab.kubectl runs it), not lab.apply: the controller's thread finds it
    manifest = ("apiVersion: v1\nkind: Service\nmetadata: {name: second}\nspec:\n  type: LoadBalancer\n"
                "  selector: {app: echo}\n  ports: [{port: 80, targetPort: 8080}]\n")
    kind_ns.kubectl("apply -f -", input=manifest, show=False)
    kind_ns.wait(lambda l: (l.get("svc", "second").get("status", {}).get("loadBalancer") or {}).get("ingress"),
                 timeout=30)
    second_ip = kind_ns.get("svc", "second")["status"]["loadBalancer"]["ingress"][0]["ip"]
    assert second_ip in pool and second_ip != ip
    # a type change takes the address back, and its route goes
    changed = kind_ns.get("svc", "first")
    changed["spec"]["type"] = "ClusterIP"
    for field in ("externalTrafficPolicy", "allocateLoadBalancerNodePorts"):
        changed["spec"].pop(field, None)
    for port in changed["spec"]["ports"]:
        port.pop("nodePort", None)
    kind_ns.apply(changed)
    kind_ns.wait(lambda l: not (l.get("svc", "first").get("status", {}).get("loadBalancer") or {}).get("ingress"),
                 timeout=30)
    kind_ns.wait(lambda l: ip not in client_routes(l).split(), timeout=30)
    kind_ns.delete("svc", "second")
    kind_ns.wait(lambda l: second_ip not in client_routes(l).split(), timeout=30)
    assert not kind_ns.curl(f"http://{second_ip}/hostname", timeout=2).ok


def test_local_keeps_the_client_address_through_the_balancer(kind_ns):
    start_echo(kind_ns, 1)
    pod = kind_ns.get("pods", selector="app=echo")[0]
    home = pod["spec"]["nodeName"]
    service = kind_ns.apply(balancer("keep", "Local"))[0]
    ip = service["status"]["loadBalancer"]["ingress"][0]["ip"]
    node_ip = next(a["address"] for a in kind_ns.get("nodes", home)["status"]["addresses"]
                   if a["type"] == "InternalIP")
    # only the node with the pod answers kube-proxy's health check, so the route goes there alone
    kind_ns.wait(lambda l: l.backend.load_balancer.next_hops(ip) == (node_ip,), timeout=60)
    client = kind_ns.backend.client_ip()
    for _ in range(8):
        r = first_answer(kind_ns, f"http://{ip}/clientip")
        assert r.text.rsplit(":", 1)[0] == client, f"the pod saw {r.text}, the client is {client}"
        assert (r.pod, r.node) == (pod["metadata"]["name"], home), r


def test_cluster_spreads_new_connections_over_the_nodes(kind_ns):
    workers = [n["metadata"]["name"] for n in kind_ns.get("nodes")
               if "node-role.kubernetes.io/control-plane" not in n["metadata"].get("labels", {})]
    start_echo(kind_ns, 2)
    ip = kind_ns.apply(balancer("spread"))[0]["status"]["loadBalancer"]["ingress"][0]["ip"]
    hops = kind_ns.backend.load_balancer.next_hops(ip)
    assert len(hops) == len(workers), "every worker carries a Cluster balancer's traffic; kind's control plane not"
    first_answer(kind_ns, f"http://{ip}/clientip")
    entered, pods = set(), set()
    for _ in range(30):
        r = kind_ns.curl(f"http://{ip}/clientip")
        assert r.ok, r
        entered.add(entry_node(kind_ns, r.text.rsplit(":", 1)[0]))
        pods.add(r.pod)
    assert len(entered) >= min(3, len(workers)), entered
    assert entered <= set(workers)
    assert len(pods) == 2, pods
