"""The exact docker and kind commands the kind backend runs, recorded instead of run; node verbs against the
embedded API server (for the Kubernetes side) with scripted node output (for the Docker side)."""
from __future__ import annotations

import io
from pathlib import Path

import pytest
import yaml

from labsupport import Lab
from labsupport.errors import BackendUnavailable, BadRequest, NotFound, ProxyModeUnavailable
from labsupport import tool_output
from labsupport.kind import parse
from labsupport.kind.cluster import CLIENT_STATE_FORMAT, IPVS_PROBE, KindCluster
from labsupport.kind.config import LESSON_IMAGES, NODE_IMAGE, config_problems
from labsupport.kind.progress import Progress, TerminalProgress
from labsupport.kind.runner import CommandResult, RecordingRunner
from tests.kind import lesson
from tests.kind.conftest import embedded_kubeconfig

DATA = Path(__file__).parent / "data"
KIND_CREATE_OUTPUT = """Creating cluster "labsupport" ...
 ✓ Ensuring node image (kindest/node:v1.37.0) 🖼
 ✓ Preparing nodes 📦 📦 📦 📦
 ✓ Writing configuration 📜
 ✓ Starting control-plane 🕹️
 ✓ Installing CNI 🔌
 ✓ Installing StorageClass 💾
 ✓ Joining worker nodes 🚜
 ✓ Waiting ≤ 3m0s for control-plane = Ready ⏳
 • Ready after 21s 💚
Set kubectl context to "kind-labsupport"
"""


@pytest.fixture
def state(tmp_path, monkeypatch):
    """A private state directory for kubeconfigs and generated configs."""
    monkeypatch.setenv("LABSUPPORT_STATE_DIR", str(tmp_path))
    return tmp_path


def test_create_runs_kind_with_the_generated_config(state):
    runner = RecordingRunner()
    runner.answer(["kind", "get", "clusters"], stdout="No kind clusters found.\n")
    runner.answer(["kind", "create", "cluster"], stdout=KIND_CREATE_OUTPUT)
    cluster = KindCluster("labsupport", "nftables", runner, progress="quiet")
    assert cluster.ensure() is True
    assert runner.commands() == [
        "kind get clusters",
        "docker image inspect --format {{.Id}} labsupport/kind-node:v1.37.2",
        f"kind create cluster --name labsupport --config {state}/kind-labsupport.yaml --kubeconfig "
        f"{state}/kind-labsupport.kubeconfig --wait 180s"]
    written = yaml.safe_load((state / "kind-labsupport.yaml").read_text())
    assert written["networking"]["kubeProxyMode"] == "nftables" and config_problems(written) == []
    assert {n["image"] for n in written["nodes"]} == {NODE_IMAGE}, "no local node image: kind's own"


def test_create_uses_the_node_image_built_here_on_the_labs_network(state):
    runner = RecordingRunner()
    runner.answer(["kind", "get", "clusters"], stdout="No kind clusters found.\n")
    runner.answer(["docker", "image", "inspect", "--format", "{{.Id}}", "labsupport/kind-node:v1.37.2"],
                  stdout="sha256:abc\n")
    runner.answer(["docker", "network", "inspect"], returncode=1, stderr="Error: No such network: kind\n")
    cluster = KindCluster("labsupport", "nftables", runner, workers=1, progress="quiet")
    cluster.cgroup_v1 = cluster.restrict_oom_score_adj = True
    assert cluster.ensure() is True
    made = next(c for c in runner.commands() if c.startswith("docker network create"))
    assert "--subnet 172.30.0.0/16 --ip-range 172.30.0.0/17" in made and made.endswith(" kind")
    assert runner.commands()[-1].startswith("kind create cluster --name labsupport")
    written = yaml.safe_load((state / "kind-labsupport.yaml").read_text())
    assert {n["image"] for n in written["nodes"]} == {"labsupport/kind-node:v1.37.2"}
    assert len(written["nodes"]) == 2 and config_problems(written) == []
    assert "failCgroupV1: false" in written["kubeadmConfigPatches"][1]
    assert "restrict_oom_score_adj = true" in written["containerdConfigPatches"][0]


def test_reuse_writes_kinds_kubeconfig(state):
    runner = RecordingRunner()
    runner.answer(["kind", "get", "clusters"], stdout="labsupport\n")
    runner.answer(["kind", "get", "kubeconfig", "--name", "labsupport"], stdout="apiVersion: v1\nkind: Config\n")
    cluster = KindCluster("labsupport", "iptables", runner)
    assert cluster.ensure() is False
    assert runner.commands() == ["kind get clusters", "kind get kubeconfig --name labsupport"]
    assert (state / "kind-labsupport.kubeconfig").read_text() == "apiVersion: v1\nkind: Config\n"
    assert (state / "kind-labsupport.kubeconfig").stat().st_mode & 0o777 == 0o600


def test_create_failure_says_what_kind_said(state):
    runner = RecordingRunner()
    runner.answer(["kind", "create"], returncode=1, stdout=" ✗ Preparing nodes 📦\nERROR: failed to create "
                  "cluster: could not find a log line that matches \"Reached target .*Multi-User System.*\"\n")
    with pytest.raises(BackendUnavailable, match=r"`kind create cluster --name labsupport` failed \(exit code 1\)"
                                                 r":\n✗ Preparing nodes"):
        KindCluster("labsupport", "iptables", runner, progress="quiet").create()


