"""Assignment 1: three nginx replicas behind a ClusterIP Service, their EndpointSlice, and a pod's termination."""
from grading.build_source import Notebook, code, graph_cell, md, setup, solution, task, tests

WEB = '''WEB = f"""
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 3
  selector:
    matchLabels:
      app: web
  template:
    metadata:
      labels:
        app: web
    spec:
      containers:
      - name: nginx
        image: nginx:1.27
        ports:
        - containerPort: 80
          name: http
        lifecycle:
          preStop:
            exec:
              command: [sleep, "20"]
---
apiVersion: v1
kind: Service
metadata:
  name: web
spec:
  type: ClusterIP
  selector:
    app: web
  ports:
  - name: {task.port_name}
    port: {task.service_port}
    targetPort: 80
"""
lab.apply(WEB)
lab.wait(lambda l: len(checks.ready_addresses(l, "web")) == 3)'''


def notebook() -> Notebook:
    """The notebook."""
    return Notebook("01-endpointslices", "endpointslices", "Assignment 1: a Service and its EndpointSlices", [
        md("""
A Service does not know its pods. It has a label selector; the EndpointSlice controller watches which pods match
it and pass their readiness probe, and writes their addresses into EndpointSlice objects. kube-proxy on every node
reads those slices. In this assignment you build that chain and watch it react when a pod dies.

Run the setup cell first. `lab` is your cluster; `checks` holds the assertions the tests use (you may call them
yourself)."""),
        setup(),
        *task("01-endpointslices"),
        md("""
## Exercise 1: three replicas, three addresses (4 points)

Write a manifest with
* a Deployment `web`: 3 replicas of `nginx` (any tag, e.g. `nginx:1.27`), pods labelled `app: web`, container
  port 80, and a `preStop` hook that sleeps 20 s: `lifecycle: {preStop: {exec: {command: [sleep, "20"]}}}` on the
  container (exercise 3 explains why);
* a Service `web` of type `ClusterIP` selecting `app: web`, on your port (`task.service_port`) to target port 80;
  name the port with your port name (`task.port_name`).

Apply it with `lab.apply(...)`, then wait until the Service's slices list three ready addresses:
`lab.wait(lambda l: len(checks.ready_addresses(l, "web")) == 3)` moves the cluster's clock until that holds."""),
        solution("deploy", WEB),
        tests("deploy-test", 2, '''
checks.deployment_ready(lab, "web", 3, image="nginx")
checks.service_type(lab, "web", "ClusterIP")
checks.pre_stop_seconds(lab, "web", minimum=10)
port = checks.find(lab, "svc", "web")["spec"]["ports"][0]
assert (port["port"], port.get("name")) == (task.service_port, task.port_name), \\
    f"the Service's port is {port['port']} named {port.get('name')!r}; your task asks for port " \\
    f"{task.service_port} named {task.port_name!r} (see the task card)"'''),
        tests("slice-test", 2, '''
checks.slice_has_ready_addresses(lab, "web", 3)
checks.slice_matches_pods(lab, "web", "app=web")'''),
        md("""
This is what `kubectl get endpointslices -l kubernetes.io/service-name=web` prints (the real kubectl, talking to
your cluster). The slice's name has a random suffix, like a pod's."""),
        code('lab.kubectl("get endpointslices -l kubernetes.io/service-name=web")'),
        md("""
## Exercise 2: read the slice yourself (1 point)

Set `addresses` to the list of ready addresses of the Service `web`, read from the EndpointSlice objects:
`lab.get("endpointslices", selector="kubernetes.io/service-name=web")` returns a list of slices; each has
`endpoints`, each endpoint has `addresses` and `conditions`. Do not use `checks` here."""),
        solution("read-addresses", '''
found = lab.get("endpointslices", selector="kubernetes.io/service-name=web")
addresses = [a for s in found for e in s.get("endpoints") or [] if e["conditions"].get("ready")
             for a in e["addresses"]]''', after="addresses"),
        tests("read-addresses-test", 1, '''
checks.same_addresses(addresses, lab, "web")''', hidden='''
assert len(addresses) == 3, "expected the three ready addresses"'''),
        md("""
## Exercise 3: catch a terminating endpoint (3 points)

Delete one of the `web` pods with `lab.delete("pod", name)`. The call returns as soon as the API server accepts
it. The kubelet then runs the container's `preStop` hook; when the hook ends, the runtime sends the image's stop
signal (SIGQUIT for nginx, its graceful quit) and an idle nginx exits at once. The grace period
(`terminationGracePeriodSeconds`, 30 s) is only the deadline after which the process is killed. Without the hook the
endpoint would be gone within about a second — on a real cluster too — and catching it would be a race; your
`sleep 20` holds the pod, still serving, for 20 s. The clock stands still until you move it.

1. Set `victim_ip` to the IP of the pod you delete (`pod["status"]["podIP"]`).
2. Delete it.
3. Right away, set `captured` to the Service's slices (`lab.get("endpointslices", ...)`).

In `captured`, the endpoint of `victim_ip` should show `ready: false, serving: true, terminating: true`: the pod is
on its way out, so no new connection is sent to it while other endpoints are ready, yet it still answers its
readiness probe (and would get connections if no endpoint were ready: kube-proxy falls back to serving, terminating
endpoints)."""),
        solution("terminate", '''
victim = lab.get("pods", selector="app=web")[0]
victim_ip = victim["status"]["podIP"]
lab.delete("pod", victim["metadata"]["name"])
captured = lab.get("endpointslices", selector="kubernetes.io/service-name=web")'''),
        tests("terminate-test", 2, '''
checks.endpoint_terminating(captured, victim_ip, "web", lab=lab)''', hidden='''
ep = checks.endpoint_terminating(captured, victim_ip, "web", lab=lab)
assert ep["conditions"].get("serving") is True, \\
    "a pod held by its preStop hook still passes readiness: its endpoint should be serving"'''),
        tests("terminate-name-test", 1, '''
# The captured object must come from the cluster, not be written by hand.
names = {s["metadata"]["name"] for s in checks.slices(lab, "web")}
got = {s["metadata"]["name"] for s in (captured if isinstance(captured, list) else [captured])}
assert got and got <= names, f"captured {sorted(got)} are not the slices of web ({sorted(names)})"'''),
        md("""
## Exercise 4: let it settle (3 points)

The Deployment's ReplicaSet has already started a replacement pod, with a new IP. Wait until the victim's address
has left the slice and three addresses are ready again. Store the seconds of cluster time the wait took (what
`lab.wait` returns) in `settle_seconds`. How does it compare with the `preStop` sleep, and with the 30 s grace
period?"""),
        solution("settle", '''
def settled(l):
    listed = [a for e in checks.endpoints(checks.slices(l, "web")) for a in e["addresses"]]
    return victim_ip not in listed and len(checks.ready_addresses(l, "web")) == 3

settle_seconds = lab.wait(settled, timeout=120)''', after="settle_seconds"),
        tests("settle-test", 2, '''
checks.victim_in_capture(captured, victim_ip, "web", lab=lab)
checks.address_gone(lab, "web", victim_ip)
checks.slice_has_ready_addresses(lab, "web", 3)'''),
        tests("settle-time-test", 1, '''
assert isinstance(settle_seconds, (int, float)), "settle_seconds should be the number lab.wait returned"''',
              hidden='''
checks.waited(settle_seconds, lab, captured, victim_ip, "web")
# The pod leaves when its preStop hook ends and nginx quits, not when the 30 s grace period would run out.
checks.close_to(settle_seconds, checks.pre_stop_seconds(lab, "web"), relative=0.2, what="settle_seconds")'''),
        *graph_cell(),
    ])
