"""The sandbox a graded kernel runs in: bubblewrap, a scratch copy of one submission, limits, no network.

Inside, the kernel sees the system and the Python environment read-only, its own copy of the submission (its
working directory) and a private /tmp, both size-capped tmpfs, and one folder of sockets: the kernel's own `ipc`
channels, the lab server's student socket and the API server's. Nothing else of the machine is mounted — not the
course folder (source, release, other students' submissions, the gradebook, the config) nor the grader's home. It
has no network (its own loopback only), no view of the grader's processes, and limits on memory, processes, open
files and file size. Graded as root, the kernel runs as an unprivileged uid of its own, which maps to no user of the
host (inside the sandbox it is `nobody`), so root's files stay root's.

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
from labsupport.grading.handin import SubmissionRefused, check_submission, copy_submission, regular_file

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
    work_size: int = 256 * 2**20        # its working directory (the copy of the submission), bytes

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
        isolation = ["--unshare-all", "--unshare-user", "--uid", "65534", "--gid", "65534"] if os.geteuid() else \
            ["--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts"]
        proc = subprocess.run([bwrap, *system_binds(), *isolation, "--cap-drop", "ALL", "--proc", "/proc",
                               "--dev", "/dev", "--", "true"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as e:
        return [f"bubblewrap did not start: {e}"]
    if proc.returncode != 0:
        return [f"bubblewrap cannot create its namespaces here ({proc.stderr.strip() or proc.returncode}): allow "
                "unprivileged user namespaces (`sysctl kernel.unprivileged_userns_clone=1`, or on Ubuntu 24.04 "
                "`sysctl kernel.apparmor_restrict_unprivileged_userns=0`), or in a container run it with "
                "--privileged or a seccomp profile that allows unshare/clone of namespaces"]
    # the process limit holds everywhere: as root the kernel runs as a uid of its own, whose processes
    # RLIMIT_NPROC counts (a pids cgroup, where one is writable, limits the sandbox as well)
    return []


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
    python = [p for p in dict.fromkeys((sys.base_prefix, sys.prefix, os.path.realpath(sys.prefix), str(package)))
              if not p.startswith("/usr/") and os.path.isdir(p)]
    # the folders above them are made in the sandbox open to pass through (bubblewrap would make them private, and
    # a kernel that is not root could not reach its Python under, say, /root); nothing else of them is there
    above = sorted({str(parent) for p in python for parent in pathlib.Path(p).parents if str(parent) != "/"},
                   key=lambda p: p.count("/"))
    for folder in above:
        args += ["--perms", "0755", "--dir", folder]
    for path in python:
        args += ["--ro-bind", path, path]
    return args


#: The first uid a sandbox graded as root may run as (one per sandbox, so RLIMIT_NPROC counts that sandbox alone);
#: far above any user a system makes.
SANDBOX_UIDS = range(3_100_000_000, 3_200_000_000)


def sandbox_uid() -> int | None:
    """The host uid a sandbox runs as: a fresh unprivileged one when grading as root, else None (the grader's own,
    which the user namespace maps to `nobody` inside)."""
    if os.geteuid() != 0:
        return None
    return SANDBOX_UIDS.start + int.from_bytes(os.urandom(4), "big") % len(SANDBOX_UIDS)


#: The longest path a unix socket may have (sun_path, less its final NUL), less room for a socket's own name.
SOCKET_ROOM = 107 - 40


def socket_base() -> str:
    """Where folders that hold unix sockets go: TMPDIR when its path leaves room for them, else /tmp."""
    base = tempfile.gettempdir()
    return base if len(base) <= SOCKET_ROOM - len(PREFIX) - 20 else "/tmp"


class Sandbox:
    """The scratch folders of one graded submission and the bwrap command that confines its kernel."""

    def __init__(self, submission: str | os.PathLike, limits: Limits | None = None):
        self.limits = limits or Limits.from_env()
        self.root = pathlib.Path(tempfile.mkdtemp(prefix=PREFIX, dir=socket_base()))
        self.uid = sandbox_uid()
        os.chmod(self.root, 0o700)
        self.staging = self.root / "submission"      # the copy the sandbox reads, into its own tmpfs
        self.work = self.root / "work"               # inside the sandbox only: a tmpfs
        self.run = self.root / "run"
        copy_submission(pathlib.Path(submission), self.staging)
        self.run.mkdir(mode=0o700)
        if self.uid is not None:
            os.chown(self.run, self.uid, self.uid)
            for path in (self.staging, *self.staging.rglob("*")):
                os.chown(path, self.uid, self.uid, follow_symlinks=False)
        self.cgroup: pathlib.Path | None = None
        parent = pids_cgroup_parent() if os.geteuid() == 0 else None
        if parent is not None:
            self.cgroup = parent / self.root.name
            self.cgroup.mkdir()
            (self.cgroup / "pids.max").write_text(str(self.limits.processes))

    def wrap(self, argv: list[str]) -> list[str]:
        """The command that runs `argv` confined: limits first, then bubblewrap (as root: privileged, and the
        kernel then drops to the sandbox's own uid inside)."""
        limits = self.limits
        if self.uid is None:        # an ordinary user: an unprivileged user namespace, the grader is nobody inside
            isolation = ["--unshare-all", "--unshare-user", "--uid", "65534", "--gid", "65534"]
            inside: list[str] = []
        else:                       # root: no user namespace (its root would be the host's); drop to the uid inside
            isolation = ["--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts", "--unshare-cgroup-try",
                         "--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]
            inside = [sys.executable, "-I", str(CONFINE), "--become", str(self.uid),
                      "--processes", str(limits.processes), "--"]
        # bwrap mounts in order: the private /tmp comes first, so that a Python or a course that lives under the
        # host's /tmp is bound on top of it rather than hidden by it.
        bwrap = [shutil.which("bwrap") or "bwrap", "--size", str(limits.tmp_size), "--tmpfs", "/tmp",
                 *system_binds(), "--die-with-parent", "--new-session", "--cap-drop", "ALL", *isolation,
                 "--hostname", "graded", "--proc", "/proc", "--dev", "/dev",
                 "--perms", "0711", "--dir", str(self.root),
                 "--ro-bind", str(self.staging), str(self.staging),
                 "--perms", "0777", "--size", str(limits.work_size), "--tmpfs", str(self.work),
                 "--bind", str(self.run), str(self.run),
                 "--chdir", str(self.work), "--setenv", "HOME", "/tmp", "--"]
        # the kernel's working directory starts as a copy of the submission, on its own capped tmpfs
        start = ["/bin/sh", "-c", 'cp -R "$0"/. . && exec "$@"', str(self.staging)]
        cgroup = ["--cgroup", str(self.cgroup)] if self.cgroup is not None else []
        return [sys.executable, "-I", str(CONFINE), "--memory", str(limits.memory),
                "--processes", str(limits.processes), "--files", str(limits.files),
                "--file-size", str(limits.file_size), *cgroup, "--", *bwrap, *inside, *start, *argv]

    def give(self, path: str | os.PathLike) -> None:
        """Make a file the grader wrote (the kernel's connection file) the sandbox's, when it runs as a uid of
        its own."""
        if self.uid is not None:
            os.chown(path, self.uid, self.uid)

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


__all__ = ["OPT_OUT_ENV", "Limits", "Sandbox", "SandboxUnavailable", "SubmissionRefused", "opted_out", "problems",
           "require", "system_binds", "check_submission", "copy_submission", "regular_file", "sandbox_uid",
           "socket_base"]