def test_no_cluster_and_create_false(state):
    with pytest.raises(BackendUnavailable, match="there is no kind cluster named labsupport"):
        KindCluster("labsupport", "iptables", RecordingRunner()).ensure(create=False)


def test_names_carry_the_prefix():
    with pytest.raises(BadRequest, match="starts with 'labsupport'.*try 'labsupport-demo'"):
        KindCluster("demo")


def test_images_preloaded_only_when_present(state):
    runner = RecordingRunner()
    runner.answer(["docker", "image", "inspect", "--format", "{{.Id}}", "nginx:1.27"], stdout="sha256:1\n")
    runner.answer(["docker", "image", "inspect"], returncode=1, stderr="Error: No such image\n")
    loaded = KindCluster("labsupport", "iptables", runner, progress="quiet").load_images()
    assert loaded == ["nginx:1.27"]
    assert [c for c in runner.commands() if c.startswith("kind")] == ["kind load docker-image nginx:1.27 --name "
                                                                       "labsupport"]
    assert len([c for c in runner.commands() if c.startswith("docker image inspect")]) == len(LESSON_IMAGES)
    assert "registry.k8s.io/e2e-test-images/agnhost:2.53" in LESSON_IMAGES


def test_client_container_on_the_kind_network(state):
    runner = RecordingRunner()
    runner.answer(["docker", "inspect", "-f", CLIENT_STATE_FORMAT], returncode=1, stderr="No such object\n")
    cluster = KindCluster("labsupport", "iptables", runner)
    cluster.client_exec(["curl", "http://172.18.0.3:30080/"])
    assert runner.commands() == [
        f"docker inspect -f {CLIENT_STATE_FORMAT} labsupport-client",
        "docker run -d --name labsupport-client --network kind --label dev.labsupport.client=labsupport "
        "--cap-add NET_ADMIN --sysctl net.ipv4.fib_multipath_hash_policy=1 "
        "--entrypoint sleep curlimages/curl:8.11.1 infinity",
        "docker exec labsupport-client curl http://172.18.0.3:30080/"]


@pytest.mark.parametrize("state_line,made", [("true NET_ADMIN 1\n", False), ("true CAP_NET_ADMIN 1\n", False),
                                             ("true  <no value>\n", True), ("false NET_ADMIN 1\n", True)])
def test_a_client_container_without_route_rights_is_made_again(state, state_line, made):
    runner = RecordingRunner()
    runner.answer(["docker", "inspect", "-f", CLIENT_STATE_FORMAT], stdout=state_line)
    KindCluster("labsupport", "iptables", runner).client_exec(["ip", "-batch", "-"], "route del 10.0.0.1/32\n")
    assert ("docker rm -f labsupport-client" in runner.commands()) is made
    assert any(c.startswith("docker run -d --name labsupport-client") for c in runner.commands()) is made
    assert runner.commands()[-1] == "docker exec -i labsupport-client ip -batch -"
    assert runner.inputs[-1] == "route del 10.0.0.1/32\n"


def test_node_commands(state):
    runner = RecordingRunner()
    runner.answer(["kind", "get", "nodes"], stdout="labsupport-worker\nlabsupport-control-plane\nlabsupport-worker3\n"
                                                   "labsupport-worker2\n")
    runner.answer(["docker", "inspect", "-f", "{{.State.Pid}}"], stdout="4242\n")
    cluster = KindCluster("labsupport", "iptables", runner)
    assert cluster.nodes() == ["labsupport-control-plane", "labsupport-worker", "labsupport-worker2",
                               "labsupport-worker3"]
    assert cluster.node_pid("labsupport-worker") == 4242
    cluster.node_exec("labsupport-worker", ["iptables-save"])
    assert runner.commands()[-1] == "docker exec labsupport-worker iptables-save"


def test_progress_follows_kinds_steps():
    out = io.StringIO()
    progress = TerminalProgress("Creating kind cluster labsupport", 8, stream=out)
    for line in KIND_CREATE_OUTPUT.splitlines():
        progress.line(line)
    assert progress.done == 8 and not progress.failed
    progress.finish(True)
    assert "[########################] 8/8" in out.getvalue()
    quiet = Progress("x", 8)
    quiet.line(" ✗ Preparing nodes 📦")
    assert quiet.failed


def test_the_progress_speaks_the_students_language(state, monkeypatch):
    """In a Russian lesson the widget's title and the lab's own words are Russian; kind's own lines stay kind's."""
    monkeypatch.setenv("LABSUPPORT_LANG", "ru")
    shown = []
    monkeypatch.setattr("labsupport.kind.cluster.make_progress",
                        lambda title, total, kind=None: shown.append(title) or Progress(title, total))
    runner = RecordingRunner()
    runner.answer(["kind", "get", "clusters"], stdout="No kind clusters found.\n")
    runner.answer(["kind", "create", "cluster"], stdout=KIND_CREATE_OUTPUT)
    runner.answer(["docker", "image", "inspect", "--format", "{{.Id}}", "nginx:1.27"], stdout="sha256:1\n")
    cluster = KindCluster("labsupport-ru", "nftables", runner, progress="quiet")
    cluster.ensure()
    cluster.load_images(("nginx:1.27",))
    assert shown == ["Создаю kind-кластер labsupport-ru (режим kube-proxy nftables)",
                     "Загружаю образы в labsupport-ru: 1"]
    out = io.StringIO()
    bar = TerminalProgress(shown[0], 1, stream=out)
    bar.finish(True)
    assert out.getvalue().rstrip().endswith("готово")


