"""Checks ask the cluster, never a string the student shaped.

refusal-echo (assignment 5): the API server puts a requested name into its NotFound message, so
`lab.get("svc", <the refusal asked for>)` made the lab server return — and record — a message that says every
fragment of the refusal; an object whose port name holds the text makes an Invalid refusal that says them too. The
refusal is judged by the server's own record of the request (verb, kind, name, the refused field, its value and
detail). echo-client-ip (assignment 3): agnhost's `/echo?msg=203.0.113.9:4242` answers `203.0.113.9:4242`, which
read as the client address the app saw; the address is the connection's peer as the cluster recorded it.
"""
from __future__ import annotations

import os
import subprocess
import sys
from types import SimpleNamespace

import pytest

from labsupport import Invalid, Lab, checks
from labsupport.errors import NotFound
from labsupport.grading import answers, rerun
from labsupport.remote import SOCKET_ENV
from labsupport.remote.client import RemoteBackend

TAKEN = 30777
ASKED = (f'Service "admin" is invalid', f"nodePort: Invalid value: {TAKEN}", "provided port is already allocated")
STRUCTURE = dict(kind="Service", name="admin", field="spec.ports[0].nodePort", value=TAKEN,
                 detail="provided port is already allocated")
EXPECTED = f'The Service "admin" is invalid: spec.ports[0].nodePort: Invalid value: {TAKEN}: provided port is ' \
           "already allocated"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """A lab server (student socket, grader socket) and a student's Lab on it, with `legacy` holding the port."""
    folder = tmp_path_factory.mktemp("refusals")
    student, grader = str(folder / "student.sock"), str(folder / "grader.sock")
    proc = subprocess.Popen([sys.executable, "-m", "labsupport.remote.server", "--student", student, "--grader",
                             grader, "--seed", "0"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "ready"
    os.environ[SOCKET_ENV] = student
    try:
        lab = Lab(backend="sim", seed=0, proxy_mode="iptables")
    finally:
        del os.environ[SOCKET_ENV]
    lab.apply({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "legacy"},
               "spec": {"type": "NodePort", "selector": {"app": "legacy"}, "ports": [{"port": 80,
                                                                                     "nodePort": TAKEN}]}})
    yield lab, SimpleNamespace(backend=RemoteBackend(grader, hello=False)), grader
    lab.close()
    proc.stdin.close()
    proc.wait(timeout=30)


def test_a_message_echoed_through_a_read_is_not_the_refusal(server):
    lab, grader, _ = server
    with pytest.raises(NotFound) as caught:
        lab.get("svc", EXPECTED)
    echoed = str(caught.value)
    assert all(fragment in echoed for fragment in ASKED)            # the text alone passes every fragment
    with pytest.raises(checks.CheckFailed, match=r"when you made a get of svc"):
        checks.refusal(echoed, grader, *ASKED, **STRUCTURE)
    with pytest.raises(checks.CheckFailed, match=r"when you made a get of svc"):
        checks.refusal(echoed, grader, *ASKED)                      # even without the structure: a read is no refusal


def test_a_refusal_for_another_field_holding_the_text_is_not_the_refusal(server):
    lab, grader, _ = server
    with pytest.raises(Invalid) as caught:
        lab.apply({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "admin"},
                   "spec": {"type": "NodePort", "selector": {"app": "admin"},
                            "ports": [{"port": 80, "name": EXPECTED}]}})
    shaped = str(caught.value)
    assert all(fragment in shaped for fragment in ASKED), shaped
    with pytest.raises(checks.CheckFailed, match=r"not as the refusal asked for \(Service 'admin': "
                                                 r"spec\.ports\[0\]\.nodePort: 30777: provided port"):
        checks.refusal(shaped, grader, *ASKED, **STRUCTURE)


def test_the_real_refusal_passes_through_the_graders_run(server):
    lab, grader, grader_socket = server
    with pytest.raises(Invalid) as caught:
        lab.apply({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "admin"},
                   "spec": {"type": "NodePort", "selector": {"app": "admin"}, "ports": [{"port": 80,
                                                                                         "nodePort": TAKEN}]}})
    assert str(caught.value) == EXPECTED
    assert checks.refusal(EXPECTED, grader, *ASKED, **STRUCTURE) == EXPECTED
    source = ("checks.refusal(admin_error, lab, *" + repr(ASKED) + ", kind='Service', name='admin', "
              f"field='spec.ports[0].nodePort', value={TAKEN}, detail='provided port is already allocated')")
    outcome = rerun.run_test(source, ["admin_error"], answers.dump(["admin_error"], {"admin_error": EXPECTED}),
                             grader_socket, grader.backend)
    assert outcome.passed, outcome.evalue


def test_the_client_ip_is_the_peer_the_cluster_recorded_not_an_echoed_body():
    """An agnhost /echo body shaped like ip:port sent through a node without a pod (masqueraded): the app saw a
    node's address, whatever the body says."""
    with Lab(seed=0) as lab:
        lab.apply({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "app"},
                   "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "app"}}, "template": {
                       "metadata": {"labels": {"app": "app"}}, "spec": {"containers": [{
                           "name": "agnhost", "image": "registry.k8s.io/e2e-test-images/agnhost:2.52",
                           "args": ["netexec", "--http-port=8080"]}]}}}})
        lab.apply({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "app"},
                   "spec": {"type": "NodePort", "selector": {"app": "app"}, "ports": [{"port": 80,
                                                                                      "targetPort": 8080}]}})
        lab.wait(lambda l: len(checks.ready_addresses(l, "app")) == 1)
        pod_node = lab.get("pods", selector="app=app")[0]["spec"]["nodeName"]
        ips = checks.node_ips(lab)
        other = next(n for n in ips if n != pod_node and "control-plane" not in n)
        port = checks.node_port(lab, "app")
        echoed = lab.curl(f"http://{ips[other]}:{port}/echo?msg=203.0.113.9:4242", source="client")
        assert echoed.body == "203.0.113.9:4242" and echoed.client_ip != "203.0.113.9"
        assert checks.seen_ip(echoed) == echoed.client_ip
        with pytest.raises(checks.CheckFailed, match="a node's address"):
            checks.source_ip_preserved(echoed, lab)
        honest = lab.curl(f"http://{ips[other]}:{port}/clientip", source="client")
        assert checks.seen_ip(honest) == honest.body.rsplit(":", 1)[0] == honest.client_ip
        assert checks.source_ip_snatted(honest, lab) == honest.client_ip
