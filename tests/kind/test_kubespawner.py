"""JupyterHub's KubeSpawner on a real kind cluster: a student's server spawned as a pod in their namespace.

The tier's small cluster (one control plane, one worker; tests/kind/tier_cluster.py) whose pods' subnet no other
cluster uses, so this host can route it to the nodes while the test runs: the hub and its proxy run on this host and
must reach the pod's address, and the pod must reach the hub's API, which listens on the kind network's gateway.
`labsupport class cluster` makes
the student's namespace and account; the server image is `make kind-images`' `labsupport/singleuser:local` (built
here when missing or out of date), loaded into the worker. The hub spawns the server through its REST API; the test
then reaches it through the hub's proxy and runs `Lab()` inside the pod as the student. The hub also runs the class's
exchange service, listening where the pods reach it: the instructor releases on this host, the student fetches and
submits from their server in the pod (the assignment list's own endpoints), the instructor collects, grades with
`labsupport grade` and releases feedback, and the student fetches it — no volume shared between them. Everything
it made (the server, the namespace, the hub and proxy, the host's routes) is removed even when a step fails; the
cluster goes with the tier (LABSUPPORT_KIND_KEEP=1 keeps it for the next run)."""
from __future__ import annotations

import ipaddress
import json
import os
import pathlib
import secrets
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from typing import Iterator

import pytest

from labsupport import Lab, NotFound
from labsupport import cli
from labsupport.hub import cluster as class_cluster
from labsupport.hub.proxy_install import PROJECT, ensure_proxy
from labsupport.hub.service import alive, free_port
from labsupport.kind import host_routes, images
from labsupport.kind.host_routes import PodRoute
from labsupport.kind.engine import KIND_NETWORK
from labsupport.kind.runner import program_path
from labsupport.kubectl import find_kubectl
from tests.kind.tier_cluster import SMALL_CLUSTER, SMALL_POD_SUBNET, small_workers

pytestmark = pytest.mark.kind

CLUSTER = SMALL_CLUSTER
POD_SUBNET = SMALL_POD_SUBNET
CLASS = "spawn-test"
SPAWN_TIMEOUT = 300
#: one Deployment and its Service, applied by the student from inside their server
WEB = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: nginx, image: "nginx:1.27", ports: [{containerPort: 80}]}]
---
apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  selector: {app: web}
  ports: [{port: 80}]
"""
#: run by the pod's Python as the student: Lab() with no arguments, the kube backend on the in-cluster account
IN_POD = """
import json, sys, time
from labsupport import Lab
from labsupport.errors import APIError
lab = Lab()
seen = {"backend": lab.backend.name, "context": lab.backend.context, "namespace": lab.backend.namespace}
stored = lab.apply(sys.stdin.read())
seen["applied"] = [(o["kind"], o["metadata"]["namespace"]) for o in stored]
lab.wait(lambda l: (l.get("deployments", "web").get("status") or {}).get("readyReplicas") == 1, timeout=150)
seen["ready"] = True
seen["endpoints"] = len([e for s in lab.get("endpointslices", selector="kubernetes.io/service-name=web")
                         for e in s.get("endpoints") or []])
for where in ("kube-system", "kube-public"):
    try:
        lab.get("pods", namespace=where)
        seen[where] = 200
    except APIError as e:
        seen[where] = e.code