# --- node verbs: the embedded API server for objects, scripted docker output for nodes ----------------------

def existing_cluster(server: Lab) -> RecordingRunner:
    """A recorder that plays an existing kind cluster `labsupport` whose API server is the embedded one."""
    config = Path(embedded_kubeconfig(server)).read_text()
    runner = RecordingRunner()
    runner.answer(["kind", "get", "clusters"], stdout="labsupport\n")
    runner.answer(["kind", "get", "kubeconfig"], stdout=config)
    runner.answer(["kind", "get", "nodes"], stdout="lab-control-plane\nlab-worker\nlab-worker2\nlab-worker3\n")
    runner.answer(["docker", "image", "inspect"], returncode=1)
    return runner


@pytest.fixture
def kind_lab(server, state):
    """A kind lab whose Kubernetes side is the embedded API server and whose Docker side is a recorder."""
    runner = existing_cluster(server)
    lab = Lab(backend="kind", runner=runner, preflight=False, progress="quiet")
    lab.runner = runner
    yield lab
    lab.close()


def test_kind_lab_reuses_and_reads_objects(kind_lab):
    assert kind_lab.backend_name == "kind"
    assert kind_lab.kubeconfig.endswith("kind-labsupport.kubeconfig")
    assert len(kind_lab.get("nodes")) == 4
    assert kind_lab.proxy_mode == "iptables"
    assert "kind get kubeconfig --name labsupport" in kind_lab.runner.commands()


def test_proxy_rules_per_mode(kind_lab):
    runner = kind_lab.runner
    runner.answer(["docker", "exec", "lab-worker", "iptables-save"],
                  stdout=(DATA / "iptables-save-c-kind-worker.txt").read_text())
    rules = kind_lab.proxy_rules()
    assert "KIND-MASQ-AGENT" not in rules and "-A KUBE-SVC-LOLE4ISW44XBNF3G" in rules
    assert runner.commands()[-1] == "docker exec lab-worker iptables-save"
    runner.answer(["docker", "exec", "lab-worker2", "nft"], stdout=parse.nft_table(
        (DATA / "nft-list-ruleset-kind-worker.txt").read_text()))
    kind_lab.set_proxy_mode("nftables")
    assert kind_lab.proxy_mode == "nftables"
    assert kind_lab.proxy_rules("lab-worker2").startswith("table ip kube-proxy {")
    assert runner.commands()[-1] == "docker exec lab-worker2 nft list table ip kube-proxy"
    kind_lab.set_proxy_mode("ipvs")
    runner.answer(["docker", "exec", "lab-worker", "ipvsadm"], returncode=127, stderr="exec: ipvsadm not found")
    runner.answer(["docker", "exec", "lab-worker", "ipset"], returncode=127, stderr='OCI runtime exec failed: exec '
                  'failed: unable to start container process: exec: "ipset": executable file not found in $PATH')
    runner.answer(["docker", "exec", "lab-worker", "cat", "/proc/net/ip_vs"],
                  stdout=(DATA / "proc-net-ip_vs.txt").read_text())
    bundle = kind_lab.proxy_rules("node/lab-worker")
    assert bundle.startswith("# ipvsadm -Ln\n") and "TCP  10.111.76.235:80 rr" in bundle
    kube_proxy = next(p["metadata"]["name"] for p in kind_lab.get("pods", namespace="kube-system",
                                                                  selector="k8s-app=kube-proxy")
                      if p["spec"]["nodeName"] == "lab-worker")
    commands = runner.commands()
    assert commands[commands.index("docker exec lab-worker cat /proc/net/ip_vs") + 1:] == [
        "docker exec lab-worker ip -brief addr show kube-ipvs0",
        "docker exec lab-worker ipset list",
        f"{runner.calls[-2][0]} --kubeconfig {kind_lab.kubeconfig} exec -n kube-system {kube_proxy} -- ipset list",
        "docker exec lab-worker iptables-save"]
    with pytest.raises(NotFound):
        kind_lab.proxy_rules("nope")


def test_ipvs_is_refused_before_anything_changes_when_the_kernel_lacks_it(kind_lab):
    runner = kind_lab.runner
    runner.answer(["docker", "exec", "lab-worker", "sh", "-c", IPVS_PROBE], returncode=1)
    runner.answer(["docker", "exec", "lab-worker", "uname", "-r"], stdout="6.18.44-test\n")
    before = kind_lab.get("configmap", "kube-proxy", namespace="kube-system")["data"]["config.conf"]
    with pytest.raises(ProxyModeUnavailable) as refused:
        kind_lab.set_proxy_mode("ipvs")
    assert refused.value.mode == "ipvs" and "6.18.44-test" in refused.value.reason
    assert "stays in iptables mode" in str(refused.value) and 'proxy_mode="ipvs"' in str(refused.value)
    assert kind_lab.get("configmap", "kube-proxy", namespace="kube-system")["data"]["config.conf"] == before
    assert kind_lab.proxy_mode == "iptables"


