"""`labsupport class cluster` on the tier's real cluster: three students from a roster, each a namespace, an account
and the student Role; student A's `Lab(backend="kube")` works in A's namespace and the real RBAC authorizer refuses
A everything outside it, as `kubectl auth can-i` and the graded cluster's policy say; `--delete` leaves nothing."""
from __future__ import annotations

import secrets
import stat
import subprocess
import time

import pytest
import yaml

from labsupport import Lab, NotFound
from labsupport import cli
from labsupport.apiserver.authz import Attributes
from labsupport.errors import APIError
from labsupport.hub import cluster
from labsupport.kubectl import find_kubectl
from labsupport.remote.role import POLICY
from tests.kind import lesson

pytestmark = pytest.mark.kind

ECHO_SERVICE = """
apiVersion: v1
kind: Service
metadata: {name: echo}
spec:
  selector: {app: echo}
  ports: [{port: 80, targetPort: 8080}]
"""

#: (verb, resource, group, subresource) asked of `kubectl auth can-i` in the student's own namespace.
QUESTIONS = [
    ("create", "deployments", "apps", ""), ("update", "deployments", "apps", "scale"),
    ("patch", "deployments", "apps", "status"), ("delete", "pods", "", ""), ("create", "pods", "", "exec"),
    ("get", "pods", "", "log"), ("watch", "endpointslices", "discovery.k8s.io", ""),
    ("create", "endpointslices", "discovery.k8s.io", ""), ("update", "endpoints", "", ""),
    ("create", "configmaps", "", ""), ("create", "events", "", ""), ("list", "secrets", "", ""),
    ("create", "roles", "rbac.authorization.k8s.io", ""), ("create", "resourcequotas", "", ""),
]


def _denied(call) -> APIError:
    with pytest.raises(APIError) as err:
        call()
    assert err.value.code == 403 and "forbidden" in str(err.value), err.value
    return err.value


