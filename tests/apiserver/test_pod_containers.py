"""Pods act like containers, seen through the real kubectl: the kubelet's files and variables, each image's own
commands and start-up lines, and an interactive shell on a TTY."""
from __future__ import annotations

import os
import pty
import re
import select
import subprocess
import threading
import time

import pytest

from labsupport.kubectl import find_kubectl

BOX = """
apiVersion: v1
kind: Pod
metadata: {name: %(name)s, namespace: %(ns)s}
spec:
  enableServiceLinks: %(links)s
  containers: [{name: c, image: "%(image)s", command: [sleep, "3600"]}]
"""


def start(lab, kubectl, name, ns="default", image="busybox:1.36", links="true"):
    lab.apply(BOX % {"name": name, "ns": ns, "image": image, "links": links})
    kubectl(f"wait -n {ns} --for=condition=Ready pod/{name} --timeout=60s")


@pytest.fixture(scope="module")
def shop(lab, kubectl):
    kubectl("create namespace shop")
    lab.apply("""
apiVersion: v1
kind: Service
metadata: {name: cart-api, namespace: shop}
spec:
  selector: {app: cart}
  ports: [{name: http, port: 8080, targetPort: 80}]
""")
    start(lab, kubectl, "early", "shop")
    lab.apply("""
apiVersion: v1
kind: Service
metadata: {name: late, namespace: shop}
spec:
  selector: {app: late}
  ports: [{port: 81}]
""")
    start(lab, kubectl, "later", "shop")
    start(lab, kubectl, "unlinked", "shop", links="false")
    return "shop"


def test_resolv_conf_and_hosts_as_the_kubelet_writes_them(kubectl, shop, lab):
    out = kubectl("exec -n shop early -- cat /etc/resolv.conf").stdout
    assert out == ("search shop.svc.cluster.local svc.cluster.local cluster.local\nnameserver 10.96.0.10\n"
                   "options ndots:5\n")
    ip = lab.get("pod", "early", namespace="shop")["status"]["podIP"]
    hosts = kubectl("exec -n shop early -- cat /etc/hosts").stdout
    assert hosts.startswith("# Kubernetes-managed hosts file.\n127.0.0.1\tlocalhost\n")
    assert hosts.endswith(f"\n{ip}\tearly\n")
    assert kubectl("exec -n shop early -- hostname").stdout == "early\n"


def test_service_variables_of_the_namespace_that_existed_at_start(kubectl, shop, lab):
    env = dict(line.split("=", 1) for line in kubectl("exec -n shop early -- env").stdout.splitlines())
    ip = lab.get("svc", "cart-api", namespace="shop")["spec"]["clusterIP"]
    assert env["CART_API_SERVICE_HOST"] == ip and env["CART_API_SERVICE_PORT_HTTP"] == "8080"
    assert env["CART_API_PORT_8080_TCP"] == f"tcp://{ip}:8080"
    assert env["KUBERNETES_SERVICE_HOST"] == "10.96.0.1" and env["KUBERNETES_SERVICE_PORT"] == "443"
    assert "LATE_SERVICE_HOST" not in env and "WEB_SERVICE_HOST" not in env
    later = kubectl("exec -n shop later -- printenv LATE_SERVICE_HOST").stdout
    assert later == lab.get("svc", "late", namespace="shop")["spec"]["clusterIP"] + "\n"
    unlinked = kubectl("exec -n shop unlinked -- env").stdout
    assert "CART_API_SERVICE_HOST" not in unlinked and "KUBERNETES_SERVICE_HOST=10.96.0.1" in unlinked


def test_a_script_with_pipes_and_exit_codes(kubectl, shop):
    result = kubectl(["exec", "-n", "shop", "early", "--", "sh", "-c",
                      "grep -c . /etc/resolv.conf | tr 3 x; false || echo no && exit 4"], ok=False)
    assert result.stdout == "x\nno\n" and result.returncode == 4
    assert "command terminated with exit code 4" in result.stderr


def test_nslookup_busybox_and_bind_formats(kubectl, lab):
    start(lab, kubectl, "dns", image="registry.k8s.io/e2e-test-images/jessie-dnsutils:1.7")
    start(lab, kubectl, "bb")
    ip = lab.get("svc", "web")["spec"]["clusterIP"]
    busybox = kubectl("exec bb -- nslookup web").stdout
    assert busybox == (f"Server:\t\t10.96.0.10\nAddress:\t10.96.0.10:53\n\n"
                       f"Name:\tweb.default.svc.cluster.local\nAddress: {ip}\n\n"
                       "** server can't find web.svc.cluster.local: NXDOMAIN\n\n"
                       "** server can't find web.cluster.local: NXDOMAIN\n\n"
                       "** server can't find web: NXDOMAIN\n\n")
    bind = kubectl("exec dns -- nslookup web").stdout
    assert bind.startswith("Server:\t\t10.96.0.10\nAddress:\t10.96.0.10#53\n\n")
    assert f"Name:\tweb.default.svc.cluster.local\nAddress: {ip}\n" in bind