def test_a_node_name_of_the_embedded_cluster_lands_on_the_same_kind_node(kind_lab):
    # kind names the nodes after the cluster; the embedded API server behind this lab keeps its own names
    kind_lab.runner.answer_in_turn(["kind", "get", "nodes"], "labsupport-control-plane\nlabsupport-worker\n"
                                                             "labsupport-worker2\nlabsupport-worker3\n")
    pod = kind_lab.apply({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "pinned"},
                          "spec": {"nodeName": "lab-worker2", "containers": [{"name": "c", "image": "busybox:1.36"}]}})
    assert pod[0]["spec"]["nodeName"] == "labsupport-worker2"
    deploy = kind_lab.apply({
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "near"},
        "spec": {"selector": {"matchLabels": {"app": "near"}}, "template": {
            "metadata": {"labels": {"app": "near"}},
            "spec": {"nodeSelector": {"kubernetes.io/hostname": "lab-worker"},
                     "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                         "nodeSelectorTerms": [{"matchExpressions": [
                             {"key": "kubernetes.io/hostname", "operator": "In", "values": ["lab-worker3", "x"]}]}]}}},
                     "containers": [{"name": "c", "image": "busybox:1.36"}]}}}})
    spec = deploy[0]["spec"]["template"]["spec"]
    assert spec["nodeSelector"] == {"kubernetes.io/hostname": "labsupport-worker"}
    assert spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"][0][
        "matchExpressions"][0]["values"] == ["labsupport-worker3", "x"]
    with pytest.raises(NotFound):
        kind_lab.proxy_rules("lab-worker9")


def test_conntrack_and_node_internals(kind_lab):
    runner = kind_lab.runner
    runner.answer(["docker", "exec", "lab-worker", "conntrack", "-L"], stdout=(DATA / "conntrack-L.txt").read_text())
    lines = kind_lab.conntrack()
    assert len(lines) == 6 and lines[0].startswith("tcp      6 117 TIME_WAIT")
    runner.answer(["docker", "exec", "lab-worker", "ip", "-4", "route"],
                  stdout="default via 172.18.0.1 dev eth0\n10.244.2.0/24 via 172.18.0.4 dev eth0\n")
    assert kind_lab.backend.node_routes()[0] == "default via 172.18.0.1 dev eth0"


def test_curl_sources_and_the_answering_pod_from_conntrack(kind_lab):
    lab, runner = kind_lab, kind_lab.runner
    lab.apply(lesson.WEB)
    lab.wait(lambda l: lesson.ready(l, "web") == 3)
    pod = lesson.running_pods(lab, "web")[0]
    nginx = "<!DOCTYPE html>\n<title>Welcome to nginx!</title>\n"
    runner.answer(["docker", "inspect", "-f", "{{.State.Running}}"], stdout="true\n")
    runner.answer(["docker", "exec", "labsupport-client", "curl"],
                  stdout=nginx + tool_output.CURL_MARK + " 200 172.18.0.3 30080 172.18.0.9 48812\n")
    runner.answer(["docker", "exec", "lab-worker", "conntrack", "-L", "-p", "tcp", "--orig-port-src", "48812"],
                  stdout=f"tcp      6 117 TIME_WAIT src=172.18.0.9 dst=172.18.0.3 sport=48812 dport=30080 "
                         f"src={pod['status']['podIP']} dst=172.18.0.3 sport=80 dport=6001 [ASSURED] mark=0 use=1\n")
    result = lab.curl("http://172.18.0.3:30080/")
    assert result.ok and result.body == nginx.rstrip("\n")
    assert result.pod == pod["metadata"]["name"] and result.node == pod["spec"]["nodeName"]
    assert result.endpoint == f"{pod['status']['podIP']}:80"
    assert (result.client_ip, result.client_port) == ("172.18.0.3", 6001), "masqueraded to the node's address"
    argv = runner.calls[-2]
    assert argv[:5] == ["docker", "exec", "labsupport-client", "curl", "-sS"] and argv[-1] == "http://172.18.0.3:30080/"
    runner.answer(["docker", "exec", "lab-worker2", "curl"], returncode=7, stdout=tool_output.CURL_MARK + " 000  0  0\n",
                  stderr="curl: (7) Failed to connect to 10.96.0.99 port 80 after 0 ms: Couldn't connect to server\n")
    refused = lab.curl("http://10.96.0.99/", source="node/lab-worker2")
    assert refused.refused and not refused.ok and refused.error.startswith("curl: (7)")


BATCH_BOUNDARY = "__labsupport_batch_b0__"


def web_pods_and_one_boundary(lab, monkeypatch) -> list[dict]:
    """The lesson's web Deployment ready (its pods returned), and every batch of requests marked BATCH_BOUNDARY."""
    lab.apply(lesson.WEB)
    lab.wait(lambda l: lesson.ready(l, "web") == 3)
    monkeypatch.setattr("labsupport.kind.cluster.secrets.token_hex", lambda n: "b0")
    lab.runner.answer(["docker", "inspect", "-f", "{{.State.Running}}"], stdout="true\n")
    return lesson.running_pods(lab, "web")


