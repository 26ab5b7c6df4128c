"""The lesson's exercises with real packets on the netns backend, in iptables and nftables mode."""
from __future__ import annotations

import pytest

from .conftest import make_lab
from .manifests import DB, WEB, echo, node_ips, ready, workers

pytestmark = pytest.mark.kernel
CLIENT_IP = "172.18.0.100"


@pytest.fixture(scope="module", params=["iptables", "nftables"])
def lab(request):
    """One netns lab per mode with the lesson's workloads applied and ready."""
    lab = make_lab(request.param)
    try:
        lab.apply(WEB)
        lab.apply(DB)
        lab.apply(echo("echo", 2, policy="Cluster"))
        lab.apply(echo("local", 1, policy="Local"))
        lab.wait(lambda l: ready(l, "web") == 3 and ready(l, "db") == 3 and ready(l, "echo") == 2
                 and ready(l, "local") == 1, timeout=120)
        yield lab
    finally:
        lab.close()


def node_port(lab, service: str) -> int:
    return lab.get("svc", service)["spec"]["ports"][0]["nodePort"]


def test_three_endpoints_answer(lab):
    ip = lab.get("svc", "web")["spec"]["clusterIP"]
    pods = {p["metadata"]["name"] for p in lab.get("pods", selector="app=web")}
    seen = {lab.curl(f"http://{ip}/", source="node/lab-worker").pod for _ in range(40)}
    assert seen == pods
    client = sorted(pods)[0]
    by_name = lab.curl("http://web/", source=f"pod/{client}")
    assert by_name.status == 200 and "Welcome to nginx!" in by_name.body and by_name.pod in pods


def test_rules_are_in_the_kernel(lab):
    network = lab._backend.network
    text = network.kernel_rules("lab-worker")
    ip = lab.get("svc", "web")["spec"]["clusterIP"]
    assert ip in text
    if lab.proxy_mode == "nftables":
        assert "table ip kube-proxy" in text
    else:
        assert "-A PREROUTING -m comment --comment \"kubernetes service portals\" -j KUBE-SERVICES" in text


def test_headless_nslookup_from_a_pod_returns_pod_ips(lab):
    pod = sorted(p["metadata"]["name"] for p in lab.get("pods", selector="app=web"))[0]
    answer = lab.nslookup("db", pod=pod)
    ips = sorted(p["status"]["podIP"] for p in lab.get("pods", selector="app=db"))
    assert answer.rcode == "NOERROR"
    assert sorted(answer.addresses) == ips
    assert "Name:\tdb.default.svc.cluster.local" in answer.text
    assert "Server:\t\t10.96.0.10" in answer.text
    missing = lab.nslookup("nope")
    assert missing.rcode == "NXDOMAIN" and "** server can't find nope: NXDOMAIN" in missing.text


def test_real_dig_in_a_pod_namespace_sees_the_cluster_dns(lab):
    network = lab._backend.network
    from labsupport.netns.namespaces import run_in
    pod = sorted(lab.get("pods", selector="app=web"), key=lambda p: p["metadata"]["name"])[0]
    ns = network.origin(f"pod/{pod['metadata']['name']}").ns
    ip = lab.get("svc", "web")["spec"]["clusterIP"]
    assert run_in(ns, ["dig", "+search", "+short", "web"]).stdout.split() == [ip]
    assert run_in(ns, ["dig", "+tcp", "+short", "web.default.svc.cluster.local"]).stdout.split() == [ip]


def test_delete_a_pod_and_see_it_terminating(lab):
    pods = sorted(p["metadata"]["name"] for p in lab.get("pods", selector="app=web"))
    lab.delete("pod", pods[0])
    pod = lab.get("pod", pods[0])
    assert pod["metadata"].get("deletionTimestamp")
    endpoints = [e for s in lab.get("endpointslices", selector="kubernetes.io/service-name=web")
                 for e in s.get("endpoints") or []]
    terminating = [e for e in endpoints if e["conditions"].get("terminating")]
    assert terminating and terminating[0]["targetRef"]["name"] == pods[0]
    ip = lab.get("svc", "web")["spec"]["clusterIP"]
    seen = {lab.curl(f"http://{ip}/", source="node/lab-worker").pod for _ in range(20)}
    assert pods[0] not in seen
    lab.wait(lambda l: ready(l, "web") == 3, timeout=120)


def test_nodeport_from_outside(lab):
    port = node_port(lab, "web")
    for name, ip in node_ips(lab).items():
        result = lab.curl(f"http://{ip}:{port}/")
        assert result.status == 200, (name, result.error)


def test_cluster_policy_hides_the_client(lab):
    port = node_port(lab, "echo")
    ips = node_ips(lab)
    gateways = {f"10.244.{i}.1" for i in range(len(ips))}
    for name, ip in ips.items():
        result = lab.curl(f"http://{ip}:{port}/clientip")
        assert result.status == 200, result.error
        seen = result.body.rsplit(":", 1)[0]
        assert seen == result.client_ip
        assert seen != CLIENT_IP and (seen in ips.values() or seen in gateways)
        if result.node != name:
            assert seen == ip


