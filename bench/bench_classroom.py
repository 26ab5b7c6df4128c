"""Benchmark of a class on one machine: what JupyterHub and each student's server cost, to size a class.

Run (root, node and npm, a Python other users may run): .venv/bin/python bench/bench_classroom.py [--quick]
Prints: `labsupport class up` time (accounts, course, hub) and the hub's own start; each student server's spawn
time; each server's memory (RSS of the server's process tree) and CPU while idle; and while active — the student
validates the assignment, so a kernel runs the whole notebook with its own `Lab()` on `sim` — the peak memory, CPU
seconds and wall time; then each student hands in through the class's exchange service, the instructor collects,
and the service's memory. Without root or node it says what is missing and exits 0 (`make bench` runs it
everywhere).
"""
from __future__ import annotations

import argparse
import os
import pathlib
import shutil
import statistics
import sys
import tempfile
import threading
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

from labsupport.hub.client import HubClient, MemberServer  # noqa: E402
from labsupport.hub.proxy_install import missing_node  # noqa: E402
from labsupport.hub.roster import EXCHANGE_ACCOUNT, numbered_roster  # noqa: E402
from labsupport.hub.service import down, processes_of, run_as, unreachable_python, up  # noqa: E402

ASSIGNMENT = "01-endpointslices"
TICK = os.sysconf("SC_CLK_TCK")
PAGE = os.sysconf("SC_PAGE_SIZE")


def tree(pid: int) -> list[int]:
    """`pid` and all its descendants."""
    children: dict[int, list[int]] = {}
    for entry in pathlib.Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry.name))
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(children.get(p, []))
    return out


def rss_mib(pids: list[int]) -> float:
    """Resident memory of these processes together, MiB."""
    total = 0
    for p in pids:
        try:
            total += int(pathlib.Path(f"/proc/{p}/statm").read_text().split()[1]) * PAGE
        except (OSError, IndexError):
            pass
    return total / 2**20


def cpu_seconds(pids: list[int]) -> float:
    """CPU time (user + system, with reaped children) these processes have used."""
    total = 0
    for p in pids:
        try:
            fields = pathlib.Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
            total += sum(int(f) for f in fields[11:15])
        except (OSError, IndexError, ValueError):
            pass
    return total / TICK


def age(pid: int) -> float:
    """Seconds since process `pid` started."""
    start = int(pathlib.Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]) / TICK
    return float(pathlib.Path("/proc/uptime").read_text().split()[0]) - start


def idle(hub: HubClient, students: list[str], window: float) -> dict[str, tuple[float, float]]:
    """Each server's (RSS MiB, CPU %) over `window` seconds of nobody doing anything."""
    before = {s: cpu_seconds(tree(hub.server_pid(s))) for s in students}
    time.sleep(window)
    return {s: (rss_mib(tree(hub.server_pid(s))), 100 * (cpu_seconds(tree(hub.server_pid(s))) - before[s]) / window)
            for s in students}


