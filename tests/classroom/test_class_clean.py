"""`labsupport clean` after a class whose `labsupport class up` run was killed: with the hub killed outright, its
proxy and a student's server left running, clean still ends them, deletes the accounts and removes the folders."""
from __future__ import annotations

import os
import pathlib
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import pytest

from labsupport.hub.client import HubClient
from labsupport.hub.roster import RosterError, class_accounts, numbered_roster, Roster
from labsupport.hub.service import alive
from labsupport.hub.state import read_state
from labsupport.testing import require
from tests.classroom.test_term import missing

BIN = pathlib.Path(sys.executable).parent


@pytest.mark.classroom
@pytest.mark.slow
@pytest.mark.timeout(600)
def test_clean_removes_what_a_killed_class_left():
    require(missing(), "classroom")
    directory = pathlib.Path(tempfile.mkdtemp(prefix="labsupport-class-"))
    directory.chmod(0o755)
    try:
        up = subprocess.run([str(BIN / "labsupport"), "class", "up", "--students", "1", "--state-dir",
                             str(directory / "class")], capture_output=True, text=True, timeout=600)
        assert up.returncode == 0, up.stdout + up.stderr
        state = read_state(directory / "class")
        hub = HubClient(state)
        hub.start_server(state.students[0])
        server = hub.server_pid(state.students[0])
        os.kill(state.pids["hub"], signal.SIGKILL)
        deadline = time.monotonic() + 10
        while alive(state.pids["hub"]) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert alive(server) and alive(state.pids["proxy"]), "the killed hub should have left its children running"
        assert class_accounts() == sorted(state.accounts)
        # The default state folder knows nothing of this class: clean finds it through the accounts' homes.
        clean = subprocess.run([str(BIN / "labsupport"), "clean", "--only", "class"], capture_output=True, text=True, timeout=300,
                               env=dict(os.environ, LABSUPPORT_CLASS_DIR=str(directory / "elsewhere")))
        assert clean.returncode == 0, clean.stderr
        assert "deleted the accounts" in clean.stdout, clean.stdout
        assert class_accounts() == []
        assert not alive(server) and not alive(state.pids["proxy"])
        assert not (directory / "class").exists()
    finally:
        subprocess.run([str(BIN / "labsupport"), "clean", "--only", "class"], capture_output=True, timeout=300)
        shutil.rmtree(directory, ignore_errors=True)


@pytest.mark.classroom
def test_clean_stops_a_proxy_no_state_file_names(tmp_path):
    require(missing(), "classroom")
    from labsupport.hub.proxy_install import ensure_proxy
    proxy = subprocess.Popen([str(ensure_proxy()), "--ip", "127.0.0.1", "--port", "0", "--api-ip", "127.0.0.1",
                              "--api-port", "0"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(1)
        assert proxy.poll() is None
        clean = subprocess.run([str(BIN / "labsupport"), "clean", "--only", "class"], capture_output=True, text=True, timeout=300,
                               env=dict(os.environ, LABSUPPORT_CLASS_DIR=str(tmp_path)))
        assert f"pids {proxy.pid}" in clean.stdout, clean.stdout
        assert proxy.wait(timeout=30) is not None
    finally:
        if proxy.poll() is None:
            proxy.kill()
            proxy.wait()


def test_a_roster_takes_only_class_account_names():
    assert numbered_roster(3).students == ["labclass-s01", "labclass-s02", "labclass-s03"]
    for bad in ("root", "labclass-../x", "labclass-A", "labclass-"):
        with pytest.raises(RosterError, match="not a class account name"):
            Roster("labclass-teacher", [bad])
    with pytest.raises(RosterError, match="once"):
        Roster("labclass-teacher", ["labclass-a", "labclass-a"])
    with pytest.raises(RosterError, match="1 to 999"):
        numbered_roster(0)


def test_the_tier_skips_without_its_tools_and_fails_under_ci(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="node and npm"):
        require(missing(), "classroom")
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="Chromium"):
        require(missing(), "classroom")
