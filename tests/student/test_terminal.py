"""A terminal of `make lab` reaches the notebooks' labs: the project's kubectl and `labsupport` first on PATH, and a
KUBECONFIG with one context per running lab (the newest current). Driven through JupyterLab's own APIs: `make lab`
on a chosen port, kernels started as the notebook page starts them, a terminal as the Terminal tab opens it."""
from __future__ import annotations

import json
import os
import pathlib
import re
import secrets
import subprocess
import time
import urllib.request
import uuid

import pytest
from websockets.sync.client import connect

from tests.student.test_student_lab import free_port
from tests.processes import stop_group

ROOT = pathlib.Path(__file__).resolve().parents[2]
PODS = '''lab.apply({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "%s"},
           "spec": {"containers": [{"name": "c", "image": "busybox:1.36", "command": ["sleep", "3600"]}]}})'''


class Server:
    """A running `make lab`, spoken to over its REST and websocket APIs."""

    def __init__(self, port: int, token: str):
        self.base, self.ws, self.token = f"http://127.0.0.1:{port}", f"ws://127.0.0.1:{port}", token

    def call(self, method: str, path: str, body: dict | None = None) -> dict:
        request = urllib.request.Request(f"{self.base}{path}?token={self.token}", method=method,
                                         data=None if body is None else json.dumps(body).encode(),
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=60) as response:
            text = response.read()
        return json.loads(text) if text else {}

    def open_notebook(self, path: str) -> str:
        """Start a kernel for a notebook, as opening it does; returns the session id and kernel id."""
        session = self.call("POST", "/api/sessions", {"path": path, "type": "notebook", "name": os.path.basename(path),
                                                      "kernel": {"name": "python3"}})     # as JupyterLab sends it
        return session["id"], session["kernel"]["id"]

    def run(self, kernel: str, code: str, timeout: float = 120) -> str:
        """Execute code in a kernel; returns what it printed (fails on an error)."""
        msg_id = uuid.uuid4().hex
        message = {"header": {"msg_id": msg_id, "msg_type": "execute_request", "username": "test",
                              "session": uuid.uuid4().hex, "version": "5.3"},
                   "parent_header": {}, "metadata": {}, "channel": "shell",
                   "content": {"code": code, "silent": False, "store_history": False, "user_expressions": {},
                               "allow_stdin": False, "stop_on_error": True}}
        out = []
        # the reply (shell channel) may overtake the output (iopub): done when both the reply and iopub's idle,
        # which follows every output of the request, have come
        replied = idle = False
        with connect(f"{self.ws}/api/kernels/{kernel}/channels?token={self.token}", open_timeout=60,
                     max_size=None) as ws:
            ws.send(json.dumps(message))
            deadline = time.time() + timeout
            while time.time() < deadline:
                reply = json.loads(ws.recv(timeout=deadline - time.time()))
                if reply.get("parent_header", {}).get("msg_id") != msg_id:
                    continue
                kind = reply["msg_type"]
                if kind == "stream":
                    out.append(reply["content"]["text"])
                elif kind == "error":
                    pytest.fail("the kernel failed:\n" + "\n".join(reply["content"]["traceback"]))
                elif kind == "execute_reply":
                    replied = True
                elif kind == "status" and reply["content"].get("execution_state") == "idle":
                    idle = True
                if replied and idle:
                    return "".join(out)
        pytest.fail(f"the kernel did not answer within {timeout} s")

    def terminal(self, command: str, timeout: float = 60) -> str:
        """Type a command into a new JupyterLab terminal; returns what the terminal showed until it finished."""
        name = self.call("POST", "/api/terminals")["name"]
        shown = ""
        try:
            with connect(f"{self.ws}/terminals/websocket/{name}?token={self.token}", open_timeout=60) as ws:
                ws.send(json.dumps(["stdin", f"{command}; echo END-$((40+2))\r"]))
                deadline = time.time() + timeout
                while "END-42" not in shown and time.time() < deadline:
                    try:
                        kind, *rest = json.loads(ws.recv(timeout=max(0.1, deadline - time.time())))
                    except TimeoutError:
                        break
                    if kind == "stdout":
                        shown += rest[0]
        finally:
            self.call("DELETE", f"/api/terminals/{name}")
        assert "END-42" in shown, f"the terminal did not finish:\n{shown}"
        shown = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07|\r", "", shown)
        # what the command printed: after the terminal's echo of the typed line, before the end mark
        return shown.split("END-$((40+2))", 1)[-1].split("END-42", 1)[0]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """`make lab PORT=… IP=127.0.0.1`, with a kubectl of the machine's own ahead on the PATH it starts from."""
    folder = tmp_path_factory.mktemp("make-lab")
    machine = folder / "machine-bin"
    machine.mkdir()
    (machine / "kubectl").write_text("#!/bin/sh\necho 'the machine kubectl v1.32'\n")
    (machine / "kubectl").chmod(0o755)
    port, token = free_port(), secrets.token_hex(16)
    env = dict(os.environ, PATH=f"{machine}:/usr/local/bin:/usr/bin:/bin", JUPYTER_TOKEN=token, BROWSER="true",
               JUPYTER_CONFIG_DIR=str(folder / "user-config"), JUPYTER_RUNTIME_DIR=str(folder / "runtime"),
               JUPYTER_DATA_DIR=str(folder / "data"), LABSUPPORT_EXCHANGE=str(folder / "no-exchange"))
    env.pop("KUBECONFIG", None)
    env.pop("LABSUPPORT_BACKEND", None)
    log = folder / "lab.log"
    with open(log, "w") as out:
        proc = subprocess.Popen(["make", "-o", ".venv/.installed", "lab", f"PORT={port}", "IP=127.0.0.1"],
                                cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    lab = Server(port, token)
    try:
        deadline = time.time() + 90
        while True:
            try:
                lab.call("GET", "/api/status")
                break
            except OSError:
                if proc.poll() is not None or time.time() > deadline:
                    pytest.fail("make lab did not start on the port given:\n" + log.read_text()[-3000:])
                time.sleep(0.3)
        yield lab
    finally:
        stop_group(proc)


def test_a_terminal_has_the_projects_kubectl_and_labsupport_first(server):
    shown = server.terminal("type -P kubectl; command -v labsupport")     # (kubectl is also a function there)
    venv_bin = ROOT / ".venv" / "bin"
    assert f"{venv_bin}/kubectl" in shown and f"{venv_bin}/labsupport" in shown, shown


def test_a_terminal_with_no_lab_running_says_what_to_do(server):
    shown = server.terminal("kubectl get pods; echo code=$?; kubectl config get-contexts -o name; echo listed")
    assert "no lesson's lab is running yet. Run a lesson's first cell" in " ".join(shown.split()), shown
    assert "code=1" in shown and "localhost:8080" not in shown and "memcache" not in shown, shown
    assert shown.rstrip().endswith("listed"), "kubectl config still runs"


def test_twin_lessons_of_two_editions_are_told_apart_by_their_folder(server):
    english, english_kernel = server.open_notebook("00-start-here.ipynb")
    russian, russian_kernel = server.open_notebook("ru/00-start-here.ipynb")
    try:
        code = "from labsupport import Lab\nlab = Lab()\nprint(lab.context)"
        assert server.run(english_kernel, code).strip() == "00-start-here"
        assert server.run(russian_kernel, code).strip() == "ru/00-start-here"
        shown = server.terminal("kubectl config get-contexts -o name")
        assert "00-start-here\nru/00-start-here" in shown and "00-start-here-2" not in shown, shown
    finally:
        server.call("DELETE", f"/api/sessions/{russian}")
        server.call("DELETE", f"/api/sessions/{english}")


def test_a_terminals_kubectl_reaches_the_notebooks_lab_and_picks_among_several(server):
    first, first_kernel = server.open_notebook("02-service-clusterip.ipynb")
    second, second_kernel = server.open_notebook("00-start-here.ipynb")
    try:
        code = "from labsupport import Lab\nlab = Lab()\n{}\nprint(lab.context)"
        assert server.run(first_kernel, code.format(PODS % "in-lesson-02")).strip() == "02-service-clusterip"
        assert server.run(second_kernel, code.format(PODS % "in-lesson-00")).strip() == "00-start-here"
        # only terminals read the shared file: a kernel's own kube backend keeps the user's KUBECONFIG
        assert server.run(first_kernel, "import os\nprint(os.environ.get('KUBECONFIG'))").strip() == "None"
        shown = server.terminal("kubectl config current-context; kubectl get pods -o name; "
                                "kubectl config use-context 02-service-clusterip; kubectl get pods -o name")
        assert "00-start-here\n" in shown and "pod/in-lesson-00" in shown, shown
        picked = shown.split('Switched to context "02-service-clusterip".')
        assert len(picked) == 2 and "pod/in-lesson-02" in picked[1] and "in-lesson-00" not in picked[1], shown
    finally:
        server.call("DELETE", f"/api/sessions/{second}")
        server.call("DELETE", f"/api/sessions/{first}")
    deadline = time.time() + 30
    while time.time() < deadline:
        shown = server.terminal("kubectl config get-contexts -o name")
        if "02-service-clusterip" not in shown and "00-start-here" not in shown:
            break
        time.sleep(1)
    assert "02-service-clusterip" not in shown and "00-start-here" not in shown, \
        f"a closed notebook's lab is still a context:\n{shown}"
