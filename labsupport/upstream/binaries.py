"""Where the upstream binaries are: `LABSUPPORT_UPSTREAM_BIN`, else the tree's `.upstream/bin` (`make upstream`)."""
from __future__ import annotations

import os
import shutil

from labsupport.testing import missing_kernel_requirements, require

NAMES = ("kube-proxy", "coredns")
BUILD_HINT = "run `make upstream` (needs Go 1.26 or newer)"


def bin_dir() -> str:
    """The folder `make upstream` builds into, or the one LABSUPPORT_UPSTREAM_BIN names."""
    override = os.environ.get("LABSUPPORT_UPSTREAM_BIN")
    if override:
        return override
    tree = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    return os.path.join(tree, ".upstream", "bin")


def binary(name: str) -> str | None:
    """The path of an upstream binary (`kube-proxy`, `coredns`) if it is built, else None."""
    if name not in NAMES:
        raise ValueError(f"unknown upstream binary {name!r}: one of {', '.join(NAMES)}")
    path = os.path.join(bin_dir(), name)
    return path if os.access(path, os.X_OK) else None


def go_command() -> str | None:
    """The `go` command, on PATH or in /usr/local/go."""
    found = shutil.which("go")
    if found:
        return found
    path = "/usr/local/go/bin/go"
    return path if os.access(path, os.X_OK) else None


def missing_upstream_requirements(*names: str) -> list[str]:
    """What running the given upstream binaries lacks here (Go and the built binaries)."""
    problems = []
    if go_command() is None:
        problems.append("Go (https://go.dev/dl/, 1.26 or newer)")
    absent = [n for n in (names or NAMES) if binary(n) is None]
    if absent:
        problems.append(f"the binaries {', '.join(absent)} in {bin_dir()} ({BUILD_HINT})")
    return problems


def require_upstream(*names: str) -> None:
    """Skip/fail unless Go and the built upstream binaries (`make upstream`) are here, with root and the
    netfilter tools to run them in network namespaces."""
    require(missing_upstream_requirements(*names) + missing_kernel_requirements("iptables-save", "nft", "curl"),
            "upstream")
