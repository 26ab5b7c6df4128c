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


def echo_service(policy: str) -> str:
    """The echo Service as a NodePort with the given externalTrafficPolicy."""
    return f"""
apiVersion: v1
kind: Service
metadata: {{name: echo}}
spec:
  type: NodePort
  externalTrafficPolicy: {policy}
  selector: {{app: echo}}
  ports: [{{port: 80, targetPort: 8080, nodePort: 30081}}]
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
    lab.apply(echo_service("Cluster"))
    lab.wait(lambda l: ready(l, "echo") == 3 and len(running_pods(l, "client")) == 1, timeout=timeout)
    client = running_pods(lab, "client")[0]
    node = lab.get("nodes", client["spec"]["nodeName"])
    node_ip = next(a["address"] for a in node["status"]["addresses"] if a["type"] == "InternalIP")
    url = f"http://{node_ip}:30081/clientip"
    replies: list = []
    # a real kube-proxy programs a new NodePort within its sync period; the embedded one at once
    lab.wait(lambda l: replies.append(l.curl(url, source="pod/client")) or replies[-1].ok, timeout=timeout)
    before = replies[-1]
    assert before.client_ip != client["status"]["podIP"], before
    lab.apply(echo_service("Local"))
    assert lab.get("svc", "echo")["spec"]["externalTrafficPolicy"] == "Local"
    result: dict = {}

    def kept_source(l: Lab) -> bool:
        result["r"] = l.curl(url, source="pod/client")
        return result["r"].ok and result["r"].client_ip == client["status"]["podIP"]

    lab.wait(kept_source, timeout=timeout)
    return before.client_ip, result["r"].client_ip
