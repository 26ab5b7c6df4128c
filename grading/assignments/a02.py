"""Assignment 2: a headless Service, what DNS answers for it, and a StatefulSet's stable pod names."""
from grading.build_source import Notebook, graph_cell, locked, md, setup, solution, task, tests

DB = '''DB = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: db}
spec:
  replicas: 3
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec:
      containers: [{name: db, image: nginx:1.27}]   # stands in for a database
---
apiVersion: v1
kind: Service
metadata: {name: db}
spec:
  selector: {app: db}
  ports: [{port: 5432, targetPort: 80}]
"""
lab.apply(DB)
lab.wait(lambda l: len(checks.ready_addresses(l, "db")) == 3)
lab.nslookup("db")'''

HEADLESS = '''
HEADLESS_DB = """
apiVersion: v1
kind: Service
metadata: {name: db}
spec:
  clusterIP: None
  selector: {app: db}
  ports: [{port: 5432, targetPort: 80}]
"""
# clusterIP cannot change on a live Service: delete it, then create it again.
lab.delete("svc", "db")
lab.apply(HEADLESS_DB)
lab.wait(lambda l: len(checks.ready_addresses(l, "db")) == 3)'''

STS = '''
WEB = """
apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  clusterIP: None
  selector: {app: web}
  ports: [{name: http, port: 80}]
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: web}
spec:
  serviceName: web
  replicas: 3
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: nginx, image: nginx:1.27, ports: [{containerPort: 80, name: http}]}]
"""
lab.apply(WEB)
lab.wait(lambda l: len(checks.ready_addresses(l, "web")) == 3, timeout=120)'''


def notebook() -> Notebook:
    """The notebook."""
    return Notebook("02-dns", "dns", "Assignment 2: headless Services and DNS", [
        md("""
A normal Service gets one virtual IP, and DNS answers its name with that IP; the kernel rewrites packets sent to
it, following the rules kube-proxy writes. A *headless* Service (`clusterIP: None`) has no virtual IP and no kube-proxy rules at all: DNS answers with the
addresses of the ready pods themselves. That is discovery without proxying, and it is what gives each pod of a
StatefulSet its own stable name."""),
        setup(),
        *task("02-dns"),
        md("""
The cell below runs three `db` pods behind an ordinary ClusterIP Service and asks DNS for `db`, as
`kubectl run -it --rm dnsutils --image=registry.k8s.io/e2e-test-images/jessie-dnsutils:1.7 -- nslookup db` would.
Note the one address: the Service's ClusterIP."""),
        locked("provided-db", DB),
        md("""
## Exercise 1: make `db` headless (3 points)

Change the Service `db` into a headless one (`clusterIP: None`), keeping its selector and port. Try `lab.apply`
with the new manifest first and read the API server's answer: `clusterIP` is immutable, so you will have to delete
the Service and create it again. Wait until its slices list the three pods again."""),
        solution("headless", HEADLESS),
        tests("headless-test", 2, '''
checks.headless(lab, "db")
checks.slice_has_ready_addresses(lab, "db", 3)''', hidden='''
checks.slice_matches_pods(lab, "db", "app=db")'''),
        tests("headless-label-test", 1, '''
found = checks.slices(lab, "db")
assert found, "db has no EndpointSlice, so no slice carries the label: a check over no slices would prove nothing"
assert all("service.kubernetes.io/headless" in s["metadata"].get("labels", {}) for s in found), \\
    "the slices of a headless Service carry the label service.kubernetes.io/headless: is db really headless?"'''),
        md("""
## Exercise 2: what DNS says now (2 points)

Set `answer` to `lab.nslookup("db")`, run from a throwaway pod in the `default` namespace. Compare its addresses
with the pods' IPs (`lab.get("pods", selector="app=db")`)."""),
        solution("nslookup", 'answer = lab.nslookup("db")', after="answer"),
        tests("nslookup-test", 2, '''
checks.nslookup_returns_pod_ips(answer, lab, "app=db")'''),
        md("""
## Exercise 3: a StatefulSet and its names (2 points)

Create a headless Service `web` (selector `app: web`, port 80 named `http`) and a StatefulSet `web` with
`serviceName: web` and 3 replicas of `nginx`. A StatefulSet starts its pods one by one, in order, each only when
the one before is Ready; wait until all three are ready endpoints of `web` (allow a longer timeout)."""),
        solution("statefulset", STS),
        tests("statefulset-test", 2, '''
checks.statefulset_pods(lab, "web", 3, service="web")'''),
        md("""
## Exercise 4: one pod, one name (3 points)

Every pod of the StatefulSet has its own DNS name `<pod>.<service>.<namespace>.svc.<cluster domain>`.
Set `pod_fqdn` to the full name of your pod (`task.name_pod`; the cluster domain is `cluster.local`), and
`pod_answer` to the answer of `lab.nslookup` for the short name `<pod>.web` (the search list in a pod's
resolv.conf completes it)."""),
        solution("pod-dns", '''
pod_fqdn = f"{task.name_pod}.web.default.svc.cluster.local"
pod_answer = lab.nslookup(f"{task.name_pod}.web")''', after="pod_answer"),
        tests("pod-dns-test", 2, '''
checks.nslookup_is_pod(pod_answer, lab, task.name_pod)'''),
        tests("fqdn-test", 1, '''
assert isinstance(pod_fqdn, str), "pod_fqdn should be a string"''', hidden='''
assert pod_fqdn.rstrip(".") == f"{task.name_pod}.web.default.svc.cluster.local", \\
    f"{pod_fqdn!r} is not the full name of {task.name_pod}: <pod>.<service>.<namespace>.svc.cluster.local"'''),
        md("""
## Exercise 5: the name outlives the pod (2 points)

Delete your pod to restart (`task.restart_pod`) with `lab.delete("pod", ...)` and wait until the StatefulSet has
brought a new pod of that name back and it is Ready. The new pod has the same name and the same DNS name. Set
`back_answer` to `lab.nslookup` of its short name `<pod>.web` after it is back."""),
        solution("pod-back", '''
lab.delete("pod", task.restart_pod)


def back(l):
    pods = {p["metadata"]["name"]: p for p in l.get("pods", selector="app=web")}
    return (task.restart_pod in pods and not pods[task.restart_pod]["metadata"].get("deletionTimestamp")
            and len(checks.ready_addresses(l, "web")) == 3)


lab.wait(back, timeout=120)
back_answer = lab.nslookup(f"{task.restart_pod}.web")''', after="back_answer"),
        tests("pod-back-test", 2, '''
checks.statefulset_pods(lab, "web", 3, service="web")
checks.nslookup_is_pod(back_answer, lab, task.restart_pod)''', hidden='''
checks.pod_replaced(lab, task.restart_pod)'''),
        *graph_cell(),
    ])
