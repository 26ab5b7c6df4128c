"""`lab.connect(url, source="pod/…")` on a real kind cluster: one real TCP connection from inside the pod carries
every request, so one pod answers them all, a scale-up does not move it, and closing it leaves TIME_WAIT on the node.
Each claim is checked against the node's own conntrack table, not against what the connection says of itself."""
from __future__ import annotations

import pytest

from labsupport import Lab, NotFound
from labsupport.errors import BackendUnavailable, BadRequest
from labsupport import tool_output
from tests.kind.conftest import KIND_CLUSTER, KIND_MODE, KIND_WORKERS

pytestmark = pytest.mark.kind

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
        image: "nginx:1.27"
        ports: [{containerPort: 80}]
        readinessProbe: {httpGet: {path: /, port: 80}, periodSeconds: 2}
---
apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  selector: {app: web}
  ports: [{port: 80, targetPort: 80}]
---
apiVersion: v1
kind: Service
metadata: {name: nobody}
spec:
  selector: {app: nobody}
  ports: [{port: 80}]
---
apiVersion: v1
kind: Pod
metadata: {name: client}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - {name: client, image: "busybox:1.36", command: [sleep, "3600"]}
"""


def ready(lab: Lab, app: str) -> int:
    return sum(1 for s in lab.get("endpointslices", selector=f"kubernetes.io/service-name={app}")
               for e in s.get("endpoints") or [] if (e.get("conditions") or {}).get("ready"))


def client_running(lab: Lab) -> bool:
    pod = lab.get("pods", "client")
    return pod["status"].get("phase") == "Running" and bool(pod["status"].get("podIP"))


def entries(lab: Lab, node: str, src: str, vip: str) -> dict[int, tool_output.ConntrackRecord]:
    """The node's conntrack entries of connections from `src` to the Service's port 80, by source port."""
    return {r.original.sport: r for r in map(tool_output.parse_conntrack_line, lab.conntrack(node))
            if r is not None and r.original.src == src and r.original.dst == vip and r.original.dport == 80}


@pytest.fixture
def web(kind_ns):
    """The web Deployment behind its Service and a busybox client pod, the Service's rules in place."""
    kind_ns.apply(WEB)
    kind_ns.wait(lambda l: ready(l, "web") == 3 and client_running(l), timeout=240)
    # a real kube-proxy writes a new Service's rules within its sync period
    kind_ns.wait(lambda l: l.curl("http://web", source="pod/client").ok, timeout=60)
    return kind_ns


def test_every_request_rides_one_connection_to_one_pod_and_a_scale_up_does_not_move_it(web):
    lab = web
    client = lab.get("pods", "client")
    node, ip = client["spec"]["nodeName"], client["status"]["podIP"]
    vip = lab.get("svc", "web")["spec"]["clusterIP"]
    before = entries(lab, node, ip, vip)
    conn = lab.connect("http://web", source="pod/client")
    assert conn.first.status == 200 and "Welcome to nginx!" in conn.first.body
    pods = {p["metadata"]["name"]: p for p in lab.get("pods", selector="app=web")}
    assert conn.pod in pods, conn.first
    answers = [conn.request() for _ in range(5)] + [conn.request("/index.html")]
    assert all(a.status == 200 and a.pod == conn.pod for a in answers)
    opened = {port: r for port, r in entries(lab, node, ip, vip).items() if port not in before}
    assert list(opened) == [conn.socket.local_port], f"not one connection: {[r.line for r in opened.values()]}"
    record = opened[conn.socket.local_port]
    assert record.state == "ESTABLISHED" and record.reply.src == pods[conn.pod]["status"]["podIP"], record.line
    assert conn.first.endpoint == record.endpoint and conn.first.node == pods[conn.pod]["spec"]["nodeName"]

    lab.scale("web", 6)
    lab.wait(lambda l: ready(l, "web") == 6, timeout=240)
    after = [conn.request() for _ in range(6)]
    assert all(a.status == 200 and a.pod == conn.pod for a in after), [a.pod for a in after]
    still = {port: r for port, r in entries(lab, node, ip, vip).items() if port not in before}
    assert list(still) == [conn.socket.local_port] and still[conn.socket.local_port].reply.src == record.reply.src

    conn.close()
    assert conn.closed
    with pytest.raises(BadRequest, match="open a new one with lab.connect"):
        conn.request()
    closed = entries(lab, node, ip, vip)[conn.socket.local_port]
    assert closed.state == "TIME_WAIT", closed.line

    # new connections are spread over all six pods again (12 of them miss the 3 new pods with probability 1/4096)
    reopened = [lab.connect("http://web", source="pod/client") for _ in range(12)]
    try:
        assert all(c.first.status == 200 for c in reopened)
        assert {c.pod for c in reopened} - set(pods), [c.pod for c in reopened]
    finally:
        for c in reopened:
            c.close()