def answered_runs(body: str, ports: tuple[int, ...]) -> str:
    """What a batch's shell prints for requests from the client (172.18.0.9) from `ports`, each answered 200."""
    return "".join(f"\n{BATCH_BOUNDARY} 0\n{body}{tool_output.CURL_MARK} 200 172.18.0.3 30080 172.18.0.9 {port}\n"
                   f"\n{BATCH_BOUNDARY}\n" for port in ports)


def time_wait_entry(port: int, pod: dict) -> str:
    """The conntrack line of a closed request from the client's `port` to a NodePort, answered by `pod`."""
    return (f"tcp      6 117 TIME_WAIT src=172.18.0.9 dst=172.18.0.3 sport={port} dport=30080 "
            f"src={pod['status']['podIP']} dst=172.18.0.3 sport=80 dport={port + 1000} [ASSURED] mark=0 use=1\n")


def test_a_batch_of_requests_runs_curl_in_one_command_and_reads_each_nodes_conntrack_once(kind_lab, monkeypatch):
    lab, runner = kind_lab, kind_lab.runner
    pods = web_pods_and_one_boundary(lab, monkeypatch)
    boundary = BATCH_BOUNDARY
    nginx = "<!DOCTYPE html>\n<title>Welcome to nginx!</title>\n"
    refused = (f"\n{boundary} 7\n{tool_output.CURL_MARK} 000  0  0\n\n{boundary}\ncurl: (7) Failed to connect to "
               f"172.18.0.3 port 30080 after 0 ms: Couldn't connect to server\n")
    runner.answer(["docker", "exec", "labsupport-client", "sh", "-c"],
                  stdout=answered_runs(nginx, (48812, 48813)) + refused + f"\n{boundary}\n")
    runner.answer(["docker", "exec", "lab-worker", "conntrack", "-L", "-p", "tcp", "--orig-src", "172.18.0.9"],
                  stdout=time_wait_entry(48812, pods[0]) + time_wait_entry(48813, pods[1]))
    results = lab.backend.curl_batch("http://172.18.0.3:30080/", "client", 3)
    assert [r.pod for r in results] == [pods[0]["metadata"]["name"], pods[1]["metadata"]["name"], None]
    assert [r.client_ip for r in results] == ["172.18.0.3", "172.18.0.3", None], "masqueraded to the node"
    assert results[0].ok and results[0].body == nginx.rstrip("\n") and results[0].endpoint == \
        f"{pods[0]['status']['podIP']}:80"
    assert results[2].refused and results[2].error.startswith("curl: (7)")
    batch = [c for c in runner.calls if c[:5] == ["docker", "exec", "labsupport-client", "sh", "-c"]]
    assert len(batch) == 1 and batch[0][7:9] == [boundary, "3"] and batch[0][9:11] == ["curl", "-sS"]
    assert batch[0][-1] == "http://172.18.0.3:30080/"
    assert [c for c in runner.commands() if "conntrack" in c] == [
        "docker exec lab-worker conntrack -L -p tcp --orig-src 172.18.0.9"], "one read of the node's table"


def test_a_conntrack_dump_that_failed_part_way_is_read_again(kind_lab, monkeypatch):
    # On a busy node a dump of a large table can stop part way (the netlink socket overrun): what it printed lacks
    # entries. The table is read again, and every request of the batch learns who answered.
    lab, runner = kind_lab, kind_lab.runner
    pods = web_pods_and_one_boundary(lab, monkeypatch)
    monkeypatch.setattr("labsupport.kind.cluster.time.sleep", lambda s: None)
    runner.answer(["docker", "exec", "labsupport-client", "sh", "-c"],
                  stdout=answered_runs("hi\n", (48812, 48813)) + f"\n{BATCH_BOUNDARY}\n")
    dump = ["docker", "exec", "lab-worker", "conntrack", "-L", "-p", "tcp", "--orig-src", "172.18.0.9"]
    overrun = "conntrack v1.4.7 (conntrack-tools): Operation failed: No buffer space available\n"
    runner.answer_in_turn(dump, CommandResult(dump, 1, time_wait_entry(48812, pods[0]), overrun),
                          time_wait_entry(48812, pods[0]) + time_wait_entry(48813, pods[1]))
    results = lab.backend.curl_batch("http://172.18.0.3:30080/", "client", 2)
    assert [r.pod for r in results] == [pods[0]["metadata"]["name"], pods[1]["metadata"]["name"]]
    assert [c for c in runner.commands() if "conntrack" in c] == [" ".join(dump)] * 2


def test_a_batch_the_shell_could_not_finish_sends_the_rest_one_by_one(kind_lab, monkeypatch):
    lab, runner = kind_lab, kind_lab.runner
    monkeypatch.setattr("labsupport.kind.cluster.secrets.token_hex", lambda n: "b0")
    boundary = "__labsupport_batch_b0__"
    runner.answer(["docker", "inspect", "-f", "{{.State.Running}}"], stdout="true\n")
    runner.answer(["docker", "exec", "labsupport-client", "sh", "-c"], returncode=124,
                  stdout=f"\n{boundary} 0\nhi\n{tool_output.CURL_MARK} 200 172.18.0.3 30080 0.0.0.0 0\n\n{boundary}\n"
                         f"\n{boundary} 0\nh")
    runner.answer(["docker", "exec", "labsupport-client", "curl"],
                  stdout=f"again\n{tool_output.CURL_MARK} 200 172.18.0.3 30080 0.0.0.0 0\n")
    results = lab.backend.curl_batch("http://172.18.0.3:30080/", "client", 3)
    assert [r.body for r in results] == ["hi", "again", "again"]
    assert sum(c[3] == "curl" for c in runner.calls if c[:3] == ["docker", "exec", "labsupport-client"]) == 2


