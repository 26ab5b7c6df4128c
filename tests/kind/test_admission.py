"""The class's admission guards on the real kube-apiserver v1.37.2 (and etcd) that `make kind-images` builds, run as
two processes here, no Docker and no nodes: what the cluster itself does to a student's pods and Services.

Pod Security `restricted` refuses what reaches the node, with its own words; the MutatingAdmissionPolicy fills in
the restricted values a pod does not say (and never those it says otherwise); the ValidatingAdmissionPolicy refuses
`spec.externalIPs` (this API server runs without DenyServiceExternalIPs, so the policy alone answers) and a
load-balancer address outside the namespace's block; `class cluster` checks all of it by dry runs. The kind tier
runs it (it needs the binaries `make kind-images` builds), in seconds.
"""
from __future__ import annotations

import os
import pathlib
import socket
import subprocess
import time

import pytest
import yaml

from labsupport import cli
from labsupport.errors import APIError
from labsupport.hub import cluster, guards
from labsupport.testing import require
from tests.kind.conftest import kind_tier_enabled, wait_for_images_build

pytestmark = pytest.mark.kind

BIN = pathlib.Path(__file__).resolve().parents[2] / ".kind" / "bin"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_ready(kubeconfig: str, log: pathlib.Path, server: subprocess.Popen, timeout: float = 120) -> None:
    from labsupport.kubectl import find_kubectl
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and server.poll() is None:
        if subprocess.run([find_kubectl(), "--kubeconfig", kubeconfig, "get", "--raw", "/readyz"],
                          capture_output=True).returncode == 0:
            return
        time.sleep(0.5)
    pytest.fail(f"kube-apiserver did not get ready (exit code {server.poll()}): {log.read_text()[-2000:]}")


@pytest.fixture(scope="module")
def apiserver(tmp_path_factory):
    """etcd, kube-apiserver (RBAC, Pod Security and the admission policies on, as on any 1.37 cluster, with
    privileged pods allowed as kubeadm allows them) and kube-controller-manager's namespace and service-account
    controllers, an admin token; yields the admin's kubeconfig."""
    if not kind_tier_enabled():
        pytest.skip("the kind tier runs under CI or when opted in: set LABSUPPORT_KIND_TESTS=1")
    wait_for_images_build()
    missing = [name for name in ("kube-apiserver", "kube-controller-manager", "server") if not (BIN / name).exists()]
    require([f"{', '.join(missing)} in .kind/bin (run `make kind-images`)"] if missing else [], "kind")
    folder = tmp_path_factory.mktemp("apiserver")
    subprocess.run(["openssl", "genrsa", "-out", str(folder / "sa.key"), "2048"], check=True, capture_output=True)
    subprocess.run(["openssl", "rsa", "-in", str(folder / "sa.key"), "-pubout", "-out", str(folder / "sa.pub")],
                   check=True, capture_output=True)
    (folder / "tokens.csv").write_text("admintoken,admin,admin,system:masters\n")
    client, peer, secure = _free_port(), _free_port(), _free_port()
    logs = [open(folder / "etcd.log", "wb"), open(folder / "apiserver.log", "wb"),
            open(folder / "controller-manager.log", "wb")]
    etcd = subprocess.Popen([str(BIN / "server"), "--data-dir", str(folder / "etcd"),
                             "--listen-client-urls", f"http://127.0.0.1:{client}",
                             "--advertise-client-urls", f"http://127.0.0.1:{client}",
                             "--listen-peer-urls", f"http://127.0.0.1:{peer}"], stdout=logs[0], stderr=logs[0])
    server = subprocess.Popen([str(BIN / "kube-apiserver"), "--etcd-servers", f"http://127.0.0.1:{client}",
                               "--secure-port", str(secure), "--bind-address", "127.0.0.1",
                               "--endpoint-reconciler-type", "none", "--cert-dir", str(folder / "certs"),
                               "--service-account-issuer", "https://kubernetes.default.svc",
                               "--service-account-key-file", str(folder / "sa.pub"),
                               "--service-account-signing-key-file", str(folder / "sa.key"),
                               "--token-auth-file", str(folder / "tokens.csv"), "--authorization-mode", "RBAC",
                               "--service-cluster-ip-range", "10.96.0.0/12", "--allow-privileged=true"],
                              stdout=logs[1], stderr=logs[1])
    kubeconfig = folder / "admin.kubeconfig"
    kubeconfig.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "admin",
        "clusters": [{"name": "t", "cluster": {"server": f"https://127.0.0.1:{secure}",
                                               "certificate-authority": str(folder / "certs" / "apiserver.crt")}}],
        "users": [{"name": "admin", "user": {"token": "admintoken"}}],
        "contexts": [{"name": "admin", "context": {"cluster": "t", "user": "admin"}}]}))
    processes = [server, etcd]
    try:
        _wait_ready(str(kubeconfig), folder / "apiserver.log", server)
        processes.insert(0, subprocess.Popen(
            [str(BIN / "kube-controller-manager"), "--kubeconfig", str(kubeconfig), "--leader-elect=false",
             "--controllers=namespace,serviceaccount", "--secure-port=0",
             "--service-account-private-key-file", str(folder / "sa.key")], stdout=logs[2], stderr=logs[2]))
        yield str(kubeconfig)
    finally:
        for proc in processes:
            proc.terminate()
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
        for log in logs:
            log.close()


