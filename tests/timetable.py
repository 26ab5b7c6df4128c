"""Where a test run's time goes: a pytest plugin that records each test's duration and each tier's time, the phases
`.ci/run` times beside it, and the table printed from them at the end of a run (`python -m tests.timetable FILE`).

Everything goes to one JSON-lines file, one event per line: `{"phase": …}` for a step of `.ci/run` or a cluster a
fixture made (`record_phase`), `{"tests": …}` for one pytest session, `{"cpu": …}` for a reading of the machine's
CPU counters (`sample_cpu`, which `.ci/run` runs beside everything: the table says how busy the cores were in each
phase). LABSUPPORT_CI_TIMES names it; without it a
pytest session writes `test-artifacts/ci-times.jsonl` afresh. Each tier's budget is in docs/ci.md's ```budgets
block, read here, so the page and the table's flags cannot drift apart.
"""
from __future__ import annotations

import json
import os
import pathlib
import re
import sys
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Iterator

ROOT = pathlib.Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "ci.md"
DEFAULT_FILE = ROOT / "test-artifacts" / "ci-times.jsonl"
#: The variable that names the events file (set by `.ci/run`, or by the first pytest session for its fixtures).
ENVIRON = "LABSUPPORT_CI_TIMES"
#: A test's tier is its first marker of these; a test with none is `sim` (pure Python, the embedded cluster).
TIERS = ("kind", "classroom", "lite", "browser", "upstream", "kernel")
SLOWEST = 25

_lock = threading.Lock()


def tier_of(item) -> str:
    """The tier of a collected test: its first marker of TIERS."""
    return next((t for t in TIERS if item.get_closest_marker(t) is not None), "sim")


def events_file() -> pathlib.Path:
    """Where this run's events go."""
    return pathlib.Path(os.environ.get(ENVIRON) or DEFAULT_FILE)


def write_event(event: dict, path: pathlib.Path | None = None) -> None:
    """Append one event (one line; appends of several processes do not interleave)."""
    path = path or events_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    line = (json.dumps(event, ensure_ascii=False) + "\n").encode()
    with _lock:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, line)
        finally:
            os.close(fd)


def record_phase(name: str, start: float, end: float, code: int = 0, background: bool = False) -> None:
    """Record a phase: a step of the run or a cluster made, from `start` to `end` (seconds since the epoch)."""
    write_event({"phase": name, "start": round(start, 3), "end": round(end, 3), "code": code,
                 "background": background})


@contextmanager
def timed_phase(name: str) -> Iterator[None]:
    """Record the block as a phase (with code 1 when it raised)."""
    start, code = time.time(), 0
    try:
        yield
    except BaseException:
        code = 1
        raise
    finally:
        record_phase(name, start, time.time(), code)


@dataclass
class Timing:
    """One test's time: setup, call and teardown together."""

    id: str
    tier: str
    seconds: float = 0.0
    outcome: str = "passed"
    start: float = 0.0
    end: float = 0.0


class TierTags:
    """The part that runs where tests are collected (a parallel worker too): each test's report names its tier."""

    def pytest_collection_modifyitems(self, items) -> None:
        for item in items:
            item.user_properties.append(("tier", tier_of(item)))


class TimeRecorder:
    """The plugin: each test's duration and outcome, and the session's span, written as one event at its end."""

    def __init__(self, path: pathlib.Path, label: str) -> None:
        self.path, self.label = path, label
        self.tests: dict[str, Timing] = {}
        self.started = time.time()
        self.collected = 0.0

    def pytest_collection_finish(self, session) -> None:
        self.collected = time.time()

    def pytest_runtest_logreport(self, report) -> None:
        test = self.tests.get(report.nodeid)
        if test is None:
            tier = next((value for name, value in report.user_properties if name == "tier"), "sim")
            test = self.tests[report.nodeid] = Timing(report.nodeid, tier, start=report.start)
        test.seconds += report.duration
        test.end = report.stop
        if report.failed:
            test.outcome = "failed" if report.when == "call" else "error"
        elif report.skipped and test.outcome == "passed":
            test.outcome = "skipped"

    def pytest_sessionfinish(self, session, exitstatus) -> None:
        write_event({"tests": [[t.id, t.tier, round(t.seconds, 3), t.outcome, round(t.start, 3), round(t.end, 3)]
                               for t in self.tests.values()],
                     "label": self.label, "start": round(self.started, 3),
                     "collected": round(self.collected, 3) if self.collected else None, "end": round(time.time(), 3),
                     "exitstatus": int(exitstatus)}, self.path)


