"""The kind tier's gate under CI: it waits for the offline images `.ci/run` builds beside the other tiers (failing
with the build's own words when that build failed), then for the clusters made ahead of it (making itself those that
were not)."""
from __future__ import annotations

import threading
import time

import pytest

from tests.kind.conftest import wait_for_clusters_made_ahead, wait_for_images_build


def test_the_tier_waits_for_the_build_to_finish(tmp_path):
    status = tmp_path / "kind-images.status"
    status.write_text("")
    threading.Timer(1.0, lambda: status.write_text("0\n")).start()
    started = time.monotonic()
    wait_for_images_build(status, timeout=30)
    assert time.monotonic() - started >= 0.9


def test_a_failed_build_fails_the_tier_with_its_log(tmp_path, monkeypatch):
    status, log = tmp_path / "kind-images.status", tmp_path / "kind-images.log"
    status.write_text("2\n")
    log.write_text("kind-images: `debootstrap` failed with exit code 1\n")
    monkeypatch.setenv("LABSUPPORT_KIND_IMAGES_LOG", str(log))
    with pytest.raises(pytest.fail.Exception, match="(?s)exit code 2.*debootstrap` failed"):
        wait_for_images_build(status)


def test_a_build_that_never_ends_fails_the_tier(tmp_path):
    status = tmp_path / "kind-images.status"
    status.write_text("")
    with pytest.raises(pytest.fail.Exception, match="has not finished"):
        wait_for_images_build(status, timeout=0.5)


def test_the_tier_waits_for_the_clusters_made_ahead_of_it(tmp_path):
    status = tmp_path / "kind-clusters.status"
    status.write_text("")
    threading.Timer(1.0, lambda: status.write_text("0\n")).start()
    started = time.monotonic()
    wait_for_clusters_made_ahead(status, timeout=30)
    assert time.monotonic() - started >= 0.9


def test_clusters_not_made_ahead_are_made_by_the_tier_which_says_why(tmp_path, monkeypatch, capsys):
    status, log = tmp_path / "kind-clusters.status", tmp_path / "kind-clusters.log"
    status.write_text("1\n")
    log.write_text("kind cluster labsupport-small was not made ahead: BackendUnavailable: kind create cluster failed\n")
    monkeypatch.setenv("LABSUPPORT_KIND_CLUSTERS_LOG", str(log))
    wait_for_clusters_made_ahead(status)
    said = capsys.readouterr().out
    assert "exit code 1; the tier makes what is missing" in said and "labsupport-small was not made ahead" in said


def test_clusters_that_never_come_fail_the_tier(tmp_path):
    status = tmp_path / "kind-clusters.status"
    status.write_text("")
    with pytest.raises(pytest.fail.Exception, match="not ready after"):
        wait_for_clusters_made_ahead(status, timeout=0.5)
