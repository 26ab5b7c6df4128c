"""Stopping what a test started: a server run in a process group of its own (`start_new_session=True`)."""
from __future__ import annotations

import os
import signal
import subprocess


def stop_group(proc: subprocess.Popen, grace: float = 30.0) -> None:
    """SIGTERM to `proc`'s process group; SIGKILL to it if `proc` has not ended `grace` seconds later."""
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
