"""The kube backend's client code path, over real HTTPS against the embedded API server: the lesson's five
exercises, namespaces, errors, and what needs node access refusing clearly."""
from __future__ import annotations

import pytest

from labsupport import Lab
from labsupport.errors import BackendUnavailable, BadRequest, Invalid, NotFound
from tests.kind import lesson
from tests.kind.conftest import embedded_kubeconfig


def test_backend_is_kube_on_a_virtual_clock(kube):
    assert kube.backend_name == "kube" and kube.backend.name == "kube"
    assert kube.backend.virtual_clock()
    before = kube.now
    kube.advance(5)
    assert kube.now == pytest.approx(before + 5)
    nodes = kube.get("nodes")
    assert [n["metadata"]["name"] for n in nodes] == ["lab-control-plane", "lab-worker", "lab-worker2",
                                                        "lab-worker3"]


def test_five_exercises(kube):
    addresses = lesson.exercise_1(kube)
    assert len(addresses) == 3
    out = kube.kubectl("get endpointslices -l kubernetes.io/service-name=web", show=False)
    assert out.returncode == 0 and all(a in out.stdout for a in addresses)
    terminating = lesson.exercise_2(kube)
    assert terminating["conditions"] == {"ready": False, "serving": True, "terminating": True}
    answer = lesson.exercise_3(kube)
    assert len(answer.addresses) == 3 and answer.text.startswith("Server:\t\t10.96.0.10\n")
    assert not kube.get("pods", selector="app.kubernetes.io/managed-by=labsupport"), "dnsutils pod left behind"
    node_port = lesson.exercise_4(kube)
    assert f"80:{node_port}/TCP" in kube.kubectl("get svc web", show=False).stdout
    before, after = lesson.exercise_5(kube)
    assert before != after


def test_apply_twice_keeps_server_fields_and_scale(kube):
    first = {o["kind"]: o for o in kube.apply(lesson.WEB)}
    again = {o["kind"]: o for o in kube.apply(lesson.WEB)}
    assert again["Service"]["spec"]["clusterIP"] == first["Service"]["spec"]["clusterIP"]
    assert kube.scale("deploy/web", 5)["spec"]["replicas"] == 5
    kube.wait(lambda l: lesson.ready(l, "web") == 5, timeout=120)
    assert kube.apply(lesson.WEB)[0]["spec"]["replicas"] == 3, "the manifest says 3, as kubectl apply would set"


def test_errors_are_the_api_servers(kube):
    with pytest.raises(NotFound, match='services "nope" not found'):
        kube.get("svc", "nope")
    bad = lesson.WEB.split("---")[1].replace("port: 80,", "port: 80, nodePort: 30080,")
    with pytest.raises(Invalid, match="nodePort"):
        kube.apply(bad)
    with pytest.raises(NotFound):
        kube.scale("nope", 2)


def test_apply_asks_the_api_server_for_strict_field_validation(kube):
    typo = ("apiVersion: v1\nkind: Service\nmetadata: {name: typo}\nspec:\n  selector: {app: web}\n"
            "  ports:\n  - {port: 80, protcol: TCP}\n")
    with pytest.raises(BadRequest, match='strict decoding error: unknown field "spec.ports\\[0\\].protcol"'):
        kube.apply(typo)
    with pytest.raises(NotFound):
        kube.get("svc", "typo")
    [svc] = kube.apply(typo, validate=False)
    assert "protcol" not in svc["spec"]["ports"][0]
    kube.delete("svc", "typo")


