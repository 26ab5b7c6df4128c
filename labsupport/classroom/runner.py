"""Run nbgrader's own command line in child processes forked from a server that has nbgrader imported already.

Importing nbgrader's apps costs seconds of CPU (several on a busy machine): a fresh `nbgrader` process per submission
would pay it every time. A forkserver imports it once; each run is a fork of it, a process of its own (its own
session, so it and the kernels it starts can be stopped), that runs `nbgrader <argv>` in `cwd` exactly as the
command would, reading the `nbgrader_config.py` found there.

Runs are started and waited for from several worker threads. multiprocessing's forkserver children are not safe for
that as they come: each child's exit code is read once from a pipe, and `Process.start()` in one thread polls every
other child, so two threads can both see the code ready, one reads it and the other reads the end of the pipe and
takes the child for lost (exit code 255). Here every start and every poll holds one lock; only the wait for a
child's end runs outside it.
"""
from __future__ import annotations

import multiprocessing
import multiprocessing.connection
import os
import pathlib
import signal
import sys
import threading

# nbgrader's apps, and what autograding and the course's config go on to import.
PRELOAD = ["nbgrader.apps.nbgraderapp", "nbgrader.converters", "nbgrader.preprocessors", "nbconvert.preprocessors",
           "jupyter_client.manager", "labsupport.tasks"]
_context_lock = threading.Lock()
_context = None
# held for every Process.start() and every read of a child's exit code (see the module's docstring)
_children_lock = threading.Lock()


def context():
    """The forkserver context shared by every run of this process."""
    global _context
    with _context_lock:
        if _context is None:
            ctx = multiprocessing.get_context("forkserver")
            ctx.set_forkserver_preload(PRELOAD)
            _context = ctx
        return _context


def warm_up() -> None:
    """Start the forkserver now, so that its import of nbgrader overlaps with other work."""
    context()
    from multiprocessing import forkserver
    forkserver.ensure_running()


def _nbgrader_main(argv: list[str], cwd: str, env: dict[str, str], log_path: str) -> None:
    """The child: a session of its own, output to the log file, then nbgrader's own entry point."""
    os.setsid()
    os.chdir(cwd)
    os.environ.clear()
    os.environ.update(env)
    fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    sys.argv = ["nbgrader", *argv]
    from nbgrader.apps.nbgraderapp import NbGraderApp
    NbGraderApp.launch_instance(argv=argv)


class NbgraderRun:
    """One `nbgrader …` run in a child process; `wait`, `stop`, `returncode` like a subprocess."""

    def __init__(self, argv: list[str], cwd: pathlib.Path, env: dict[str, str], log: pathlib.Path):
        self.process = start(context().Process(target=_nbgrader_main,
                                               args=(list(argv), str(cwd), dict(env), str(log)), daemon=False))
        self.pid = self.process.pid

    def wait(self, timeout: float | None = None) -> bool:
        """Wait until it ends; False when it is still running after `timeout` seconds."""
        return join(self.process, timeout) is not None

    @property
    def returncode(self) -> int | None:
        """Its exit code (negative: killed by that signal), None while it runs."""
        return join(self.process, 0)

    def stop(self) -> None:
        """Kill it and every process it started (the kernels run in sessions of their own)."""
        below = descendants(self.pid)
        for target in (lambda: os.killpg(self.pid, signal.SIGKILL), *[
                (lambda p=p: os.kill(p, signal.SIGKILL)) for p in below]):
            try:
                target()
            except (ProcessLookupError, PermissionError):
                pass
        join(self.process)


def start(process: multiprocessing.process.BaseProcess) -> multiprocessing.process.BaseProcess:
    """Start a child of the forkserver (its start polls the other children: under the lock)."""
    with _children_lock:
        process.start()
    return process


def join(process: multiprocessing.process.BaseProcess, timeout: float | None = None) -> int | None:
    """Wait up to `timeout` seconds (None: for ever) for a child to end; its exit code, None while it runs."""
    if multiprocessing.connection.wait([process.sentinel], timeout):
        with _children_lock:
            process.join(0)
    with _children_lock:
        return process.exitcode


def call_in_child(func, *args) -> int:
    """Run `func(*args)` in a fork of the server (where nbgrader is imported); its exit code."""
    return join(start(context().Process(target=func, args=args)))


def descendants(pid: int) -> list[int]:
    """Every process below `pid`, from /proc."""
    children: dict[int, list[int]] = {}
    for entry in pathlib.Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = entry.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(entry.parent.name))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found