lab.close()
print(json.dumps(seen))
"""


def run(argv: list[str], timeout: float = 300, **options) -> subprocess.CompletedProcess:
    """Run a command (kind and kubectl found as the library finds them); fail the test with its output when it
    fails."""
    options.setdefault("env", {**os.environ, "PATH": program_path()})
    done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, **options)
    assert done.returncode == 0, f"`{' '.join(argv)}` failed ({done.returncode}):\n{done.stdout}\n{done.stderr}"
    return done


def kind_gateway() -> str:
    """This host's address on the kind network (the bridge's gateway): where the pods reach the hub."""
    done = run(["docker", "network", "inspect", "-f", "{{range .IPAM.Config}}{{.Gateway}} {{end}}", KIND_NETWORK])
    return next(a for a in done.stdout.split() if ":" not in a)


def pod_routes(lab: Lab) -> list[PodRoute]:
    """The host's routes to every node's pod range, each checked to lie in POD_SUBNET."""
    routes = host_routes.pod_routes(lab.get("nodes"))
    assert routes, "the cluster's nodes have no pod ranges yet"
    for route in routes:
        assert ipaddress.ip_network(route.cidr).subnet_of(ipaddress.ip_network(POD_SUBNET)), \
            f"the pod range {route.cidr} is not in {POD_SUBNET}: delete the cluster {CLUSTER} " \
            f"(kind delete cluster --name {CLUSTER}) so it is made again"
    return routes


def build_image() -> float:
    """`make kind-images`' single-user step (an up-to-date check when nothing changed); its seconds."""
    began = time.monotonic()
    run(["nice", "-n", "19", sys.executable, str(PROJECT / "kind-images" / "build.py"), "--only", "singleuser"],
        timeout=1800)
    return time.monotonic() - began


@pytest.fixture(scope="module")
def spawn_cluster(small_cluster) -> Iterator[Lab]:
    """The tier's small cluster, its worker holding the single-user image (loaded here unless it already is)."""
    print(f"\nsingle-user image: {build_image():.0f} s")
    began = time.monotonic()
    run(["kind", "load", "docker-image", images.SINGLEUSER_IMAGE, "--name", CLUSTER,
         "--nodes", ",".join(small_workers(small_cluster))], timeout=900)
    print(f"kind load of {images.SINGLEUSER_IMAGE}: {time.monotonic() - began:.0f} s")
    yield small_cluster


HUB_CONFIG = """
import sys
from labsupport.hub.kubespawner_config import ExchangeSettings, configure_kubespawner
c = get_config()
configure_kubespawner(c, {image!r}, pull_policy="Never", exchange=ExchangeSettings({exchange_url!r}, {course!r}))
c.KubeSpawner.start_timeout = {timeout}
c.KubeSpawner.http_timeout = {timeout}
c.JupyterHub.bind_url = "http://127.0.0.1:{public}"
c.JupyterHub.hub_bind_url = "http://{gateway}:{api}"
c.JupyterHub.hub_connect_url = "http://{gateway}:{api}"
c.ConfigurableHTTPProxy.api_url = "http://127.0.0.1:{proxy_api}"
c.ConfigurableHTTPProxy.command = [{proxy!r}]
c.ConfigurableHTTPProxy.pid_file = {folder!r} + "/proxy.pid"
c.JupyterHub.db_url = "sqlite:///" + {folder!r} + "/jupyterhub.sqlite"
c.JupyterHub.cookie_secret_file = {folder!r} + "/cookie_secret"
c.JupyterHub.pid_file = {folder!r} + "/hub.pid"
c.JupyterHub.cleanup_servers = True
c.JupyterHub.cleanup_proxy = True
c.JupyterHub.authenticator_class = "null"
c.Authenticator.allowed_users = {{{student!r}, {teacher!r}}}
c.JupyterHub.load_groups = {{"instructors": {{"users": [{teacher!r}]}},
                            "nbgrader-{course}": {{"users": [{student!r}]}}}}
c.JupyterHub.services = [
    {{"name": "spawn-test", "api_token": {token!r}}},
    {{"name": "exchange", "url": "http://{gateway}:{exchange_port}", "display": False,
      "command": [sys.executable, "-m", "labsupport.hub.exchange_service", "--root", {store!r},
                  "--course", {course!r}]}},
]
c.JupyterHub.load_roles = [
    {{"name": "admin", "services": ["spawn-test"]}},
    {{"name": "exchange-user", "scopes": ["access:services!service=exchange"],
      "groups": ["instructors", "nbgrader-{course}"]}},
    {{"name": "exchange-service", "scopes": ["read:users:name", "read:users:groups"], "services": ["exchange"]}},
]
"""
#: the course the exchange serves, and its instructor (a hub user with no server: they work on this host)
COURSE = "k8s-services"
TEACHER = "teacher"
ASSIGNMENT = "01-endpointslices"
NOTEBOOK = f"{ASSIGNMENT}/endpointslices.ipynb"


