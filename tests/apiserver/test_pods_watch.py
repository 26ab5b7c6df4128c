"""Pods and waiting: run -it --rm nslookup through the cluster DNS, get -w, the official Python client, and a
watch that loses nothing under many rapid changes."""
from __future__ import annotations

import json
import os
import subprocess
import threading
import time

import pytest

from labsupport.kubectl import find_kubectl
from tests.apiserver.conftest import wait_until


def test_run_it_rm_nslookup_db(kubectl, lab):
    result = kubectl("run -it --rm dnsutils --image=registry.k8s.io/e2e-test-images/jessie-dnsutils:1.7 "
                     "-- nslookup db")
    ips = sorted(p["status"]["podIP"] for p in lab.get("pods", selector="app=db"))
    answered = sorted(line.split()[-1] for line in result.stdout.splitlines() if line.startswith("Address: "))
    assert answered == ips
    assert "Name:\tdb.default.svc.cluster.local" in result.stdout
    assert 'pod "dnsutils" deleted' in result.stdout


def test_get_watch_sees_terminating(lab):
    kube = [find_kubectl(), "get", "pods", "-l", "app=db", "-w"]
    proc = subprocess.Popen(kube, env=dict(os.environ, KUBECONFIG=lab.kubeconfig), stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    try:
        first = proc.stdout.readline()
        assert first.split()[:2] == ["NAME", "READY"]
        lab.delete("pod", "db-2")
        deadline = time.monotonic() + 15
        seen = []
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            seen.append(line)
            if line.startswith("db-2") and "Terminating" in line:
                break
        assert any(line.startswith("db-2") and "Terminating" in line for line in seen), seen
    finally:
        proc.kill()
        proc.wait()
    lab.wait(lambda l: len([p for p in l.get("pods", selector="app=db") if p["status"].get("podIP")
                            and not p["metadata"].get("deletionTimestamp")]) == 3, timeout=120)


def test_official_python_client(lab):
    import kubernetes
    client = kubernetes.config.new_client_from_config(config_file=lab.kubeconfig)
    core = kubernetes.client.CoreV1Api(client)
    names = [p.metadata.name for p in core.list_namespaced_pod("default", label_selector="app=db").items]
    assert names == ["db-0", "db-1", "db-2"]
    cm = kubernetes.client.V1ConfigMap(metadata=kubernetes.client.V1ObjectMeta(name="py"), data={"k": "v"})
    created = core.create_namespaced_config_map("default", cm)
    assert created.metadata.uid
    w = kubernetes.watch.Watch()
    seen = []
    for event in w.stream(core.list_namespaced_config_map, "default", timeout_seconds=5):
        seen.append((event["type"], event["object"].metadata.name))
        if event["object"].metadata.name == "py":
            if event["type"] == "ADDED":
                core.delete_namespaced_config_map("py", "default")
            elif event["type"] == "DELETED":
                w.stop()
    assert ("ADDED", "py") in seen and ("DELETED", "py") in seen
    with pytest.raises(kubernetes.client.ApiException) as err:
        core.read_namespaced_config_map("py", "default")
    assert err.value.status == 404
    apps = kubernetes.client.AppsV1Api(client)
    assert apps.read_namespaced_deployment("web", "default").spec.replicas == 3


def _watch_stream(api, path: str, out: list, ready: threading.Event, stop: threading.Event):
    import http.client
    conn = http.client.HTTPSConnection(api.host, api.port, context=api.context, timeout=30)
    conn.request("GET", path, headers={"Authorization": f"Bearer {api.token}"})
    resp = conn.getresponse()
    ready.set()
    while not stop.is_set():
        line = resp.readline()
        if not line:
            break
        out.append(json.loads(line))
    conn.close()


def test_watch_loses_nothing_under_rapid_changes(lab, api):
    status, listing = api.json("GET", "/api/v1/namespaces/default/configmaps")
    rv = listing["metadata"]["resourceVersion"]
    streams = [[] for _ in range(4)]
    stop = threading.Event()
    threads = []
    for out in streams:
        ready = threading.Event()
        t = threading.Thread(target=_watch_stream, daemon=True, args=(
            api, f"/api/v1/namespaces/default/configmaps?watch=true&resourceVersion={rv}&timeoutSeconds=60",
            out, ready, stop))
        t.start()
        ready.wait(5)
        threads.append(t)
    cluster = lab._backend.cluster
    for i in range(1000):
        name = f"c{i % 50}"
        obj = cluster.store.find("ConfigMap", "default", name)
        if obj is None:
            cluster.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "default"},
                            "data": {"i": str(i)}})
        else:
            new = dict(obj, data={"i": str(i)})
            cluster.replace(new)
    wait_until(lambda: all(len(s) >= 1000 for s in streams), timeout=30)
    stop.set()
    for s in streams:
        assert len(s) == 1000
        assert [e["object"]["data"]["i"] for e in s] == [str(i) for i in range(1000)]
        rvs = [int(e["object"]["metadata"]["resourceVersion"]) for e in s]
        assert rvs == sorted(rvs)
    for i in range(50):
        cluster.delete("ConfigMap", "default", f"c{i}")


