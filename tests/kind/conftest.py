"""Fixtures of the kind tests: the embedded API server a `kube` lab talks to over real HTTPS."""
from __future__ import annotations

import pytest

from labsupport import Lab


def embedded_kubeconfig(sim: Lab) -> str:
    """The kubeconfig of the embedded API server of `sim`; skips while that server does not exist yet."""
    try:
        return sim.kubeconfig
    except (ImportError, AttributeError) as e:
        pytest.skip(f"the embedded API server (labsupport.apiserver) is not available yet: {e}")


@pytest.fixture
def server():
    """An embedded cluster whose API server the kube backend talks to."""
    with Lab(backend="sim", seed=0) as sim:
        yield sim


@pytest.fixture
def kube(server, tmp_path, monkeypatch):
    """A `kube` lab on the embedded API server, in namespace default."""
    monkeypatch.setenv("LABSUPPORT_STATE_DIR", str(tmp_path / "state"))
    lab = Lab(backend="kube", kubeconfig=embedded_kubeconfig(server))
    yield lab
    lab.close()