@pytest.fixture(scope="module")
def klass(apiserver, tmp_path_factory):
    """A class of two on that API server: no CNI there, so its NetworkPolicy guard is allowed missing (loudly)."""
    folder = tmp_path_factory.mktemp("class")
    roster = folder / "roster.csv"
    roster.write_text("id\nann\nben\n")
    lines = cluster.make_class(["ann", "ben"], apiserver, folder / "out", class_name="adm",
                               server=cluster.ClusterClient(apiserver).host, pod_cidrs=["10.244.0.0/16"],
                               load_balancer_pool="172.30.255.0/29", load_balancer_ips=4,
                               allow_missing=["network-policy"])
    yield {"admin": apiserver, "out": folder / "out", "lines": lines, "client": cluster.ClusterClient(apiserver)}


def test_the_class_is_made_and_says_loudly_which_guard_it_lacks(klass):
    lines = klass["lines"]
    assert [line for line in lines if line.startswith("WARNING:")] == [line for line in lines if "network-policy" in line]
    assert len([line for line in lines if line.startswith("WARNING: the guard network-policy is missing")]) == 1
    client = klass["client"]
    ann = client.get("Namespace", "lab-ann")
    assert ann["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "restricted"
    assert ann["metadata"]["annotations"][guards.LOAD_BALANCER_IPS] == "172.30.255.0/30"
    assert client.get("Namespace", "lab-ben")["metadata"]["annotations"][guards.LOAD_BALANCER_IPS] == \
        "172.30.255.4/30"


def _as(klass, student: str):
    """A kube lab as the student, with their kubeconfig."""
    from labsupport import Lab
    return Lab(backend="kube", kubeconfig=str(klass["out"] / f"{student}.kubeconfig"))


def _pod(name: str, **spec) -> dict:
    container = {"name": "c", "image": "busybox:1.36", "command": ["sleep", "3600"], **spec.pop("container", {})}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": {"containers": [container], **spec}}


def test_a_pod_that_says_nothing_gets_the_restricted_values(klass):
    with _as(klass, "ann") as ann:
        [pod] = ann.apply(_pod("plain", initContainers=[{"name": "i", "image": "busybox:1.36"}]))
        spec = pod["spec"]
        assert spec["securityContext"] == {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"},
                                           "sysctls": [{"name": "net.ipv4.ip_unprivileged_port_start", "value": "0"}]}
        for container in spec["containers"] + spec["initContainers"]:
            assert container["securityContext"] == {"allowPrivilegeEscalation": False,
                                                    "capabilities": {"drop": ["ALL"]}}
        # what a pod says stays: its own user, sysctls and capabilities (Pod Security then judges them)
        [own] = ann.apply(_pod("own", securityContext={"runAsUser": 1000, "sysctls": [
            {"name": "net.ipv4.ping_group_range", "value": "0 1"}]}, container={"securityContext": {
                "capabilities": {"add": ["NET_BIND_SERVICE"]}}}))
        assert own["spec"]["securityContext"]["runAsUser"] == 1000
        assert own["spec"]["securityContext"]["sysctls"] == [{"name": "net.ipv4.ping_group_range", "value": "0 1"}]
        assert own["spec"]["containers"][0]["securityContext"]["capabilities"] == {"add": ["NET_BIND_SERVICE"],
                                                                                  "drop": ["ALL"]}


@pytest.mark.parametrize("pod, words", [
    (_pod("p-priv", container={"securityContext": {"privileged": True}}),
     ['privileged (container "c" must not set securityContext.privileged=true)']),
    (_pod("p-sysadmin", container={"securityContext": {"capabilities": {"add": ["SYS_ADMIN"]}}}),
     ['must not include "SYS_ADMIN"']),
    (_pod("p-root", securityContext={"runAsUser": 0}), ["runAsUser=0"]),
    (_pod("p-host", hostNetwork=True, hostPID=True, hostIPC=True), ["host namespaces", "hostNetwork=true"]),
    (_pod("p-path", volumes=[{"name": "r", "hostPath": {"path": "/"}}]), ['restricted volume type "hostPath"']),
    (_pod("p-escalate", container={"securityContext": {"allowPrivilegeEscalation": True}}),
     ["allowPrivilegeEscalation != false"]),
    (_pod("p-unconfined", securityContext={"seccompProfile": {"type": "Unconfined"}}), ["seccompProfile"]),
], ids=["privileged", "sys-admin", "root", "host-namespaces", "hostPath", "escalation", "unconfined"])
def test_what_reaches_the_node_is_refused_in_pod_securitys_words(klass, pod, words):
    with _as(klass, "ann") as ann:
        with pytest.raises(APIError) as err:
            ann.apply(pod)
    assert err.value.code == 403 and 'violates PodSecurity "restricted:latest"' in str(err.value), err.value
    for word in words:
        assert word in str(err.value), (word, str(err.value))


def test_service_addresses_are_only_the_students_own(klass):
    with _as(klass, "ann") as ann:
        with pytest.raises(APIError, match="CVE-2020-8554") as err:
            ann.apply({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "hijack"},
                       "spec": {"ports": [{"port": 80}], "externalIPs": ["10.96.0.10"]}})
        assert err.value.code == 403
        balancer = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "lb"},
                    "spec": {"type": "LoadBalancer", "ports": [{"port": 80}], "loadBalancerIP": "172.30.255.5"}}
        with pytest.raises(APIError, match=r"172\.30\.255\.5 is not an address of this namespace: ask for one in "
                                           r"172\.30\.255\.0/30") as err:
            ann.apply(balancer)
        assert err.value.code == 403
        balancer["spec"]["loadBalancerIP"] = "172.30.255.2"
        assert ann.apply(balancer)[0]["spec"]["loadBalancerIP"] == "172.30.255.2"


