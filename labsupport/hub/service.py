"""`labsupport class up|down` and the class part of `labsupport clean`: make a class on this machine, and remove
exactly what it made.

`up` records each account, folder and process in the state file before making it, then starts JupyterHub (which
starts its proxy) in a session of its own. `down` stops the hub (which stops every user's server), ends whatever
the class's accounts still run, deletes the accounts and removes the folders. `clean` does the same for every
class the state files and the `labclass-` accounts still name, after a run that was killed.
"""
from __future__ import annotations

import json
import os
import pathlib
import pwd
import secrets
import shutil
import signal
import socket
import stat
import subprocess
import sys
import time
import urllib.request

from labsupport.errors import LabError
from labsupport.hub.proxy_install import PROJECT, ensure_proxy, proxy_program
from labsupport.hub.roster import (COMMENT, EXCHANGE_ACCOUNT, PREFIX, Roster, class_accounts, create_account,
                                    create_service_account, delete_account)
from labsupport.hub.state import RUNTIME_ROOT, ClassState, read_state, state_dir

#: The course a class installs for its instructor: the English course of this project.
COURSE = PROJECT / "grading"
HUB_START_TIMEOUT = 120.0


class ClassError(LabError, RuntimeError):
    """A class that cannot be made or reached."""


def free_port() -> int:
    """A free TCP port on 127.0.0.1."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def require_root() -> None:
    """Making Unix accounts and running servers as them needs root."""
    if os.geteuid() != 0:
        raise ClassError("`labsupport class` makes Unix accounts and runs each user's server as that user: run it as "
                         "root")


def unreachable_python() -> str | None:
    """The folder that keeps other users from running this Python (a venv made from a Python under /root), if any."""
    path = pathlib.Path(os.path.realpath(sys.executable))
    for folder in [*reversed(path.parents), path]:
        if not os.stat(folder).st_mode & 0o001:
            return str(folder)
    return None


def require_jupyterhub() -> None:
    """JupyterHub is an extra of this project (`class`), not installed with it by default."""
    import importlib.util
    if importlib.util.find_spec("jupyterhub") is None:
        raise ClassError(f"JupyterHub is not installed for {sys.executable}: pip install -e '.[class]' (or "
                         "make .venv/.installed, which installs the test extra that has it)")


def require_shared_python() -> None:
    """Every class account runs its server with this Python: the accounts must be allowed to run it."""
    folder = unreachable_python()
    if folder:
        raise ClassError(f"the class's accounts cannot run {sys.executable}: {folder} is closed to other users. Make "
                         "the environment from a system Python: `rm -rf .venv && make .venv/.installed "
                         "PYTHON=/usr/bin/python3`")


def up(roster: Roster, directory: pathlib.Path | None = None, course: pathlib.Path = COURSE,
       course_id: str = "k8s-services") -> ClassState:
    """Make the class of `roster` in `directory` and start its hub; returns its state."""
    require_root()
    require_jupyterhub()
    require_shared_python()
    directory = state_dir(directory)
    existing = read_state(directory)
    if existing is not None:
        raise ClassError(f"a class already lives in {directory} (hub {existing.url}): `labsupport class down` first")
    proxy = ensure_proxy()
    state = ClassState(directory=str(directory), instructor=roster.instructor, students=list(roster.students),
                       course_id=course_id, api_token=secrets.token_hex(32), password=secrets.token_urlsafe(12),
                       proxy=str(proxy), ports={"hub": free_port(), "hub-api": free_port(), "proxy-api": free_port(),
                                                "exchange": free_port()})
    state.url = f"http://127.0.0.1:{state.ports['hub']}"
    if not directory.exists():
        state.folders.append(str(directory))
    directory.mkdir(parents=True, exist_ok=True)
    directory.chmod(0o755)
    for sub in ("home", "exchange", "config", "hub"):
        state.folders.append(str(directory / sub))
    state.save()
    (directory / "hub").mkdir(mode=0o700, exist_ok=True)
    try:
        (directory / "home").mkdir(mode=0o755, exist_ok=True)
        for account in roster.everyone:
            state.accounts.append(account)
            state.save()
            create_account(account, state.home(account), state.password)
            _make_runtime(state, account)
        _make_exchange(state)
        _install_course(state, course, course_id)
        _write_configs(state)
        _start_hub(state)
    except BaseException:
        down(state)
        raise
    return state


def _owner(account: str) -> tuple[int, int]:
    entry = pwd.getpwnam(account)
    return entry.pw_uid, entry.pw_gid


def _chown_tree(path: pathlib.Path, account: str) -> None:
    uid, gid = _owner(account)
    for root, dirs, files in os.walk(path):
        os.chown(root, uid, gid)
        for name in dirs + files:
            os.chown(os.path.join(root, name), uid, gid, follow_symlinks=False)


def _make_runtime(state: ClassState, account: str) -> None:
    """The account's private runtime folder, where its kernels' Unix sockets live (mode 0700, its own), in a
    folder of root's that nobody else can have made first."""
    root = state.runtime(account).parent
    root.mkdir(mode=0o755, exist_ok=True)
    st = os.lstat(root)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != 0 or st.st_mode & 0o022:
        raise ClassError(f"{root} must be a folder of root's that only root may write: remove it and run again")
    folder = state.runtime(account)
    state.folders.append(str(folder))
    state.save()
    folder.mkdir(mode=0o700)
    uid, gid = _owner(account)
    os.chown(folder, uid, gid)


