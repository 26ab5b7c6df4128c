"""Test-tier helpers: a tier that needs a tool skips on a laptop without it, and fails under CI."""
from __future__ import annotations

import os
import shutil


def in_ci() -> bool:
    """Whether this run is CI, where every tier is required."""
    return bool(os.environ.get("CI"))


def missing_kernel_requirements(*tools: str) -> list[str]:
    """What the kernel tier lacks here: root, and the given tools (plus `ip`)."""
    problems = []
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        problems.append("root")
    missing = [t for t in ("ip", *tools) if shutil.which(t) is None]
    if missing:
        problems.append("the tools " + ", ".join(missing))
    return problems


def require(problems: list[str], tier: str) -> None:
    """Skip (or, under CI, fail) the calling test when `problems` is not empty."""
    if not problems:
        return
    import pytest
    message = f"the {tier} tier needs " + " and ".join(problems)
    if in_ci():
        pytest.fail(message + " (CI is set, so this tier must run)", pytrace=False)
    pytest.skip(message)


def require_kernel(*tools: str) -> None:
    """Skip/fail unless root and the netfilter tools are here."""
    require(missing_kernel_requirements(*tools), "kernel")


def chromium_path() -> str | None:
    """Where Chromium is, if anywhere."""
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


def require_browser() -> str:
    """Skip/fail unless Chromium is here; returns its path."""
    path = chromium_path()
    require([] if path else ["Chromium (apt-get install chromium)"], "browser")
    return path or ""


def require_upstream(*names: str) -> None:
    """Skip/fail unless Go and the built upstream binaries (`make upstream`) are here, with root and the
    netfilter tools to run them in network namespaces."""
    from labsupport.upstream.binaries import missing_upstream_requirements
    require(missing_upstream_requirements(*names) + missing_kernel_requirements("iptables-save", "nft", "curl"),
            "upstream")
