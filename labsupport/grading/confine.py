"""Set resource limits, close every inherited descriptor, then become the given command.

Run by path with `python -I`, before bubblewrap, so the sandboxed kernel starts with the limits and with nothing
of the grader's open files (jupyter_client launches kernels with close_fds=False):

    python -I confine.py --memory 1610612736 --processes 256 --files 256 --file-size 67108864 \
        [--cgroup /sys/fs/cgroup/pids/labsupport-grade-x] -- bwrap ...

With --cgroup (a pids cgroup whose pids.max is set) this process joins it first: the process limit for root, whose
processes RLIMIT_NPROC never counts. Without it, RLIMIT_NPROC allows this user's running processes plus the limit.
Graded as root, bubblewrap runs privileged (no user namespace, whose root would be the host's root) and runs this
script again inside with --become UID: it sets no_new_privs, becomes that unprivileged uid (its own, so
RLIMIT_NPROC counts its processes alone) and only then runs the kernel; nothing in the sandbox is root's.
"""
import argparse
import os
import resource
import sys


def running_processes(uid: int) -> int:
    """How many processes this user runs now (RLIMIT_NPROC counts a user's processes, not a sandbox's)."""
    count = 0
    for name in os.listdir("/proc"):
        try:
            if name.isdigit() and os.stat(f"/proc/{name}").st_uid == uid:
                count += 1
        except OSError:
            pass
    return count


def become(uid: int, processes: int, command: list) -> None:
    """Inside the sandbox (bubblewrap started as root): become `uid`, unable ever to gain privileges again (no
    setuid binary elevates it), with at most `processes` processes of its own, then exec `command`."""
    import ctypes
    PR_SET_NO_NEW_PRIVS = 38
    if ctypes.CDLL(None, use_errno=True).prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS) failed")
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)
    resource.setrlimit(resource.RLIMIT_NPROC, (processes, processes))
    os.execvp(command[0], command)


def main(argv: list) -> None:
    """Apply the limits and exec the command after `--` (or, with --become, drop to that uid first)."""
    parser = argparse.ArgumentParser(prog="confine.py")
    parser.add_argument("--memory", type=int, help="address space, bytes")
    parser.add_argument("--processes", type=int, required=True, help="processes beyond those running now")
    parser.add_argument("--files", type=int, help="open files")
    parser.add_argument("--file-size", type=int, help="largest file written, bytes")
    parser.add_argument("--cgroup", help="a pids cgroup to join")
    parser.add_argument("--become", type=int, help="inside the sandbox: become this uid, then run the command")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    opts = parser.parse_args(argv)
    command = opts.command[1:] if opts.command[:1] == ["--"] else opts.command
    if not command:
        parser.error("no command after --")
    if opts.become is not None:
        become(opts.become, opts.processes, command)
    if None in (opts.memory, opts.files, opts.file_size):
        parser.error("--memory, --files and --file-size are required")
    resource.setrlimit(resource.RLIMIT_AS, (opts.memory, opts.memory))
    if opts.cgroup:
        with open(os.path.join(opts.cgroup, "cgroup.procs"), "w") as procs:
            procs.write(str(os.getpid()))
    elif os.getuid() != 0:
        nproc = running_processes(os.getuid()) + opts.processes
        resource.setrlimit(resource.RLIMIT_NPROC, (nproc, nproc))
    resource.setrlimit(resource.RLIMIT_NOFILE, (opts.files, opts.files))
    resource.setrlimit(resource.RLIMIT_FSIZE, (opts.file_size, opts.file_size))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    os.closerange(3, 65536)
    # The launcher's pid means nothing inside a new pid namespace (a kernel would think its parent gone);
    # bubblewrap's --die-with-parent ends the sandbox with its parent instead.
    env = {k: v for k, v in os.environ.items() if k != "JPY_PARENT_PID"}
    os.execvpe(command[0], command, env)


if __name__ == "__main__":
    main(sys.argv[1:])