def test_many_concurrent_clients(api):
    errors = []

    def worker():
        try:
            for _ in range(10):
                status, body = api.json("GET", "/api/v1/pods")
                assert status == 200 and body["items"]
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=worker) for _ in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


def test_watch_times_out_and_moves_clock(lab, api):
    before = lab._backend.cluster.clock.now
    status, _, body = api.request("GET", "/api/v1/namespaces/default/pods?watch=true&resourceVersion="
                                  f"{lab._backend.cluster.store.rv}&timeoutSeconds=20")
    assert status == 200
    after = lab._backend.cluster.clock.now
    assert after - before <= 20.5


def test_advance_endpoint(lab, api):
    before = lab._backend.cluster.clock.now
    status, body = api.json("POST", "/labsupport/v1/advance?seconds=5")
    assert status == 200 and body["status"] == "Success"
    assert lab._backend.cluster.clock.now >= before + 5
    assert api.request("POST", "/labsupport/v1/advance?seconds=5", token=False)[0] == 401


@pytest.mark.parametrize("protocol", ["v5.channel.k8s.io", "v4.channel.k8s.io"])
def test_exec_channel_protocol(api, protocol):
    import websocket
    import ssl
    url = (f"wss://{api.host}:{api.port}/api/v1/namespaces/default/pods/db-0/exec?"
           "command=sh&command=-c&command=hostname%3B%20cat%20%2Fnope&stdout=true&stderr=true")
    ws = websocket.create_connection(url, header=[f"Authorization: Bearer {api.token}"], subprotocols=[protocol],
                                     sslopt={"cert_reqs": ssl.CERT_NONE}, timeout=10)
    assert ws.subprotocol == protocol
    channels: dict[int, bytes] = {}
    try:
        while True:
            opcode, data = ws.recv_data()
            if opcode == 8:
                break
            channels[data[0]] = channels.get(data[0], b"") + data[1:]
    except websocket.WebSocketConnectionClosedException:
        pass
    assert channels[1] == b"db-0\n"
    assert b"nope" in channels[2]
    status = json.loads(channels[3])
    assert status["status"] == "Failure" and status["reason"] == "NonZeroExitCode"
    assert status["details"]["causes"][0]["reason"] == "ExitCode"


def test_exec_reads_stdin(kubectl):
    result = kubectl("exec -i db-0 -- sh", input="hostname; grep nameserver /etc/resolv.conf\n")
    assert result.stdout == "db-0\nnameserver 10.96.0.10\n"
    assert kubectl("exec -i db-1 -- cat", input="piped\n").stdout == "piped\n"


