"""Kernel-tier fixtures for the netns backend: labs on real namespaces, and a check that nothing is left behind."""
from __future__ import annotations

import os
import secrets
import subprocess

import pytest

from labsupport.testing import missing_kernel_requirements, require_kernel

TOOLS = ("nft", "iptables-restore", "conntrack", "curl")


def own_leftovers() -> list[str]:
    """Namespaces, /etc/netns entries and root links this test process made and did not remove."""
    from labsupport.netns.namespaces import ETC_NETNS, list_namespaces, root_links
    stem = f"lsk-{os.getpid()}-"
    found = [f"netns {n}" for n in list_namespaces(stem)]
    if os.path.isdir(ETC_NETNS):
        found += [f"{ETC_NETNS}/{e}" for e in os.listdir(ETC_NETNS) if e.startswith(stem)]
    found += [f"link {n}" for n in root_links()]
    return found


@pytest.fixture(scope="session", autouse=True)
def nothing_left_behind():
    """After the whole kernel tier: no namespace, /etc/netns entry or link of ours remains."""
    yield
    if missing_kernel_requirements(*TOOLS):
        return
    listing = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    leftovers = own_leftovers()
    assert not leftovers, f"the kernel tests left these behind: {leftovers}\n(ip netns list:\n{listing})"


def make_lab(mode: str, seed: int = 0):
    """A netns Lab in `mode`, with a short curl timeout so that dropped connections fail fast."""
    require_kernel(*TOOLS)
    from labsupport import Lab
    lab = Lab(backend="netns", seed=seed, proxy_mode=mode)
    lab._backend.network.curl_timeout = 2
    return lab


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
