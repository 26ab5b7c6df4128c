"""`labsupport class up|down|status`: a JupyterHub class on this machine."""
from __future__ import annotations

import argparse
import pathlib


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add `class` and its subcommands to the `labsupport` CLI."""
    klass = subparsers.add_parser("class", help="a JupyterHub class on this machine: real Unix accounts, nbgrader's "
                                                "exchange, the course for the instructor (root)")
    sub = klass.add_subparsers(dest="class_command", required=True)
    up = sub.add_parser("up", help="make the accounts and folders and start JupyterHub on 127.0.0.1")
    up.add_argument("--students", type=int, required=True, help="how many student accounts (labclass-s01 …)")
    up.add_argument("--state-dir", default=None, help="the class's folder (default: LABSUPPORT_CLASS_DIR or "
                                                      "/srv/labsupport-class)")
    up.set_defaults(func=cmd_up)
    down = sub.add_parser("down", help="stop the hub and every server, delete the accounts and the folders")
    down.add_argument("--state-dir", default=None)
    down.set_defaults(func=cmd_down)
    status = sub.add_parser("status", help="where the class's hub is, and who is in it")
    status.add_argument("--state-dir", default=None)
    status.set_defaults(func=cmd_status)


def cmd_up(args: argparse.Namespace) -> int:
    """Make the class and print how to reach it."""
    from labsupport.hub.roster import numbered_roster
    from labsupport.hub.service import up
    state = up(numbered_roster(args.students), pathlib.Path(args.state_dir) if args.state_dir else None)
    _print(state)
    return 0


def cmd_down(args: argparse.Namespace) -> int:
    """Take the class down."""
    from labsupport.hub.service import down
    from labsupport.hub.state import read_state, state_dir
    state = read_state(state_dir(args.state_dir))
    if state is None:
        print(f"no class in {state_dir(args.state_dir)}")
        return 0
    for line in down(state):
        print(line)
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    """Print the class (exit 1 when there is none)."""
    from labsupport.hub.state import read_state, state_dir
    state = read_state(state_dir(args.state_dir))
    if state is None:
        print(f"no class in {state_dir(args.state_dir)} (start one with `labsupport class up --students N`)")
        return 1
    _print(state)
    return 0


def _print(state) -> None:
    print(f"class hub: {state.url}  (state: {state.path}, root only)")
    print(f"instructor: {state.instructor}  course: {state.course}")
    print(f"students: {', '.join(state.students)}")
    print(f"exchange: {state.exchange}")
