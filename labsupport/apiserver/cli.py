"""Command-line verbs of the embedded API server (`labsupport up|down|status|kubectl`)."""
from __future__ import annotations


def register(subparsers) -> None:
    """Add this package's subcommands to the `labsupport` CLI."""
