"""Where kubectl runs: what a browser tab refuses, and how labsupport says so (checked on CPython, the tab's switch
thrown: nothing here needs Pyodide)."""
from __future__ import annotations

import pytest

from labsupport import kubectl, kubectl_wasm
from labsupport.errors import BackendUnavailable


@pytest.mark.parametrize("command,refused", [
    ("exec -it web-1 -- sh", "exec -it"),
    ("exec web-1 -- ls", "exec"),
    ("port-forward svc/web 8080:80", "port-forward"),
    ("-n kube-system attach coredns-1", "attach"),
    ("run tmp --rm -it --image=busybox -- sh", "run --rm -it"),
    ("cp web-1:/etc/hosts hosts", "cp"),
    ("proxy", "proxy"),
    ("edit svc web", "edit"),
])
def test_what_needs_a_terminal_or_a_live_connection(command, refused):
    line = kubectl_wasm.refusal(command.split())
    assert line is not None and line.startswith(f"`kubectl {refused}` needs a terminal")


@pytest.mark.parametrize("command", ["get pods -w", "logs web-1 -f", "run c --image=busybox --restart=Never -- ls",
                                     "get pods -o wide", "describe svc web", "delete pod web-1 --wait=false",
                                     "explain service.spec", "apply -f web.yaml", "get pods -- exec"])
def test_what_runs_in_a_tab(command):
    assert kubectl_wasm.refusal(command.split()) is None


@pytest.fixture
def in_tab(monkeypatch):
    monkeypatch.setattr(kubectl, "IN_BROWSER", True)


def test_a_refusal_is_one_line_on_stderr_and_a_failed_result(in_tab, capsys):
    result = kubectl.run_kubectl("/nowhere/kubeconfig", "exec -it web-1 -- sh", serve=lambda *a, **k: None)
    assert (result.returncode, result.stdout, result.args) == (1, "", ["exec", "-it", "web-1", "--", "sh"])
    shown = capsys.readouterr()
    assert shown.out == "" and shown.err == result.stderr and shown.err.count("\n") == 1


def test_kubectl_missing_from_the_site_is_one_line_not_an_exception(in_tab, monkeypatch, capsys):
    def unavailable(*args, **kwargs):
        raise BackendUnavailable("kubectl.wasm could not be loaded from http://127.0.0.1/static/kubectl: 404")
    monkeypatch.setattr(kubectl_wasm, "run", unavailable)
    result = kubectl.run_kubectl("/nowhere/kubeconfig", "get pods", serve=lambda *a, **k: None)
    assert result.returncode == 1
    assert capsys.readouterr().err == "kubectl.wasm could not be loaded from http://127.0.0.1/static/kubectl: 404\n"


def test_only_the_embedded_cluster_is_reachable_from_a_tab(in_tab, monkeypatch, capsys):
    monkeypatch.setenv("LABSUPPORT_LANG", "ru")
    result = kubectl.run_kubectl("/nowhere/kubeconfig", "get pods")
    assert result.returncode == 1
    assert result.stderr == "во вкладке браузера kubectl достаёт только до встроенного кластера (бэкенд sim)\n"
    assert capsys.readouterr().err == result.stderr


def test_the_site_folder_can_be_named(monkeypatch):
    monkeypatch.setenv(kubectl_wasm.LOCATION_VARIABLE, "http://127.0.0.1:8000/static/kubectl/")
    assert kubectl_wasm.location() == "http://127.0.0.1:8000/static/kubectl"