def active(hub: HubClient, server: MemberServer) -> tuple[float, float, float]:
    """(peak RSS MiB, CPU seconds, wall seconds) of one server while its student fetches and validates."""
    pid = hub.server_pid(server.user)
    peak, used, stop = [rss_mib(tree(pid))], {}, threading.Event()

    def sample() -> None:
        while not stop.is_set():
            pids = tree(pid)
            peak.append(rss_mib(pids))
            used.update({p: cpu_seconds([p]) for p in pids})
            time.sleep(0.1)

    cpu_before = cpu_seconds(tree(pid))
    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    began = time.monotonic()
    server.assignments("fetch", ASSIGNMENT)
    server.validate(f"{ASSIGNMENT}/endpointslices.ipynb")
    wall = time.monotonic() - began
    stop.set()
    sampler.join()
    # The kernel has exited by now: its CPU counts from the last samples (a lower bound), the server's from /proc.
    kernel_cpu = sum(v for p, v in used.items() if p not in tree(pid))
    return max(peak), cpu_seconds(tree(pid)) - cpu_before + kernel_cpu, wall


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="2 students and a short idle window")
    parser.add_argument("--students", type=int, default=None)
    args = parser.parse_args()
    missing = [w for w, bad in (("root", os.geteuid() != 0), ("node and npm", bool(missing_node())),
                                ("a Python other users may run", bool(unreachable_python()))) if bad]
    if missing:
        print(f"bench_classroom: skipped, needs {', '.join(missing)}")
        return 0
    students = args.students or (2 if args.quick else 4)
    window = 5.0 if args.quick else 20.0
    directory = pathlib.Path(tempfile.mkdtemp(prefix="labsupport-class-bench-"))
    directory.chmod(0o755)
    state = None
    try:
        began = time.monotonic()
        state = up(numbered_roster(students), directory / "class")
        took = time.monotonic() - began
        print(f"{'class up (' + str(students + 1) + ' accounts, course, hub)':<44} {took:6.1f} s")
        print(f"{'hub start (process start to API answering)':<44} {age(state.pids['hub']):6.1f} s")
        hub = HubClient(state)
        teacher = {"JUPYTERHUB_API_TOKEN": hub.token(state.instructor)}
        for step in ("generate_assignment", "release_assignment"):
            run_as(state, state.instructor, ["nbgrader", step, ASSIGNMENT], cwd=state.course, env=teacher)
        spawns = [hub.start_server(s) for s in state.students]
        print(f"{'spawn, one server at a time':<44} median {statistics.median(spawns):5.1f} s   "
              f"max {max(spawns):5.1f} s   (n={len(spawns)})")
        time.sleep(3)
        quiet = idle(hub, state.students, window)
        rss = [v[0] for v in quiet.values()]
        cpu = [v[1] for v in quiet.values()]
        print(f"{'idle server: RSS':<44} median {statistics.median(rss):5.0f} MiB   max {max(rss):5.0f} MiB")
        print(f"{'idle server: CPU over ' + str(int(window)) + ' s':<44} median {statistics.median(cpu):5.2f} %   "
              f"max {max(cpu):5.2f} %")
        busy = [active(hub, MemberServer(state, s, hub.token(s))) for s in state.students]
        print(f"{'active (fetch + Validate): peak RSS':<44} median {statistics.median(b[0] for b in busy):5.0f} MiB   "
              f"max {max(b[0] for b in busy):5.0f} MiB")
        print(f"{'active (fetch + Validate): CPU':<44} median {statistics.median(b[1] for b in busy):5.1f} s   "
              f"max {max(b[1] for b in busy):5.1f} s")
        print(f"{'active (fetch + Validate): wall':<44} median {statistics.median(b[2] for b in busy):5.1f} s")
        hub_rss = rss_mib([state.pids["hub"], *([state.pids["proxy"]] if "proxy" in state.pids else [])])
        print(f"{'hub + proxy: RSS':<44} {hub_rss:6.0f} MiB")
        handins = []
        for student in state.students:
            began = time.monotonic()
            MemberServer(state, student, hub.token(student)).assignments("submit", ASSIGNMENT)
            handins.append(time.monotonic() - began)
        print(f"{'hand in through the exchange (assignment list)':<44} median {statistics.median(handins):5.2f} s   "
              f"max {max(handins):5.2f} s")
        began = time.monotonic()
        collected = run_as(state, state.instructor, ["nbgrader", "collect", ASSIGNMENT], cwd=state.course,
                           env=teacher)
        print(f"{'nbgrader collect, ' + str(students) + ' hand-ins':<44} {time.monotonic() - began:6.1f} s"
              f"{'' if collected.returncode == 0 else '  (failed: ' + collected.stderr[-300:] + ')'}")
        service = processes_of([EXCHANGE_ACCOUNT])
        print(f"{'exchange service: RSS':<44} {rss_mib(service):6.0f} MiB")
    finally:
        if state is not None:
            down(state)
        shutil.rmtree(directory, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
