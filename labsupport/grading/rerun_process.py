"""The grader's runs of a notebook's test cells, in a child process of their own with memory and time limits.

A test cell's source is the instructor's, but what it works on is the student's: answers of up to the size the
grader reads from the kernel, which a check may copy, sort, format into its message or walk. So the grader does not
run tests in its own process (nbgrader's, which grades the whole batch): `RerunProcess` starts one child per
notebook (`python -m labsupport.grading.rerun_process`), with an address-space limit (`memory`) and a CPU-time limit,
that runs each test as `labsupport.grading.rerun.run_test` does and keeps what a test binds for later tests. Each
test has a wall-clock limit; a test that passes a limit fails with a message that says so, the child is replaced
(what earlier tests bound is lost with it: the tests that needed it fail too), and grading goes on. What comes back
is held to the output cap (`max_output` characters for the test's printed text, its error and traceback together)
and read with a length limit, so nothing a test prints can grow the grader.

The protocol is one JSON line each way: a request with the test and the student's answers (as the kernel sent
them), a reply with the outcome and the names the test bound.
"""
from __future__ import annotations

import json
import os
import resource
import select
import subprocess
import sys
import time
from dataclasses import dataclass
from typing import Any

from labsupport.grading.rerun import Outcome

#: Environment variables the child keeps (it runs nothing the student typed, only the instructor's tests).
CHILD_ENV = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "PYTHONPATH", "LABSUPPORT_LANG", "LABSUPPORT_COURSE_ID")


def capped(outcome: Outcome, limit: int) -> Outcome:
    """The outcome with its printed text, error and traceback `limit` characters at most in all."""
    from labsupport.grading.clean import cut
    room = limit
    outcome.stdout = cut(outcome.stdout, room)
    room -= len(outcome.stdout)
    outcome.evalue = cut(outcome.evalue, max(room, 200))
    room -= len(outcome.evalue)
    lines = []
    for line in outcome.traceback[:100]:
        line = cut(line, max(room, 200))
        room -= len(line)
        lines.append(line)
    outcome.traceback = lines
    return outcome


@dataclass
class Settings:
    """What every test of one notebook is run with."""

    socket_path: str
    grader_socket: str
    seed: int
    proxy_mode: str
    language: str | None
    modules: list[str]
    task_path: str | None
    call_timeout: float
    max_output: int


class RerunProcess:
    """The child that runs a notebook's tests; `run` one test, `close` at the end."""

    def __init__(self, settings: Settings, *, memory: int, cpu_seconds: int, folder: str):
        self.settings = settings
        self.memory = memory
        self.cpu_seconds = cpu_seconds
        self.folder = folder
        self.bound: set[str] = set()
        self.process: subprocess.Popen | None = None
        self.start()

    def start(self) -> None:
        """Start a fresh child (what earlier tests bound is gone)."""
        env = {k: v for k, v in os.environ.items() if k in CHILD_ENV}
        env.update(TMPDIR=self.folder, HOME=self.folder, PYTHONDONTWRITEBYTECODE="1")
        memory, cpu = self.memory, self.cpu_seconds

        def confine() -> None:
            resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
            resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 5))
            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

        self.bound = set()
        self.process = subprocess.Popen([sys.executable, "-m", "labsupport.grading.rerun_process"],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=self.folder, env=env,
                                        preexec_fn=confine)
        self._send({"settings": self.settings.__dict__})

    def _send(self, message: dict) -> None:
        assert self.process is not None and self.process.stdin is not None
        self.process.stdin.write(json.dumps(message).encode() + b"\n")
        self.process.stdin.flush()

    def _receive(self, deadline: float) -> dict | None:
        """One reply line, read within the deadline and at most ~4 output caps long (None: none came)."""
        assert self.process is not None and self.process.stdout is not None
        stream = self.process.stdout
        limit = 4 * self.settings.max_output + 65536
        data = b""
        while not data.endswith(b"\n"):
            left = deadline - time.monotonic()
            if left <= 0 or len(data) > limit:
                return None
            ready, _, _ = select.select([stream], [], [], left)
            if not ready:
                return None
            chunk = os.read(stream.fileno(), 65536)
            if not chunk:
                return None
            data += chunk
        try:
            return json.loads(data)
        except ValueError:
            return None

    def run(self, source: str, names: list[str], answers_text: str | None, *, missing: str,
            seconds: float, message: str) -> Outcome:
        """Run one test; past `seconds` (or the child's memory or CPU limit) it fails with `message`."""
        if self.process is None or self.process.poll() is not None:
            self.start()
        try:
            self._send({"source": source, "names": names, "answers": answers_text, "missing": missing})
            reply = self._receive(time.monotonic() + seconds)
        except (OSError, ValueError):
            reply = None
        if not isinstance(reply, dict) or not isinstance(reply.get("outcome"), dict):
            self.stop()
            return Outcome(ename="GraderLimit", evalue=message, traceback=[f"GraderLimit: {message}"])
        item = reply["outcome"]
        outcome = Outcome(stdout=str(item.get("stdout", "")), ename=item.get("ename"),
                          evalue=str(item.get("evalue", "")),
                          traceback=[str(line) for line in item.get("traceback", [])][:100])
        self.bound.update(str(name) for name in reply.get("bound", []))
        return capped(outcome, self.settings.max_output)

    def stop(self) -> None:
        """End the child at once."""
        if self.process is not None:
            try:
                self.process.kill()
            except OSError:
                pass
            self.process.wait()
            for stream in (self.process.stdin, self.process.stdout):
                try:
                    if stream:
                        stream.close()
                except OSError:
                    pass
            self.process = None

    close = stop


def serve(stdin, stdout) -> None:
    """The child: settings first, then one test per line, one outcome per line."""
    from labsupport.grading.rerun import graded_task, run_test
    from labsupport.remote.client import RemoteBackend
    settings = Settings(**json.loads(stdin.readline())["settings"])
    grader = RemoteBackend(settings.grader_socket, hello=False, timeout=settings.call_timeout)
    task = graded_task(settings.task_path) if settings.task_path else None
    carried: dict[str, Any] = {}
    for line in stdin:
        request = json.loads(line)
        outcome = run_test(request["source"], request["names"], request["answers"], settings.socket_path, grader,
                           seed=settings.seed, proxy_mode=settings.proxy_mode, missing=request["missing"],
                           task=task, language=settings.language, modules=frozenset(settings.modules),
                           call_timeout=settings.call_timeout, carried=carried)
        carried.update(outcome.bound)
        capped(outcome, settings.max_output)
        reply = {"outcome": {"stdout": outcome.stdout, "ename": outcome.ename, "evalue": outcome.evalue,
                             "traceback": outcome.traceback}, "bound": sorted(outcome.bound)}
        stdout.write(json.dumps(reply) + "\n")
        stdout.flush()


def main() -> None:
    """The child's entry point: replies go to its own copy of stdout, and whatever else writes to descriptor 1 (a
    test's print through C, say) goes nowhere, so it cannot mix into a reply."""
    replies = os.fdopen(os.dup(1), "w")
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.close(devnull)
    sys.stdout = open(os.devnull, "w")
    serve(sys.stdin, replies)


if __name__ == "__main__":
    main()


__all__ = ["RerunProcess", "Settings", "capped", "serve", "main"]
