"""The lesson's five exercises, written once against the Lab verbs, run on the kube backend (embedded API server)
and, opt-in, on a real kind cluster."""
from __future__ import annotations

from labsupport import Lab

WEB = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 3
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: nginx
        image: nginx:1.27
        ports: [{containerPort: 80, name: http}]
        # nginx quits at once on its stop signal (SIGQUIT); a short preStop keeps the terminating endpoint visible
        # long enough to catch it on a real cluster too.
        lifecycle: {preStop: {exec: {command: [sleep, "5"]}}}
---
apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  selector: {app: web}
  ports: [{port: 80, targetPort: 80, name: http}]
"""

HEADLESS = """
apiVersion: v1
kind: Service
metadata: {name: web-headless}
spec:
  clusterIP: None
  selector: {app: web}
  ports: [{port: 80, targetPort: 80, name: http}]
"""

ECHO = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: echo}
spec:
  replicas: 3
  selector: {matchLabels: {app: echo}}
  template:
    metadata: {labels: {app: echo}}
    spec:
      containers:
      - name: agnhost
        image: registry.k8s.io/e2e-test-images/agnhost:2.53
        args: [netexec, --http-port=8080]
        ports: [{containerPort: 8080}]
---
apiVersion: v1
kind: Pod
metadata: {name: client, labels: {app: client}}
spec:
  containers:
  - name: agnhost
    image: registry.k8s.io/e2e-test-images/agnhost:2.53
    args: [netexec, --http-port=8080]
"""


def echo_service(policy: str, node_port: int | None = None) -> str:
    """The echo Service as a NodePort with the given externalTrafficPolicy; its nodePort the API server's pick (so
    students sharing a cluster never collide), or the one it already has."""
    fixed = f", nodePort: {node_port}" if node_port else ""
    return f"""
apiVersion: v1
kind: Service
metadata: {{name: echo}}
spec:
  type: NodePort
  externalTrafficPolicy: {policy}
  selector: {{app: echo}}
  ports: [{{port: 80, targetPort: 8080{fixed}}}]
"""


def slice_addresses(lab: Lab, service: str) -> list[dict]:
    """Every endpoint in the Service's EndpointSlices."""
    return [e for s in lab.get("endpointslices", selector=f"kubernetes.io/service-name={service}")
            for e in s.get("endpoints") or []]


def ready(lab: Lab, service: str) -> int:
    """How many ready endpoints the Service has."""
    return sum(1 for e in slice_addresses(lab, service) if e.get("conditions", {}).get("ready"))


def running_pods(lab: Lab, app: str) -> list[dict]:
    """The app's pods that run and are not being deleted."""
    return [p for p in lab.get("pods", selector=f"app={app}")
            if p.get("status", {}).get("phase") == "Running" and not p["metadata"].get("deletionTimestamp")]


def exercise_1(lab: Lab, timeout: float = 180) -> list[str]:
    """3 nginx replicas + a ClusterIP Service: exactly 3 addresses in the slice."""
    lab.apply(WEB)
    lab.wait(lambda l: ready(l, "web") == 3, timeout=timeout)
    addresses = [a for e in slice_addresses(lab, "web") for a in e["addresses"]]
    assert len(addresses) == 3, addresses
    assert sorted(addresses) == sorted(p["status"]["podIP"] for p in running_pods(lab, "web"))
    return addresses


def exercise_2(lab: Lab, timeout: float = 180) -> dict:
    """Delete one pod and catch its endpoint with conditions.terminating; then 3 ready again."""
    victim = running_pods(lab, "web")[0]
    ip = victim["status"]["podIP"]
    lab.delete("pod", victim["metadata"]["name"])
    seen: dict = {}

    def terminating(l: Lab) -> bool:
        for e in slice_addresses(l, "web"):
            if ip in e["addresses"] and e.get("conditions", {}).get("terminating"):
                seen.update(e)
                return True
        return False

    lab.wait(terminating, timeout=timeout)
    assert seen["conditions"]["ready"] is False and seen["conditions"]["terminating"] is True
    lab.wait(lambda l: ready(l, "web") == 3 and ip not in [a for e in slice_addresses(l, "web")
                                                            for a in e["addresses"]], timeout=timeout)
    return seen


