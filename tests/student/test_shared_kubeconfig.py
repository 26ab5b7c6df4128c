"""The kubeconfig `make lab`'s terminals share: each lab adds its context while it runs, the newest is current."""
from __future__ import annotations

import doctest

import yaml

from labsupport import Lab, shared_kubeconfig


def test_doctests():
    assert doctest.testmod(shared_kubeconfig).failed == 0


def test_a_lab_adds_its_context_while_it_runs(tmp_path, monkeypatch):
    shared = tmp_path / "kubeconfig"
    monkeypatch.setenv(shared_kubeconfig.ENV, str(shared))
    monkeypatch.setenv("JPY_SESSION_NAME", str(tmp_path / "notebooks" / "04 kube-proxy modes.ipynb"))
    with Lab(seed=0) as first, Lab(seed=1) as second:
        assert (first.context, second.context) == ("04-kube-proxy-modes", "04-kube-proxy-modes-2")
        config = yaml.safe_load(shared.read_text())
        assert config["current-context"] == "04-kube-proxy-modes-2"
        server = {c["name"]: c["cluster"]["server"] for c in config["clusters"]}
        assert server["04-kube-proxy-modes"] != server["04-kube-proxy-modes-2"]
        first.close()
        config = yaml.safe_load(shared.read_text())
        assert [c["name"] for c in config["contexts"]] == ["04-kube-proxy-modes-2"]
    config = yaml.safe_load(shared.read_text())
    assert config["contexts"] == [] and "current-context" not in config
    assert not (tmp_path / "kubeconfig.lock").exists()


def test_outside_make_lab_a_lab_touches_no_kubeconfig(monkeypatch):
    monkeypatch.delenv(shared_kubeconfig.ENV, raising=False)
    with Lab(seed=0) as lab:
        assert lab.context is None
