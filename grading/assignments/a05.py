"""Assignment 5: five broken Services to diagnose and fix."""
from grading.build_source import Notebook, graph_cell, locked, md, setup, solution, task, tests

BROKEN = '''BROKEN = f"""
apiVersion: v1
kind: Pod
metadata:
  name: client
spec:
  containers:
  - name: client
    image: busybox:1.36
    command: [sleep, "3600"]
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: shop
spec:
  replicas: 2
  selector:
    matchLabels:
      app: shop
  template:
    metadata:
      labels:
        app: shop
    spec:
      containers:
      - name: nginx
        image: nginx:1.27
---
apiVersion: v1
kind: Service
metadata:
  name: shop
spec:
  selector:
    app: {task.shop_selector}
  ports:
  - port: 80
    targetPort: 80
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: cart
spec:
  replicas: 2
  selector:
    matchLabels:
      app: cart
  template:
    metadata:
      labels:
        app: cart
    spec:
      containers:
      - name: nginx
        image: nginx:1.27
        readinessProbe:
          httpGet:
            path: /
            port: {task.probe_port}
          periodSeconds: 2
---
apiVersion: v1
kind: Service
metadata:
  name: cart
spec:
  selector:
    app: cart
  ports:
  - port: 80
    targetPort: 80
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: pay
spec:
  replicas: 2
  selector:
    matchLabels:
      app: pay
  template:
    metadata:
      labels:
        app: pay
    spec:
      containers:
      - name: netexec
        image: registry.k8s.io/e2e-test-images/agnhost:2.53
        args: [netexec, --http-port={task.pay_port}]
---
apiVersion: v1
kind: Service
metadata:
  name: pay
spec:
  selector:
    app: pay
  ports:
  - port: 80
    targetPort: 80
---
apiVersion: v1
kind: Service
metadata:
  name: legacy
spec:
  type: NodePort
  selector:
    app: legacy
  ports:
  - port: 80
    nodePort: {task.taken_node_port}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: admin
spec:
  replicas: 1
  selector:
    matchLabels:
      app: admin
  template:
    metadata:
      labels:
        app: admin
    spec:
      containers:
      - name: nginx
        image: nginx:1.27
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: api
spec:
  replicas: 1
  selector:
    matchLabels:
      app: api
  template:
    metadata:
      labels:
        app: api
    spec:
      containers:
      - name: netexec
        image: registry.k8s.io/e2e-test-images/agnhost:2.53
        args: [netexec, --http-port=8080]
---
apiVersion: v1
kind: Service
metadata:
  name: api
spec:
  selector:
    app: api
  ports:
  - port: 80
    targetPort: 8080
"""
ADMIN_SVC = f"""
apiVersion: v1
kind: Service
metadata:
  name: admin
spec:
  type: NodePort
  selector:
    app: admin
  ports:
  - port: 80
    targetPort: 80
    nodePort: {task.taken_node_port}
"""
lab.apply(BROKEN)
lab.advance(30)
# A client keeps one HTTP connection open to api while it still has one pod; then api scales out.
conn = lab.connect("http://api/hostname", source="pod/client")
lab.scale("api", task.api_replicas)
lab.wait(lambda l: len(checks.ready_addresses(l, "api")) == task.api_replicas)
CAUSES = ["selector", "readiness", "targetPort", "nodePort", "keep-alive"]'''


