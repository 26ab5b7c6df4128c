"""Network namespaces, links and sockets for the `netns` data plane, named so that `labsupport clean` finds them.

Every namespace this project makes is called `lsk-<pid>-<run>-<role>` (pid: the process that made it), every
bridge and veth it names starts with `lsk`. Namespaces, links and addresses are made through pyroute2; commands
that have no pyroute2 equivalent (iptables-restore, nft, conntrack, curl) run inside a namespace with
`ip netns exec`.
"""
from __future__ import annotations

import concurrent.futures
import contextlib
import functools
import hashlib
import os
import re
import shutil
import subprocess
import threading
import time
from typing import Iterator

try:
    from pyroute2 import IPRoute, NetNS, netns
except ImportError:          # not Linux, or not installed: kernel.problems() says so
    IPRoute = NetNS = netns = None

from labsupport.errors import LabError

PREFIX = "lsk-"
LINK_PREFIX = "lsk"
NETNS_DIR = "/var/run/netns"
ETC_NETNS = "/etc/netns"
OWNED = re.compile(r"^lsk-(\d+)-(\d+)-")
#: Namespaces without an owner pid in their name are removed by `clean` only once they are this old (seconds).
UNOWNED_GRACE = 30.0
COMMAND_TIMEOUT = 120.0

_runs = 0
_runs_lock = threading.Lock()
_live_runs: set[str] = set()


class KernelError(LabError):
    """A kernel operation failed: a tool exited non-zero or a namespace could not be set up."""


_NETLINK_THREAD = "lsk-netlink"
_netlink_worker = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix=_NETLINK_THREAD)


def netlink(fn):
    """Run a pyroute2 operation on a dedicated thread: pyroute2 drives an asyncio loop of its own, which must not
    meet the event loop a notebook's kernel already runs on its main thread."""
    @functools.wraps(fn)
    def call(*args, **kwargs):
        if threading.current_thread().name.startswith(_NETLINK_THREAD):
            return fn(*args, **kwargs)
        try:
            future = _netlink_worker.submit(fn, *args, **kwargs)
        except RuntimeError:    # the interpreter is exiting: concurrent.futures stopped its workers before atexit
            return _on_a_thread_of_its_own(fn, *args, **kwargs)
        return future.result()
    return call


def _on_a_thread_of_its_own(fn, *args, **kwargs):
    """Run `fn` on a new netlink thread (at exit, when the shared one is gone), or here if none can start."""
    outcome: dict = {}

    def work():
        try:
            outcome["value"] = fn(*args, **kwargs)
        except BaseException as exc:        # handed back to the caller below
            outcome["error"] = exc

    try:
        worker = threading.Thread(target=work, name=f"{_NETLINK_THREAD}-exit")
        worker.start()
        worker.join()
    except RuntimeError:
        work()
    if "error" in outcome:
        raise outcome["error"]
    return outcome.get("value")


def new_run_id() -> str:
    """A name stem unique to this process and this network: `lsk-<pid>-<n>`."""
    global _runs
    with _runs_lock:
        _runs += 1
        run = f"{PREFIX}{os.getpid()}-{_runs}"
        _live_runs.add(run)
        return run


def release_run_id(run: str) -> None:
    """Forget a run stem once its namespaces are gone."""
    _live_runs.discard(run)


def ns_name(run: str, role: str) -> str:
    """A namespace name for one role in a run, short enough for the file system, readable when possible."""
    clean = re.sub(r"[^A-Za-z0-9_.-]", "-", role)
    name = f"{run}-{clean}"
    if len(name) > 120:
        digest = hashlib.sha1(name.encode()).hexdigest()[:10]
        name = f"{name[:100]}-{digest}"
    return name


def link_name(key: str) -> str:
    """A veth name (at most 15 characters) derived from a key: `lsk` + 10 hex digits."""
    return LINK_PREFIX + hashlib.sha1(key.encode()).hexdigest()[:10]


# --- namespaces -------------------------------------------------------------------------------------------
def list_namespaces(prefix: str = PREFIX) -> list[str]:
    """Network namespaces whose name starts with `prefix`."""
    if not os.path.isdir(NETNS_DIR):
        return []
    return sorted(n for n in os.listdir(NETNS_DIR) if n.startswith(prefix))


