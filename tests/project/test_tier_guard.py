"""The kernel-tier guard: skip when requirements are missing, fail instead when CI is set."""
from __future__ import annotations

import pytest

from labsupport.testing import require_kernel


def test_missing_tool_skips_outside_ci(monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception):
        require_kernel("no-such-tool-lsk")


def test_missing_tool_fails_under_ci(monkeypatch):
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="no-such-tool-lsk"):
        require_kernel("no-such-tool-lsk")