def test_each_image_has_its_own_commands(kubectl, lab):
    web = lab.get("pods", selector="app=web")[0]["metadata"]["name"]
    assert "worker_processes  auto;" in kubectl(f"exec {web} -- cat /etc/nginx/nginx.conf").stdout
    assert kubectl(f"exec {web} -- ls /usr/share/nginx/html").stdout == "50x.html\nindex.html\n"
    code = kubectl(["exec", web, "--", "curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "localhost"]).stdout
    assert code == "200"
    missing = kubectl(f"exec {web} -- wget -qO- web", ok=False)
    assert missing.returncode != 0 and 'exec: "wget": executable file not found in $PATH' in str(missing)
    start(lab, kubectl, "bb2")
    assert "Welcome to nginx!" in kubectl("exec bb2 -- wget -qO- http://web").stdout
    assert "sh: curl: not found" in str(kubectl(["exec", "bb2", "--", "sh", "-c", "curl web"], ok=False))


def test_nginx_prints_its_start_up_lines(kubectl, lab):
    web = lab.get("pods", selector="app=web")[0]["metadata"]["name"]
    logs = kubectl(f"logs {web}").stdout.splitlines()
    assert logs[0] == "/docker-entrypoint.sh: /docker-entrypoint.d/ is not empty, will attempt to perform " \
                      "configuration"
    assert "/docker-entrypoint.sh: Configuration complete; ready for start up" in logs
    assert any(line.endswith("[notice] 1#1: start worker processes") for line in logs)


def test_run_curl_logs_the_status_code(kubectl):
    kubectl(["run", "probe", "--image=curlimages/curl:8.11.1", "--restart=Never", "--", "curl", "-s", "-o",
             "/dev/null", "-w", "%{http_code}", "http://web"])
    kubectl("wait --for=jsonpath={.status.phase}=Succeeded pod/probe --timeout=60s")
    assert kubectl("logs probe").stdout == "200\n"


def test_exec_it_opens_an_interactive_shell(lab, kubectl):
    start(lab, kubectl, "tty")
    master, slave = pty.openpty()
    env = dict(os.environ, KUBECONFIG=lab.kubeconfig,
               KUBECACHEDIR=os.path.join(os.path.dirname(lab.kubeconfig), "cache"))
    proc = subprocess.Popen([find_kubectl(), "exec", "-it", "tty", "--", "sh"], stdin=slave, stdout=slave,
                            stderr=slave, env=env, close_fds=True)
    os.close(slave)
    try:
        assert _read(master, b"/ # ").endswith(b"/ # ")
        os.write(master, b"cd /etc && hostname; echo $?\r")
        shown = _read(master, b"/etc # ")
        assert b"cd /etc && hostname; echo $?\r\ntty\r\n0\r\n/etc # " in shown
        os.write(master, b"exit 3\r")
        assert proc.wait(timeout=20) == 3
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(master)


def _read(fd: int, until: bytes, timeout: float = 20) -> bytes:
    data, end = b"", time.monotonic() + timeout
    while until not in data and time.monotonic() < end:
        ready, _, _ = select.select([fd], [], [], 0.2)
        if ready:
            try:
                data += os.read(fd, 4096)
            except OSError:
                break
    return data


def test_a_program_the_image_lacks_fails_to_start(kubectl, lab):
    web = lab.get("pods", selector="app=web")[0]["metadata"]["name"]
    result = kubectl(f"exec {web} -- nslookup web", ok=False)
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr.startswith("error: Internal error occurred: error executing command in container: ")
    assert result.stderr.rstrip().endswith('exec: "nslookup": executable file not found in $PATH: unknown')


def test_run_it_attaches_to_the_containers_shell(lab):
    master, slave = pty.openpty()
    env = dict(os.environ, KUBECONFIG=lab.kubeconfig,
               KUBECACHEDIR=os.path.join(os.path.dirname(lab.kubeconfig), "cache"))
    proc = subprocess.Popen([find_kubectl(), "run", "scratch", "--rm", "-it", "--restart=Never",
                             "--image=busybox:1.36", "--", "sh"], stdin=slave, stdout=slave, stderr=slave, env=env,
                            close_fds=True)
    os.close(slave)
    try:
        assert _read(master, b"/ # ").endswith(b"/ # ")
        os.write(master, b"hostname\r")
        assert b"hostname\r\nscratch\r\n/ # " in _read(master, b"scratch\r\n/ # ")
        os.write(master, b"exit\r")
        assert proc.wait(timeout=30) == 0
        assert b'pod "scratch" deleted' in _read(master, b"deleted")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(master)


def test_run_it_stays_attached_past_kubectls_heartbeat(lab):
    """`kubectl run -it … | head` on a container that keeps printing: kubectl pings the API server every few seconds
    while attached, and the session goes on (it ended after ten seconds, the ping taken for a hang-up); every line
    ends CR NL, as the container's terminal writes it, on kubectl's raw terminal."""
    master, slave = pty.openpty()
    env = dict(os.environ, KUBECONFIG=lab.kubeconfig,
               KUBECACHEDIR=os.path.join(os.path.dirname(lab.kubeconfig), "cache"))
    proc = subprocess.Popen(["sh", "-c", f"{find_kubectl()} run -it teletype --image=busybox:1.36 --restart=Never "
                             "-- sleep 3600 | head -n 1000"], stdin=slave, stdout=slave, stderr=slave, env=env,
                            close_fds=True)
    os.close(slave)
    cluster = lab._backend.cluster
    ticking = threading.Event()

    def tick() -> None:         # the container prints a line now and then (kubectl attaches when it is ready)
        for n in range(200):
            if ticking.wait(0.2):
                return
            with cluster.lock:
                pod = cluster.store.find("Pod", "default", "teletype")
                runtime = cluster.kubelet.runtime(pod) if pod is not None else None
                if runtime is not None and "teletype" in runtime.apps:
                    runtime.apps["teletype"].log.append(f"tick {n}")

    thread = threading.Thread(target=tick)
    thread.start()
    try:
        shown = _read(master, b"try pressing enter", timeout=60)
        shown += _read(master, b"tick ", timeout=30)
        shown += _read(master, b"never", timeout=12)        # past kubectl's heartbeat (every 5 s)
        later = _read(master, b"tick ", timeout=10)
        shown += later
    finally:
        ticking.set()
        thread.join()
        lab.delete("pod", "teletype")
        try:
            proc.wait(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            os.close(master)
    lines = re.findall(rb"tick \d+\r?\n", shown)
    assert b"tick " in later, f"the session ended: {shown!r}"
    assert lines and all(line.endswith(b"\r\n") for line in lines), shown
    assert not re.search(rb"[^\r]\n", shown), f"a bare NL on the terminal: {shown!r}"


def test_a_tty_containers_logs_end_lines_as_its_terminal_did(lab, kubectl):
    """A container with a TTY writes through a terminal, which ends every line CR NL. `kubectl run -it … | head` of a
    command that ends at once prints the finished container's logs while kubectl's terminal is raw: a bare NL there
    steps each line right (a staircase)."""
    lab.apply({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "typed"},
               "spec": {"containers": [{"name": "c", "image": "busybox:1.36", "tty": True,
                                        "command": ["sh", "-c", "echo one; echo two"]}], "restartPolicy": "Never"}})
    kubectl("wait --for=jsonpath={.status.phase}=Succeeded pod/typed --timeout=60s")
    logs = subprocess.run([find_kubectl(), "--kubeconfig", lab.kubeconfig, "logs", "typed"], capture_output=True,
                          timeout=60)
    assert logs.stdout == b"one\r\ntwo\r\n"


def test_a_loop_in_a_pod_sees_the_service_spread_requests(kubectl, lab):
    lab.apply("""
apiVersion: apps/v1
kind: Deployment
metadata: {name: echo}
spec:
  replicas: 3
  selector: {matchLabels: {app: echo}}
  template:
    metadata: {labels: {app: echo}}
    spec:
      containers: [{name: netexec, image: registry.k8s.io/e2e-test-images/agnhost:2.53, args: [netexec]}]
---
apiVersion: v1
kind: Service
metadata: {name: echo}
spec:
  selector: {app: echo}
  ports: [{port: 80, targetPort: 8080}]
""")
    kubectl("wait --for=condition=Available deploy/echo --timeout=60s")
    start(lab, kubectl, "looper")
    out = kubectl(["exec", "looper", "--", "sh", "-c",
                   "for i in $(seq 12); do wget -qO- http://echo/hostname; echo; done"]).stdout
    names = out.split()
    pods = {p["metadata"]["name"] for p in lab.get("pods", selector="app=echo")}
    assert len(names) == 12 and set(names) <= pods and len(set(names)) > 1


def test_an_endless_loop_container_logs_a_round_per_period(kubectl, lab):
    lab.apply("""
apiVersion: v1
kind: Pod
metadata: {name: poller}
spec:
  containers:
  - name: c
    image: busybox:1.36
    command: [sh, -c, 'echo starting; n=0; while true; do n=$((n + 1)); echo round $n; sleep 5; done']
""")
    kubectl("wait --for=condition=Ready pod/poller --timeout=60s")
    started = lab.cluster.clock.now
    lab.advance(21)
    lines = kubectl("logs poller").stdout.splitlines()
    rounds = int((lab.cluster.clock.now - started) // 5)
    assert lines[0] == "starting" and lines[1:3] == ["round 1", "round 2"]
    assert rounds <= len(lines) - 1 <= rounds + 2
    assert lab.get("pod", "poller")["status"]["phase"] == "Running"
