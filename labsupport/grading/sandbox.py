"""The sandbox a graded kernel runs in: bubblewrap, a scratch copy of one submission, limits, no network.

Inside, the kernel sees the system and the Python environment read-only, its own scratch copy of the submission
(its working directory) and a private /tmp, and one folder of sockets: the kernel's own `ipc` channels and the lab
server's student socket. Nothing else of the machine is mounted — not the course folder (source, release, other
students' submissions, the gradebook, the config) nor the grader's home. It has no network, no view of the
grader's processes, and limits on memory, processes, open files and file size.

Set LABSUPPORT_GRADING_SANDBOX=off to grade without it (an instructor testing their own notebooks only).
"""
from __future__ import annotations

import os
import pathlib
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass

import labsupport
from labsupport.errors import LabError

#: The environment variable of the opt-out.
OPT_OUT_ENV = "LABSUPPORT_GRADING_SANDBOX"
#: Prefix of every scratch folder, so leftovers are easy to find.
PREFIX = "labsupport-grade-"
CONFINE = pathlib.Path(__file__).with_name("confine.py")


class SandboxUnavailable(LabError):
    """Bubblewrap cannot run here; the message says why and how to fix it."""


@dataclass(frozen=True)
class Limits:
    """What one graded kernel may use."""

    memory: int = 1536 * 2**20          # address space, bytes
    processes: int = 128                # processes it may start
    files: int = 256                    # open descriptors
    file_size: int = 64 * 2**20         # largest file it may write, bytes
    tmp_size: int = 256 * 2**20         # its private /tmp, bytes

    @classmethod
    def from_env(cls) -> "Limits":
        """The limits, with LABSUPPORT_GRADING_MEMORY (MiB) overriding the memory limit."""
        memory = os.environ.get("LABSUPPORT_GRADING_MEMORY")
        return cls(memory=int(memory) * 2**20) if memory else cls()


def opted_out() -> bool:
    """Whether grading runs without the sandbox (LABSUPPORT_GRADING_SANDBOX=off)."""
    return os.environ.get(OPT_OUT_ENV, "").strip().lower() in ("off", "0", "no", "false")


def problems() -> list[str]:
    """What stops the sandbox from running here (empty: it runs)."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return ["bubblewrap (not installed: `apt-get install bubblewrap` on Debian/Ubuntu, "
                "`dnf install bubblewrap` on Fedora)"]
    try:
        proc = subprocess.run([bwrap, *system_binds(), "--unshare-all", "--unshare-user",
                               "--uid", "65534", "--gid", "65534",
                               "--cap-drop", "ALL", "--proc", "/proc", "--dev", "/dev", "--", "true"],
                              capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as e:
        return [f"bubblewrap did not start: {e}"]
    if proc.returncode != 0:
        return [f"bubblewrap cannot create its namespaces here ({proc.stderr.strip() or proc.returncode}): allow "
                "unprivileged user namespaces (`sysctl kernel.unprivileged_userns_clone=1`, or on Ubuntu 24.04 "
                "`sysctl kernel.apparmor_restrict_unprivileged_userns=0`), or in a container run it with "
                "--privileged or a seccomp profile that allows unshare/clone of namespaces"]
    return process_limit_problems()


def pids_cgroup_parent() -> pathlib.Path | None:
    """Where this process may make a pids cgroup (cgroup v1 `pids`, or v2 with pids enabled below it), if anywhere."""
    try:
        lines = pathlib.Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if "pids" in controllers.split(","):
            base = pathlib.Path("/sys/fs/cgroup/pids") / path.lstrip("/")
            if (base / "pids.max").exists() or base == pathlib.Path("/sys/fs/cgroup/pids"):
                return base if os.access(base, os.W_OK) else None
        if controllers == "":
            base = pathlib.Path("/sys/fs/cgroup") / path.lstrip("/")
            try:
                enabled = (base / "cgroup.subtree_control").read_text().split()
            except OSError:
                continue
            if "pids" in enabled and os.access(base, os.W_OK):
                return base
    return None


def process_limit_problems() -> list[str]:
    """Why the process limit cannot hold here: root's processes escape RLIMIT_NPROC, so root needs a pids cgroup."""
    if os.geteuid() != 0 or pids_cgroup_parent() is not None:
        return []
    return ["grading runs as root, whose processes RLIMIT_NPROC does not count, and no writable pids cgroup was "
            "found to limit them instead: grade as an ordinary user, or give this process a pids cgroup it may "
            "write (cgroup v1 `pids` mounted at /sys/fs/cgroup/pids, or cgroup v2 with +pids in "
            "cgroup.subtree_control of its cgroup)"]