@netlink
def create_namespace(name: str) -> None:
    """Create a named network namespace with its loopback up."""
    netns.create(name)
    with NetNS(name) as ns:
        ns.link("set", index=ns.link_lookup(ifname="lo")[0], state="up")


@netlink
def remove_namespace(name: str) -> bool:
    """Remove a named network namespace and its /etc/netns files; False if it was not there."""
    existed = os.path.exists(os.path.join(NETNS_DIR, name))
    if existed:
        try:
            netns.remove(name)
        except OSError:
            subprocess.run(["ip", "netns", "delete", name], capture_output=True)
    shutil.rmtree(os.path.join(ETC_NETNS, name), ignore_errors=True)
    return existed


def write_etc(name: str, files: dict[str, str]) -> None:
    """Files `ip netns exec` bind-mounts over /etc inside namespace `name` (resolv.conf, hosts)."""
    folder = os.path.join(ETC_NETNS, name)
    os.makedirs(folder, exist_ok=True)
    for file, text in files.items():
        with open(os.path.join(folder, file), "w") as fh:
            fh.write(text)


@contextlib.contextmanager
def inside(name: str) -> Iterator[None]:
    """Run the body with the calling thread in namespace `name` (sockets made there stay there)."""
    own = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
    try:
        target = os.open(os.path.join(NETNS_DIR, name), os.O_RDONLY)
    except OSError as e:
        os.close(own)
        raise KernelError(f"network namespace {name} does not exist") from e
    try:
        netns.setns(target, flags=0)
        try:
            yield
        finally:
            netns.setns(own, flags=0)
    finally:
        os.close(target)
        os.close(own)


def set_sysctls(name: str, values: dict[str, str]) -> None:
    """Write /proc/sys/net/... values inside namespace `name` (missing keys are skipped)."""
    with inside(name):
        for key, value in values.items():
            path = "/proc/sys/" + key.replace(".", "/")
            try:
                with open(path, "w") as fh:
                    fh.write(value)
            except OSError:
                continue


def run_in(name: str, argv: list[str], *, input: str | None = None, timeout: float = COMMAND_TIMEOUT,
           check: bool = False) -> subprocess.CompletedProcess:
    """Run a command inside namespace `name` (`ip netns exec`); with check, a failure raises KernelError."""
    try:
        proc = subprocess.run(["ip", "netns", "exec", name, *argv], input=input, text=True, capture_output=True,
                              timeout=timeout)
    except subprocess.TimeoutExpired as e:
        raise KernelError(f"`{' '.join(argv)}` in {name} did not finish within {timeout:g} s") from e
    if check and proc.returncode != 0:
        raise KernelError(f"`{' '.join(argv)}` in {name} failed ({proc.returncode}): {proc.stderr.strip()}")
    return proc


# --- links ------------------------------------------------------------------------------------------------
def _index(ns, ifname: str) -> int:
    found = ns.link_lookup(ifname=ifname)
    if not found:
        raise KernelError(f"no link {ifname}")
    return found[0]


@netlink
def add_bridge(name: str, bridge: str, address: str | None = None, prefixlen: int = 24) -> None:
    """A bridge in namespace `name`, up, optionally with an address."""
    with NetNS(name) as ns:
        ns.link("add", ifname=bridge, kind="bridge")
        idx = _index(ns, bridge)
        if address:
            ns.addr("add", index=idx, address=address, prefixlen=prefixlen)
        ns.link("set", index=idx, state="up")


@netlink
def add_veth(name: str, host: str, peer_ns: str, peer: str, *, master: str | None = None,
             hairpin: bool = False) -> None:
    """A veth pair: `host` in namespace `name` (enslaved to `master`, up), `peer` moved into `peer_ns`.

    hairpin: let the bridge send a frame back out of the port it came in on, as the bridge CNI plugin
    does for pods, so that a pod reaching its own Service is answered by itself.
    """
    with NetNS(name) as ns:
        ns.link("add", ifname=host, kind="veth", peer={"ifname": peer, "net_ns_fd": peer_ns})
        idx = _index(ns, host)
        if master:
            ns.link("set", index=idx, master=_index(ns, master))
            if hairpin:
                ns.brport("set", index=idx, mode=1)
        ns.link("set", index=idx, state="up")


@netlink
def delete_link(name: str, ifname: str) -> None:
    """Delete a link in namespace `name` if it is there."""
    with contextlib.suppress(Exception):
        with NetNS(name) as ns:
            found = ns.link_lookup(ifname=ifname)
            if found:
                ns.link("del", index=found[0])


