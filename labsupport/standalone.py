"""A standalone embedded cluster (`labsupport up`): one process serving the Kubernetes API, its clock on wall time.

Its state file (pid, url, kubeconfig) lives under $XDG_RUNTIME_DIR/labsupport or ~/.cache/labsupport, so a
terminal, a demo or a notebook (`read_state()["kubeconfig"]`) can attach to it.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import threading
import time

from labsupport.upstream.process import pid_alive


def state_dir() -> str:
    """Where a standalone cluster keeps its state file, kubeconfig and log."""
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime and os.path.isdir(runtime) and os.access(runtime, os.W_OK):
        return os.path.join(runtime, "labsupport")
    return os.path.join(os.path.expanduser("~"), ".cache", "labsupport")


def state_path() -> str:
    """The state file of the standalone cluster."""
    return os.path.join(state_dir(), "apiserver.json")


def read_state() -> dict | None:
    """The running standalone cluster's state (pid, url, kubeconfig, started), or None when none runs."""
    try:
        with open(state_path()) as f:
            state = json.load(f)
    except (OSError, ValueError):
        return None
    if not isinstance(state, dict) or not pid_alive(int(state.get("pid", 0) or 0)):
        return None
    return state


def running_kubeconfig() -> str | None:
    """The kubeconfig of a running standalone cluster, for a notebook to attach to; None when none runs."""
    state = read_state()
    return state["kubeconfig"] if state else None


def serve(seed: int = 0, port: int = 0, proxy_mode: str = "iptables") -> int:
    """Run the standalone cluster in this process until SIGTERM/SIGINT; writes and removes the state file."""
    from labsupport.apiserver import APIServer
    from labsupport.sim.backend import EmbeddedBackend
    directory = state_dir()
    os.makedirs(directory, mode=0o700, exist_ok=True)
    backend = EmbeddedBackend(seed=seed, proxy_mode=proxy_mode)
    server = APIServer(backend.cluster, port=port, state_dir=os.path.join(directory, "apiserver"),
                       follow_wall_time=True).start()
    state = {"pid": os.getpid(), "url": server.url, "kubeconfig": server.kubeconfig_path,
             "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "seed": seed}
    tmp = state_path() + ".tmp"
    with open(tmp, "w") as f:
        json.dump(state, f)
    os.replace(tmp, state_path())
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    signal.signal(signal.SIGINT, lambda *_: done.set())
    print(f"serving {server.url} (kubeconfig {server.kubeconfig_path})", flush=True)
    try:
        while not done.wait(0.5):
            pass
    finally:
        server.stop()
        backend.close()
        shutil.rmtree(os.path.join(directory, "apiserver"), ignore_errors=True)
        try:
            with open(state_path()) as f:
                if json.load(f).get("pid") == os.getpid():
                    os.remove(state_path())
        except (OSError, ValueError):
            pass
    return 0


def stop() -> int | None:
    """Stop the running standalone cluster (SIGTERM, then SIGKILL after 15 s); returns its pid, or None."""
    state = read_state()
    if not state:
        return None
    pid = int(state["pid"])
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and pid_alive(pid):
        time.sleep(0.1)
        try:
            os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            pass
    if pid_alive(pid):
        os.kill(pid, signal.SIGKILL)
    try:
        os.remove(state_path())
    except OSError:
        pass
    return pid


__all__ = ["state_dir", "state_path", "read_state", "running_kubeconfig", "serve", "stop"]