def test_local_policy_keeps_the_client_ip_and_drops_elsewhere(lab):
    port = node_port(lab, "local")
    (pod,) = lab.get("pods", selector="app=local")
    home = pod["spec"]["nodeName"]
    ips = node_ips(lab)
    result = lab.curl(f"http://{ips[home]}:{port}/clientip")
    assert result.status == 200
    assert result.body.rsplit(":", 1)[0] == CLIENT_IP == result.client_ip
    other = next(w for w in workers(lab) if w != home)
    dropped = lab.curl(f"http://{ips[other]}:{port}/clientip")
    assert dropped.timed_out, dropped.error
    assert dropped.error.startswith("curl: (28)")


def test_keep_alive_stays_on_one_pod(lab):
    ip = lab.get("svc", "echo")["spec"]["clusterIP"]
    conn = lab.connect(f"http://{ip}/hostname", source="node/lab-worker")
    try:
        assert conn.first.status == 200
        assert {conn.request().body for _ in range(10)} == {conn.pod}
    finally:
        conn.close()


def test_trace_shows_kernel_and_model(lab):
    ip = lab.get("svc", "web")["spec"]["clusterIP"]
    trace = lab.trace(f"http://{ip}/", source="node/lab-worker2")
    text = trace.text()
    assert trace.result.status == 200
    assert "model of" in text and "conntrack:" in text
    assert f"dst={ip}" in text
    # The kernel's conntrack entry, told in the model's words: the DNAT to a pod.
    assert trace.rewrites[0].startswith(f"DNAT {ip}:80 -> 10.244.")
    table = lab.conntrack("lab-worker2")
    assert any(f"dst={ip}" in line for line in table)


def test_trace_hops_speak_russian(lab, monkeypatch):
    monkeypatch.setenv("LABSUPPORT_LANG", "ru")
    ip = lab.get("svc", "web")["spec"]["clusterIP"]
    text = lab.trace(f"http://{ip}/", source="node/lab-worker2").text()
    assert "в сетевом namespace" in text and "модель правил" in text and "доставлено в под" in text
    assert "conntrack:" in text and f"dst={ip}" in text      # what the kernel's tools print stays as it is


def test_keep_alive_breaks_when_its_pod_goes(lab):
    ip = lab.get("svc", "echo")["spec"]["clusterIP"]
    conn = lab.connect(f"http://{ip}/hostname", source="node/lab-worker")
    try:
        assert conn.first.status == 200
        lab.delete("pod", conn.pod, grace_period=1)
        assert conn.request().status == 200            # still terminating: the pod keeps serving
        lab.advance(3)
        broken = conn.request()
        assert broken.exit_code == 56 and "Connection reset by peer" in broken.error
    finally:
        conn.close()
    lab.wait(lambda l: ready(l, "echo") == 2, timeout=120)


def test_real_tools_from_a_shell_see_the_cluster(lab):
    import subprocess
    import time
    lab.apply(echo("shell", 1, svc_type="ClusterIP"))
    lab.wait(lambda l: ready(l, "shell") == 1, timeout=120)
    (pod,) = lab.get("pods", selector="app=shell")
    network = lab._backend.network
    deadline = time.monotonic() + 10
    while pod["metadata"]["uid"] not in network.pods.sandboxes and time.monotonic() < deadline:
        time.sleep(0.1)                                     # no lab verb: the network catches up by itself
    with lab._backend.cluster.lock:                         # and finishes that round (rules, DNS) under the lock
        ns = network.pods.sandboxes[pod["metadata"]["uid"]].ns
    out = subprocess.run(["ip", "netns", "exec", ns, "curl", "-sS", "-m", "3", "http://shell/hostname"],
                         capture_output=True, text=True)
    assert out.stdout == pod["metadata"]["name"], out.stderr


def test_a_pod_namespace_has_the_files_the_kubelet_writes(lab):
    """Real tools in a pod's namespace read the same resolv.conf and hosts as `kubectl exec … cat` shows."""
    lab.apply(echo("files", 1, svc_type="ClusterIP"))
    lab.wait(lambda l: ready(l, "files") == 1, timeout=120)
    (pod,) = lab.get("pods", selector="app=files")
    network = lab._backend.network
    with lab._backend.cluster.lock:
        box = network.pods.sandbox(pod)
    files = {}
    for name in ("resolv.conf", "hosts"):
        with open(f"/etc/netns/{box.ns}/{name}") as f:
            files[name] = f.read()
        shown = lab.exec(pod["metadata"]["name"], ["cat", f"/etc/{name}"])
        assert files[name] == shown.stdout, f"/etc/{name} differs between the namespace and the pod"
    assert "search default.svc.cluster.local svc.cluster.local cluster.local" in files["resolv.conf"]
    assert "options ndots:5" in files["resolv.conf"]
    assert f"{pod['status']['podIP']}\t{pod['metadata']['name']}" in files["hosts"]


def test_nslookup_in_a_busybox_pod_prints_as_kubectl_exec_does(lab):
    lab.apply({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "bb-nslookup"},
               "spec": {"containers": [{"name": "bb", "image": "busybox:1.36", "command": ["sleep", "3600"]}]}})
    try:
        lab.wait(lambda l: l.get("pod", "bb-nslookup")["status"].get("phase") == "Running", timeout=60)
        answer = lab.nslookup("web", pod="bb-nslookup")
        assert answer.text == lab.kubectl("exec bb-nslookup -- nslookup web", show=False).stdout
        assert "Address:\t10.96.0.10:53" in answer.text and answer.rcode == "NOERROR"
        assert answer.addresses == [lab.get("svc", "web")["spec"]["clusterIP"]]
    finally:
        lab.delete("pod", "bb-nslookup", grace_period=0)