def test_failures_are_results_or_errors_as_on_sim(web):
    lab = web
    nobody = lab.connect("http://nobody", source="pod/client")
    assert nobody.closed and nobody.first.status is None
    if KIND_MODE in ("nftables", "iptables"):
        # kube-proxy rejects a connection to a Service without endpoints
        assert nobody.first.exit_code == 7 and "Couldn't connect to server" in nobody.first.error, nobody.first
    unknown = lab.connect("http://no-such-service", source="pod/client")
    assert unknown.closed and unknown.first.exit_code == 6
    assert unknown.first.error == "curl: (6) Could not resolve host: no-such-service"
    with pytest.raises(NotFound):
        lab.connect("http://web", source="pod/ghost")
    with pytest.raises(BadRequest, match="plain HTTP"):
        lab.connect("https://web", source="pod/client")

    # the pod a connection is stuck to goes away: the next request on it fails as a broken connection does
    conn = lab.connect("http://web", source="pod/client")
    assert conn.first.ok
    lab.delete("pod", conn.pod)
    lab.wait(lambda l: conn.pod not in {p["metadata"]["name"] for p in l.get("pods", selector="app=web")},
             timeout=120)
    broken = conn.request()
    assert broken.status is None and broken.exit_code == 56 and "Connection reset by peer" in broken.error
    assert conn.closed


def test_closing_the_lab_closes_its_open_connections(web):
    namespace = web.backend.namespace
    client = web.get("pods", "client")
    node, ip = client["spec"]["nodeName"], client["status"]["podIP"]
    vip = web.get("svc", "web")["spec"]["clusterIP"]
    other = Lab(backend="kind", proxy_mode=KIND_MODE, name=KIND_CLUSTER, workers=KIND_WORKERS, namespace=namespace,
                load_images=False, preflight=False, progress="quiet")
    try:
        conns = [other.connect("http://web", source="pod/client") for _ in range(2)]
        assert all(c.first.ok and not c.closed for c in conns)
        ports = [c.socket.local_port for c in conns]
        assert {entries(web, node, ip, vip)[p].state for p in ports} == {"ESTABLISHED"}
    finally:
        other.close()
    assert all(c.closed for c in conns)
    assert {entries(web, node, ip, vip)[p].state for p in ports} == {"TIME_WAIT"}


AGNHOST = """
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
      - {name: agnhost, image: "registry.k8s.io/e2e-test-images/agnhost:2.53", args: [netexec, --http-port=8080]}
---
apiVersion: v1
kind: Service
metadata: {name: echo}
spec:
  selector: {app: echo}
  ports: [{port: 80, targetPort: 8080}]
"""


def test_on_the_kube_backend_the_app_names_the_pod(web):
    """Without node access (kube), which pod holds the connection is what the app says: agnhost's /hostname."""
    web.apply(AGNHOST)
    web.wait(lambda l: ready(l, "echo") == 3, timeout=240)
    web.wait(lambda l: l.curl("http://echo/hostname", source="pod/client").ok, timeout=60)
    with Lab(backend="kube", kubeconfig=web.kubeconfig, namespace=web.backend.namespace) as kube:
        conn = kube.connect("http://echo/hostname", source="pod/client")
        pods = {p["metadata"]["name"] for p in kube.get("pods", selector="app=echo")}
        assert conn.pod in pods and conn.first.body.strip() == conn.pod
        assert {conn.request().body.strip() for _ in range(4)} == {conn.pod}
        with pytest.raises(BackendUnavailable, match="from a node is not offered"):
            kube.connect("http://echo/hostname", source=f"node/{KIND_CLUSTER}-worker")
    assert conn.closed, "closing the kube lab left its connection open"
