"""`labsupport up|down|status|clean|doctor|kubectl|grade|report|variant …`: one handler prints errors."""
from __future__ import annotations

import argparse
import sys

from labsupport.errors import LabError


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `labsupport` command."""
    parser = argparse.ArgumentParser(prog="labsupport", description="The Kubernetes Services lab's tools.")
    sub = parser.add_subparsers(dest="command", required=True)
    doctor = sub.add_parser("doctor", help="which backends can run on this machine, and why not")
    doctor.set_defaults(func=_doctor)
    clean = sub.add_parser("clean", help="remove every namespace, link and cluster this project left behind")
    clean.set_defaults(func=_clean)
    from labsupport.apiserver.cli import register
    register(sub)
    from labsupport.classroom.cli import register as register_classroom
    register_classroom(sub)
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except LabError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


def _doctor(args) -> int:
    from labsupport.doctor import report
    text, ok = report()
    print(text)
    return 0 if ok else 1


def _clean(args) -> int:
    from labsupport.doctor import clean
    for line in clean():
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