def _make_exchange(state: ClassState) -> None:
    """The exchange service's store and the account it runs as, which alone may enter it (mode 0700): no member
    of the class reads, writes or links anything there; they reach it only through the service."""
    state.exchange.mkdir(mode=0o700)
    state.accounts.append(EXCHANGE_ACCOUNT)
    state.save()
    create_service_account(EXCHANGE_ACCOUNT, state.exchange)


def _install_course(state: ClassState, course: pathlib.Path, course_id: str) -> None:
    """A copy of the course (its config and source/) in the instructor's private home, its config pointed at the
    class's exchange service (so nbgrader finds it from any shell of the instructor's)."""
    target = state.course
    target.mkdir()
    shutil.copy(course / "nbgrader_config.py", target / "nbgrader_config.py")
    with open(target / "nbgrader_config.py", "a") as config:
        config.write("\n# The class's exchange service (labsupport class up): nbgrader reaches it with the hub token "
                     "in JUPYTERHUB_API_TOKEN.\n"
                     "from labsupport.grading.exchange_client import configure_service_exchange  # noqa: E402\n"
                     f"configure_service_exchange(c, {state.exchange_url!r})\n")
    shutil.copytree(course / "source", target / "source", symlinks=False,
                    ignore=shutil.ignore_patterns("__pycache__", ".ipynb_checkpoints"))
    _chown_tree(target, state.instructor)


def _write_configs(state: ClassState) -> None:
    """The Jupyter configuration each role's server reads besides its user's own: nbgrader's course and exchange,
    and the server's own settings (kernels over Unix sockets; a student's Content-Security-Policy)."""
    from labsupport.grading.exchange_client import CLASSES
    from labsupport.hub.hub_config import config_dir, server_config
    student = config_dir(state, "student")
    student.mkdir(parents=True)
    exchange = {trait: f"{cls.__module__}.{cls.__qualname__}" for trait, cls in CLASSES.items()}
    (student / "nbgrader_config.json").write_text(json.dumps(
        {"CourseDirectory": {"course_id": state.course_id}, "ExchangeFactory": exchange,
         "ServiceExchange": {"url": state.exchange_url}}, indent=1))
    instructor = config_dir(state, "instructor")
    instructor.mkdir(parents=True)
    (instructor / "nbgrader_config.py").write_text(
        "from labsupport.grading.course_config import configure\n"
        "from labsupport.grading.exchange_client import configure_service_exchange\n"
        f"configure(get_config(), {str(state.course)!r}, course_id={state.course_id!r})\n"
        f"configure_service_exchange(get_config(), {state.exchange_url!r})\n")
    written = [student / "nbgrader_config.json", instructor / "nbgrader_config.py"]
    for role, folder in (("student", student), ("instructor", instructor)):
        (folder / "jupyter_server_config.json").write_text(json.dumps(server_config(role), indent=1))
        written.append(folder / "jupyter_server_config.json")
    for folder in (student, instructor, student.parent):
        folder.chmod(0o755)
    for path in written:
        path.chmod(0o644)
    (pathlib.Path(state.directory) / "hub" / "jupyterhub_config.py").write_text(
        "from labsupport.hub.hub_config import configure\n"
        f"configure(get_config(), {state.directory!r})\n")


