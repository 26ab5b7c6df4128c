"""Set resource limits, close every inherited descriptor, then become the given command.

Run by path with `python -I`, before bubblewrap, so the sandboxed kernel starts with the limits and with nothing
of the grader's open files (jupyter_client launches kernels with close_fds=False):

    python -I confine.py --memory 1610612736 --processes 256 --files 256 --file-size 67108864 \
        [--cgroup /sys/fs/cgroup/pids/labsupport-grade-x] -- bwrap ...

With --cgroup (a pids cgroup whose pids.max is set) this process joins it first: the process limit for root, whose
processes RLIMIT_NPROC never counts. Without it, RLIMIT_NPROC allows this user's running processes plus the limit.
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


def main(argv: list) -> None:
    """Apply the limits and exec the command after `--`."""
    parser = argparse.ArgumentParser(prog="confine.py")
    parser.add_argument("--memory", type=int, required=True, help="address space, bytes")
    parser.add_argument("--processes", type=int, required=True, help="processes beyond those running now")
    parser.add_argument("--files", type=int, required=True, help="open files")
    parser.add_argument("--file-size", type=int, required=True, help="largest file written, bytes")
    parser.add_argument("--cgroup", help="a pids cgroup to join")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    opts = parser.parse_args(argv)
    command = opts.command[1:] if opts.command[:1] == ["--"] else opts.command
    if not command:
        parser.error("no command after --")
    resource.setrlimit(resource.RLIMIT_AS, (opts.memory, opts.memory))
    if opts.cgroup:
        with open(os.path.join(opts.cgroup, "cgroup.procs"), "w") as procs:
            procs.write(str(os.getpid()))
    else:
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
