"""What a student of a shared class might try to leave their namespace, on the tier's real cluster: every attempt is
refused by the cluster itself (Pod Security, admission, RBAC, NetworkPolicy), and the student's own work still runs.

Student A attacks; student B is the classmate whose pods, addresses and account A goes after. All of it with A's own
kubeconfig from `labsupport class cluster` (tests/kind/student_class.py), on one cluster shared with the class tests.
"""
from __future__ import annotations

import pytest

from labsupport import Lab
from labsupport.errors import APIError
from tests.kind import lesson

pytestmark = pytest.mark.kind

TARGET = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: target}
spec:
  replicas: 1
  selector: {matchLabels: {app: target}}
  template:
    metadata: {labels: {app: target}}
    spec:
      containers: [{name: web, image: "registry.k8s.io/e2e-test-images/agnhost:2.53",
                    args: [netexec, --http-port=8080]}]
---
apiVersion: v1
kind: Service
metadata: {name: target}
spec:
  type: NodePort
  selector: {app: target}
  ports: [{port: 80, targetPort: 8080}]
---
apiVersion: v1
kind: Pod
metadata: {name: prober, labels: {app: prober}}
spec:
  containers: [{name: sh, image: "busybox:1.36", command: [sleep, "3600"]}]
"""
BALANCER = """
apiVersion: v1
kind: Service
metadata: {name: target-lb}
spec:
  type: LoadBalancer
  selector: {app: target}
  ports: [{port: 80, targetPort: 8080}]
"""


def refused(call, *words: str) -> APIError:
    """The call is refused with 403 and a message holding every word."""
    with pytest.raises(APIError) as err:
        call()
    assert err.value.code == 403, err.value
    for word in words:
        assert word in str(err.value), (word, str(err.value))
    return err.value


@pytest.fixture(scope="module")
def targets(shared_class):
    """A and B each run the target (agnhost behind a NodePort) and a prober pod; B also a LoadBalancer. Returns
    (A's lab, B's lab, B's addresses)."""
    a, b = (shared_class.lab(s) for s in shared_class.students[:2])
    for lab in (a, b):
        lab.apply(TARGET)
    b.apply(BALANCER)
    for lab in (a, b):
        lab.wait(lambda l: lesson.ready(l, "target") == 1 and len(lesson.running_pods(l, "prober")) == 1,
                 timeout=240)
    b.wait(lambda l: bool(((l.get("svc", "target-lb").get("status") or {}).get("loadBalancer") or {}).get("ingress")),
           timeout=60)
    service, pod = b.get("svc", "target"), lesson.running_pods(b, "target")[0]
    node_ips = [lesson.node_address(b, n["metadata"]["name"]) for n in b.get("nodes")]
    found = {"name": f"target.{shared_class.namespace(shared_class.students[1])}",
             "cluster_ip": service["spec"]["clusterIP"], "pod_ip": pod["status"]["podIP"],
             "node_port": service["spec"]["ports"][0]["nodePort"], "pod_node": lesson.node_address(b, pod["spec"]["nodeName"]),
             "node_ips": node_ips,
             "lb_ip": b.get("svc", "target-lb")["status"]["loadBalancer"]["ingress"][0]["ip"]}
    return a, b, found


def _pod(name: str, **spec) -> dict:
    container = {"name": "c", "image": "busybox:1.36", "command": ["sleep", "3600"]}
    container.update(spec.pop("container", {}))
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": {"containers": [container], **spec}}


@pytest.mark.parametrize("pod, words", [
    (_pod("esc-privileged", container={"securityContext": {"privileged": True}}), ["privileged"]),
    (_pod("esc-hostpath", volumes=[{"name": "root", "hostPath": {"path": "/"}}],
          container={"volumeMounts": [{"name": "root", "mountPath": "/host"}]}), ["hostPath"]),
    (_pod("esc-hostnetwork", hostNetwork=True), ["hostNetwork"]),
    (_pod("esc-hostpid", hostPID=True), ["hostPID"]),
    (_pod("esc-root", securityContext={"runAsUser": 0}), ["runAsUser=0"]),
    (_pod("esc-caps", container={"securityContext": {"capabilities": {"add": ["NET_ADMIN", "SYS_ADMIN"]}}}),
     ["NET_ADMIN"]),
    (_pod("esc-admin-conf", tolerations=[{"operator": "Exists"}],
          volumes=[{"name": "k", "hostPath": {"path": "/etc/kubernetes"}}],
          container={"volumeMounts": [{"name": "k", "mountPath": "/k"}]}), ["hostPath"]),
], ids=["privileged", "hostPath", "hostNetwork", "hostPID", "root", "capabilities", "admin-conf"])
def test_a_pod_that_reaches_the_node_is_refused(shared_class, pod, words):
    a = shared_class.lab(shared_class.students[0])
    refused(lambda: a.apply(pod), 'violates PodSecurity "restricted', *words)
    assert pod["metadata"]["name"] not in [p["metadata"]["name"] for p in a.get("pods")]


def test_a_privileged_workload_gets_no_pod(shared_class):
    """Pod Security judges the pods a Deployment asks for: the Deployment is stored, its pods never are."""
    a = shared_class.lab(shared_class.students[0])
    template = _pod("x", hostNetwork=True)["spec"]
    a.apply({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "esc-deploy"},
             "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "esc-deploy"}},
                      "template": {"metadata": {"labels": {"app": "esc-deploy"}}, "spec": template}}})
    failure = {}

    def refused_by_pod_security(lab: Lab) -> bool:
        for rs in lab.get("replicasets", selector="app=esc-deploy"):
            for condition in (rs.get("status") or {}).get("conditions") or []:
                if condition.get("type") == "ReplicaFailure":
                    failure.update(condition)
                    return True
        return False

    a.wait(refused_by_pod_security, timeout=60)
    assert "violates PodSecurity" in failure["message"] and not a.get("pods", selector="app=esc-deploy")
    a.delete("deployment", "esc-deploy")