class Unfollowed(urllib.request.HTTPRedirectHandler):
    """Redirects come back as they are (an HTTPError with the 3xx status)."""

    def redirect_request(self, *args, **kwargs):
        return None


NO_REDIRECTS = urllib.request.build_opener(Unfollowed)


class Hub:
    """A JupyterHub with KubeSpawner on this host, driven through its REST API with an admin service's token."""

    def __init__(self, folder: pathlib.Path, kubeconfig: str, student: str):
        self.folder = folder
        self.token = secrets.token_hex(32)
        self.public = free_port()
        self.url = f"http://127.0.0.1:{self.public}"
        folder.mkdir(mode=0o700)
        gateway, exchange_port = kind_gateway(), free_port()
        self.exchange_url = f"http://{gateway}:{exchange_port}/services/exchange"
        store = folder / "exchange"
        store.mkdir(mode=0o700)
        (folder / "jupyterhub_config.py").write_text(HUB_CONFIG.format(
            image=images.SINGLEUSER_IMAGE, timeout=SPAWN_TIMEOUT, public=self.public, gateway=gateway,
            api=free_port(), proxy_api=free_port(), proxy=str(ensure_proxy()), folder=str(folder), student=student,
            token=self.token, teacher=TEACHER, course=COURSE, exchange_url=self.exchange_url,
            exchange_port=exchange_port, store=str(store)))
        self.log = folder / "hub.log"
        env = dict(os.environ, KUBECONFIG=kubeconfig,
                   PATH=os.pathsep.join([str(pathlib.Path(sys.executable).parent), os.environ.get("PATH", "")]))
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen([sys.executable, "-m", "jupyterhub", "-f", "jupyterhub_config.py"],
                                         cwd=folder, stdin=subprocess.DEVNULL, stdout=log, stderr=log, env=env,
                                         start_new_session=True)
        deadline = time.monotonic() + 120
        while True:
            try:
                if self.request("GET", "/hub/api/")[0] == 200:
                    return
            except OSError:
                pass
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise AssertionError(f"JupyterHub did not start:\n{self.tail()}")
            time.sleep(0.3)

    def tail(self) -> str:
        """The end of the hub's log (its own lines and the proxy's)."""
        return self.log.read_text(errors="replace")[-4000:]

    def request(self, method: str, path: str, *, token: str | None = None, body: object = None,
                timeout: float = 30) -> tuple[int, bytes]:
        """One request to the hub's public address (through its proxy), with a JSON `body` if any: status and body;
        a redirect is an answer (to the login page), not followed."""
        headers = {"Authorization": f"token {token}"} if token else {}
        data = b"" if method in ("POST", "DELETE") else None
        if body is not None:
            headers["Content-Type"] = "application/json"
            data = json.dumps(body).encode()
        request = urllib.request.Request(self.url + path, method=method, headers=headers, data=data)
        try:
            with NO_REDIRECTS.open(request, timeout=timeout) as answer:
                return answer.status, answer.read()
        except urllib.error.HTTPError as e:
            return e.code, e.read()

    def api(self, method: str, path: str) -> tuple[int, dict]:
        """One request to the hub's REST API as the admin service."""
        status, body = self.request(method, "/hub/api" + path, token=self.token)
        return status, json.loads(body) if body.strip() else {}

    def server(self, user: str) -> dict | None:
        """The user's default server as the hub reports it, or None."""
        _, answer = self.api("GET", f"/users/{user}")
        return (answer.get("servers") or {}).get("")

    def stop(self) -> None:
        """Stop the hub (it stops the servers and its proxy), then whatever of it or the proxy is still running."""
        pids = [self.proc.pid]
        proxy_pid = self.folder / "proxy.pid"
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                pass
        if proxy_pid.exists():
            pids.append(int(proxy_pid.read_text().strip()))
        for pid in pids:
            if alive(pid):
                os.kill(pid, signal.SIGKILL)
        self.proc.wait(timeout=10)