def test_each_student_in_their_own_namespace(server, tmp_path, monkeypatch):
    monkeypatch.setenv("LABSUPPORT_STATE_DIR", str(tmp_path))
    server.apply([{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
                  for name in ("alice", "bob")])
    config = embedded_kubeconfig(server)
    with Lab(backend="kube", kubeconfig=config, namespace="alice") as alice, \
            Lab(backend="kube", kubeconfig=config, namespace="bob") as bob:
        svc = alice.apply(lesson.WEB)[1]
        assert svc["metadata"]["namespace"] == "alice"
        assert alice.get("svc", "web")["metadata"]["namespace"] == "alice"
        with pytest.raises(NotFound):
            bob.get("svc", "web")
        assert [s["metadata"]["namespace"] for s in server.get("svc", namespace="alice")] == ["alice"]
        out = alice.kubectl("get svc -o name", show=False)
        assert out.stdout.split() == ["service/web"], "kubectl runs in the student's namespace"
        alice.wait(lambda l: lesson.ready(l, "web") == 3, timeout=120)
        assert alice.nslookup("web").addresses == [svc["spec"]["clusterIP"]]
        # the picture shows namespace "default", which means the student's own here, as in every verb
        picture = alice.graph()
        assert "alice/web" in [o[1] if isinstance(o, tuple) else o for o in picture.service.options]
        shown = alice.backend.snapshot()
        assert shown.home == "alice" and len(shown.pods) == 3
        assert {p["metadata"]["namespace"] for p in shown.pods} == {"alice"}, "the objects themselves are unchanged"
        with pytest.raises(ValueError, match="ClusterIP"):   # found in alice's namespace by its bare name
            picture.set_external_traffic_policy("Local", service="web")
        assert picture.service.value == "alice/web"
        picture.close()
        # a kubeconfig whose context names the namespace: the lab works there, and says so
        with Lab(backend="kube", kubeconfig=alice.kubeconfig) as again:
            assert again.namespace == again.backend.namespace == "alice"
            assert [s["metadata"]["name"] for s in again.get("svc")] == ["web"]


@pytest.mark.parametrize("verb", [
    lambda l: l.proxy_rules(),
    lambda l: l.conntrack(),
    lambda l: l.trace("http://web", "pod/x"),
    lambda l: l.curl("http://web", "node/lab-worker"),
    lambda l: l.set_proxy_mode("nftables"),
    lambda l: l.stop_kube_proxy(),
])
def test_node_access_is_unavailable_with_a_reason(kube, verb):
    with pytest.raises(BackendUnavailable) as info:
        verb(kube)
    message = str(info.value)
    assert "kube backend" in message or "cluster-admin" in message or "embedded control plane" in message
    assert "kind" in message or "sim" in message


def test_meter_counts_what_a_real_watch_ships(kube):
    kube.apply(lesson.WEB)
    kube.wait(lambda l: lesson.ready(l, "web") == 3, timeout=120)
    with kube.meter(("Endpoints", "EndpointSlice"), watchers=10) as meter:
        assert meter.events == 0, "events from before the meter started were counted"
        kube.scale("web", 4)
        kube.wait(lambda l: lesson.ready(l, "web") == 4 and meter.by_kind.get("EndpointSlice", {}).get("events", 0)
                  >= 1, timeout=120)
    slices = meter.by_kind["EndpointSlice"]
    # an EndpointSlice of four endpoints, as the API server encodes it in a watch event, is a few hundred bytes
    assert slices["bytes"] % 10 == 0 and 300 < slices["bytes"] // slices["events"] // 10 < 20000
    assert meter.objects == meter.events * 10 and meter.bytes == sum(v["bytes"] for v in meter.by_kind.values())
    seen = meter.events
    kube.scale("web", 2)
    kube.wait(lambda l: lesson.ready(l, "web") == 2, timeout=120)
    assert meter.events == seen, "a stopped meter kept counting"


def test_watch_events_are_counted_by_kind_whatever_the_chunks():
    from labsupport.kind.meter import count_events, split_lines
    stream = (b'{"type":"ADDED","object":{"kind":"EndpointSlice","metadata":{"name":"web-abc"}}}\n'
              b'{"type":"BOOKMARK","object":{"kind":"EndpointSlice","metadata":{"resourceVersion":"7"}}}\n'
              b'{"type":"MODIFIED","object":{"kind":"Endpoints","metadata":{"name":"web"}}}\n')
    added, _, modified = stream.splitlines()
    for size in (1, 7, len(stream)):
        chunks = [stream[i:i + size] for i in range(0, len(stream), size)]
        assert list(count_events(split_lines(chunks))) == [("EndpointSlice", len(added)), ("Endpoints", len(modified))]


def test_proxy_mode_from_the_kube_proxy_configmap(kube):
    assert kube.proxy_mode == "iptables"


def test_curl_from_a_pod_reports_the_answering_pod(kube):
    kube.apply(lesson.ECHO)
    kube.apply(lesson.echo_service("Cluster"))
    kube.wait(lambda l: lesson.ready(l, "echo") == 3 and len(lesson.running_pods(l, "client")) == 1)
    result = kube.curl("http://echo/hostname", source="pod/client")
    assert result.ok and result.status == 200
    assert result.pod in [p["metadata"]["name"] for p in lesson.running_pods(kube, "echo")]
    assert result.node and result.namespace == "default"
    refused = kube.curl("http://echo:81/", source="pod/client")
    assert not refused.ok and refused.exit_code in (7, 28) and refused.error.startswith("curl: (")


def test_a_refused_request_to_a_ready_service_is_tried_again_while_kube_proxy_catches_up(kube, monkeypatch):
    """On a real cluster the EndpointSlice says "ready" a moment before every kube-proxy has written it: a request
    in between is refused by the Service's reject rule. The kube backend tries such a request again (bounded), and
    only such a one."""
    from labsupport import tool_output
    from labsupport.kind import client as kube_client
    monkeypatch.setattr(kube_client, "SYNC_GRACE", 3.0)
    kube.apply(lesson.ECHO)
    kube.apply(lesson.echo_service("Cluster"))
    kube.wait(lambda l: lesson.ready(l, "echo") == 3 and len(lesson.running_pods(l, "client")) == 1)
    real = kube.backend._curl_raw
    calls: list[str] = []
    lag = {"refusals": 0}

    def lagging_kube_proxy(url, source, options):
        calls.append(url)
        if lag["refusals"] > 0:
            lag["refusals"] -= 1
            out = tool_output.parse_curl("", "curl: (7) Failed to connect to echo port 80 after 1 ms: "
                                         "Couldn't connect to server\n", 7)
            return kube.backend._curl_result(url, source, out), out
        return real(url, source, options)

    monkeypatch.setattr(kube.backend, "_curl_raw", lagging_kube_proxy)

    def tries(url: str, refusals: int):
        calls.clear()
        lag["refusals"] = refusals
        return kube.curl(url, source="pod/client"), len(calls)

    for name in ("echo", "echo.default", "echo.default.svc.cluster.local",
                 kube.get("services", "echo")["spec"]["clusterIP"]):
        result, n = tries(f"http://{name}/hostname", 2)
        assert result.ok and n == 3, f"{name}: refused twice, then answered"
    result, n = tries("http://echo:81/", 99)
    assert not result.ok and n == 1, "no Service has this port: refused is the answer"
    result, n = tries("http://echo/hostname", 99)
    assert not result.ok and result.exit_code == 7 and 3 <= n <= 7, "bounded: at most SYNC_GRACE / 0.5 s more tries"
    kube.advance(kube_client.SYNC_SETTLED + 1)
    result, n = tries("http://echo/hostname", 99)
    assert not result.ok and n == 1, "a Service unchanged for a minute is in kube-proxy's rules: refused at once"
    kube.scale("echo", 0)
    kube.wait(lambda l: lesson.ready(l, "echo") == 0)
    result, n = tries("http://echo/hostname", 99)
    assert not result.ok and n == 1, "no ready endpoint: the refusal is the answer, at once"


def test_unreachable_server_says_so(tmp_path):
    config = tmp_path / "kubeconfig"
    config.write_text("""apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:9", insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: x}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
""")
    lab = Lab(backend="kube", kubeconfig=str(config), request_timeout=3)
    with pytest.raises(BackendUnavailable, match="cannot reach the Kubernetes API server at https://127.0.0.1:9"):
        lab.get("pods")


def test_missing_kubeconfig(tmp_path):
    with pytest.raises(BackendUnavailable, match="cannot load the kubeconfig"):
        Lab(backend="kube", kubeconfig=str(tmp_path / "none"))


def test_unknown_option():
    from labsupport.errors import BadRequest
    with pytest.raises(BadRequest, match="unknown Lab option"):
        Lab(backend="kube", kubeconfig="x", color="red")


def test_wait_through_watch_events_as_on_a_real_cluster(kube):
    # On a real cluster waits ride watch events; the embedded server's watches move its clock while idle.
    kube.backend._virtual = False
    kube.apply(lesson.WEB)
    took = kube.wait(lambda l: lesson.ready(l, "web") == 3, timeout=60)
    assert 0 <= took < 60
    with pytest.raises(TimeoutError, match="did not hold within 1 s"):
        kube.wait(lambda l: False, timeout=1)


def test_watch_yields_events(kube):
    kube.apply(lesson.WEB)
    seen = []
    for event, obj in kube.backend.watch("deployments", timeout=5):
        seen.append((event, obj["kind"], obj["metadata"]["name"]))
        break
    assert seen == [("ADDED", "Deployment", "web")]


def test_logs_and_exec(kube):
    kube.apply(lesson.ECHO)
    kube.wait(lambda l: len(lesson.running_pods(l, "client")) == 1)
    done = kube.backend.exec("client", ["hostname"], "default", None)
    assert (done.code, done.stdout.strip()) == (0, "client")
    assert isinstance(kube.logs("client"), str)


def test_kinds_the_lab_does_not_know_come_from_discovery(kube):
    info = kube.backend._resolve("deploy")
    assert (info.kind, info.group) == ("Deployment", "apps")
    with pytest.raises(Exception, match="doesn't have a resource type"):
        kube.backend._resolve("frobnicators")
    assert kube.backend._discovered(), "the embedded server serves discovery documents"


def test_kubectls_kubeconfig_follows_a_cluster_made_again(server, tmp_path, monkeypatch):
    import os
    import time
    monkeypatch.setenv("LABSUPPORT_STATE_DIR", str(tmp_path / "state"))
    source = tmp_path / "kind.kubeconfig"
    source.write_text(open(embedded_kubeconfig(server)).read())
    with Lab(backend="kube", kubeconfig=str(source)) as lab:
        first = lab.backend.kubeconfig()
        assert "127.0.0.1:9" not in open(first).read()
        later = time.time() + 5
        source.write_text(source.read_text().replace("server: ", "server: https://127.0.0.1:9 #", 1))
        os.utime(source, (later, later))
        assert "https://127.0.0.1:9" in open(lab.backend.kubeconfig()).read(), "the stale copy was kept"


def test_the_picture_sets_a_policy_on_a_service_of_the_students_own_namespace(server, tmp_path, monkeypatch):
    monkeypatch.setenv("LABSUPPORT_STATE_DIR", str(tmp_path))
    server.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "alice"}})
    with Lab(backend="kube", kubeconfig=embedded_kubeconfig(server), namespace="alice") as alice:
        graph = alice.graph(live=False)       # drawn before the Service exists, as in lesson 09
        alice.apply(lesson.echo_service("Cluster"))
        graph.set_external_traffic_policy("Local", service="echo")
        assert graph.service.value == "alice/echo"
        assert alice.get("svc", "echo")["spec"]["externalTrafficPolicy"] == "Local"
        assert server.get("svc", "echo", namespace="alice")["spec"]["externalTrafficPolicy"] == "Local"


