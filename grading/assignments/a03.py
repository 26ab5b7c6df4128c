"""Assignment 3: NodePort from outside, externalTrafficPolicy, and the source IP the app sees."""
from grading.build_source import Notebook, answer, graph_cell, locked, md, setup, solution, task, tests

ECHO = '''ECHO = f"""
apiVersion: apps/v1
kind: Deployment
metadata:
  name: echo
spec:
  replicas: 1
  selector:
    matchLabels:
      app: echo
  template:
    metadata:
      labels:
        app: echo
    spec:
      nodeSelector:
        kubernetes.io/hostname: {task.pod_node}   # one pod, on your node
      containers:
      - name: netexec
        image: registry.k8s.io/e2e-test-images/agnhost:2.53
        args: [netexec, --http-port={task.app_port}]
        ports:
        - containerPort: {task.app_port}
          name: http
---
apiVersion: v1
kind: Service
metadata:
  name: echo
spec:
  selector:
    app: echo
  ports:
  - port: 80
    targetPort: {task.app_port}
"""
lab.apply(ECHO)
lab.wait(lambda l: len(checks.ready_addresses(l, "echo")) == 1)
checks.node_ips(lab)'''

NODEPORT = '''
ECHO_NODEPORT = f"""
apiVersion: v1
kind: Service
metadata:
  name: echo
spec:
  type: NodePort
  selector:
    app: echo
  ports:
  - port: 80
    targetPort: {task.app_port}
"""
lab.apply(ECHO_NODEPORT)
node_port = lab.get("svc", "echo")["spec"]["ports"][0]["nodePort"]'''

BEFORE = '''
pod_node = lab.get("pods", selector="app=echo")[0]["spec"]["nodeName"]
ips = checks.node_ips(lab)
other_node = next(n for n in ips if n not in (pod_node, "lab-control-plane"))
before = lab.curl(f"http://{ips[other_node]}:{node_port}/clientip", source="client")'''

LOCAL = '''
ECHO_LOCAL = f"""
apiVersion: v1
kind: Service
metadata:
  name: echo
spec:
  type: NodePort
  externalTrafficPolicy: Local
  selector:
    app: echo
  ports:
  - port: 80
    targetPort: {task.app_port}
"""
lab.apply(ECHO_LOCAL)'''

AFTER = '''
after = lab.curl(f"http://{ips[pod_node]}:{node_port}/clientip", source="client")
elsewhere = lab.curl(f"http://{ips[other_node]}:{node_port}/clientip", source="client")'''


