"""A Docker engine for the kind backend where none answers: started so that it leaves the host's firewall alone.

A stock `dockerd` rewrites the host's netfilter rules (its own chains, the FORWARD policy set to DROP) and turns on
IP forwarding; other tiers run network namespaces and sandboxes on the same host. The engine started here runs with
`--iptables=false --ip-masq=false --ip-forward=false --bridge=none`: it adds no rule and changes no sysctl. kind's
nodes sit on a user-defined bridge network `kind` with a subnet (`KIND_SUBNET`) that is none of the embedded
cluster's (172.18.0.0/16, 10.244.0.0/16, 10.96.0.0/12); nodes reach each other over that bridge, the host reaches
them directly, and nothing needs NAT.

Where root lacks CAP_SYS_RESOURCE in its bounding set (some VMs and sandboxes), `docker run --privileged` fails
("unable to apply caps"); the engine then runs containers through `runc_wrapper.py`, which drops that one
capability from each container's config. The engine's pid is kept in `engine.pid` under the state directory;
`labsupport clean` stops it.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from labsupport.errors import BackendUnavailable
from labsupport.kind.preflight import state_dir
from labsupport.kind.runner import CommandRunner

KIND_NETWORK = "kind"
KIND_SUBNET = "172.30.0.0/16"
KIND_GATEWAY = "172.30.0.1"
#: where Docker picks the containers' addresses: the lower half, so the top of the subnet stays free for the kind
#: load balancer's addresses (labsupport/kind/loadbalancer.py)
KIND_IP_RANGE = "172.30.0.0/17"
CAP_SYS_RESOURCE = 24
WRAPPER_RUNTIME = "labsupport-runc"
ENGINE_FLAGS = ("--iptables=false", "--ip6tables=false", "--ip-masq=false", "--ip-forward=false", "--bridge=none")
START_TIMEOUT = 60.0


def bounding_capabilities(status: str | None = None) -> int:
    """This process's capability bounding set (CapBnd in /proc/self/status) as a bit mask."""
    text = status if status is not None else Path("/proc/self/status").read_text()
    for line in text.splitlines():
        if line.startswith("CapBnd:"):
            return int(line.split()[1], 16)
    return 0


def lacks_sys_resource(status: str | None = None) -> bool:
    """Whether CAP_SYS_RESOURCE is missing from the bounding set, so privileged containers need the runc wrapper
    and the nodes' containerd must not set negative oom_score_adj."""
    if sys.platform != "linux":
        return False
    return not bounding_capabilities(status) >> CAP_SYS_RESOURCE & 1


def cgroup_v1(root: str = "/sys/fs/cgroup") -> bool:
    """Whether the host mounts cgroup v1 (kubelet 1.37 then needs `failCgroupV1: false`)."""
    return sys.platform == "linux" and os.path.isdir(root) and not os.path.exists(os.path.join(root,
                                                                                            "cgroup.controllers"))


def pid_file() -> Path:
    """Where the pid of the engine this project started is kept."""
    return state_dir() / "engine.pid"


def engine_answers(runner: CommandRunner | None = None) -> bool:
    """Whether a Docker engine answers `docker info`."""
    runner = runner or CommandRunner()
    if runner.which("docker") is None:
        return False
    return runner.run(["docker", "info", "--format", "{{.ServerVersion}}"], timeout=20).ok


def engine_argv(wrapper: str | None) -> list[str]:
    """dockerd's command line: no host firewall rules, no sysctls, no default bridge; the runc wrapper if given."""
    argv = ["dockerd", *ENGINE_FLAGS, "--pidfile", str(state_dir() / "dockerd.pid")]
    if wrapper:
        argv += ["--add-runtime", f"{WRAPPER_RUNTIME}={wrapper}", "--default-runtime", WRAPPER_RUNTIME]
    return argv


def _wrapper_path() -> str:
    """The runc wrapper, made executable in the state directory (it runs with the host's Python)."""
    source = Path(__file__).with_name("runc_wrapper.py")
    target = state_dir() / "runc-wrapper"
    text = f"#!{sys.executable if os.path.exists(sys.executable) else '/usr/bin/python3'}\n" + source.read_text()
    if not target.exists() or target.read_text() != text:
        target.write_text(text)
        target.chmod(0o755)
    return str(target)


def started_pid() -> int | None:
    """The pid of the engine this project started, if it still runs."""
    try:
        pid = int(pid_file().read_text().strip())
    except (OSError, ValueError):
        return None
    try:
        comm = Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return None
    return pid if comm == "dockerd" else None