def wait_for(what: str, check, timeout: float, hub: Hub) -> float:
    """Poll `check()` until it is true; the seconds it took. Fails with the hub's log after `timeout`."""
    began = time.monotonic()
    while not check():
        if time.monotonic() - began > timeout:
            raise AssertionError(f"{what} did not happen within {timeout:.0f} s; the hub's log:\n{hub.tail()}")
        time.sleep(1)
    return time.monotonic() - began


@pytest.mark.timeout(2400)
def test_a_student_server_spawned_in_their_namespace(spawn_cluster, tmp_path):
    admin = spawn_cluster.kubeconfig
    student = f"stu-{secrets.token_hex(3)}"
    roster = tmp_path / "roster.csv"
    roster.write_text(f"id,first_name,last_name,email\n{student},Stu,,\n")
    out = tmp_path / "class"
    try:
        assert cli.main(["class", "cluster", "--roster", str(roster), "--kubeconfig", admin, "--out", str(out),
                         "--class", CLASS, "--token-expiry", "1h"]) == 0
        with host_routes.routed(pod_routes(spawn_cluster)):
            hub = Hub(tmp_path / "hub", admin, student)
            try:
                spawn_and_use(hub, spawn_cluster, student, admin)
            finally:
                hub.stop()
    finally:
        cli.main(["class", "cluster", "--delete", "--kubeconfig", admin, "--class", CLASS, "--out", str(out)])


def spawn_and_use(hub: Hub, spawn_cluster: Lab, student: str, admin: str) -> None:
    """Spawn the student's server, reach it, run Lab() in it, stop it."""
    namespace = class_cluster.namespace_of(student)
    status, _ = hub.api("POST", f"/users/{student}")
    assert status in (201, 409), status
    began = time.monotonic()
    status, _ = hub.api("POST", f"/users/{student}/server")
    assert status in (201, 202), (status, hub.tail())
    wait_for("the server's start", lambda: (hub.server(student) or {}).get("ready"), SPAWN_TIMEOUT, hub)
    print(f"spawn, from the request to a ready server: {time.monotonic() - began:.1f} s")

    # the pod: in the student's namespace, as the student's account, running
    [pod] = spawn_cluster.get("pods", namespace=namespace, selector="component=singleuser-server")
    assert pod["metadata"]["name"] == f"jupyter-{student}"
    assert pod["spec"]["serviceAccountName"] == class_cluster.ACCOUNT
    assert pod["spec"]["containers"][0]["image"] == images.SINGLEUSER_IMAGE
    assert pod["status"]["phase"] == "Running"
    assert hub.server(student)["url"] == f"/user/{student}/"

    # reached through the hub's proxy: the server's API, and what only an authorized caller may read
    status, body = hub.request("GET", f"/user/{student}/api", token=hub.token)
    assert status == 200 and "version" in json.loads(body), (status, body[:300])
    status, body = hub.request("GET", f"/user/{student}/api/status", token=hub.token)
    assert status == 200 and "started" in json.loads(body), (status, body[:300])
    status, _ = hub.request("GET", f"/user/{student}/api/status")
    assert status in (302, 403), status

    # inside the pod, Lab() is the student: their namespace works, any other is refused by RBAC
    began = time.monotonic()
    done = run([find_kubectl(), "--kubeconfig", admin, "exec", "-i", "-n", namespace, pod["metadata"]["name"],
                "--", "python", "-c", IN_POD], input=WEB, timeout=300)
    print(f"Lab() in the pod, apply and wait for the Deployment: {time.monotonic() - began:.1f} s")
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["backend"] == "kube" and seen["context"] == "in-cluster", seen
    assert seen["namespace"] == namespace, seen
    assert seen["applied"] == [["Deployment", namespace], ["Service", namespace]], seen
    assert seen["ready"] and seen["endpoints"] == 1, seen
    assert seen["kube-system"] == 403 and seen["kube-public"] == 403, seen

    began = time.monotonic()
    exchange_term(hub, student)
    print(f"release, fetch, submit, collect, grade, feedback through the exchange: {time.monotonic() - began:.1f} s")

    # stopped through the API: the hub reports no server and the pod goes
    status, _ = hub.api("DELETE", f"/users/{student}/server")
    assert status in (202, 204), status
    wait_for("the server's stop", lambda: hub.server(student) is None, 120, hub)

    def pod_gone() -> bool:
        try:
            spawn_cluster.get("pods", f"jupyter-{student}", namespace=namespace)
            return False
        except NotFound:
            return True
    wait_for("the pod's deletion", pod_gone, 120, hub)