def notebook() -> Notebook:
    """The notebook."""
    return Notebook("03-nodeport-source-ip", "nodeport", "Assignment 3: NodePort and the client's source IP", [
        md("""
A NodePort Service opens the same port on every node, from 30000-32767, whether or not a pod of the Service runs
there. A request that reaches a node without a local pod is forwarded to a pod elsewhere, and on the way the node
replaces the client's source address with its own (SNAT), so the reply comes back through it. The app then sees a
node's IP, not the client's. `externalTrafficPolicy: Local` changes that, at a price you will measure.

The app here is `agnhost netexec`: its `/clientip` path answers with the `ip:port` it saw the request come from."""),
        setup(),
        *task("03-nodeport-source-ip"),
        md("""
The cell below runs one `echo` pod on your node (`task.pod_node`), serving on your app's port (`task.app_port`),
behind a ClusterIP Service on port 80, and lists the nodes' IPs."""),
        locked("provided-echo", ECHO),
        md("""
## Exercise 1: expose it as NodePort (2 points)

Turn the Service `echo` into a `NodePort` Service (same selector, port 80 to your app's port), leaving the
`nodePort` to the API server. Set `node_port` to the port it allocated (it is in the Service's
`spec.ports[0].nodePort`; `kubectl get svc echo` shows it as `80:3xxxx/TCP`)."""),
        solution("nodeport", NODEPORT, after="node_port"),
        tests("nodeport-test", 2, '''
checks.service_type(lab, "echo", "NodePort")
assert node_port == checks.node_port(lab, "echo"), \\
    f"node_port is {node_port!r}, but the Service's nodePort is {checks.node_port(lab, 'echo')}"
assert 30000 <= node_port <= 32767, "a nodePort comes from the range 30000-32767"
target = checks.find(lab, "svc", "echo")["spec"]["ports"][0].get("targetPort")
assert target == task.app_port, f"the Service's targetPort is {target!r}; your app listens on {task.app_port}"'''),
        md("""
## Exercise 2: from outside, through a node without the pod (2 points)

Set `pod_node` to the name of the node the `echo` pod runs on, `other_node` to a worker node where it does not run,
and `before` to the result of `lab.curl(f"http://<IP of other_node>:{node_port}/clientip", source="client")`:
a request from outside the cluster (on the embedded cluster the client's address is `172.18.0.100`).
What address did the app see (`before.body`)? Whose is it?"""),
        solution("before", BEFORE, after="before"),
        tests("before-test", 2, '''
checks.reached_node_port(before, lab, "echo")
checks.source_ip_snatted(before, lab)''', hidden='''
checks.node_without_pod(lab, other_node, "app=echo")
checks.sent_to(before, lab, other_node)'''),
        md("""
## Exercise 3: keep the client's address (1 point)

Apply the Service again with `externalTrafficPolicy: Local`."""),
        solution("local", LOCAL),
        tests("local-test", 1, '''
checks.external_traffic_policy(lab, "echo", "Local")
checks.service_type(lab, "echo", "NodePort")'''),
        md("""
## Exercise 4: compare (4 points)

Send the same request twice more from outside: `after` to `pod_node`'s IP and `elsewhere` to `other_node`'s IP,
both on `node_port`, path `/clientip`. Compare `after.body` with `before.body`, and look at what `elsewhere`
got."""),
        solution("after", AFTER, after="after, elsewhere"),
        tests("after-test", 2, '''
checks.reached_node_port(after, lab, "echo")
checks.source_ip_preserved(after, lab)'''),
        tests("drop-test", 2, '''
checks.dropped(elsewhere)''', hidden='''
checks.sent_to(elsewhere, lab, other_node, port=checks.node_port(lab, "echo"))
from urllib.parse import urlsplit
host = urlsplit(elsewhere.url).hostname
node = next(n for n, ip in checks.node_ips(lab).items() if ip == host)
checks.node_without_pod(lab, node, "app=echo")'''),
        md("""
## Exercise 5: explain the drop (3 points, graded by hand)

In a few sentences: why did the request to `other_node` get no answer at all, not even "connection refused", once
the policy was `Local`? What does `Local` cost besides that, and how does a cloud load balancer in front of a
`LoadBalancer` Service avoid sending traffic to such nodes? You may look at the node's rules:
`print(lab.proxy_rules(other_node))`, searching for `has no local endpoints`."""),
        answer("explain-drop", 3, "Why does a request to a node without a local pod vanish under "
               "externalTrafficPolicy Local, what else does Local cost, and how does a cloud load balancer avoid "
               "such nodes?", """
With `Local`, kube-proxy on a node only sends external traffic to pods on that same node, so it never forwards and
never needs SNAT: the app sees the client's real address. A node without a local pod has nowhere to send it;
kube-proxy installs a rule that drops it ("has no local endpoints" in the filter table, `-j DROP`), a silent drop
rather than a REJECT, so the client waits until it times out. Besides that, spreading becomes uneven: each node
gets an equal share of external traffic whatever number of pods it runs, so a pod alone on its node gets more
than pods that share a node.
A cloud load balancer polls each node's `healthCheckNodePort`; kube-proxy answers 200 only where the Service has
local endpoints (503 elsewhere), so the balancer stops sending to nodes without pods.""", """
1 point: the node has no local endpoint and, with Local, does not forward to other nodes, so the packet is
dropped (silently, a DROP rule, hence a timeout not a refusal). 1 point: a cost of Local other than the drop
(uneven load across pods/nodes; the client must reach the right nodes). 1 point: the load balancer's health check
on healthCheckNodePort (200 with local endpoints, 503 without) keeps traffic off such nodes. Half points for a
correct idea stated vaguely."""),
        *graph_cell(),
    ])
