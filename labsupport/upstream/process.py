"""An upstream program running in a network namespace: started with its output in a log file, stopped as a group."""
from __future__ import annotations

import os
import signal
import subprocess


class NamespacedProcess:
    """One program started with `ip netns exec NS …` in its own session; its output goes to `log_path`."""

    def __init__(self, ns: str, argv: list[str], log_path: str):
        self.log_path = log_path
        self._log = open(log_path, "wb")
        self.popen = subprocess.Popen(["ip", "netns", "exec", ns, *argv], stdout=self._log,
                                      stderr=subprocess.STDOUT, start_new_session=True)

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


__all__ = ["NamespacedProcess"]