# --- a lab on a shared namespace: what it made goes with it; its kubeconfig stays private; its client's address ----
def test_closing_a_lab_removes_what_it_made_and_nothing_else(server, tmp_path, monkeypatch):
    monkeypatch.setenv("LABSUPPORT_STATE_DIR", str(tmp_path / "state"))
    server.apply([{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "alice"}},
                  {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "before", "namespace": "alice"}}])
    config = embedded_kubeconfig(server)
    with Lab(backend="kube", kubeconfig=config, namespace="alice") as first:
        first.apply(lesson.WEB)
        first.apply(lesson.ECHO)
        first.apply({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "gone-already"}})
        first.delete("configmap", "gone-already")
        made = first.kubectl("create configmap by-kubectl --from-literal=a=b", show=False)
        assert made.ok, made
        first.wait(lambda l: lesson.ready(l, "web") == 3 and len(lesson.running_pods(l, "client")) == 1,
                   timeout=120)
    left = {(o["kind"], o["metadata"]["name"]) for kind in ("deployments", "services", "configmaps", "pods")
            for o in server.get(kind, namespace="alice")}
    assert ("ConfigMap", "before") in left, "what the lab did not make stays"
    assert not {kind for kind, name in left} & {"Deployment", "Service", "Pod"}, left
    assert ("ConfigMap", "by-kubectl") not in left and ("ConfigMap", "gone-already") not in left
    # the next lesson in the same namespace starts clean: its own client pod, its own web
    with Lab(backend="kube", kubeconfig=config, namespace="alice") as second:
        second.apply(lesson.ECHO)
        second.wait(lambda l: len(lesson.running_pods(l, "client")) == 1, timeout=120)
        assert [p["metadata"]["name"] for p in second.get("pods", selector="app=web")] == []


