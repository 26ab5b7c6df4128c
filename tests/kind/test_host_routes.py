"""The host's routes to a cluster's pod ranges, as commands (recorded, never run)."""
from __future__ import annotations

import doctest

import pytest

from labsupport.kind import host_routes, preflight
from labsupport.kind.host_routes import PodRoute, pod_routes, routed
from labsupport.kind.runner import RecordingRunner

NODES = [
    {"metadata": {"name": "labsupport-spawn-control-plane"}, "spec": {"podCIDR": "10.250.0.0/24"},
     "status": {"addresses": [{"type": "InternalIP", "address": "172.30.0.2"},
                              {"type": "Hostname", "address": "labsupport-spawn-control-plane"}]}},
    {"metadata": {"name": "labsupport-spawn-worker"}, "spec": {"podCIDR": "10.250.1.0/24"},
     "status": {"addresses": [{"type": "InternalIP", "address": "172.30.0.3"}]}},
    {"metadata": {"name": "new"}, "spec": {}, "status": {"addresses": []}},
]


def test_doctests():
    assert doctest.testmod(host_routes).failed == 0


def test_a_route_per_node_with_a_pod_range():
    assert pod_routes(NODES) == [PodRoute("10.250.0.0/24", "172.30.0.2"), PodRoute("10.250.1.0/24", "172.30.0.3")]


def test_routes_are_removed_even_when_the_block_fails():
    runner = RecordingRunner()
    with pytest.raises(RuntimeError):
        with routed(pod_routes(NODES), runner):
            raise RuntimeError("the hub did not start")
    assert runner.commands() == [
        "ip route replace 10.250.0.0/24 via 172.30.0.2 proto 203",
        "ip route replace 10.250.1.0/24 via 172.30.0.3 proto 203",
        "ip route del 10.250.0.0/24 via 172.30.0.2 proto 203", "ip route del 10.250.1.0/24 via 172.30.0.3 proto 203"]


def test_a_route_that_cannot_be_added_says_why_and_removes_those_added():
    runner = RecordingRunner()
    runner.answer(["ip", "route", "replace", "10.250.1.0/24"], returncode=2, stderr="RTNETLINK answers: Operation "
                  "not permitted")
    with pytest.raises(Exception, match="Operation not permitted .adding routes needs root"):
        with routed(pod_routes(NODES), runner):
            pass
    assert runner.commands()[-1] == "ip route del 10.250.0.0/24 via 172.30.0.2 proto 203"


def test_clean_removes_the_routes_a_killed_run_left(tmp_path, monkeypatch):
    import tempfile
    monkeypatch.setenv("LABSUPPORT_STATE_DIR", str(tmp_path))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    runner = RecordingRunner()
    runner.answer(["ip", "-4", "route", "show", "proto", "203"],
                  stdout="10.250.1.0/24 via 172.30.0.3 dev br-1 proto 203 linkdown \n")
    assert preflight.clean(runner) == ["removed the host's route to 10.250.1.0/24"]
    assert "ip route del 10.250.1.0/24 proto 203" in runner.commands()
