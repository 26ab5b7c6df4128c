"""`labsupport doctor` and `labsupport clean`: what can run here, and removing what earlier runs left behind."""
from __future__ import annotations

import os
import platform
import sys


def backend_problems() -> dict[str, list[str]]:
    """For each backend, what stops it from running on this machine (empty list: it can run)."""
    from labsupport.netns.machine import problems as kernel_problems
    from labsupport.kind.preflight import problems as kind_problems
    return {"sim": [], "netns": kernel_problems(), "kind": kind_problems()}


def report() -> tuple[str, bool]:
    """A readable report of every backend; ok is True when the default backend can run."""
    lines = [f"labsupport on {platform.system()} {platform.release()}, Python {sys.version.split()[0]}"]
    for backend, problems in backend_problems().items():
        if problems:
            lines.append(f"  {backend:<6} cannot run here:")
            lines.extend(f"           - {p}" for p in problems)
        else:
            lines.append(f"  {backend:<6} ready")
    from labsupport.grading.sandbox import problems as sandbox_problems
    grading = sandbox_problems()
    lines.append("  grading sandbox (bubblewrap) " + ("ready" if not grading else "cannot run here:"))
    lines.extend(f"           - {p}" for p in grading)
    from labsupport.kind.preflight import notes
    for note in notes():
        lines.append(f"  note: {note}")
    return "\n".join(lines), True


#: What `labsupport clean` takes down, in order; `--only` names some of them.
CLEAN_PARTS = ("netns", "kind", "class", "engine")


def clean(only: tuple[str, ...] = CLEAN_PARTS) -> list[str]:
    """Remove every network namespace, link, server and kind cluster this project made, the class it set up, and stop
    the Docker engine it started (or only the parts named in `only`); say what went."""
    from labsupport.netns.machine import clean as kernel_clean
    from labsupport.kind.preflight import clean as kind_clean
    from labsupport.kind.engine import stop_engine
    unknown = sorted(set(only) - set(CLEAN_PARTS))
    if unknown:
        raise ValueError(f"nothing called {', '.join(unknown)} to clean: choose from {', '.join(CLEAN_PARTS)}")
    parts = {"netns": kernel_clean, "kind": kind_clean, "class": class_clean, "engine": stop_engine}
    return [line for part in CLEAN_PARTS if part in only for line in parts[part]()] or ["nothing to clean"]


def class_clean() -> list[str]:
    """Take down what a `labsupport class` left (needs root: it deletes Unix accounts); nothing without root."""
    from labsupport.hub.roster import class_accounts
    from labsupport.hub.service import clean, stray_proxies
    from labsupport.hub.state import read_state, state_dir
    if os.geteuid() != 0:
        left = class_accounts()
        return [f"class accounts left ({', '.join(left)}): run `labsupport clean` as root"] if left else []
    if not class_accounts() and read_state(state_dir()) is None and not stray_proxies():
        return []
    return clean()
