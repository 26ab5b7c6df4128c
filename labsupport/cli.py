"""`labsupport up|down|status|clean|doctor|kubectl|grade|report|variant|class …`: one handler prints errors."""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

from labsupport import standalone
from labsupport.errors import LabError
from labsupport.shape import PROXY_MODES


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `labsupport` command."""
    parser = argparse.ArgumentParser(prog="labsupport", description="The Kubernetes Services lab's tools.")
    sub = parser.add_subparsers(dest="command", required=True)
    doctor = sub.add_parser("doctor", help="which backends can run on this machine, and why not")
    doctor.set_defaults(func=_doctor)
    clean = sub.add_parser("clean", help="remove every namespace, link, cluster and upstream program this project "
                                          "left behind")
    clean.add_argument("--only", action="append", choices=("netns", "kind", "class", "engine"),
                       help="clean only this part (repeatable): the network namespaces and their programs, the kind "
                            "clusters, the class of `labsupport class`, or the Docker engine this project started")
    clean.add_argument("--kubeconfig", help="clean a shared cluster instead of this machine: remove the classes "
                                            "`labsupport class cluster` made there (namespaces, accounts, bindings, "
                                            "guards), with an administrator's kubeconfig")
    clean.add_argument("--context", help="the kubeconfig's context to use (default: its current one)")
    clean.add_argument("--class", dest="class_name", help="with --kubeconfig: only this class")
    clean.set_defaults(func=_clean)
    _register_cluster_commands(sub)
    from labsupport.classroom.cli import register as register_classroom
    register_classroom(sub)
    from labsupport.hub.cli import register as register_class
    register_class(sub)
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except LabError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


def _register_cluster_commands(subparsers: argparse._SubParsersAction) -> None:
    """`up`, `down`, `status` and `kubectl`: the standalone embedded cluster."""
    up = subparsers.add_parser("up", help="run a standalone embedded cluster with a Kubernetes API (background)")
    up.add_argument("--seed", type=int, default=0, help="seed for names, IPs and timings (default 0)")
    up.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (default: a free one)")
    up.add_argument("--proxy-mode", default="iptables", choices=PROXY_MODES)
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
    state = standalone.read_state()
    if state:
        _print_state(state, "already running")
        return 0
    if args.foreground:
        return standalone.serve(args.seed, args.port, args.proxy_mode)
    directory = standalone.state_dir()
    os.makedirs(directory, mode=0o700, exist_ok=True)
    log = open(os.path.join(directory, "apiserver.log"), "ab")
    command = [sys.executable, "-m", "labsupport.cli", "up", "--foreground", "--seed", str(args.seed),
               "--port", str(args.port), "--proxy-mode", args.proxy_mode]
    proc = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True)
    log.close()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        state = standalone.read_state()
        if state and state.get("pid") == proc.pid:
            _print_state(state, "started")
            return 0
        if proc.poll() is not None:
            raise LabError(f"the standalone cluster exited at start (code {proc.returncode}); "
                           f"see {os.path.join(directory, 'apiserver.log')}")
        time.sleep(0.1)
    proc.terminate()
    raise LabError("the standalone cluster did not come up within 60 s")


def cmd_down(args: argparse.Namespace) -> int:
    """`labsupport down`: stop the standalone cluster, and delete the kind cluster(s) the lab created."""
    pid = standalone.stop()
    print(f"stopped the standalone cluster (pid {pid})" if pid else "no standalone cluster is running")
    from labsupport.kind.preflight import delete_cluster, lab_clusters
    for name in ([args.kind] if getattr(args, "kind", None) else lab_clusters()):
        for line in delete_cluster(name):
            print(line)
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    """`labsupport status`: where the standalone cluster runs (exit 1 when none does)."""
    state = standalone.read_state()
    if not state:
        print("no standalone cluster is running (start one with `labsupport up`)")
        return 1
    _print_state(state, "running")
    return 0


def cmd_kubectl(args: argparse.Namespace) -> int:
    """`labsupport kubectl …`: the real kubectl against the standalone cluster."""
    from labsupport.kubectl import find_kubectl
    state = standalone.read_state()
    if not state:
        raise LabError("no standalone cluster is running: start one with `labsupport up`")
    env = dict(os.environ, KUBECONFIG=state["kubeconfig"])
    return subprocess.call([find_kubectl(), *args.args], env=env)


def _print_state(state: dict, what: str) -> None:
    print(f"labsupport cluster {what}: pid {state['pid']}, {state['url']}")
    print(f"export KUBECONFIG={state['kubeconfig']}")


def _doctor(args) -> int:
    from labsupport.doctor import report
    text, ok = report()
    print(text)
    return 0 if ok else 1


def _clean(args) -> int:
    from labsupport.doctor import CLEAN_PARTS, clean
    if args.kubeconfig:
        from labsupport.hub.cluster import clean_remote
        for line in clean_remote(args.kubeconfig, class_name=args.class_name, context=args.context):
            print(line)
        return 0
    for line in clean(tuple(args.only) if args.only else CLEAN_PARTS):
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
