"""An upstream program running in a network namespace: started with its output in a log file, stopped as a group."""
from __future__ import annotations

import os
import signal
import subprocess

#: Set in every program started here: the pid of the process that started it, so a later `labsupport clean` can
#: stop the programs of a run that was killed (whose namespaces may be gone already).
OWNER = "LABSUPPORT_UPSTREAM_OWNER"


class NamespacedProcess:
    """One program started with `ip netns exec NS …` in its own session; its output goes to `log_path`."""

    def __init__(self, ns: str, argv: list[str], log_path: str):
        self.log_path = log_path
        self._log = open(log_path, "wb")
        self.popen = subprocess.Popen(["ip", "netns", "exec", ns, *argv], stdout=self._log,
                                      stderr=subprocess.STDOUT, start_new_session=True,
                                      env={**os.environ, OWNER: str(os.getpid())})

    def poll(self) -> int | None:
        """Its exit code, or None while it runs."""
        return self.popen.poll()

    @property
    def returncode(self) -> int | None:
        """Its exit code once it has exited."""
        return self.popen.returncode

    def log(self) -> str:
        """Everything it has printed so far."""
        with open(self.log_path, "rb") as fh:
            return fh.read().decode(errors="replace")

    def stop(self) -> None:
        """SIGTERM to its process group, SIGKILL after 10 s; then close the log."""
        if self.popen.poll() is None:
            os.killpg(self.popen.pid, signal.SIGTERM)
            try:
                self.popen.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(self.popen.pid, signal.SIGKILL)
                self.popen.wait(timeout=10)
        self._log.close()


def _owner_of(pid: str) -> int | None:
    """The owner pid recorded in a process's environment, or None (not ours, gone, or unreadable)."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as fh:
            environ = fh.read().split(b"\0")
    except OSError:
        return None
    prefix = OWNER.encode() + b"="
    for entry in environ:
        if entry.startswith(prefix):
            value = entry[len(prefix):]
            return int(value) if value.isdigit() else None
    return None


def pid_alive(pid: int) -> bool:
    """Whether a process with this pid exists (one of another user's counts too)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def stop_orphans() -> list[str]:
    """Stop (SIGKILL) every program started here whose owner has exited; one line per program stopped."""
    stopped = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        owner = _owner_of(pid)
        if owner is None or pid_alive(owner):
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                command = fh.read().split(b"\0")[0].decode(errors="replace")
            os.kill(int(pid), signal.SIGKILL)
        except (OSError, ProcessLookupError):
            continue
        stopped.append(f"stopped {os.path.basename(command)} (pid {pid}) left by exited process {owner}")
    return stopped


__all__ = ["NamespacedProcess", "OWNER", "pid_alive", "stop_orphans"]