def test_external_ips_cannot_take_a_classmates_traffic(targets):
    """CVE-2020-8554: a Service whose externalIPs is B's ClusterIP would answer B's own requests to it."""
    a, _, found = targets
    hijack = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "esc-hijack"},
              "spec": {"selector": {"app": "target"}, "ports": [{"port": 80, "targetPort": 8080}],
                       "externalIPs": [found["cluster_ip"]]}}
    refused(lambda: a.apply(hijack), "external IPs")


def test_a_load_balancer_address_is_only_ever_ones_own(targets, shared_class):
    a, _, found = targets
    steal = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "esc-steal"},
             "spec": {"type": "LoadBalancer", "selector": {"app": "target"}, "loadBalancerIP": found["lb_ip"],
                      "ports": [{"port": 80, "targetPort": 8080}]}}
    refused(lambda: a.apply(steal), "is not an address of this namespace", "ask for one in")
    theirs = targets[1].get("svc", "target-lb")["status"]["loadBalancer"]["ingress"][0]["ip"]
    assert theirs == found["lb_ip"], "B keeps its address"


@pytest.mark.parametrize("how", ["name", "cluster_ip", "pod_ip", "node_port_on_its_node", "node_port_elsewhere"])
def test_a_classmates_pods_are_out_of_reach(targets, how):
    """From A's pod to B's target, by every way in: refused by B's NetworkPolicies (and a node's address by A's
    own, which lets A's pods reach their namespace and DNS only). B's own pod gets an answer where the address is
    its own node's or inside the cluster, and this machine (outside the cluster) through another node, so it is the
    policy, not the target, that says no."""
    a, b, found = targets
    other = next(ip for ip in found["node_ips"] if ip != found["pod_node"])
    url = {"name": f"http://{found['name']}/hostname", "cluster_ip": f"http://{found['cluster_ip']}/hostname",
           "pod_ip": f"http://{found['pod_ip']}:8080/hostname",
           "node_port_on_its_node": f"http://{found['pod_node']}:{found['node_port']}/hostname",
           "node_port_elsewhere": f"http://{other}:{found['node_port']}/hostname"}[how]
    prober = lesson.running_pods(b, "prober")[0]
    own_node = how == "node_port_on_its_node" and prober["status"]["hostIP"] == found["pod_node"]
    control = b.curl(url, source="client" if how == "node_port_elsewhere" or
                     (how == "node_port_on_its_node" and not own_node) else "pod/prober", timeout=5)
    assert control.status == 200, ("the target answers its own", control)
    attempt = a.curl(url, source="pod/prober", timeout=5)
    assert not attempt.ok and attempt.status is None, attempt


def test_a_classmates_node_port_stays_a_door_to_the_outside(targets):
    """A NodePort is open to clients outside the cluster (this machine here), whoever's it is: the policy lets the
    outside in and keeps the other students' pods out."""
    a, _, found = targets
    reply = a.curl(f"http://{found['pod_node']}:{found['node_port']}/hostname")   # source "client": this machine
    assert reply.status == 200, reply


def test_tokens_secrets_and_a_classmates_pods_are_refused(targets, shared_class):
    a, _, found = targets
    theirs = shared_class.namespace(shared_class.students[1])
    refused(lambda: a.get("secrets"), 'cannot list resource "secrets"')
    refused(lambda: a.get("secrets", namespace=theirs), 'cannot list resource "secrets"')
    for namespace in (theirs, shared_class.namespace(shared_class.students[0])):
        token = a.kubectl(["create", "token", "student", "-n", namespace], show=False)
        assert not token.ok and "forbidden" in token.stderr, token
    target = [p["metadata"]["name"] for p in lesson.running_pods(targets[1], "target")][0]
    done = a.kubectl(["exec", "-n", theirs, target, "--", "id"], show=False)
    assert not done.ok and "(Forbidden)" in done.stderr and f'in the namespace "{theirs}"' in done.stderr, done
    refused(lambda: a.backend._call("POST", f"/api/v1/namespaces/{theirs}/pods/{target}/exec",
                                    query=[("command", "id"), ("stdout", "true")]), 'cannot create resource "pods/exec"')
    refused(lambda: a.apply({"apiVersion": "v1", "kind": "Namespace",
                             "metadata": {"name": shared_class.namespace(shared_class.students[0]),
                                          "labels": {"pod-security.kubernetes.io/enforce": "privileged"}}}),
            "namespaces")
    refused(lambda: a.apply({"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
                             "metadata": {"name": "esc-open"}, "spec": {"podSelector": {},
                                                                        "ingress": [{}]}}), "networkpolicies")
    assert a.kubectl(["auth", "can-i", "*", "*", "--all-namespaces"], show=False).stdout.strip() == "no"


def test_the_students_own_work_still_runs(targets):
    """After all of it, A's own target answers A's prober by name, and A's exercises run (the class tests run all
    of them for three students at once)."""
    a, _, _ = targets
    assert a.curl("http://target/hostname", source="pod/prober", timeout=5).status == 200
    assert len(lesson.exercise_1(a)) == 3