def _start_hub(state: ClassState) -> None:
    """Start JupyterHub (it starts the proxy) and wait until its API answers."""
    hub_dir = pathlib.Path(state.directory) / "hub"
    hub_dir.chmod(0o700)
    log = open(hub_dir / "hub.log", "ab")
    env = dict(os.environ, PATH=os.pathsep.join([str(pathlib.Path(sys.executable).parent),
                                                  os.environ.get("PATH", "/usr/bin:/bin")]))
    proc = subprocess.Popen([sys.executable, "-m", "jupyterhub", "-f", str(hub_dir / "jupyterhub_config.py")],
                            cwd=hub_dir, stdin=subprocess.DEVNULL, stdout=log, stderr=log, env=env,
                            start_new_session=True)
    log.close()
    state.pids["hub"] = proc.pid
    state.save()
    deadline = time.monotonic() + HUB_START_TIMEOUT
    while True:
        try:
            urllib.request.urlopen(f"{state.url}/hub/api/", timeout=2).close()
            break
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                tail = (hub_dir / "hub.log").read_text(errors="replace")[-3000:]
                raise ClassError(f"JupyterHub did not start (see {hub_dir / 'hub.log'}):\n{tail}") from None
            time.sleep(0.2)
    proxy_pid = hub_dir / "proxy.pid"
    if proxy_pid.exists():
        state.pids["proxy"] = int(proxy_pid.read_text().strip())
    state.save()