def exercise_3(lab: Lab, timeout: float = 180):
    """A headless Service: nslookup answers the pods' IPs, not one ClusterIP."""
    lab.apply(HEADLESS)
    pod_ips = sorted(p["status"]["podIP"] for p in running_pods(lab, "web"))
    answer = {}

    def resolved(l: Lab) -> bool:
        answer["a"] = l.nslookup("web-headless")
        return sorted(answer["a"].addresses) == pod_ips

    lab.wait(resolved, timeout=timeout)
    svc_ip = lab.get("svc", "web")["spec"]["clusterIP"]
    assert svc_ip not in answer["a"].addresses and answer["a"].rcode == "NOERROR"
    return answer["a"]


def exercise_4(lab: Lab) -> int:
    """Re-create the Service as NodePort and find its nodePort."""
    lab.delete("svc", "web")
    lab.apply(WEB.split("---")[1].replace("spec:\n", "spec:\n  type: NodePort\n", 1))
    svc = lab.get("svc", "web")
    node_port = svc["spec"]["ports"][0]["nodePort"]
    assert svc["spec"]["type"] == "NodePort" and 30000 <= node_port <= 32767
    return node_port


def exercise_5(lab: Lab, timeout: float = 180) -> tuple[str, str]:
    """externalTrafficPolicy Local: what source IP the app sees before and after, curling its node's IP:nodePort
    from a pod (Cluster: masqueraded to a node address; Local: pod traffic keeps its source)."""
    lab.apply(ECHO)
    node_port = lab.apply(echo_service("Cluster"))[0]["spec"]["ports"][0]["nodePort"]
    lab.wait(lambda l: ready(l, "echo") == 3 and len(running_pods(l, "client")) == 1, timeout=timeout)
    client = running_pods(lab, "client")[0]
    node = lab.get("nodes", client["spec"]["nodeName"])
    node_ip = next(a["address"] for a in node["status"]["addresses"] if a["type"] == "InternalIP")
    url = f"http://{node_ip}:{node_port}/clientip"
    replies: list = []
    # a real kube-proxy programs a new NodePort within its sync period; the embedded one at once
    lab.wait(lambda l: replies.append(l.curl(url, source="pod/client")) or replies[-1].ok, timeout=timeout)
    before = replies[-1]
    assert before.client_ip != client["status"]["podIP"], before
    lab.apply(echo_service("Local", node_port))
    assert lab.get("svc", "echo")["spec"]["externalTrafficPolicy"] == "Local"
    result: dict = {}

    def kept_source(l: Lab) -> bool:
        result["r"] = l.curl(url, source="pod/client")
        return result["r"].ok and result["r"].client_ip == client["status"]["podIP"]

    lab.wait(kept_source, timeout=timeout)
    return before.client_ip, result["r"].client_ip


ECHOSERVER = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: echoserver}
spec:
  replicas: 1
  selector: {matchLabels: {app: echoserver}}
  template:
    metadata: {labels: {app: echoserver}}
    spec:
      containers:
      - {name: echo, image: "registry.k8s.io/echoserver:1.10", ports: [{containerPort: 8080}]}
---
apiVersion: v1
kind: Service
metadata: {name: echoserver}
spec:
  type: NodePort
  externalTrafficPolicy: %s
  selector: {app: echoserver}
  ports: [{port: 80, targetPort: 8080%s}]
