"""Every lesson runs unchanged on the netns backend with the real kube-proxy programming the node namespaces."""
from __future__ import annotations

import pytest

from labsupport.upstream.binaries import require_upstream

from tests.notebooks.editions import ENGLISH, errors_on_netns, lessons

pytestmark = pytest.mark.upstream

#: Lesson 03 measures a second cluster of 20 workers and 1,000 pods: with a real kube-proxy in each of its 21 node
#: namespaces, every one waited for after each change, it outlasts a cell's limit on a 2-core machine. Its
#: Services and first cluster are covered by `test_rules.py::test_lesson_services`.
TOO_BIG = {"03-endpointslices"}


@pytest.mark.parametrize("path", [p for p in lessons(ENGLISH) if p.stem not in TOO_BIG], ids=lambda p: p.stem)
def test_lesson_runs_on_the_real_kube_proxy(path, tmp_path, monkeypatch):
    require_upstream("kube-proxy")
    monkeypatch.setenv("LABSUPPORT_BACKEND", "netns")
    monkeypatch.setenv("LABSUPPORT_KUBE_PROXY", "upstream")
    errors = errors_on_netns(path, tmp_path)
    assert not errors, f"{path.name} on the real kube-proxy: {errors}"
