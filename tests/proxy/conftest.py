"""Kernel-tier helpers for the proxy tests: skip without root or tools, fail instead when CI is set."""
from __future__ import annotations

import os
import secrets
import shutil
import subprocess

import pytest


def require_kernel(*tools: str) -> None:
    """Skip the test unless running as root with `tools` installed; under CI=... a missing requirement fails it."""
    missing = [t for t in ("ip", *tools) if shutil.which(t) is None]
    problems = []
    if os.geteuid() != 0:
        problems.append("not running as root")
    if missing:
        problems.append("missing tools: " + ", ".join(missing))
    if not problems:
        return
    message = "kernel test needs " + "; ".join(problems)
    if os.environ.get("CI"):
        pytest.fail(message + " (CI is set, so this tier is required)")
    pytest.skip(message)


class Netns:
    """A fresh network namespace `lsk-t-<random>`; `run(...)` executes a command inside it."""

    def __init__(self) -> None:
        self.name = "lsk-t-" + secrets.token_hex(4)
        subprocess.run(["ip", "netns", "add", self.name], check=True, capture_output=True)

    def run(self, *argv: str, input: str | None = None, check: bool = True) -> subprocess.CompletedProcess:
        """Run argv inside the namespace; raise with the tool's stderr when it fails and check is true."""
        proc = subprocess.run(["ip", "netns", "exec", self.name, *argv], input=input, text=True,
                              capture_output=True)
        if check and proc.returncode != 0:
            raise AssertionError(f"{' '.join(argv)} failed ({proc.returncode}): {proc.stderr.strip()}")
        return proc

    def delete(self) -> None:
        """Remove the namespace."""
        subprocess.run(["ip", "netns", "del", self.name], capture_output=True)


@pytest.fixture
def netns():
    """A fresh network namespace, deleted after the test whatever happens."""
    require_kernel()
    ns = Netns()
    try:
        yield ns
    finally:
        ns.delete()