@netlink
def configure(name: str, ifname: str, address: str, prefixlen: int, gateway: str | None = None,
              routes: list[tuple[str, str]] = ()) -> None:
    """Bring `ifname` up in namespace `name` with an address, a default route and extra (dst, via) routes."""
    with NetNS(name) as ns:
        idx = _index(ns, ifname)
        ns.link("set", index=idx, state="up")
        ns.addr("add", index=idx, address=address, prefixlen=prefixlen)
        if gateway:
            ns.route("add", dst="0.0.0.0/0", gateway=gateway)
        for dst, via in routes:
            ns.route("add", dst=dst, gateway=via)


@netlink
def replace_route(name: str, dst: str, via: str) -> None:
    """Point `dst` at gateway `via` in namespace `name` (replacing any route there)."""
    with NetNS(name) as ns:
        ns.route("replace", dst=dst, gateway=via)


@netlink
def route_via(name: str, dst: str) -> str | None:
    """The gateway namespace `name` routes `dst` through (None: directly connected or no route)."""
    with NetNS(name) as ns:
        try:
            routes = ns.route("get", dst=dst)
        except Exception:
            return None
        for route in routes:
            gateway = route.get_attr("RTA_GATEWAY")
            if gateway:
                return gateway
    return None


@netlink
def blackhole_default(name: str) -> None:
    """Drop silently whatever namespace `name` would forward to an unknown destination."""
    with NetNS(name) as ns:
        ns.route("add", dst="0.0.0.0/0", type="blackhole")


@netlink
def root_links(prefix: str = LINK_PREFIX) -> list[str]:
    """Links in the root namespace whose name starts with the project prefix."""
    with IPRoute() as ipr:
        names = [link.get_attr("IFLA_IFNAME") for link in ipr.get_links()]
    return sorted(n for n in names if n and n.startswith(prefix))


# --- cleaning up ------------------------------------------------------------------------------------------
def _started(pid: int) -> float | None:
    """When process `pid` started (seconds since the epoch), or None when there is no such process."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
        with open("/proc/stat") as fh:
            boot = next(float(line.split()[1]) for line in fh if line.startswith("btime "))
    except (OSError, StopIteration, IndexError, ValueError):
        return None
    return boot + int(fields[19]) / os.sysconf("SC_CLK_TCK")


def _in_use(name: str) -> bool:
    """Whether a namespace belongs to a run that is still going (another live process, or a live run here)."""
    match = OWNED.match(name)
    if match is None:
        try:
            age = time.time() - os.stat(os.path.join(NETNS_DIR, name)).st_mtime
        except OSError:
            return False
        return age < UNOWNED_GRACE
    pid = int(match.group(1))
    if pid == os.getpid():
        return f"{PREFIX}{match.group(1)}-{match.group(2)}" in _live_runs
    started = _started(pid)
    if started is None:
        return False
    try:
        created = os.stat(os.path.join(NETNS_DIR, name)).st_mtime
    except OSError:
        return False
    return started <= created + 2       # a process that started later only reuses the pid of the one that made it


def clean() -> list[str]:
    """Remove every namespace, /etc/netns entry and root-namespace link this project left behind.

    Namespaces of runs that are still going (their process is alive) are kept.
    """
    done: list[str] = []
    if not os.path.isdir(NETNS_DIR) and not os.path.isdir(ETC_NETNS):
        return done
    for name in list_namespaces():
        if _in_use(name):
            continue
        if remove_namespace(name):
            done.append(f"removed network namespace {name}")
    if os.path.isdir(ETC_NETNS):
        for entry in sorted(os.listdir(ETC_NETNS)):
            if entry.startswith(PREFIX) and not os.path.exists(os.path.join(NETNS_DIR, entry)):
                shutil.rmtree(os.path.join(ETC_NETNS, entry), ignore_errors=True)
                done.append(f"removed {ETC_NETNS}/{entry}")
    with contextlib.suppress(Exception):
        done.extend(_remove_root_links())
    return done


@netlink
def _remove_root_links() -> list[str]:
    done = []
    for link in root_links():
        with IPRoute() as ipr:
            found = ipr.link_lookup(ifname=link)
            if found:
                ipr.link("del", index=found[0])
                done.append(f"removed link {link}")
    return done