def test_a_student_reads_the_nodes_and_writes_nothing_outside(klass):
    with _as(klass, "ann") as ann:
        assert ann.get("nodes") == []   # no node registered on this API server, but the read is allowed
        for argv in (["auth", "can-i", "create", "pods", "-n", "lab-ben"], ["auth", "can-i", "patch", "namespaces"],
                     ["auth", "can-i", "create", "networkpolicies"], ["auth", "can-i", "create", "serviceaccounts/token"],
                     ["auth", "can-i", "list", "secrets"]):
            assert ann.kubectl(argv, show=False).stdout.strip() == "no", argv
        assert ann.kubectl(["auth", "can-i", "watch", "nodes"], show=False).stdout.strip() == "yes"


def test_clean_with_a_kubeconfig_removes_the_class_and_the_shared_guards(klass, capsys):
    assert cli.main(["clean", "--kubeconfig", klass["admin"]]) == 0
    out = capsys.readouterr().out
    assert "deleted the namespace lab-ann" in out and "deleted the ClusterRoleBinding lab-ben-nodes" in out
    assert f"deleted the MutatingAdmissionPolicy {guards.POD_DEFAULTS}" in out
    client = klass["client"]
    assert client.names("ClusterRoleBinding", cluster.class_selector("adm")) == []
    assert client.get("ValidatingAdmissionPolicy", guards.SERVICE_RULES) is None