def test_a_class_of_three_on_the_shared_cluster(kind_cluster, tmp_path, monkeypatch, capsys):
    admin = kind_cluster.kubeconfig

    def admin_kubectl(*argv: str) -> str:
        done = subprocess.run([find_kubectl(), "--kubeconfig", admin, *argv], capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        return done.stdout

    monkeypatch.setenv("LABSUPPORT_STATE_DIR", str(tmp_path / "state"))   # the students' labs write theirs here
    tag = secrets.token_hex(3)
    name = f"t-class-{tag}"
    a, b, c = (f"{who}-{tag}" for who in ("ann", "ben", "cat"))
    roster = tmp_path / "roster.csv"
    roster.write_text(f"id,first_name,last_name,email\n{a},Ann,,\n{b},Ben,,\n{c},Cat,,\n")
    out = tmp_path / "class"
    make = ["class", "cluster", "--roster", str(roster), "--kubeconfig", admin, "--out", str(out),
            "--class", name, "--token-expiry", "1h"]
    labs: list[Lab] = []
    try:
        assert cli.main(make) == 0
        namespaces = kind_cluster.get("namespaces", selector=cluster.class_selector(name))
        assert sorted(n["metadata"]["name"] for n in namespaces) == sorted(f"lab-{s}" for s in (a, b, c))
        for student in (a, b, c):
            path = out / f"{student}.kubeconfig"
            assert stat.S_IMODE(path.stat().st_mode) == 0o600
            doc = yaml.safe_load(path.read_text())
            [context] = doc["contexts"]
            assert context["context"]["namespace"] == f"lab-{student}"
            # kind's admin kubeconfig names 127.0.0.1; the students' name where the API server listens
            assert not cluster.is_loopback(doc["clusters"][0]["cluster"]["server"]), doc["clusters"]
        assert sorted(p.name for p in out.iterdir()) == sorted([f"{s}.kubeconfig" for s in (a, b, c)] +
                                                               [cluster.INDEX])
        shown = admin_kubectl("get", "role", "lab-student", "-n", f"lab-{a}", "-o", "yaml")
        first = yaml.safe_load(shown)
        assert first["rules"] == cluster.student_objects(a, name)[2]["rules"]

        # run again: the same objects, unchanged (server-side apply of what is already there writes nothing)
        assert cli.main(make) == 0
        again = yaml.safe_load(admin_kubectl("get", "role", "lab-student", "-n", f"lab-{a}", "-o", "yaml"))
        assert again["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"]

        # student A works in their namespace, as the lessons do
        ann = Lab(backend="kube", kubeconfig=str(out / f"{a}.kubeconfig"))
        labs.append(ann)
        assert ann.backend.namespace == ann.namespace == f"lab-{a}"
        ann.apply(lesson.ECHO)
        svc = ann.apply(ECHO_SERVICE)[0]
        assert svc["metadata"]["namespace"] == f"lab-{a}"
        ann.wait(lambda l: lesson.ready(l, "echo") == 3 and len(lesson.running_pods(l, "client")) == 1,
                 timeout=180)
        pods = ann.get("pods", selector="app=echo")
        defaults = {"cpu": cluster.SIZING.default_request_cpu, "memory": cluster.SIZING.default_request_memory}
        assert all(p["spec"]["containers"][0]["resources"]["requests"] == defaults
                   for p in pods), "the LimitRange gives every container its default requests"
        result = ann.curl("http://echo/hostname", source="pod/client")
        assert result.status == 200 and result.pod in [p["metadata"]["name"] for p in pods]
        assert ann.nslookup("echo").addresses == [svc["spec"]["clusterIP"]]

        # ... and nowhere else: real 403s from the API server's RBAC authorizer
        user = f"system:serviceaccount:lab-{a}:student"
        refused = _denied(lambda: ann.get("svc", namespace=f"lab-{b}"))
        assert f'User "{user}" cannot list resource "services"' in str(refused)
        _denied(lambda: ann.apply({"apiVersion": "v1", "kind": "ConfigMap",
                                   "metadata": {"name": "planted", "namespace": f"lab-{b}"}}))
        _denied(lambda: ann.delete("pods", "client", namespace=f"lab-{c}"))
        assert len(ann.get("nodes")) == len(kind_cluster.get("nodes")), "nodes are read-only to a student"
        _denied(lambda: ann.delete("nodes", ann.get("nodes")[0]["metadata"]["name"], namespace=None))
        _denied(lambda: ann.get("namespaces"))
        _denied(lambda: ann.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": f"x-{tag}"}}))
        _denied(lambda: ann.get("configmaps", "kube-proxy", namespace="kube-system"))
        _denied(lambda: ann.apply({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
                                   "metadata": {"name": "forged"}, "addressType": "IPv4", "endpoints": []}))

        # kubectl auth can-i agrees, and so does the graded cluster's policy in the student's own namespace
        for verb, resource, group, sub in QUESTIONS:
            argv = ["auth", "can-i", verb, f"{resource}.{group}" if group else resource]
            argv += [f"--subresource={sub}"] if sub else []
            answer = ann.kubectl(argv, show=False).stdout.strip()
            expected = POLICY.refusal(Attributes(verb, resource, group, sub, f"lab-{a}")) is None
            assert answer == ("yes" if expected else "no"), (argv, answer)
        for argv in (["auth", "can-i", "list", "pods", "-n", f"lab-{b}"], ["auth", "can-i", "patch", "nodes"],
                     ["auth", "can-i", "create", "namespaces"], ["auth", "can-i", "get", "pods", "-n", "kube-system"],
                     ["auth", "can-i", "*", "*", "--all-namespaces"]):
            assert ann.kubectl(argv, show=False).stdout.strip() == "no", argv
        assert ann.kubectl(["auth", "can-i", "list", "nodes"], show=False).stdout.strip() == "yes"

        # a student's kubeconfig cannot make a class; a namespace of another class is not taken over
        assert cli.main(["class", "cluster", "--roster", str(roster), "--kubeconfig", str(out / f"{a}.kubeconfig"),
                         "--out", str(tmp_path / "nope"), "--class", name]) == 1
        assert "may not create namespaces" in capsys.readouterr().err
        with pytest.raises(cluster.ClassClusterError, match=f"the namespace lab-{a} exists and is not the class"):
            cluster.make_class([a], admin, tmp_path / "other", class_name=f"other-{tag}")

        # --delete removes every namespace of the class and the kubeconfigs; A's token is dead with its account
        assert cli.main(["class", "cluster", "--delete", "--kubeconfig", admin, "--class", name,
                         "--out", str(out)]) == 0
        assert kind_cluster.get("namespaces", selector=cluster.class_selector(name)) == []
        assert kind_cluster.get("clusterrolebindings", selector=cluster.class_selector(name)) == [], \
            "the students' node-reading bindings go with the class"
        for student in (a, b, c):
            with pytest.raises(NotFound):
                kind_cluster.get("namespaces", f"lab-{student}", namespace=None)
        assert not out.exists(), "the kubeconfigs, the index and the folder are gone"
        # the API server caches a token's authentication for a few seconds: the account's deletion shows after it
        codes = []

        def refused_as_unknown(lab) -> bool:
            try:
                lab.get("pods")
            except APIError as e:
                codes.append(e.code)
            return codes[-1:] == [401]

        deadline = time.monotonic() + 30
        while not refused_as_unknown(ann) and time.monotonic() < deadline:
            time.sleep(1)
        assert codes[-1] == 401, codes
    finally:
        for lab in labs:
            lab.close()
        for student in (a, b, c):
            try:
                kind_cluster.delete("namespaces", f"lab-{student}", namespace=None)
            except NotFound:
                pass



# --- three students at once, every exercise, on one cluster ------------------------------------------------------
def _exercises(klass, student: str) -> dict:
    """Every exercise of the lesson as one student: the five, then lesson 09's exercises 4 and 5 from outside."""
    import time
    lab = klass.lab(student)
    began = time.monotonic()
    lesson.exercise_1(lab)
    lesson.exercise_2(lab)
    lesson.exercise_3(lab)
    node_port = lesson.exercise_4(lab)
    assert lesson.exercise_4_from_outside(lab) == node_port
    before, after = lesson.exercise_5(lab)
    seen = lesson.exercise_5_from_outside(lab)
    return {"node_port": node_port, "echo": (before, after), "outside": seen, "seconds": time.monotonic() - began}


def test_three_students_do_every_exercise_at_once(shared_class):
    """Each student, with their own kubeconfig, in their own namespace under every guard (Pod Security restricted,
    the NetworkPolicies, the quota): the lesson's five exercises and lesson 09's exercises 4 and 5 from outside, all
    three at once. Their NodePorts are the API server's picks, so they never collide."""
    import concurrent.futures
    with concurrent.futures.ThreadPoolExecutor(max_workers=3) as pool:
        results = dict(zip(shared_class.students, pool.map(lambda s: _exercises(shared_class, s),
                                                           shared_class.students)))
    ports = [r["node_port"] for r in results.values()]
    assert len(set(ports)) == 3, ports
    for student, result in results.items():
        before, after, client = result["outside"]
        assert after == client != before, (student, result)
        pod = shared_class.lab(student).get("pods", selector="app=web")[0]
        context = pod["spec"]["securityContext"]
        assert context["runAsNonRoot"] is True and context["seccompProfile"] == {"type": "RuntimeDefault"}, \
            "the cluster gave the lesson's pod the restricted defaults"
        assert pod["spec"]["containers"][0]["securityContext"]["capabilities"] == {"drop": ["ALL"]}