# --- taking a class down -------------------------------------------------------------------------------------
def alive(pid: int) -> bool:
    """Whether process `pid` runs (a zombie nobody has reaped yet does not)."""
    try:
        stat = pathlib.Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def _stop(pids: list[int], grace: float = 15.0) -> None:
    """SIGTERM, then SIGKILL what is still there after `grace` seconds."""
    for pid in pids:
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + grace
    while any(alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def _cmdline(pid: int) -> str:
    try:
        return pathlib.Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def processes_of(accounts: list[str]) -> list[int]:
    """Every process running as one of these Unix accounts."""
    uids = set()
    for name in accounts:
        try:
            uids.add(pwd.getpwnam(name).pw_uid)
        except KeyError:
            pass
    found = []
    for entry in pathlib.Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if entry.stat().st_uid in uids:
                    found.append(int(entry.name))
            except OSError:
                pass
    return found


def down(state: ClassState) -> list[str]:
    """Stop the hub, the proxy and every server, delete the accounts and the folders of `state`; say what went."""
    said = []
    # the hub starts its proxy again when it finds it gone: the one its pid file names now, and the one it started with
    proxies = {state.pids.get("proxy")}
    try:
        proxies.add(int((pathlib.Path(state.directory) / "hub" / "proxy.pid").read_text().strip()))
    except (OSError, ValueError):
        pass
    wanted = [(state.pids.get("hub"), "jupyterhub")] + [(pid, "configurable-http-proxy") for pid in proxies]
    ours = [pid for pid, program in wanted if pid and alive(pid) and program in _cmdline(pid)]
    if ours:
        _stop(ours)
        said.append(f"stopped the class's hub and proxy (pids {', '.join(map(str, ours))})")
    leftover = processes_of(state.accounts)
    if leftover:
        _stop(leftover, grace=5.0)
        said.append(f"stopped {len(leftover)} process(es) of the class's accounts")
    for account in state.accounts:
        delete_account(account)
    if state.accounts:
        said.append(f"deleted the accounts {', '.join(state.accounts)}")
    for folder in sorted(state.folders, key=len, reverse=True):
        shutil.rmtree(folder, ignore_errors=True)
    if state.path.exists():
        state.path.unlink()
    if state.folders:
        said.append(f"removed {state.directory}'s class folders")
    return said


def stray_proxies() -> list[int]:
    """Processes of this project's configurable-http-proxy (`.node/`) left running by a hub that was killed."""
    program = str(proxy_program())
    return [int(p.name) for p in pathlib.Path("/proc").iterdir()
            if p.name.isdigit() and program in _cmdline(int(p.name)).split(" ")[:2]]


def clean(directories: list[pathlib.Path] | None = None) -> list[str]:
    """Take down every class found (the default state folder's, and those the `labclass-` accounts' homes lie in),
    then stop any proxy of this project still running and remove whatever `labclass-` account is left with its
    processes and home."""
    said = []
    found = set(directories or []) | {state_dir()}
    for account in class_accounts():
        home = pathlib.Path(pwd.getpwnam(account).pw_dir)
        if home.parent.name == "home":
            found.add(home.parent.parent)
    for directory in sorted(found):
        try:
            state = read_state(directory)
        except LabError as e:
            said.append(str(e))
            continue
        if state is not None:
            said += down(state)
    stray = stray_proxies()
    if stray:
        _stop(stray)
        said.append(f"stopped the class proxy no state file names (pids {', '.join(map(str, stray))})")
    for account in class_accounts():
        entry = pwd.getpwnam(account)
        _stop(processes_of([account]), grace=5.0)
        delete_account(account)
        if entry.pw_gecos == COMMENT and pathlib.Path(entry.pw_dir).is_dir():
            shutil.rmtree(entry.pw_dir, ignore_errors=True)
        said.append(f"deleted the leftover class account {account}")
    runtime = pathlib.Path(RUNTIME_ROOT)
    if runtime.is_dir() and not runtime.is_symlink():
        for folder in sorted(runtime.glob(PREFIX + "*")):
            shutil.rmtree(folder, ignore_errors=True)
            said.append(f"removed the leftover runtime folder {folder}")
    return said


# --- acting as a member of the class -------------------------------------------------------------------------
def account_env(state: ClassState, account: str) -> dict[str, str]:
    """The environment a member's shell on this machine has: their home, the class's exchange, this Python's tools."""
    entry = pwd.getpwnam(account)
    return {"HOME": entry.pw_dir, "USER": account, "LOGNAME": account, "SHELL": "/bin/bash",
            "PATH": os.pathsep.join([str(pathlib.Path(sys.executable).parent), "/usr/local/bin", "/usr/bin", "/bin"]),
            "LANG": "C.UTF-8", "LABSUPPORT_EXCHANGE_URL": state.exchange_url, "LABSUPPORT_BACKEND": "sim",
            "JUPYTER_RUNTIME_DIR": str(state.runtime(account))}


def run_as(state: ClassState, account: str, argv: list[str], cwd: pathlib.Path | None = None,
           timeout: float = 900, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """Run `argv` as the Unix user `account` (no root left: `runuser`), in `cwd` (default: their home), with
    `env` added to their shell's environment (a hub token, say)."""
    if account not in state.accounts:
        raise ClassError(f"{account} is not an account of this class")
    entry = pwd.getpwnam(account)
    return subprocess.run(["runuser", "-u", account, "--", "env", "-i",
                           *(f"{k}={v}" for k, v in {**account_env(state, account), **(env or {})}.items()),
                           *argv],
                          cwd=cwd or entry.pw_dir, capture_output=True, text=True, timeout=timeout)


__all__ = ["up", "down", "clean", "alive", "stray_proxies", "run_as", "account_env", "processes_of", "ClassError",
           "COURSE"]