def test_kubectl_run_is_removed_with_the_lab_and_kubectl_delete_is_forgotten(server, tmp_path, monkeypatch):
    monkeypatch.setenv("LABSUPPORT_STATE_DIR", str(tmp_path / "state"))
    with Lab(backend="kube", kubeconfig=embedded_kubeconfig(server)) as lab:
        assert lab.kubectl("run idle --image=busybox:1.36 --restart=Never -- sleep 3600", show=False).ok
        assert lab.kubectl("run briefly --image=busybox:1.36 --restart=Never -- sleep 3600", show=False).ok
        assert lab.kubectl("delete pod briefly --wait=false", show=False).ok
        paths = list(lab.backend._made.objects)
        assert paths == ["/api/v1/namespaces/default/pods/idle"], paths
    assert [p["metadata"]["name"] for p in server.get("pods")] == []


def test_a_labs_kubeconfig_copy_is_private_and_goes_with_it(server, tmp_path, monkeypatch):
    import os
    import stat
    state = tmp_path / "state"
    monkeypatch.setenv("LABSUPPORT_STATE_DIR", str(state))
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "run"))
    (tmp_path / "run").mkdir()
    server.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "alice"}})
    with Lab(backend="kube", kubeconfig=embedded_kubeconfig(server), namespace="alice") as alice:
        copy = alice.backend.kubeconfig()
        folder = os.path.dirname(copy)
        assert folder.startswith(str(tmp_path / "run" / "labsupport-lab-"))
        assert stat.S_IMODE(os.stat(folder).st_mode) == 0o700 and stat.S_IMODE(os.stat(copy).st_mode) == 0o600
        assert alice.kubectl("get svc", show=False).ok
        # a kubeconfig whose context already names the namespace is used as it is: nothing is copied
        with Lab(backend="kube", kubeconfig=copy) as again:
            assert again.backend.kubeconfig() == copy
    assert not os.path.exists(folder), "the copy, with the token in it, is gone with the lab"
    assert not list(state.glob("*.kubeconfig")), "nothing left in the state folder"


