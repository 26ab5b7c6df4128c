"""The lab server and its client: every Lab verb over the socket, the student role (its own verbs and kubectl's
every request to the API server), served objects, answers as plain data."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from labsupport import Lab, checks
from labsupport.errors import BadRequest, LabError, NotFound
from labsupport.grading import answers, rerun
from labsupport.backend import Backend
from labsupport.remote import SOCKET_ENV
from labsupport.remote.client import RemoteBackend
from labsupport.remote.role import Forbidden
from labsupport.results import CurlResult, NslookupAnswer
from tests.conftest import WEB


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """A lab server process; yields (student socket, grader socket)."""
    folder = tmp_path_factory.mktemp("lab-server")
    student, grader = str(folder / "student.sock"), str(folder / "grader.sock")
    proc = subprocess.Popen([sys.executable, "-m", "labsupport.remote.server", "--student", student,
                             "--grader", grader, "--seed", "0"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True)
    try:
        assert proc.stdout.readline().strip() == "ready"
        yield student, grader
    finally:
        proc.stdin.close()
        proc.wait(timeout=30)


@pytest.fixture(scope="module")
def lab(server):
    """A Lab that is a client of the server, with the web Deployment and Service ready."""
    os.environ[SOCKET_ENV] = server[0]
    try:
        lab = Lab(backend="sim", seed=0, proxy_mode="iptables")
    finally:
        del os.environ[SOCKET_ENV]
    lab.apply(WEB)
    lab.wait(lambda l: len(checks.ready_addresses(l, "web")) == 3)
    yield lab
    lab.close()


def test_every_verb_works_through_the_socket(lab):
    assert lab.backend.name == "remote" and repr(lab) == "Lab(backend='sim', proxy_mode='iptables', seed=0)"
    checks.slice_has_ready_addresses(lab, "web", 3)
    answer = lab.nslookup("web")
    assert isinstance(answer, NslookupAnswer) and answer.rcode == "NOERROR" and answer.addresses
    pod = lab.get("pods", selector="app=web")[0]["metadata"]["name"]
    result = lab.curl("http://web/", source=f"pod/{pod}")
    assert isinstance(result, CurlResult) and result.status == 200
    assert "KUBE-SVC-" in lab.proxy_rules("lab-worker")
    assert lab.trace("http://web/", source=f"pod/{pod}").hops
    conn = lab.connect("http://web/", source=f"pod/{pod}")
    assert conn.request().pod == conn.pod
    conn.close()
    assert conn.closed
    shown = lab.kubectl("get endpointslices -l kubernetes.io/service-name=web", show=False)
    assert shown.returncode == 0 and "web-" in shown.stdout
    before = lab.now
    lab.advance(5)
    assert lab.now == pytest.approx(before + 5)
    assert "<svg" in lab.graph().static_html()
    with pytest.raises(NotFound, match='services "nope" not found'):
        lab.get("svc", "nope")
    with pytest.raises(TimeoutError, match="within 3 s"):
        lab.wait(lambda l: False, timeout=3)


@pytest.mark.parametrize("obj, message", [
    ({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice", "metadata": {"name": "x"},
      "addressType": "IPv4"},
     'endpointslices.discovery.k8s.io "x" is forbidden: User "student" cannot create resource "endpointslices" '
     'in API group "discovery.k8s.io" in the namespace "default"'),
    ({"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "web"}}, 'endpoints "web" is forbidden'),
    ({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n"}},
     'nodes "n" is forbidden: User "student" cannot create resource "nodes" in API group "" at the cluster scope'),
    ({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "kube-system"}},
     'in the namespace "kube-system": kube-system belongs to the cluster'),
])
def test_the_student_role_refuses_controller_and_cluster_objects(lab, obj, message):
    with pytest.raises(Forbidden, match=message.replace("(", r"\(").replace(".", r"\.")) as err:
        lab.apply(obj)
    assert err.value.code == 403


def test_status_in_a_students_write_is_ignored(lab):
    stored = lab.apply({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "stuck"},
                        "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "stuck"}},
                                 "template": {"metadata": {"labels": {"app": "stuck"}},
                                              "spec": {"nodeSelector": {"no": "where"},
                                                       "containers": [{"name": "c", "image": "nginx"}]}}},
                        "status": {"availableReplicas": 2, "readyReplicas": 2}})[0]
    assert (stored.get("status") or {}).get("availableReplicas", 0) == 0
    with pytest.raises(Forbidden):
        lab.delete("endpointslices", lab.get("endpointslices", selector="kubernetes.io/service-name=web")[0]
                   ["metadata"]["name"])
    refused = lab.kubectl("delete node lab-worker", show=False)
    assert refused.returncode != 0
    assert ('nodes "lab-worker" is forbidden: User "student" cannot delete resource "nodes" in API group "" at the '
            'cluster scope') in refused.stderr
    lab.delete("deployment", "stuck")


def test_grader_verbs_are_not_for_the_student(lab, server):
    with pytest.raises(LabError, match="belongs to the grader"):
        lab.backend.call("served", {})
    grader = RemoteBackend(server[1], hello=False)
    served = lab.get("endpointslices", selector="kubernetes.io/service-name=web")[0]
    assert grader.call("served", served)
    forged = json.loads(json.dumps(served))
    forged["endpoints"][0]["conditions"]["ready"] = False
    assert not grader.call("served", forged)
    grader.close()


def test_the_server_remembers_the_refusals_it_returned(lab, server, tmp_path):
    from labsupport import Invalid
    taken = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "legacy"},
             "spec": {"type": "NodePort", "selector": {"app": "legacy"}, "ports": [{"port": 80, "nodePort": 30777}]}}
    lab.apply(taken)
    with pytest.raises(Invalid) as err:
        lab.apply({**taken, "metadata": {"name": "admin"}})
    message = str(err.value)
    typed = 'The Service "admin" is invalid: spec.ports[0].nodePort: Invalid value: 30777: provided port is already ' \
            "allocated"
    assert message == typed
    with pytest.raises(LabError, match="belongs to the grader"):
        lab.backend.refused(message)
    grader = RemoteBackend(server[1], hello=False)
    assert grader.refused(message)
    assert not grader.refused(message + " ") and not grader.refused(message.replace("admin", "x"))
    outcome = rerun.run_test('checks.refusal(admin_error, lab, "already allocated")', ["admin_error"],
                             answers.dump(["admin_error"], {"admin_error": message}),
                             server[1], grader)
    assert outcome.passed, outcome.evalue
    fake = 'The Service "admin" is invalid: spec.ports[0].nodePort: Invalid value: 30778: provided port is already ' \
           "allocated"
    outcome = rerun.run_test('checks.refusal(admin_error, lab, "already allocated")', ["admin_error"],
                             answers.dump(["admin_error"], {"admin_error": fake}),
                             server[1], grader)
    assert outcome.ename == "CheckFailed" and "is not a message the cluster returned to you" in outcome.evalue
    grader.close()
    lab.delete("svc", "legacy")


def test_answers_travel_as_plain_data_only(lab, server, tmp_path):
    grader = RemoteBackend(server[1], hello=False)
    pod = lab.get("pods", selector="app=web")[0]["metadata"]["name"]
    namespace = {"n": 3, "modes": {"ipvs", "nftables"}, "pair": (1, "a"), "answer": lab.nslookup("web"),
                 "slices": lab.get("endpointslices", selector="kubernetes.io/service-name=web"),
                 "func": lambda: 1, "result": lab.curl("http://web/", source=f"pod/{pod}")}
    names = list(namespace) + ["absent"]
    text = answers.dump(names, namespace)
    copy = grader
    back = {}
    for name in ("n", "modes", "pair", "answer", "slices", "result"):
        back.update(rerun.load_answers(text, [name], copy, grader))
    assert back["n"] == 3 and back["modes"] == {"ipvs", "nftables"} and back["pair"] == (1, "a")
    assert back["answer"] == namespace["answer"] and back["slices"] == namespace["slices"]
    assert back["result"] == namespace["result"]
    with pytest.raises(rerun.AnswerError, match="func holds a function, which the grader cannot check"):
        rerun.load_answers(text, ["func"], copy, grader)
    with pytest.raises(rerun.AnswerError, match="name 'absent' is not defined"):
        rerun.load_answers(text, ["absent"], copy, grader)
    forged = answers.dump(["result"], {"result": CurlResult("http://web/", "client", status=200, body="x")})
    with pytest.raises(rerun.AnswerError, match="not what the cluster returned"):
        rerun.load_answers(forged, ["result"], copy, grader)
    hand_made = answers.dump(["captured"], {"captured": [{"metadata": {"name": namespace["slices"][0]["metadata"]
                                                                       ["name"]}, "endpoints": []}]})
    with pytest.raises(rerun.AnswerError, match='captured: the object ".*" is not what the cluster returned'):
        rerun.load_answers(hand_made, ["captured"], copy, grader)
    renamed = answers.dump(["runner"], {"runner": os.system})
    with pytest.raises(rerun.AnswerError, match="runner holds a function"):
        rerun.load_answers(renamed, ["runner"], copy, grader)
    grader.close()


@pytest.mark.parametrize("language, message", [("en", "there is no Service \"nope\""),
                                               ("ru", "нет объекта Service \"nope\"")])
def test_the_graders_run_speaks_the_course_language_and_leaves_the_environment(lab, server, tmp_path, monkeypatch,
                                                                              language, message):
    monkeypatch.setenv("LABSUPPORT_LANG", "en" if language == "ru" else "ru")
    before = dict(os.environ)
    grader = RemoteBackend(server[1], hello=False)
    outcome = rerun.run_test('checks.find(lab, "svc", "nope")', [], "{}", server[1], grader, language=language)
    grader.close()
    assert outcome.ename == "CheckFailed" and message in outcome.evalue
    assert dict(os.environ) == before


def test_the_client_is_a_backend(lab):
    assert isinstance(lab.backend, Backend)


def test_free_names_are_the_answers_a_test_reads():
    source = '''
names = {s["metadata"]["name"] for s in checks.slices(lab, "web")}
got = {s["metadata"]["name"] for s in (captured if isinstance(captured, list) else [captured])}
from urllib.parse import urlsplit
assert got and got <= names, f"{sorted(got)} {victim_ip}"'''
    assert sorted(rerun.free_names(source)) == ["captured", "victim_ip"]


def test_kubectl_is_the_students_on_every_request(lab):
    assert lab.kubectl("auth can-i delete nodes", show=False).stdout.strip() == "no"
    assert lab.kubectl("auth can-i create deployments", show=False).stdout.strip() == "yes"
    assert lab.kubectl("auth whoami", show=False).stdout.count("student") >= 1
    for argv in (["--as=kubernetes-admin", "get", "pods"], ["--as=x", "--as-group=system:masters", "get", "pods"]):
        refused = lab.kubectl(argv, show=False)
        assert refused.returncode != 0 and 'cannot impersonate resource "users"' in refused.stderr, refused.stderr
    refused = lab.kubectl(["-n", "kube-system", "create", "configmap", "planted"], show=False)
    assert 'configmaps is forbidden: User "student" cannot create resource "configmaps" in API group "" ' \
           'in the namespace "kube-system"' in refused.stderr
    patched = lab.kubectl(["patch", "deployment", "web", "--subresource=status", "--type=merge",
                           "-p", '{"status":{"readyReplicas":9}}'], show=False)
    assert patched.returncode != 0 and "status is written by the cluster" in patched.stderr
    assert lab.kubectl("get endpointslices", show=False).returncode == 0


def test_the_clock_moves_finitely_and_not_past_its_end(lab):
    for seconds, error in ((float("nan"), "finite"), (float("inf"), "finite"), (-1, "0 or more"),
                           (1e9, "at most 3600 s at a time")):
        with pytest.raises(LabError, match=error):
            lab.backend.advance(seconds)
    with pytest.raises(LabError, match="finite deadline"):
        lab.backend.call("wait_step", float("inf"), 1)


def test_an_oversized_request_is_refused_and_the_connection_goes_on(lab):
    with pytest.raises(LabError, match="Request entity too large"):
        lab.apply({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "huge"},
                   "data": {"blob": "x" * (4 * 2**20)}})
    with pytest.raises(LabError, match="must have at most 1048576 bytes"):
        lab.apply({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "big"},
                   "data": {"blob": "x" * (1024 * 1024 + 1)}})
    assert lab.get("svc", "web")["metadata"]["name"] == "web"


def test_a_module_travels_only_when_the_notebook_imports_it(lab, server):
    grader = RemoteBackend(server[1], hello=False)
    text = json.dumps({"m": {"__module__": "json"}, "bad": {"__module__": "this"},
                       "cls": {"__object__": ["collections", "OrderedDict"]}})
    assert rerun.load_answers(text, ["m"], grader, grader, frozenset({"json"}))["m"] is json
    with pytest.raises(rerun.AnswerError, match="cannot read"):
        rerun.load_answers(text, ["bad"], grader, grader, frozenset({"json"}))
    with pytest.raises(rerun.AnswerError, match="cannot read"):
        rerun.load_answers(text, ["cls"], grader, grader, frozenset({"json"}))
    assert rerun.imported_modules(["import os.path\nfrom urllib.parse import urlsplit\nfrom . import x"]) == \
        {"os", "os.path", "urllib", "urllib.parse"}
    grader.close()


def test_apply_through_the_socket_is_as_strict_as_kubectl(lab):
    typo = ("apiVersion: v1\nkind: Service\nmetadata: {name: typo}\nspec:\n  selector: {app: web}\n"
            "  ports:\n  - {port: 80, protcol: TCP}\n")
    with pytest.raises(BadRequest) as refused:
        lab.apply(typo)
    assert str(refused.value) == ('Service in version "v1" cannot be handled as a Service: strict decoding error: '
                                  'unknown field "spec.ports[0].protcol"')
    with pytest.raises(NotFound):
        lab.get("svc", "typo")
    [svc] = lab.apply(typo, validate="ignore")
    assert "protcol" not in svc["spec"]["ports"][0]
    lab.delete("svc", "typo")