def require() -> None:
    """Refuse to grade when the sandbox cannot run, saying why and how to fix it (or how to opt out)."""
    found = problems()
    if found:
        raise SandboxUnavailable("grading refuses to run student code outside its sandbox, which needs "
                                 + "; ".join(found)
                                 + f". To grade your own test notebooks without it, set {OPT_OUT_ENV}=off "
                                 "(never for students' work: see grading/README.md)")


def system_binds() -> list[str]:
    """bwrap arguments that mount the system, Python and labsupport read-only, and nothing else."""
    args: list[str] = []
    for name in ("usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32", "etc"):
        path = pathlib.Path("/") / name
        if path.is_symlink():
            args += ["--symlink", os.readlink(path), str(path)]
        elif path.is_dir():
            args += ["--ro-bind", str(path), str(path)]
    package = pathlib.Path(labsupport.__file__).resolve().parent
    for path in dict.fromkeys((sys.base_prefix, sys.prefix, os.path.realpath(sys.prefix), str(package))):
        if not path.startswith("/usr/") and os.path.isdir(path):
            args += ["--ro-bind", path, path]
    return args


class Sandbox:
    """The scratch folders of one graded submission and the bwrap command that confines its kernel."""

    def __init__(self, submission: str | os.PathLike, limits: Limits | None = None):
        self.limits = limits or Limits.from_env()
        self.root = pathlib.Path(tempfile.mkdtemp(prefix=PREFIX))
        os.chmod(self.root, 0o700)
        self.work = self.root / "work"
        self.run = self.root / "run"
        shutil.copytree(submission, self.work, symlinks=True,
                        ignore=shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__"))
        self.run.mkdir(mode=0o700)
        self.cgroup: pathlib.Path | None = None
        parent = pids_cgroup_parent() if os.geteuid() == 0 else None
        if parent is not None:
            self.cgroup = parent / self.root.name
            self.cgroup.mkdir()
            (self.cgroup / "pids.max").write_text(str(self.limits.processes))

    def wrap(self, argv: list[str]) -> list[str]:
        """The command that runs `argv` confined: limits first, then bubblewrap."""
        limits = self.limits
        # bwrap mounts in order: the private /tmp comes first, so that a Python or a course that lives under the
        # host's /tmp is bound on top of it rather than hidden by it.
        bwrap = [shutil.which("bwrap") or "bwrap", "--size", str(limits.tmp_size), "--tmpfs", "/tmp",
                 *system_binds(),
                 "--unshare-all", "--unshare-user", "--die-with-parent", "--new-session", "--cap-drop", "ALL",
                 "--uid", "65534", "--gid", "65534", "--hostname", "graded",
                 "--proc", "/proc", "--dev", "/dev",
                 "--bind", str(self.work), str(self.work),
                 "--bind", str(self.run), str(self.run),
                 "--chdir", str(self.work), "--setenv", "HOME", "/tmp", "--"]
        cgroup = ["--cgroup", str(self.cgroup)] if self.cgroup is not None else []
        return [sys.executable, "-I", str(CONFINE), "--memory", str(limits.memory),
                "--processes", str(limits.processes), "--files", str(limits.files),
                "--file-size", str(limits.file_size), *cgroup, "--", *bwrap, *argv]

    def close(self) -> None:
        """Kill whatever still runs in the sandbox's cgroup, remove it and the scratch folders."""
        if self.cgroup is not None and self.cgroup.exists():
            for _ in range(50):
                try:
                    pids = [int(p) for p in (self.cgroup / "cgroup.procs").read_text().split()]
                except OSError:
                    break
                for pid in pids:
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except OSError:
                        pass
                try:
                    self.cgroup.rmdir()
                    break
                except OSError:
                    time.sleep(0.1)
        shutil.rmtree(self.root, ignore_errors=True)


__all__ = ["OPT_OUT_ENV", "Limits", "Sandbox", "SandboxUnavailable", "opted_out", "problems", "require",
           "system_binds"]
