"""kubectl answers like a cluster: its own errors for mistyped commands, and watches that stop when asked."""
from __future__ import annotations

import time


def test_mistyped_command_gets_kubectls_own_answer(kubectl):
    result = kubectl("gte pods", ok=False)
    assert result.returncode == 1
    assert 'unknown command "gte" for "kubectl"' in result.stderr
    assert "Did you mean this?" in result.stderr and "\tget" in result.stderr
    assert "--cache-dir" not in result.stderr and "plugin" not in result.stderr


def test_the_cache_stays_in_the_labs_directory(lab, kubectl):
    import os
    kubectl("get pods")
    cache = os.path.join(os.path.dirname(lab.kubeconfig), "cache")
    assert os.path.isdir(os.path.join(cache, "discovery"))


def test_watch_stops_after_the_rows_asked_for(lab):
    started = time.monotonic()
    result = lab.kubectl("get pods -l app=web -w", show=False, events=3, timeout=60)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].split()[:3] == ["NAME", "READY", "STATUS"]
    assert len(lines) == 4
    assert all(line.startswith("web-") for line in lines[1:])
    assert time.monotonic() - started < 30


def test_watch_stops_cleanly_at_its_timeout_and_sees_changes(lab):
    import threading
    pod = lab.get("pods", selector="app=web")[0]["metadata"]["name"]
    timer = threading.Timer(1.0, lambda: lab.delete("pod", pod))
    timer.start()
    try:
        result = lab.kubectl("get pods -l app=web --watch-only", show=False, timeout=4)
    finally:
        timer.join()
    assert result.returncode == 0, result.stderr
    assert "did not finish" not in result.stderr
    assert any(line.startswith(pod) and "Terminating" in line for line in result.stdout.splitlines())


def test_watch_without_limits_ends_by_itself(lab):
    from labsupport.kubectl import WATCH_SECONDS
    started = time.monotonic()
    result = lab.kubectl("get svc -w", show=False)
    assert result.returncode == 0
    assert "kubernetes" in result.stdout
    assert time.monotonic() - started < WATCH_SECONDS + 10


#: What a watch printed in one write: its header, six rows and the start of a seventh.
BURST = ("NAME   READY   STATUS\nweb-1   1/1   Running\nweb-2   1/1   Running\nweb-3   0/1   Pending\n"
         "web-4   1/1   Terminating\nweb-1   1/1   Terminating\nweb-3   1/1   Running\nweb-5")
FIRST_FOUR = ("NAME   READY   STATUS\nweb-1   1/1   Running\nweb-2   1/1   Running\nweb-3   0/1   Pending\n"
              "web-4   1/1   Terminating\n")


def test_a_watch_keeps_the_rows_asked_for_when_more_come_in_one_piece(tmp_path, monkeypatch, capsys):
    """On a busy machine kubectl may print the rows asked for and the next ones in one write: a run stopped after
    `events` rows keeps and shows those rows only, on CPython as in a tab (the same watch must print the same)."""
    from labsupport import kubectl
    fake = tmp_path / "kubectl"
    fake.write_text("#!/bin/sh\nprintf '" + BURST.replace("\n", "\\n") + "'\nexec sleep 30\n")
    fake.chmod(0o755)
    monkeypatch.setattr(kubectl, "find_kubectl", lambda: str(fake))
    began = time.monotonic()
    result = kubectl.run_kubectl(None, "get pods -w", events=4, timeout=20)
    assert time.monotonic() - began < 15, "stopped once the rows had come"
    assert (result.stdout, result.returncode) == (FIRST_FOUR, 0)
    assert capsys.readouterr().out == FIRST_FOUR, "the rows past the ones asked for are not shown either"
    # the tab's kubectl hands back everything it printed: the same cut applies
    assert kubectl._first_rows(BURST, 4) == FIRST_FOUR
