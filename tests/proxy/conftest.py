"""Kernel-tier helpers for the proxy tests: skip without root or tools, fail instead when CI is set."""
from __future__ import annotations

import secrets
import subprocess

import pytest

from labsupport.testing import require_kernel  # noqa: F401  (the tests here import it from this module)


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