def exchange_term(hub: Hub, student: str) -> None:
    """The instructor (on this host) releases; the student fetches, answers and submits from their server in the pod;
    the instructor collects, grades and releases feedback; the student fetches it. Only the exchange service carries
    the bytes between them."""
    from nbgrader.api import Gradebook
    from tests.classroom.classterm import answered
    course = hub.folder / "course"
    course.mkdir()
    shutil.copy(PROJECT / "grading" / "nbgrader_config.py", course / "nbgrader_config.py")
    shutil.copytree(PROJECT / "grading" / "source" / ASSIGNMENT, course / "source" / ASSIGNMENT)
    with open(course / "nbgrader_config.py", "a") as config:
        config.write("from labsupport.grading.exchange_client import configure_service_exchange\n"
                     f"configure_service_exchange(c, {hub.exchange_url!r})\n")
    assert hub.api("POST", f"/users/{TEACHER}")[0] in (201, 409)
    teacher_token = hub.api("POST", f"/users/{TEACHER}/tokens")[1]["token"]
    student_token = hub.api("POST", f"/users/{student}/tokens")[1]["token"]
    env = {**os.environ, "JUPYTERHUB_API_TOKEN": teacher_token,
           "PATH": os.pathsep.join([str(pathlib.Path(sys.executable).parent), os.environ.get("PATH", "")])}

    def instructor(*argv: str) -> subprocess.CompletedProcess:
        return run(list(argv), timeout=900, cwd=course, env=env)

    def assignments(action: str) -> dict:
        status, body = hub.request("POST", f"/user/{student}/assignments/{action}", token=student_token,
                                   body={"course_id": COURSE, "assignment_id": ASSIGNMENT}, timeout=300)
        answer = json.loads(body)
        assert status == 200 and answer["success"], (action, status, body[:2000])
        return answer

    def contents(path: str, method: str = "GET", body: object = None) -> dict:
        status, answer = hub.request(method, f"/user/{student}/api/contents/{urllib.parse.quote(path)}",
                                     token=student_token, body=body, timeout=120)
        assert status in (200, 201), (path, status, answer[:500])
        return json.loads(answer)

    instructor("nbgrader", "generate_assignment", ASSIGNMENT, "--force")
    instructor("nbgrader", "release_assignment", ASSIGNMENT)
    assignments("fetch")
    fetched = contents(NOTEBOOK)["content"]
    source = json.loads((course / "source" / NOTEBOOK).read_text())
    contents(NOTEBOOK, "PUT", {"type": "notebook", "format": "json", "content": answered(fetched, source, None)})
    listed = assignments("submit")["value"]
    (submitted,) = [a for a in listed if a.get("status") == "submitted"]
    assert submitted["student_id"] == student and len(submitted["submissions"]) == 1, submitted

    collected = instructor("nbgrader", "collect", ASSIGNMENT)
    assert "Collected 1, unchanged 0, refused 0 of 1 students" in collected.stderr, collected.stderr
    received = submitted["submissions"][0]["timestamp"]
    assert (course / "submitted" / student / ASSIGNMENT / "timestamp.txt").read_text() == received
    instructor("labsupport", "grade", ASSIGNMENT, "--workers", "1")
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        nb = gb.find_submission_notebook("endpointslices", ASSIGNMENT, student)
        score, maximum = nb.score, nb.max_score
    assert score == maximum > 0, (score, maximum)
    instructor("nbgrader", "generate_feedback", ASSIGNMENT)
    instructor("nbgrader", "release_feedback", ASSIGNMENT)
    assignments("fetch_feedback")
    (stamp,) = [c["name"] for c in contents(f"{ASSIGNMENT}/feedback")["content"]]
    assert stamp == received
    html = contents(f"{ASSIGNMENT}/feedback/{stamp}/endpointslices.html")["content"]
    assert f"endpointslices (Score: {round(float(score), 2)} / {round(float(maximum), 2)})" in html