def notebook() -> Notebook:
    """The notebook."""
    return Notebook("05-troubleshooting", "troubleshooting", "Assignment 5: troubleshooting Services", [
        md("""
Five Services are broken, each in one of the ways Services break in production. For each: find out what is wrong
with the tools you know (`lab.get`, `lab.curl`, `lab.nslookup`, `lab.get("events")`, `lab.kubectl(...)`,
`lab.proxy_rules()`), set the diagnosis variable to one of the `CAUSES`, and fix it by applying corrected objects.
Requests come from the pod `client` (`source="pod/client"`).

`CAUSES` are: `"selector"` (the Service selects no pod), `"readiness"` (pods run but never become Ready),
`"targetPort"` (the Service forwards to a port nothing listens on), `"nodePort"` (a port already taken), and
`"keep-alive"` (long-lived connections stay on the pod they first reached).

A checklist: does the Service have endpoints (`kubectl get endpointslices -l kubernetes.io/service-name=…`)? None
at all: compare its selector with the pods' labels. Listed but not ready: look at the readiness probe and the
`Unhealthy` events. Ready but the connection is refused: compare `targetPort` with the port the container
listens on."""),
        setup(),
        *task("05-troubleshooting"),
        locked("provided-broken", BROKEN),
        md("""
## Problem 1: `shop` (3 points)

`lab.curl("http://shop/", source="pod/client")` fails. Set `diagnosis_shop` and fix `shop` so that it answers
from its two pods."""),
        solution("shop", '''
diagnosis_shop = "selector"
lab.apply("""
apiVersion: v1
kind: Service
metadata: {name: shop}
spec:
  selector: {app: shop}
  ports: [{port: 80, targetPort: 80}]
""")'''),
        tests("shop-test", 2, '''
checks.slice_has_ready_addresses(lab, "shop", 2)
checks.service_answers(lab, "shop", source="pod/client")'''),
        tests("shop-diagnosis-test", 1, '''
assert diagnosis_shop in CAUSES, f"diagnosis_shop should be one of {CAUSES}"''', hidden='''
checks.choice(diagnosis_shop, "selector", CAUSES)'''),
        md("""
## Problem 2: `cart` (3 points)

`cart`'s pods are Running, yet requests fail. Set `diagnosis_cart` and fix it (nginx serves `/` on port 80).
A fixed Deployment rolls out new pods: wait until two are ready endpoints."""),
        solution("cart", '''
diagnosis_cart = "readiness"
lab.apply("""
apiVersion: apps/v1
kind: Deployment
metadata: {name: cart}
spec:
  replicas: 2
  selector: {matchLabels: {app: cart}}
  template:
    metadata: {labels: {app: cart}}
    spec:
      containers:
      - name: nginx
        image: nginx:1.27
        readinessProbe: {httpGet: {path: /, port: 80}, periodSeconds: 2}
""")
lab.wait(lambda l: len(checks.ready_addresses(l, "cart")) == 2, timeout=120)'''),
        tests("cart-test", 2, '''
checks.slice_has_ready_addresses(lab, "cart", 2)
checks.service_answers(lab, "cart", source="pod/client")'''),
        tests("cart-diagnosis-test", 1, '''
assert diagnosis_cart in CAUSES, f"diagnosis_cart should be one of {CAUSES}"''', hidden='''
checks.choice(diagnosis_cart, "readiness", CAUSES)'''),
        md("""
## Problem 3: `pay` (3 points)

`nslookup pay` works and `pay` has two ready endpoints, but `lab.curl("http://pay/hostname",
source="pod/client")` is refused. Set `diagnosis_pay` and fix it, keeping the Service's port 80."""),
        solution("pay", '''
diagnosis_pay = "targetPort"
lab.apply(f"""
apiVersion: v1
kind: Service
metadata:
  name: pay
spec:
  selector:
    app: pay
  ports:
  - port: 80
    targetPort: {task.pay_port}   # where the pods listen: their --http-port
""")'''),
        tests("pay-test", 2, '''
checks.service_answers(lab, "pay", source="pod/client", path="/hostname")
assert checks.find(lab, "svc", "pay")["spec"]["ports"][0]["port"] == 80, "keep the Service's port 80"'''),
        tests("pay-diagnosis-test", 1, '''
assert diagnosis_pay in CAUSES, f"diagnosis_pay should be one of {CAUSES}"''', hidden='''
checks.choice(diagnosis_pay, "targetPort", CAUSES)'''),
        md("""
## Problem 4: `admin` (4 points)

The team's manifest `ADMIN_SVC` exposes the `admin` Deployment on your NodePort (`task.taken_node_port`). Apply
it and catch the API server's refusal (`from labsupport import Invalid`; `except Invalid as err`); keep its
message in `admin_error` (`str(err)`). Then set `diagnosis_admin` and create the Service in a way that cannot
clash (let the API server choose the port). It must answer from outside the cluster on every node's IP at its
nodePort."""),
        solution("admin", '''
from labsupport import Invalid

try:
    lab.apply(ADMIN_SVC)
except Invalid as err:
    admin_error = str(err)
diagnosis_admin = "nodePort"
lab.apply(ADMIN_SVC.replace(f"    nodePort: {task.taken_node_port}\\n", ""))''', after="admin_error"),
        tests("admin-error-test", 1, '''
checks.refusal(admin_error, lab, 'Service "admin" is invalid', f"nodePort: Invalid value: {task.taken_node_port}",
               "provided port is already allocated", kind="Service", name="admin", field="spec.ports[0].nodePort",
               value=task.taken_node_port, detail="provided port is already allocated")'''),
        tests("admin-test", 2, '''
checks.service_type(lab, "admin", "NodePort")
port = checks.node_port(lab, "admin")
assert port != checks.node_port(lab, "legacy"), "admin cannot share legacy's nodePort"
assert checks.node_port(lab, "legacy") == task.taken_node_port, \\
    "legacy must keep its nodePort: moving it out of admin's way is not the fix, admin should take a free port"
for ip in checks.node_ips(lab).values():
    result = lab.curl(f"http://{ip}:{port}/", source="client")
    checks.reached_node_port(result, lab, "admin")'''),
        tests("admin-diagnosis-test", 1, '''
assert diagnosis_admin in CAUSES, f"diagnosis_admin should be one of {CAUSES}"''', hidden='''
checks.choice(diagnosis_admin, "nodePort", CAUSES)'''),
        md("""
## Problem 5: `api` (3 points)

`api` was scaled from one pod to your number of pods (`task.api_replicas`), yet `conn.request()` (the open
connection of the client) always reaches the same pod: try `Counter(conn.request().body for _ in range(30))`
(`from collections import Counter`). Set `diagnosis_api`. Then fix the client side: close `conn`, and make 30
requests per pod to `http://api/hostname` from `pod/client` that kube-proxy can spread (each its own
connection). Keep the results of those requests, as `lab.curl` returned them, in the list `responses`, and count
the answers per pod (`.body` of `/hostname` is the pod's name) into the dict `hits`."""),
        solution("api", '''
from collections import Counter

diagnosis_api = "keep-alive"
conn.close()
responses = [lab.curl("http://api/hostname", source="pod/client") for _ in range(30 * task.api_replicas)]
hits = dict(Counter(r.body for r in responses))''',
                 after="responses, hits"),
        tests("api-test", 2, '''
checks.balanced(hits, task.api_replicas)
checks.counted(hits, responses, "http://api/hostname", source="pod/client")
assert set(hits) <= {p["metadata"]["name"] for p in lab.get("pods", selector="app=api")}, \\
    "hits should count answers by pod name (the body of /hostname)"''', hidden='''
assert conn.closed, "close the pinned connection"'''),
        tests("api-diagnosis-test", 1, '''
assert diagnosis_api in CAUSES, f"diagnosis_api should be one of {CAUSES}"''', hidden='''
checks.choice(diagnosis_api, "keep-alive", CAUSES)'''),
        *graph_cell(),
    ])