def start_engine(runner: CommandRunner | None = None, log=print) -> int | None:
    """Start a Docker engine when none answers; returns the pid of the one started, None when one already ran."""
    runner = runner or CommandRunner()
    if engine_answers(runner):
        return None
    if runner.which("dockerd") is None:
        raise BackendUnavailable("no Docker engine answers and dockerd is not installed: install Docker "
                           "(Debian: apt-get install docker.io containerd runc)")
    wrapper = _wrapper_path() if lacks_sys_resource() else None
    argv = engine_argv(wrapper)
    log(f"starting a Docker engine: {' '.join(argv)}"
        + (" (root lacks CAP_SYS_RESOURCE here: containers run through the runc wrapper)" if wrapper else ""))
    logfile = open(state_dir() / "dockerd.log", "ab")
    proc = subprocess.Popen(argv, stdout=logfile, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                            start_new_session=True)
    pid_file().write_text(f"{proc.pid}\n")
    deadline = time.monotonic() + START_TIMEOUT
    while not engine_answers(runner):
        if proc.poll() is not None:
            raise BackendUnavailable(f"dockerd exited with code {proc.returncode}; see {state_dir() / 'dockerd.log'}")
        if time.monotonic() > deadline:
            raise BackendUnavailable(f"dockerd did not answer within {START_TIMEOUT:g} s; see {state_dir() / 'dockerd.log'}")
        time.sleep(0.5)
    return proc.pid


def ensure_network(runner: CommandRunner | None = None) -> str:
    """The `kind` bridge network on KIND_SUBNET, created (without IP masquerade) when missing; its subnet."""
    runner = runner or CommandRunner()
    found = runner.run(["docker", "network", "inspect", "-f", "{{range .IPAM.Config}}{{.Subnet}} {{end}}",
                        KIND_NETWORK], timeout=30)
    if found.ok:
        return found.stdout.split()[0] if found.stdout.split() else ""
    made = runner.run(["docker", "network", "create", "--driver", "bridge", "--subnet", KIND_SUBNET,
                       "--ip-range", KIND_IP_RANGE, "--gateway", KIND_GATEWAY,
                       "-o", "com.docker.network.bridge.enable_ip_masquerade=false",
                       "-o", "com.docker.network.driver.mtu=1500", KIND_NETWORK], timeout=60)
    if not made.ok:
        raise BackendUnavailable(f"docker network create {KIND_NETWORK} failed: {(made.stderr or made.stdout).strip()}")
    return KIND_SUBNET


def _running(pid: int) -> bool:
    """Whether the process exists and has not exited (a zombie waiting for its parent has)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


#: Where dockerd binds network namespaces; a stopped engine can leave those nsfs mounts behind on the host.
NETNS_MOUNT_DIRS = ("/run/docker/netns/", "/var/run/docker/netns/")


def leftover_netns_mounts(mounts: str) -> list[str]:
    """The mount points of network namespaces a Docker engine bound, from /proc/self/mounts' text."""
    found = []
    for line in mounts.splitlines():
        fields = line.split()
        if len(fields) >= 3 and fields[2] == "nsfs" and fields[1].startswith(NETNS_MOUNT_DIRS):
            found.append(fields[1])
    return found


def _dockerd_running() -> bool:
    """Whether any dockerd process runs on this machine."""
    for comm in Path("/proc").glob("[0-9]*/comm"):
        try:
            if comm.read_text().strip() == "dockerd" and _running(int(comm.parent.name)):
                return True
        except OSError:
            continue
    return False


def stop_engine(timeout: float = 30.0, runner: CommandRunner | None = None) -> list[str]:
    """Stop the engine this project started (by its recorded pid), removing its kind network first; say what
    went."""
    pid = started_pid()
    if pid is None:
        if pid_file().exists():
            pid_file().unlink()
        return []
    # the kind network's bridge would outlive the engine on the host
    (runner or CommandRunner()).run(["docker", "network", "rm", KIND_NETWORK], timeout=60)
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and _running(pid):
        time.sleep(0.2)
    if _running(pid):
        os.kill(pid, signal.SIGKILL)
    pid_file().unlink(missing_ok=True)
    done = [f"stopped the Docker engine this project started (pid {pid})"]
    try:
        mounts = Path("/proc/self/mounts").read_text()
    except OSError:
        mounts = ""
    # only when no engine is left that could still use them
    for mount in leftover_netns_mounts(mounts) if not _dockerd_running() else []:
        if subprocess.run(["umount", "-l", mount], capture_output=True).returncode == 0:
            done.append(f"unmounted {mount}, which the engine left")
    return done
