"""`labsupport up|status|kubectl|down`, and the table cell formats kubectl users know."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from labsupport.apiserver.tables import human_duration, row_cells


@pytest.mark.parametrize("seconds,text", [(0, "0s"), (-1, "0s"), (-5, "<invalid>"), (59, "59s"), (119, "119s"),
                                          (123, "2m3s"), (180, "3m"), (599, "9m59s"), (600, "10m"),
                                          (3 * 3600 - 1, "179m"), (4 * 3600, "4h"), (4 * 3600 + 300, "4h5m"),
                                          (30 * 3600, "30h"), (50 * 3600, "2d2h"), (72 * 3600, "3d"),
                                          (40 * 86400, "40d"), (800 * 86400, "2y70d"), (9 * 365 * 86400, "9y")])
def test_human_duration(seconds, text):
    assert human_duration(seconds) == text


def test_slice_cells_cut_after_three():
    eps = {"kind": "EndpointSlice", "metadata": {"name": "web-abc", "creationTimestamp": "2026-01-01T00:00:00Z"},
           "addressType": "IPv4", "ports": [{"port": 80, "name": "http"}],
           "endpoints": [{"addresses": [f"10.244.1.{i}"]} for i in range(2, 6)]}
    assert row_cells(eps, 1767225600 + 123) == ["web-abc", "IPv4", "80", "10.244.1.2,10.244.1.3,10.244.1.4 + 1 more...",
                                                "2m3s"]
    eps["endpoints"], eps["ports"] = [], []
    assert row_cells(eps, 1767225600)[2:4] == ["<unset>", "<unset>"]


def test_service_cells():
    svc = {"kind": "Service", "metadata": {"name": "lb", "creationTimestamp": "2026-01-01T00:00:00Z"},
           "spec": {"type": "LoadBalancer", "clusterIP": "10.96.5.5", "selector": {"app": "web"},
                    "ports": [{"port": 80, "nodePort": 30080, "protocol": "TCP"}]},
           "status": {"loadBalancer": {}}}
    assert row_cells(svc, 1767225600 + 4 * 3600) == ["lb", "LoadBalancer", "10.96.5.5", "<pending>", "80:30080/TCP",
                                                     "4h", "app=web"]


def test_pod_status_cells():
    pod = {"kind": "Pod", "metadata": {"name": "p", "creationTimestamp": "2026-01-01T00:00:00Z",
                                       "deletionTimestamp": "2026-01-01T00:01:00Z"},
           "spec": {"containers": [{"name": "c"}]},
           "status": {"phase": "Running", "containerStatuses": [{"name": "c", "ready": True, "restartCount": 0,
                                                                  "state": {"running": {}}}]}}
    assert row_cells(pod, 1767225600 + 5)[:4] == ["p", "1/1", "Terminating", "0"]
    pod["metadata"].pop("deletionTimestamp")
    pod["status"]["containerStatuses"][0].update(ready=False, state={"waiting": {"reason": "ContainerCreating"}})
    assert row_cells(pod, 1767225600 + 5)[2] == "ContainerCreating"
    pod["status"]["phase"] = "Succeeded"
    pod["status"]["containerStatuses"][0]["state"] = {"terminated": {"reason": "Completed", "exitCode": 0}}
    assert row_cells(pod, 1767225600 + 5)[2] == "Completed"


def test_up_status_kubectl_down(tmp_path):
    env = dict(os.environ, XDG_RUNTIME_DIR=str(tmp_path))

    def cli(*args):
        return subprocess.run([sys.executable, "-m", "labsupport.cli", *args], env=env, capture_output=True,
                              text=True, timeout=90)

    assert cli("status").returncode == 1
    up = cli("up")
    try:
        assert up.returncode == 0, up.stderr
        assert "export KUBECONFIG=" in up.stdout
        status = cli("status")
        assert status.returncode == 0 and "https://127.0.0.1:" in status.stdout
        nodes = cli("kubectl", "get", "nodes", "-o", "name")
        assert nodes.stdout.split() == ["node/lab-control-plane", "node/lab-worker", "node/lab-worker2",
                                        "node/lab-worker3"]
        from labsupport.standalone import running_kubeconfig
        old = os.environ.get("XDG_RUNTIME_DIR")
        os.environ["XDG_RUNTIME_DIR"] = str(tmp_path)
        try:
            assert running_kubeconfig() and os.path.exists(running_kubeconfig())
        finally:
            if old is None:
                del os.environ["XDG_RUNTIME_DIR"]
            else:
                os.environ["XDG_RUNTIME_DIR"] = old
    finally:
        # `down` alone would also delete every kind cluster of the lab's on this machine: name one that is not there
        down = cli("down", "--kind", "labsupport-none-for-this-test")
    assert down.returncode == 0
    assert cli("status").returncode == 1
    assert not os.path.exists(tmp_path / "labsupport" / "apiserver.json")


def test_kubectl_result_display(lab, capsys):
    result = lab.kubectl("get nodes -o name", show=True)
    assert capsys.readouterr().out.split() == result.stdout.split()
    assert result.returncode == 0 and result.shown and result._repr_html_() == ""
    quiet = lab.kubectl("get svc nope", show=False)
    assert quiet.returncode == 1 and "NotFound" in repr(quiet) and "exit code 1" in quiet._repr_html_()
