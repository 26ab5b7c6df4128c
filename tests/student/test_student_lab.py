"""`make lab` as a student meets it: it starts as root, shows no news, and hides nbgrader's instructor tools."""
from __future__ import annotations

import json
import os
import re
import secrets
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest

from labsupport import student_lab


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def student_lab_server(tmp_path_factory):
    """The student's JupyterLab on a free loopback port, with no exchange folder, for the module's tests (they only
    read it); yields (base URL, token, log)."""
    tmp_path = tmp_path_factory.mktemp("student-lab")
    port, token = free_port(), secrets.token_hex(16)
    log = tmp_path / "lab.log"
    env = dict(os.environ, JUPYTER_CONFIG_DIR=str(tmp_path / "user-config"),
               JUPYTER_RUNTIME_DIR=str(tmp_path / "runtime"), JUPYTER_DATA_DIR=str(tmp_path / "data"),
               LABSUPPORT_EXCHANGE=str(tmp_path / "no-exchange"))
    with open(log, "w") as out:
        server = subprocess.Popen(
            [sys.executable, "-m", "labsupport.student_lab", "--no-browser", "--ip=127.0.0.1", f"--port={port}",
             f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={tmp_path}"],
            stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + 60
        while True:
            try:
                urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=2).close()
                break
            except OSError:
                if server.poll() is not None or time.time() > deadline:
                    pytest.fail("the student's JupyterLab did not start:\n" + log.read_text()[-3000:])
                time.sleep(0.3)
        yield base, token, log
    finally:
        os.killpg(server.pid, 15)
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, 9)
            server.wait()


def page_config(base: str, token: str) -> dict:
    with urllib.request.urlopen(f"{base}/lab?token={token}", timeout=10) as reply:
        page = reply.read().decode()
    found = re.search(r'<script id="jupyter-config-data" type="application/json">(.*?)</script>', page, re.S)
    return json.loads(found.group(1))


def status_of(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=10) as reply:
            return reply.status
    except urllib.error.HTTPError as error:
        return error.code


def test_the_student_lab_hides_the_instructor_tools_and_the_news(student_lab_server):
    base, token, log = student_lab_server
    config = page_config(base, token)
    disabled = config.get("disabledExtensions", [])
    for plugin in ("@jupyterlab/apputils-extension:announcements", "@jupyter/nbgrader:create-assignment", "@jupyter/nbgrader:formgrader",
                   "@jupyter/nbgrader:course-list", "@jupyter/nbgrader:assignment-list"):
        assert plugin in disabled, f"{plugin} is offered to the student"
    assert "@jupyter/nbgrader:validate-assignment" not in disabled, "Validate must stay"
    assert config.get("news", {}).get("disabled") is True
    assert status_of(f"{base}/formgrader?token={token}") == 404
    assert status_of(f"{base}/courses?token={token}") == 404
    assert status_of(f"{base}/formgraders?token={token}") == 404
    assert status_of(f"{base}/nbgrader_version?version=0&token={token}") != 404, "Validate's server side is gone"
    with urllib.request.urlopen(f"{base}/lab/api/update?token={token}", timeout=10) as reply:
        assert json.loads(reply.read()).get("notification") is None


def test_as_root_it_starts_and_says_so(student_lab_server):
    base, token, log = student_lab_server
    if os.geteuid() != 0:
        pytest.skip("not running as root")
    assert "running as root" in log.read_text() and "--allow-root" in log.read_text()


def test_the_command_line_asks_for_allow_root_only_as_root():
    assert "--allow-root" in student_lab.command([], root=True)
    assert "--allow-root" not in student_lab.command([], root=False)
    assert student_lab.command(["--allow-root"], root=True).count("--allow-root") == 1


def test_with_an_exchange_the_assignment_list_stays(tmp_path):
    student_lab.write_config(tmp_path, exchange=True)
    disabled = json.loads((tmp_path / "labconfig" / "page_config.json").read_text())["disabledExtensions"]
    assert "@jupyter/nbgrader:assignment-list" not in disabled
    assert "@jupyter/nbgrader:create-assignment" in disabled


def test_widget_state_is_saved_and_existing_overrides_are_kept(tmp_path):
    defaults = tmp_path / "defaults"
    defaults.mkdir()
    (defaults / "overrides.json").write_text(json.dumps({"@jupyterlab/apputils-extension:themes": {"theme": "x"}}))
    settings = student_lab.write_settings(tmp_path / "settings", defaults)
    overrides = json.loads((settings / "overrides.json").read_text())
    assert overrides["@jupyter-widgets/jupyterlab-manager:plugin"] == {"saveState": True}
    assert overrides["@jupyterlab/apputils-extension:themes"] == {"theme": "x"}
    assert f"--LabApp.app_settings_dir={settings}" in student_lab.command([], root=False, settings=settings)


def test_under_a_hub_it_runs_the_single_user_server():
    assert student_lab.spawned_by_hub({"JUPYTERHUB_API_TOKEN": "x"}) and not student_lab.spawned_by_hub({})
    assert student_lab.command([], root=False, hub=True)[1:3] == ["-m", "jupyterhub.singleuser"]
    assert student_lab.command([], root=False)[1:3] == ["-m", "jupyterlab"]


def test_sigterm_to_the_student_lab_stops_jupyterlab_too(tmp_path):
    """A hub stops a server with SIGTERM to the process it started: JupyterLab must not be left running."""
    port, token = free_port(), secrets.token_hex(16)
    env = dict(os.environ, JUPYTER_CONFIG_DIR=str(tmp_path / "user-config"), LABSUPPORT_EXCHANGE=str(tmp_path / "x"),
               JUPYTER_RUNTIME_DIR=str(tmp_path / "runtime"), JUPYTER_DATA_DIR=str(tmp_path / "data"))
    wrapper = subprocess.Popen([sys.executable, "-m", "labsupport.student_lab", "--no-browser", "--ip=127.0.0.1",
                                f"--port={port}", f"--IdentityProvider.token={token}",
                                f"--ServerApp.root_dir={tmp_path}"], stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, env=env, start_new_session=True)
    try:
        deadline = time.time() + 60
        while not (_listening(port) and status_of(f"http://127.0.0.1:{port}/api/status?token={token}") == 200):
            assert wrapper.poll() is None and time.time() < deadline, "the student's JupyterLab did not start"
            time.sleep(0.3)
        wrapper.terminate()
        wrapper.wait(timeout=30)
        deadline = time.time() + 30
        while _listening(port) and time.time() < deadline:
            time.sleep(0.2)
        assert not _listening(port), "JupyterLab kept running after its student_lab got SIGTERM"
    finally:
        try:
            os.killpg(wrapper.pid, 9)
        except ProcessLookupError:
            pass
        wrapper.wait()


def _listening(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0