@pytest.mark.parametrize("language, counted", [("en", "1 kube-proxy rule(s) counted this request"),
                                               ("ru", "правил kube-proxy, посчитавших этот запрос: 1")])
def test_trace_shows_counters_that_moved_and_the_conntrack_entry(kind_lab, monkeypatch, language, counted):
    monkeypatch.setenv("LABSUPPORT_LANG", language)
    lab, runner = kind_lab, kind_lab.runner
    before = (DATA / "iptables-save-c-kind-worker.txt").read_text()
    line = next(l for l in before.splitlines() if "-A KUBE-SEP-7QE66YRUUVCO6FRM" in l and "DNAT" in l)
    packets = int(line[1:line.index(":")])
    after = before.replace(line, line.replace(f"[{packets}:", f"[{packets + 1}:", 1))
    runner.answer_in_turn(["docker", "exec", "lab-worker", "iptables-save", "-c"], before, after)
    runner.answer(["docker", "inspect", "-f", "{{.State.Running}}"], stdout="true\n")
    runner.answer(["docker", "exec", "labsupport-client", "curl"],
                  stdout="hi\n" + tool_output.CURL_MARK + " 200 172.18.0.3 30080 172.18.0.9 48812\n")
    runner.answer(["docker", "exec", "lab-worker", "conntrack", "-L", "-p", "tcp"],
                  stdout=(DATA / "conntrack-L.txt").read_text().replace("sport=48812", "sport=48812")
                  .replace("src=172.18.0.5 dst=172.18.0.3 sport=48812", "src=172.18.0.9 dst=172.18.0.3 sport=48812"))
    trace = lab.trace("http://172.18.0.3:30080/")
    hop = trace.hops[-1]
    assert hop.where == "lab-worker" and counted in hop.what
    (hit,) = hop.rules
    assert hit.chain == "KUBE-SEP-7QE66YRUUVCO6FRM" and hit.action == "DNAT" and hit.packets == 1
    # the rewrites are the NAT alone, DNAT first as on sim (a lesson reads trace.rewrites[0]); the entry is in the note
    assert hop.rewrites[0] == "DNAT 172.18.0.3:30080 -> 10.244.2.3:80"
    assert hop.rewrites[1].startswith("SNAT 172.18.0.9:48812 -> 172.18.0.3:17234") and len(hop.rewrites) == 2
    assert "conntrack: tcp " in hop.what and "sport=48812" in hop.what
    if language == "en":
        assert "trace http://172.18.0.3:30080/ from client" in trace.text()


