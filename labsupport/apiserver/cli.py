"""Command-line verbs of the embedded API server (`labsupport up|down|status|kubectl`).

`labsupport up` starts a standalone embedded cluster in a background process whose clock follows wall time;
its state file (pid, url, kubeconfig) lives under $XDG_RUNTIME_DIR/labsupport or ~/.cache/labsupport, so a
terminal, a demo or a notebook (`read_state()["kubeconfig"]`) can attach to it.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time

from labsupport.errors import LabError


def state_dir() -> str:
    """Where a standalone cluster keeps its state file, kubeconfig and log."""
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime and os.path.isdir(runtime) and os.access(runtime, os.W_OK):
        return os.path.join(runtime, "labsupport")
    return os.path.join(os.path.expanduser("~"), ".cache", "labsupport")


def state_path() -> str:
    """The state file of the standalone cluster."""
    return os.path.join(state_dir(), "apiserver.json")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def read_state() -> dict | None:
    """The running standalone cluster's state (pid, url, kubeconfig, started), or None when none runs."""
    try:
        with open(state_path()) as f:
            state = json.load(f)
    except (OSError, ValueError):
        return None
    if not isinstance(state, dict) or not _alive(int(state.get("pid", 0) or 0)):
        return None
    return state


def running_kubeconfig() -> str | None:
    """The kubeconfig of a running standalone cluster, for a notebook to attach to; None when none runs."""
    state = read_state()
    return state["kubeconfig"] if state else None


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add this package's subcommands to the `labsupport` CLI."""
    up = subparsers.add_parser("up", help="run a standalone embedded cluster with a Kubernetes API (background)")
    up.add_argument("--seed", type=int, default=0, help="seed for names, IPs and timings (default 0)")
    up.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (default: a free one)")
    up.add_argument("--proxy-mode", default="iptables", choices=("iptables", "ipvs", "nftables"))
    up.add_argument("--foreground", action="store_true", help="serve in this process until interrupted")
    up.set_defaults(func=cmd_up)
    down = subparsers.add_parser("down", help="stop the standalone cluster and delete the kind cluster(s) the lab made")
    down.add_argument("--kind", metavar="NAME", default=None,
                      help="delete only this kind cluster (default: every cluster named labsupport or labsupport-…)")
    down.set_defaults(func=cmd_down)
    status = subparsers.add_parser("status", help="is a standalone cluster running, and where")
    status.set_defaults(func=cmd_status)
    kubectl = subparsers.add_parser("kubectl", help="run kubectl against the standalone cluster",
                                    prefix_chars="\0")
    kubectl.add_argument("args", nargs=argparse.REMAINDER)
    kubectl.set_defaults(func=cmd_kubectl)


def cmd_up(args: argparse.Namespace) -> int:
    """`labsupport up`: start the standalone cluster (or report the one already running)."""
    state = read_state()
    if state:
        _print_state(state, "already running")
        return 0
    if args.foreground:
        return serve(args.seed, args.port, args.proxy_mode)
    directory = state_dir()
    os.makedirs(directory, mode=0o700, exist_ok=True)
    log = open(os.path.join(directory, "apiserver.log"), "ab")
    command = [sys.executable, "-m", "labsupport.cli", "up", "--foreground", "--seed", str(args.seed),
               "--port", str(args.port), "--proxy-mode", args.proxy_mode]
    proc = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True)
    log.close()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        state = read_state()
        if state and state.get("pid") == proc.pid:
            _print_state(state, "started")
            return 0
        if proc.poll() is not None:
            raise LabError(f"the standalone cluster exited at start (code {proc.returncode}); "
                           f"see {os.path.join(directory, 'apiserver.log')}")
        time.sleep(0.1)
    proc.terminate()
    raise LabError("the standalone cluster did not come up within 60 s")


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


def cmd_down(args: argparse.Namespace) -> int:
    """`labsupport down`: stop the standalone cluster, and delete the kind cluster(s) the lab created."""
    state = read_state()
    if not state:
        print("no standalone cluster is running")
    else:
        pid = int(state["pid"])
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and _alive(pid):
            time.sleep(0.1)
            try:
                os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                pass
        if _alive(pid):
            os.kill(pid, signal.SIGKILL)
        try:
            os.remove(state_path())
        except OSError:
            pass
        print(f"stopped the standalone cluster (pid {pid})")
    from labsupport.kind.preflight import delete_cluster, lab_clusters
    for name in ([args.kind] if getattr(args, "kind", None) else lab_clusters()):
        for line in delete_cluster(name):
            print(line)
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    """`labsupport status`: where the standalone cluster runs (exit 1 when none does)."""
    state = read_state()
    if not state:
        print("no standalone cluster is running (start one with `labsupport up`)")
        return 1
    _print_state(state, "running")
    return 0


def cmd_kubectl(args: argparse.Namespace) -> int:
    """`labsupport kubectl …`: the real kubectl against the standalone cluster."""
    from labsupport.kubectl import find_kubectl
    state = read_state()
    if not state:
        raise LabError("no standalone cluster is running: start one with `labsupport up`")
    env = dict(os.environ, KUBECONFIG=state["kubeconfig"])
    return subprocess.call([find_kubectl(), *args.args], env=env)


def _print_state(state: dict, what: str) -> None:
    print(f"labsupport cluster {what}: pid {state['pid']}, {state['url']}")
    print(f"export KUBECONFIG={state['kubeconfig']}")