def register(config) -> None:
    """Install the plugin: the tier tags wherever tests are collected, the recorder on the session's controlling
    process (not on a parallel worker)."""
    config.pluginmanager.register(TierTags(), "labsupport-tier-tags")
    if hasattr(config, "workerinput") or config.option.collectonly:
        return
    if not os.environ.get(ENVIRON):
        DEFAULT_FILE.parent.mkdir(parents=True, exist_ok=True)
        DEFAULT_FILE.write_text("")
        os.environ[ENVIRON] = str(DEFAULT_FILE)
    label = os.environ.get("LABSUPPORT_CI_TIMES_LABEL", "pytest")
    config.pluginmanager.register(TimeRecorder(events_file(), label), "labsupport-timetable")


def cpu_counters(stat: str) -> tuple[int, int, int]:
    """(busy, total, steal) jiffies of all CPUs together from /proc/stat's text. Of its first eight counters (user,
    nice, system, idle, iowait, irq, softirq, steal; guest time is counted in user already) the total is their sum,
    busy leaves out idle, iowait and steal (the time a virtual machine's host gave to others)."""
    fields = [int(v) for v in stat.splitlines()[0].split()[1:9]]
    fields += [0] * (8 - len(fields))
    return sum(fields) - fields[3] - fields[4] - fields[7], sum(fields), fields[7]


def sample_cpu(path: pathlib.Path, every: float = 5.0) -> None:
    """Append a reading of the CPU counters to `path` every `every` seconds, until killed."""
    cores = os.cpu_count() or 1
    while True:
        busy, total, steal = cpu_counters(pathlib.Path("/proc/stat").read_text())
        write_event({"cpu": round(time.time(), 3), "busy": busy, "total": total, "steal": steal, "cores": cores},
                    path)
        time.sleep(every)


def busy_cores(samples: list[dict], start: float, end: float, counter: str = "busy") -> float | None:
    """How many cores were busy on average from `start` to `end` (or, with counter="steal", taken by the host),
    from the readings around that span; None when fewer than two readings cover it."""
    before = [s for s in samples if s["cpu"] <= start]
    after = [s for s in samples if s["cpu"] >= end]
    first = before[-1] if before else next((s for s in samples if s["cpu"] > start), None)
    last = after[0] if after else next((s for s in reversed(samples) if s["cpu"] < end), None)
    if first is None or last is None or last["cpu"] <= first["cpu"] or last["total"] <= first["total"]:
        return None
    return (last.get(counter, 0) - first.get(counter, 0)) / (last["total"] - first["total"]) * last["cores"]


# --- the table ----------------------------------------------------------------------------------------------------
def budgets(doc: pathlib.Path = DOC) -> dict[str, float]:
    """Each tier's (or phase's) budget in minutes, from the doc's ```budgets block (`name: minutes`)."""
    match = re.search(r"```budgets\n(.*?)```", doc.read_text(), re.S) if doc.exists() else None
    found: dict[str, float] = {}
    for line in (match.group(1).splitlines() if match else []):
        name, _, minutes = line.partition(":")
        if name.strip():
            found[name.strip()] = float(minutes.split()[0])
    return found


@dataclass
class Run:
    """What an events file holds: the phases, and the tests of every pytest session in it."""

    phases: list[dict] = field(default_factory=list)
    sessions: list[dict] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    cpu: list[dict] = field(default_factory=list)

    @property
    def tests(self) -> list[Timing]:
        return [Timing(*row) for s in self.sessions for row in s["tests"]]


def read_events(path: pathlib.Path) -> Run:
    """The events of a file; a line that is not an event is kept as a problem (a run killed mid-write)."""
    run = Run()
    for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
        if not line.strip():
            continue
        try:
            event = json.loads(line)
        except ValueError:
            run.problems.append(f"{path}:{number}: not an event: {line[:80]!r}")
            continue
        if "phase" in event:
            run.phases.append(event)
        elif "tests" in event:
            run.sessions.append(event)
        elif "cpu" in event:
            run.cpu.append(event)
        else:
            run.problems.append(f"{path}:{number}: an event of no known kind: {line[:80]!r}")
    return run


def clock(seconds: float) -> str:
    """Seconds as `12 min 05 s` (or `4.2 s` under a minute)."""
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, rest = divmod(round(seconds), 60)
    return f"{minutes} min {rest:02d} s"