def test_the_client_address_is_this_machines_own_on_its_route_to_the_nodes(kube):
    import ipaddress
    import subprocess
    node_ip = next(a["address"] for a in kube.get("nodes", "lab-worker")["status"]["addresses"]
                   if a["type"] == "InternalIP")
    route = subprocess.run(["ip", "-4", "route", "get", node_ip], capture_output=True, text=True)
    if route.returncode != 0:
        pytest.skip(f"no route to {node_ip} here: {route.stderr.strip()}")
    words = route.stdout.split()
    from labsupport.widgets import lesson as lesson_widgets
    address = lesson_widgets.client_address(kube)
    ipaddress.ip_address(address)
    assert address == words[words.index("src") + 1]


def test_the_first_request_after_a_write_waits_for_kube_proxy_on_its_node(kube, monkeypatch):
    """kube-proxy's health server says when it last wrote its rules; the request goes once that is after the write."""
    import json
    import threading
    import time
    from datetime import datetime, timezone
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
    from labsupport.kind import client as kube_client

    synced = {"at": time.time() - 30}

    def stamp(t: float) -> str:
        return datetime.fromtimestamp(t, timezone.utc).isoformat().replace("+00:00", "Z")

    class Health(BaseHTTPRequestHandler):
        def do_GET(self):
            body = json.dumps({"currentTime": stamp(time.time()), "lastUpdated": stamp(time.time()),
                               "status": {"IPv4": {"lastUpdated": stamp(synced["at"]), "healthy": True}}}).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    health = ThreadingHTTPServer(("127.0.0.1", 0), Health)
    threading.Thread(target=health.serve_forever, daemon=True).start()
    try:
        monkeypatch.setattr(kube_client, "KUBE_PROXY_HEALTHZ",
                            "http://{address}:" + str(health.server_address[1]) + "/healthz")
        monkeypatch.setattr(kube.backend, "_entry_addresses", lambda url, source: ["127.0.0.1"])
        kube.apply(lesson.echo_service("Cluster"))
        written = time.monotonic()
        threading.Timer(1.0, lambda: synced.update(at=time.time())).start()   # kube-proxy syncs a second later
        kube.backend._catch_up_for("http://172.18.0.3:30081/", "client")
        waited = time.monotonic() - written
        assert 1.0 <= waited < 5, waited
        again = time.monotonic()
        kube.backend._catch_up_for("http://172.18.0.3:30081/", "client")
        assert time.monotonic() - again < 0.5, "caught up once per write"
    finally:
        health.shutdown()


def test_a_node_without_a_health_server_is_not_waited_for(kube, monkeypatch):
    import time
    from labsupport.kind import client as kube_client
    monkeypatch.setattr(kube_client, "KUBE_PROXY_HEALTHZ", "http://{address}:9/healthz")
    monkeypatch.setattr(kube.backend, "_entry_addresses", lambda url, source: ["127.0.0.1"])
    kube.apply(lesson.echo_service("Cluster"))
    began = time.monotonic()
    kube.backend._catch_up_for("http://172.18.0.3:30081/", "client")
    assert time.monotonic() - began < 2


def test_doctests_of_what_a_lab_made_and_kube_proxys_health():
    import doctest
    from labsupport.kind import made, parse
    assert doctest.testmod(made).failed == 0 and doctest.testmod(made).attempted >= 2
    assert doctest.testmod(parse).failed == 0