def test_stop_and_start_kube_proxy(kind_lab):
    lab = kind_lab
    lab.stop_kube_proxy("lab-worker")
    node = lab.get("nodes", "lab-worker")
    assert node["metadata"]["labels"]["labsupport.dev/kube-proxy-stopped"] == "true"
    ds = lab.get("daemonsets", "kube-proxy", namespace="kube-system")
    terms = ds["spec"]["template"]["spec"]["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert {"key": "labsupport.dev/kube-proxy-stopped", "operator": "DoesNotExist"} in terms[0]["matchExpressions"]
    assert not lab.backend._proxy_running("lab-worker")
    lab.start_kube_proxy("lab-worker")
    assert lab.backend._proxy_running("lab-worker")


def test_preflight_refuses_with_every_problem(state):
    runner = RecordingRunner(programs={"docker": None, "kind": None})
    with pytest.raises(BackendUnavailable) as info:
        Lab(backend="kind", runner=runner)
    text = str(info.value)
    assert text.startswith("the kind backend cannot run here:\n  - Docker is not installed")
    assert "\n  - kind is not installed" in text and "labsupport doctor" in text


def test_reusing_a_cluster_in_another_mode_switches_kube_proxy(server, state):
    runner = existing_cluster(server)
    with Lab(backend="kind", proxy_mode="nftables", runner=runner, preflight=False, progress="quiet") as lab:
        assert lab.proxy_mode == "nftables"
        config = yaml.safe_load(lab.get("configmaps", "kube-proxy", namespace="kube-system")["data"]["config.conf"])
        assert config["mode"] == "nftables"
        assert not any(c.startswith("kind create") for c in runner.commands()), "reused, not created"


def test_a_lessons_embedded_node_name_reaches_the_kind_node_of_that_role(kind_lab):
    runner = kind_lab.runner
    runner.answer_in_turn(["kind", "get", "nodes"], "labsupport-control-plane\nlabsupport-worker\n")
    runner.answer(["docker", "exec", "labsupport-worker", "iptables-save"],
                  stdout=(DATA / "iptables-save-c-kind-worker.txt").read_text())
    assert "-A KUBE-SVC-LOLE4ISW44XBNF3G" in kind_lab.proxy_rules("node/lab-worker")
    assert runner.commands()[-1] == "docker exec labsupport-worker iptables-save"
    from labsupport.errors import NotFound
    with pytest.raises(NotFound):
        kind_lab.proxy_rules("node/lab-worker7")


def test_a_node_name_in_a_url_is_curled_at_that_nodes_address(kind_lab):
    worker = kind_lab.get("nodes", "lab-worker")
    ip = next(a["address"] for a in worker["status"]["addresses"] if a["type"] == "InternalIP")
    kind_lab.curl("http://lab-worker:30080/hostname")
    curls = [c for c in kind_lab.runner.commands() if c.startswith("docker exec") and " curl " in c]
    assert curls and curls[-1].endswith(f" http://{ip}:30080/hostname")
    kind_lab.curl("http://lab-nowhere:30080/")
    assert [c for c in kind_lab.runner.commands() if " curl " in c][-1].endswith(" http://lab-nowhere:30080/")


def metrics_command(node: str = "lab-worker") -> list[str]:
    """The command that reads kube-proxy's metrics on a node (the runner answers it)."""
    from labsupport.kind.cluster import KUBE_PROXY_METRICS
    return ["docker", "exec", node, "curl", "-s", "--max-time", "2", KUBE_PROXY_METRICS]


def kube_proxy_metrics(queued: float, synced: float) -> str:
    """kube-proxy's /metrics as a node serves it, with its last queued and last finished sync of the rules."""
    return ("# HELP kubeproxy_sync_proxy_rules_last_queued_timestamp_seconds [ALPHA] The last time a sync of proxy "
            "rules was queued\n# TYPE kubeproxy_sync_proxy_rules_last_queued_timestamp_seconds gauge\n"
            f'kubeproxy_sync_proxy_rules_last_queued_timestamp_seconds{{ip_family="IPv4"}} {queued:.9e}\n'
            f'kubeproxy_sync_proxy_rules_last_timestamp_seconds{{ip_family="IPv4"}} {synced:.9e}\n'
            "kubeproxy_sync_proxy_rules_duration_seconds_count 12\n")


def test_traffic_after_a_write_waits_for_kube_proxy_to_sync_it(kind_lab):
    import time
    from labsupport.kind.cluster import NOTICE_SECONDS
    runner = kind_lab.runner
    metrics = metrics_command()
    kind_lab.curl("http://10.96.0.1/", source="node/lab-worker")
    assert not [c for c in runner.calls if c == metrics], "waited for kube-proxy though nothing was written"
    soon = time.time() + 60
    # noticed the write, not yet synced; then synced
    runner.answer_in_turn(metrics, kube_proxy_metrics(soon, soon - 30), kube_proxy_metrics(soon, soon + 1))
    kind_lab.apply({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
                    "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]}})
    written = time.monotonic()
    kind_lab.curl("http://10.96.0.1/", source="node/lab-worker")
    # it read the metrics until the sync was done and the controllers' writes had time to follow
    assert time.monotonic() - written >= NOTICE_SECONDS
    polls = len([c for c in runner.calls if c == metrics])
    assert polls >= 2
    kind_lab.curl("http://10.96.0.1/", source="node/lab-worker")
    assert len([c for c in runner.calls if c == metrics]) == polls, "waited again with no new write"


def test_traffic_waits_for_a_kube_proxy_slow_to_notice_the_write(kind_lab):
    """On a busy machine kube-proxy's informers may see a write seconds late: until then its metrics show only the
    syncs before the write, all done, and a request sent then meets the old rules (lesson 09 on kind: the echo
    Service's new externalTrafficPolicy not yet written, the client's address still SNATed)."""
    import time
    from labsupport.kind.cluster import NOTICE_SECONDS
    runner = kind_lab.runner
    metrics = metrics_command()
    before = time.time() - 10
    later = time.time() + 60
    unnoticed = [kube_proxy_metrics(before, before + 1)] * 10     # 10 polls: about 2 s, past NOTICE_SECONDS
    runner.answer_in_turn(metrics, *unnoticed, kube_proxy_metrics(later, before + 1), kube_proxy_metrics(later, later))
    kind_lab.apply({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
                    "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]}})
    began = time.monotonic()
    kind_lab.curl("http://10.96.0.1/", source="node/lab-worker")
    assert time.monotonic() - began >= NOTICE_SECONDS
    assert len([c for c in runner.calls if c == metrics]) == 12, "went before kube-proxy had queued the write"


def test_a_write_kube_proxy_does_not_act_on_is_waited_for_a_bounded_time(kind_lab, monkeypatch):
    import time
    from labsupport.kind import cluster as kind_cluster_module
    monkeypatch.setattr(kind_cluster_module, "QUIET_SECONDS", 2.0)
    metrics = metrics_command()
    before = time.time() - 10
    kind_lab.runner.answer_in_turn(metrics, kube_proxy_metrics(before, before + 1))
    kind_lab.apply({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings"}, "data": {"a": "1"}})
    began = time.monotonic()
    kind_lab.curl("http://10.96.0.1/", source="node/lab-worker")
    waited = time.monotonic() - began
    assert 2.0 <= waited < kind_cluster_module.CATCH_UP_SECONDS, waited


def test_a_proxy_mode_switch_waits_for_every_new_kube_proxys_first_sync(kind_lab, monkeypatch):
    import time
    runner = kind_lab.runner
    nodes = kind_lab.backend.kind_cluster.nodes()
    metrics = metrics_command
    now = time.time()
    starting = ("# HELP kubeproxy_sync_proxy_rules_duration_seconds ...\n"   # up, no sync yet: no sync gauges
                "kubeproxy_sync_proxy_rules_duration_seconds_count 0\n")
    runner.answer(metrics(nodes[0]), returncode=7, stderr="")                     # not listening yet, for good
    for node in nodes[1:]:
        runner.answer_in_turn(metrics(node), starting, kube_proxy_metrics(now, now))
    from labsupport.kind import cluster as kind_cluster_module
    monkeypatch.setattr(kind_cluster_module, "RULES_WRITTEN_SECONDS", 2.0)
    began = time.monotonic()
    kind_lab.set_proxy_mode("nftables")
    waited = time.monotonic() - began
    asked = {node: len([c for c in runner.calls if c == metrics(node)]) for node in nodes}
    assert all(asked[node] == 2 for node in nodes[1:]), f"each asked until its first sync showed: {asked}"
    assert asked[nodes[0]] > 2 and waited >= 2.0, "a kube-proxy that never answers is waited for, bounded"


def test_kube_proxy_sync_marks_of_every_ip_family():
    text = kube_proxy_metrics(100.5, 99.0) + kube_proxy_metrics(98.0, 101.0).replace("IPv4", "IPv6")
    assert parse.sync_marks(text) == (100.5, 99.0)
    assert parse.sync_marks("# no kube-proxy here\nprocess_cpu_seconds_total 3\n") is None
def test_a_refused_request_to_a_ready_service_waits_for_kube_proxys_sync(kind_lab, monkeypatch):
    from labsupport.kind import client as kube_client_module
    monkeypatch.setattr(kube_client_module, "SYNC_GRACE", 1.2)
    kind_lab.apply(lesson.WEB.split("---")[0])
    kind_lab.apply(lesson.echo_service("Cluster").replace("echo", "web").replace("targetPort: 8080", "targetPort: 80"))
    kind_lab.wait(lambda l: lesson.ready(l, "web") == 3, timeout=120)
    worker = kind_lab.get("nodes", "lab-worker")
    ip = next(a["address"] for a in worker["status"]["addresses"] if a["type"] == "InternalIP")
    kind_lab.runner.answer(["docker", "exec", "labsupport-client", "curl"], returncode=7,
                           stderr="curl: (7) Failed to connect to host port 30081: Connection refused\n")

    def tries(url: str) -> int:
        before = len(kind_lab.runner.calls)
        result = kind_lab.curl(url)
        assert not result.ok and "Connection refused" in (result.error or "")
        return sum(1 for c in kind_lab.runner.calls[before:] if c[:2] == ["docker", "exec"] and "curl" in c)

    assert tries(f"http://{ip}:30081/") > 1, "the web Service's nodePort, with ready endpoints: tried again"
    assert tries(f"http://{ip}:30999/") == 1, "no Service has this port: refused is the answer"


def test_a_kind_lab_returns_only_when_every_node_and_system_pod_is_ready(server, state):
    """kind's --wait covers the control plane only: a Deployment made before the workers are Ready all lands on the
    first one. The lab waits for every node `kind get nodes` lists and every kube-system pod."""
    import threading
    import time
    runner = existing_cluster(server)
    runner.answer_in_turn(["kind", "get", "nodes"], "lab-control-plane\nlab-worker\nlab-worker2\nlab-worker3\n"
                                                    "lab-worker4\n")
    with pytest.raises(BackendUnavailable, match=r"kind cluster labsupport is not ready after 1 s: node lab-worker4 "
                                                 r"not registered"):
        Lab(backend="kind", runner=runner, preflight=False, progress="quiet", ready_timeout=1)
    runner = existing_cluster(server)
    server.apply({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "cni-starting", "namespace": "kube-system"},
                  "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10",
                                           "readinessProbe": {"httpGet": {"path": "/", "port": 80},
                                                              "periodSeconds": 1}}]}})
    threading.Timer(1.5, lambda: server.delete("pod", "cni-starting", namespace="kube-system",
                                               grace_period=0)).start()
    began = time.monotonic()
    lab = Lab(backend="kind", runner=runner, preflight=False, progress="quiet", ready_timeout=60)
    try:
        assert time.monotonic() - began >= 1.4, "it waited for the kube-system pod"
        assert lab.backend.kind_cluster.nodes() == [n["metadata"]["name"] for n in lab.get("nodes")]
    finally:
        lab.close()


def test_not_ready_says_what_is_missing():
    import doctest
    from labsupport.kind import cluster as kind_cluster
    assert doctest.testmod(kind_cluster).failed == 0
    pods = [{"metadata": {"name": "coredns-1"}, "status": {"phase": "Running",
                                                          "containerStatuses": [{"ready": False}]}},
            {"metadata": {"name": "done"}, "status": {"phase": "Succeeded"}},
            {"metadata": {"name": "new"}, "status": {}}]
    assert kind_cluster.not_ready([], [], pods) == ["pod kube-system/coredns-1 Running", "pod kube-system/new Pending"]