def test_attach_streams_new_output_until_the_pod_goes(kubectl, lab):
    kubectl("run ticker --image=busybox -- sleep 3600")
    kubectl("wait --for=condition=Ready pod/ticker --timeout=60s")
    cluster = lab._backend.cluster
    with cluster.lock:
        app = cluster.kubelet.runtime(cluster.store.get("Pod", "default", "ticker")).apps["ticker"]
        app.log.append("before attach")

    def later():
        time.sleep(0.8)
        with cluster.lock:
            app.log.append("tick 1")
        time.sleep(0.3)
        with cluster.lock:
            app.log.append("tick 2")
        time.sleep(0.3)
        lab.delete("pod", "ticker")

    thread = threading.Thread(target=later)
    thread.start()
    result = kubectl("attach -i ticker", input="")
    thread.join()
    assert result.stdout == "tick 1\ntick 2\n"


def test_concurrent_kubectl_processes(kubectl, lab):
    commands = ["get pods -A", "get svc -o wide", "get endpointslices -A", "rollout status deployment/web",
                "wait --for=condition=Ready pod -l app=db --timeout=60s", "describe service db",
                "get nodes -o yaml", "api-resources"]
    results: dict[str, int] = {}

    def run(command: str) -> None:
        results[command] = kubectl(command, ok=False).returncode

    threads = [threading.Thread(target=run, args=(c,)) for c in commands]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert results == {c: 0 for c in commands}


def test_get_watch_with_request_timeout_sees_that_much_cluster_time(kubectl, lab):
    clock = lab._backend.cluster.clock
    kubectl("run sleeper --image=busybox -- sleep 3600")
    before = clock.now
    out = kubectl("get pod sleeper -w --request-timeout=20s").stdout
    assert "Running" in out
    assert 19.9 <= clock.now - before <= 20.5
    kubectl("delete pod sleeper --grace-period=0 --force", ok=False)


def test_the_server_tells_when_every_watch_has_sent_a_change(lab, api):
    """`wait_delivered`: what the real kube-proxy's settle waits for before it gives a change its grace."""
    server = lab._backend.apiserver()
    cluster = lab._backend.cluster
    streams, stop, threads = [[] for _ in range(2)], threading.Event(), []
    for out in streams:
        ready = threading.Event()
        t = threading.Thread(target=_watch_stream, daemon=True, args=(
            api, "/api/v1/namespaces/default/configmaps?watch=true", out, ready, stop))   # open until the test ends
        t.start()
        ready.wait(5)
        threads.append(t)
    made = []

    def make(name):
        cluster.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "default"}})
        made.append(name)
    try:
        make("sent-first")
        wait_until(lambda: all(any(e["object"]["metadata"]["name"] == "sent-first" for e in s) for s in streams),
                   timeout=10)
        before = [len(s) for s in streams]
        for i in range(20):
            make(f"sent{i}")
        rv = cluster.store.rv
        assert server.wait_delivered({"ConfigMap"}, rv, 10)
        # sent means in the socket: each client reads all twenty without the server doing anything more
        wait_until(lambda: all(len(s) - b == 20 for s, b in zip(streams, before)), timeout=5)
        # a watch that has not caught up holds the wait until its timeout; one of another kind does not
        behind, other = server.register("ConfigMap", "slow-reader"), server.register("Secret")
        try:
            assert not server.wait_delivered({"ConfigMap"}, rv, 0.3)
            # waited for by the program asked about only (a settle asks about kube-proxy's watches)
            assert server.wait_delivered({"ConfigMap"}, rv, 0.3, agent="kube-proxy")
            assert not server.wait_delivered({"ConfigMap"}, rv, 0.3, agent="slow-reader")
            server.mark_handled(behind, rv)
            assert server.wait_delivered({"ConfigMap"}, rv, 0.3)
            assert server.wait_delivered({"ConfigMap", "Secret"}, rv, 0.3) is False
            # a watch is behind only on what was queued for it: none of the twenty were Secrets
            server.mark_handled(other, rv - 20)
            assert server.wait_delivered({"ConfigMap", "Secret"}, rv, 0.3)
        finally:
            server.unregister(behind)
            server.unregister(other)
    finally:
        stop.set()
        for name in made:
            cluster.delete("ConfigMap", "default", name)