"""


def node_address(lab: Lab, name: str) -> str:
    """A node's InternalIP (the lessons' `lesson.nodes(lab)` reads the same)."""
    return next(a["address"] for a in lab.get("nodes", name)["status"]["addresses"] if a["type"] == "InternalIP")


def exercise_4_from_outside(lab: Lab, timeout: float = 120) -> int:
    """Lesson 09's exercise 4: the NodePort of exercise 4 answers a request from outside the cluster on a node's
    address (asked again until the cluster has programmed it, as exercise 5 does)."""
    node_port = lab.get("svc", "web")["spec"]["ports"][0]["nodePort"]
    workers = [n["metadata"]["name"] for n in lab.get("nodes")
               if "node-role.kubernetes.io/control-plane" not in n["metadata"].get("labels", {})]
    urls = [f"http://{node_address(lab, worker)}:{node_port}" for worker in workers]
    tries: list = []
    # A new NodePort is programmed by kube-proxy within its sync period and its pods' NetworkPolicy rules by the
    # cluster's firewall; with three students writing at once that can take longer than the lab's own wait for
    # kube-proxy, so a request from outside is asked again (as exercise 5 does from a pod) until one answers. Every
    # node serves the NodePort: each try asks the next worker, so one node slow to program it does not hold the rest.
    try:
        lab.wait(lambda l: tries.append(l.curl(urls[len(tries) % len(urls)])) or tries[-1].status == 200,
                 timeout=timeout)
    except TimeoutError:
        raise AssertionError(f"the NodePort never answered from outside within {timeout:g} s: {tries}\n"
                             f"{_node_firewall(workers[0], node_port)}") from None
    return node_port


def _node_firewall(node: str, port: int) -> str:
    """A failure's evidence: what a kind node's firewall, conntrack and routes hold, written to test-artifacts/ (the
    rulesets run to thousands of lines), and the end of its kube-router log, returned with the file's path."""
    import pathlib
    import subprocess
    shown = []
    for argv in (["nft", "list", "ruleset"], ["iptables-save", "-c"], ["conntrack", "-L", "-p", "tcp"],
                 ["ip", "route"], ["ip", "-br", "addr"]):
        done = subprocess.run(["docker", "exec", node, *argv], capture_output=True, text=True)
        shown.append(f"--- {' '.join(argv)} on {node}:\n{done.stdout}{done.stderr}")
    where = pathlib.Path("test-artifacts") / "kind-evidence" / f"{node}-nodeport-{port}.txt"
    where.parent.mkdir(parents=True, exist_ok=True)
    where.write_text("\n".join(shown))
    logs = subprocess.run(["docker", "exec", node, "sh", "-c",
                           "tail -n 40 /var/log/pods/kube-system_kube-router-*/*/*.log"], capture_output=True, text=True)
    return f"{node}'s rules, conntrack and routes: {where.resolve()}\n--- its kube-router log:\n{logs.stdout}{logs.stderr}"


def exercise_5_from_outside(lab: Lab, timeout: float = 180) -> tuple[str, str, str]:
    """Lesson 09's exercise 5: echoserver behind a NodePort sees a node's address with Cluster, the client's own with
    Local, and that one is `lesson.client_address(lab)`; each first request after a change gets the new rules."""
    from labsupport.widgets import lesson as lesson_widgets
    svc = [o for o in lab.apply(ECHOSERVER % ("Cluster", "")) if o["kind"] == "Service"][0]
    node_port = svc["spec"]["ports"][0]["nodePort"]
    lab.wait(lambda l: ready(l, "echoserver") == 1, timeout=timeout)
    node = running_pods(lab, "echoserver")[0]["spec"]["nodeName"]
    url = f"http://{node_address(lab, node)}:{node_port}/"
    before = lab.curl(url)
    lab.apply(ECHOSERVER % ("Local", f", nodePort: {node_port}"))
    after = lab.curl(url)
    client = lesson_widgets.client_address(lab)
    assert before.ok and after.ok, (before, after)
    assert before.client_ip != client and after.client_ip == client, (before.client_ip, after.client_ip, client)
    return before.client_ip, after.client_ip, client