def tier_totals(tests: list[Timing]) -> dict[str, dict]:
    """Per tier: its tests, the seconds they took (summed), their span on the clock (first start to last end), and
    the outcomes."""
    totals: dict[str, dict] = {}
    for t in tests:
        row = totals.setdefault(t.tier, {"tests": 0, "seconds": 0.0, "start": t.start, "end": t.end,
                                         "outcomes": {}})
        row["tests"] += 1
        row["seconds"] += t.seconds
        row["start"], row["end"] = min(row["start"], t.start), max(row["end"], t.end)
        row["outcomes"][t.outcome] = row["outcomes"].get(t.outcome, 0) + 1
    return totals


def table(run: Run, limits: dict[str, float], slowest: int = SLOWEST) -> str:
    """The time table: the slowest tests, the phases in the order they began, the tiers against their budgets. The
    totals come last, where a log cut to its end still shows them."""
    tests = run.tests
    starts = [p["start"] for p in run.phases] + [s["start"] for s in run.sessions]
    origin = min(starts) if starts else 0.0
    lines = ["", "== where the time went " + "=" * 88, f"the {min(slowest, len(tests))} slowest tests:"]
    for t in sorted(tests, key=lambda t: -t.seconds)[:slowest]:
        lines.append(f"{clock(t.seconds):>12}  {t.tier:9} {t.id}")
    samples = sorted(run.cpu, key=lambda s: s["cpu"])

    def busy(start: float, end: float) -> str:
        cores = busy_cores(samples, start, end)
        return f"{cores:.1f} of {samples[-1]['cores']}" if cores is not None else "-"

    def stolen(start: float, end: float) -> str:
        cores = busy_cores(samples, start, end, "steal")
        return f" (the host took {cores:.1f})" if cores is not None and cores >= 0.1 else ""

    lines += ["", f"{'phase':52} {'began at':>10} {'wall':>12} {'cores busy':>10}  note"]
    for p in sorted(run.phases, key=lambda p: p["start"]):
        note = ("background" if p.get("background") else "") + (f" exit {p['code']}" if p.get("code") else "")
        over = limits.get(p["phase"])
        if over is not None and p["end"] - p["start"] > over * 60:
            note += f" OVER its budget of {over:g} min"
        lines.append(f"{p['phase'][:52]:52} {clock(p['start'] - origin):>10} {clock(p['end'] - p['start']):>12} "
                     f"{busy(p['start'], p['end']):>10}  {(note + stolen(p['start'], p['end'])).strip()}")
    for s in run.sessions:
        collecting = (f", collected in {clock(s['collected'] - s['start'])}" if s.get("collected")
                      else ", collected in its workers")
        lines.append(f"{s['label'][:52]:52} {clock(s['start'] - origin):>10} {clock(s['end'] - s['start']):>12} "
                     f"{busy(s['start'], s['end']):>10}  exit {s['exitstatus']}{collecting}"
                     f"{stolen(s['start'], s['end'])}")
    totals = tier_totals(tests)
    lines += ["", f"{'tier':12} {'tests':>6} {'test time':>12} {'on the clock':>13} {'budget':>8}  outcomes"]
    flagged = []
    for tier in ("sim", *reversed(TIERS)):
        row = totals.get(tier)
        if row is None:
            continue
        budget = limits.get(tier)
        over = budget is not None and row["seconds"] > budget * 60
        if over:
            flagged.append(tier)
        outcomes = ", ".join(f"{n} {what}" for what, n in sorted(row["outcomes"].items()))
        lines.append(f"{tier:12} {row['tests']:>6} {clock(row['seconds']):>12} {clock(row['end'] - row['start']):>13} "
                     f"{(f'{budget:g} min' if budget is not None else '-'):>8}  {outcomes}"
                     + ("  OVER BUDGET" if over else ""))
    if flagged:
        lines += ["", f"OVER BUDGET: {', '.join(flagged)} (the budgets are in docs/ci.md)"]
    lines += run.problems
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    """Print the table of the events file argv[0] (default: LABSUPPORT_CI_TIMES, or the last pytest session's);
    `--sample-cpu FILE` appends readings of the CPU counters to FILE until killed."""
    if argv[:1] == ["--sample-cpu"] and len(argv) == 2:
        sample_cpu(pathlib.Path(argv[1]))
        return 0
    path = pathlib.Path(argv[0]) if argv else events_file()
    if not path.is_file():
        print(f"no time table: {path} does not exist (nothing was recorded)", file=sys.stderr)
        return 1
    print(table(read_events(path), budgets()))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
