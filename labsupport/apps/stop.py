"""What a container's process does when the runtime stops it: which signal it gets, and how soon it exits.

The kubelet runs the preStop hook first, then asks the runtime to stop the container with the rest of the grace
period as its timeout. The runtime sends the image's stop signal (the Dockerfile's `STOPSIGNAL`, SIGTERM when it has
none) and sends SIGKILL only if the process is still there when the timeout runs out. So the grace period is an upper
bound: a process that exits on its signal ends the pod at once.

- `nginx` (the official image sets `STOPSIGNAL SIGQUIT`): SIGQUIT is nginx's graceful quit — the workers stop
  accepting, finish the requests they hold and exit; an idle server exits at once.
- `agnhost netexec`: Go's default action on SIGTERM ends the process at once; `--delay-shutdown=N` keeps it serving
  N seconds first. Other agnhost servers exit at once.
- `echoserver`: nginx (OpenResty) in the foreground; SIGTERM is nginx's fast shutdown: exits at once.
- `coredns`: the `health` plugin's `lameduck 5s` (in the default Corefile) keeps it answering 5 s after SIGTERM.
- `busybox`, `jessie-dnsutils` and other command images: the command runs as PID 1 of the container, and PID 1
  gets no default action for SIGTERM — `sleep 3600` ignores it and is killed when the grace period ends.
- an image the lab does not know: SIGTERM, default action, exits at once.
"""
from __future__ import annotations

import shlex
from dataclasses import dataclass

from labsupport.apps import App

__all__ = ["StopBehaviour", "stop_behaviour", "hook_seconds", "EXIT_NOTICE_SECONDS", "MINIMUM_GRACE_SECONDS"]

#: From the process's exit to the pod object's removal: the runtime reports the exit, the kubelet writes the final
#: status and the API server deletes the pod. Sub-second on a real node.
EXIT_NOTICE_SECONDS = 0.5
#: What the kubelet still gives the runtime when the preStop hook used up the grace period (upstream's
#: minimumGracePeriodInSeconds).
MINIMUM_GRACE_SECONDS = 2.0


@dataclass(frozen=True)
class StopBehaviour:
    """The stop signal a container gets and the seconds until its process exits (None: it never exits by itself)."""

    signal: str
    exit_seconds: float | None
    reason: str

    def exit_after(self, timeout: float) -> float:
        """Seconds from the stop signal to the process's end, when the runtime kills it after `timeout`."""
        if self.exit_seconds is None:
            return timeout
        return min(self.exit_seconds, timeout)


def stop_behaviour(app: App) -> StopBehaviour:
    """How the process of `app` reacts to the runtime's stop request."""
    if app.kind == "nginx":
        return StopBehaviour("SIGQUIT", 0.0, "STOPSIGNAL SIGQUIT: nginx's graceful quit, an idle server exits at once")
    if app.kind == "agnhost-netexec":
        delay = _seconds_flag(app.argv, "--delay-shutdown")
        if delay > 0:
            return StopBehaviour("SIGTERM", delay,
                                 f"netexec --delay-shutdown={delay:g}: serves {delay:g} s more, then exits")
        return StopBehaviour("SIGTERM", 0.0, "agnhost exits on SIGTERM")
    if app.kind == "coredns":
        return StopBehaviour("SIGTERM", 5.0, "health plugin lameduck 5s: answers 5 s more, then exits")
    if app.kind == "command":
        if not app.long_running:
            return StopBehaviour("SIGTERM", None, "PID 1 without a SIGTERM handler: runs until its command ends")
        return StopBehaviour("SIGTERM", None, "PID 1 without a SIGTERM handler: ignores it, killed at the deadline")
    return StopBehaviour("SIGTERM", 0.0, "default action of SIGTERM: exits at once")


def hook_seconds(hook: dict) -> float:
    """How long a preStop hook runs: a `sleep` action, or the `sleep N` steps of an exec command; 0 for httpGet."""
    if "sleep" in hook:
        return float((hook["sleep"] or {}).get("seconds") or 0)
    command = list((hook.get("exec") or {}).get("command") or ())
    if len(command) >= 3 and command[0].rsplit("/", 1)[-1] in ("sh", "bash") and command[1] == "-c":
        try:
            words = shlex.split(command[2].replace(";", " ; ").replace("&&", " ; "))
        except ValueError:
            words = command[2].split()
    else:
        words = command
    total = 0.0
    for i, word in enumerate(words[:-1]):
        if word.rsplit("/", 1)[-1] == "sleep":
            try:
                total += float(words[i + 1])
            except ValueError:
                pass
    return total


def _seconds_flag(argv: list[str], name: str) -> float:
    for i, arg in enumerate(argv):
        value = arg.split("=", 1)[1] if arg.startswith(name + "=") else \
            (argv[i + 1] if arg == name and i + 1 < len(argv) else None)
        if value is not None:
            try:
                return float(value)
            except ValueError:
                return 0.0
    return 0.0
