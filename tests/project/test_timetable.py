"""The time table at the end of a CI run (tests/timetable.py): what it records, how it reads, and the budgets it holds
each tier to, which docs/ci.md states."""
from __future__ import annotations

import json
import subprocess
import sys

from tests import timetable
from tests.timetable import TIERS, Timing, Run, budgets, read_events, table, tier_totals


def test_docs_ci_md_gives_every_tier_and_phase_a_budget_within_the_wall():
    limits = budgets()
    tiers = {"sim", *TIERS}
    assert tiers <= set(limits), f"docs/ci.md's budgets block lacks {sorted(tiers - set(limits))}"
    # `make test` (the Makefile): the sim tier on four processes (its test time a quarter of it on the clock), then
    # the kernel and upstream tiers beside the browser, lite and classroom tiers, then the kind tier; CI's wall is
    # 90 min
    phases = ("apt", "venv", "make upstream", "make kubectl-wasm", "make lite", "reserve")
    side_by_side = max(limits["kernel"] + limits["upstream"], limits["browser"] + limits["lite"] + limits["classroom"])
    on_the_clock = sum(limits[name] for name in phases) + limits["sim"] / 4 + side_by_side + limits["kind"]
    assert on_the_clock <= 90, f"the budgets of what runs one after another come to {on_the_clock:g} min, past CI's wall"


def test_a_tier_over_its_budget_is_flagged_and_the_slowest_tests_are_listed():
    tests = [Timing("tests/a.py::fast", "sim", 1.0, start=100.0, end=101.0),
             Timing("tests/kernel/b.py::slow", "kernel", 130.0, start=101.0, end=231.0),
             Timing("tests/kernel/b.py::failed", "kernel", 2.0, "failed", start=231.0, end=233.0)]
    run = Run(phases=[{"phase": "apt", "start": 0.0, "end": 95.0, "code": 0, "background": False},
                      {"phase": "make kind-images", "start": 90.0, "end": 700.0, "code": 2, "background": True}],
              sessions=[{"tests": [[t.id, t.tier, t.seconds, t.outcome, t.start, t.end] for t in tests],
                         "label": "make test", "start": 99.0, "collected": 100.0, "end": 240.0, "exitstatus": 1}])
    text = table(run, {"sim": 1, "kernel": 2, "apt": 1}, slowest=2)
    rows = {line.split()[0]: line for line in text.splitlines() if line.split()}
    assert "OVER BUDGET" in rows["kernel"] and "OVER" not in rows["sim"]
    assert "2 min 12 s" in rows["kernel"] and "1 failed, 1 passed" in rows["kernel"]
    assert "OVER its budget of 1 min" in rows["apt"], "a phase past its budget is flagged too"
    assert "background exit 2" in text and "exit 1, collected in 1.0 s" in text
    slowest = text[text.index("slowest"):].splitlines()[1:3]
    assert "kernel/b.py::slow" in slowest[0] and "kernel/b.py::failed" in slowest[1]
    # the totals come last, where a log cut to its end (CI's summary) still shows them
    assert text.index("slowest") < text.index("began at") < text.index("on the clock")
    assert text.rstrip().endswith("OVER BUDGET: kernel (the budgets are in docs/ci.md)")


def test_tier_totals_sum_the_tests_and_span_the_clock():
    totals = tier_totals([Timing("a", "sim", 2.0, start=10.0, end=12.0), Timing("b", "sim", 3.0, start=20.0,
                                                                                     end=23.0)])
    assert totals["sim"]["tests"] == 2 and totals["sim"]["seconds"] == 5.0
    assert (totals["sim"]["start"], totals["sim"]["end"]) == (10.0, 23.0)


def test_a_broken_line_is_kept_as_a_problem_and_the_rest_is_read(tmp_path):
    path = tmp_path / "times.jsonl"
    path.write_text(json.dumps({"phase": "venv", "start": 1, "end": 2, "code": 0}) + "\n{\"phase\": \"apt\", \"sta\n"
                    + json.dumps({"what": 1}) + "\n")
    run = read_events(path)
    assert [p["phase"] for p in run.phases] == ["venv"]
    assert len(run.problems) == 2 and ":2: not an event" in run.problems[0]
    assert "an event of no known kind" in run.problems[1]


def test_a_pytest_session_records_each_tests_tier_and_the_table_prints(tmp_path):
    """A real session: the plugin writes one event with every test, its tier from its marker; the command prints
    the table from the file."""
    folder = tmp_path / "suite"
    folder.mkdir()
    (folder / "test_some.py").write_text(
        "import pytest\n"
        "def test_plain():\n    pass\n"
        "@pytest.mark.kernel\ndef test_on_the_kernel():\n    assert False\n"
        "@pytest.mark.kind\n@pytest.mark.skip(reason='not here')\ndef test_on_kind():\n    pass\n")
    (folder / "conftest.py").write_text("from tests import timetable\n\n\ndef pytest_configure(config):\n"
                                        "    timetable.register(config)\n")
    events = tmp_path / "times.jsonl"
    env = {"LABSUPPORT_CI_TIMES": str(events), "LABSUPPORT_CI_TIMES_LABEL": "a session",
           "PYTHONPATH": str(timetable.ROOT), "PATH": "/usr/bin:/bin"}
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir", str(folder),
                           "-c", "/dev/null", "-W", "ignore::pytest.PytestUnknownMarkWarning", str(folder)],
                          cwd=folder, env=env, capture_output=True, text=True)
    assert done.returncode == 1, done.stdout + done.stderr
    [session] = read_events(events).sessions
    assert session["label"] == "a session" and session["exitstatus"] == 1
    seen = {row[0].rsplit("::", 1)[1]: (row[1], row[3]) for row in session["tests"]}
    assert seen == {"test_plain": ("sim", "passed"), "test_on_the_kernel": ("kernel", "failed"),
                    "test_on_kind": ("kind", "skipped")}
    printed = subprocess.run([sys.executable, "-m", "tests.timetable", str(events)], cwd=timetable.ROOT,
                             capture_output=True, text=True)
    assert printed.returncode == 0 and "1 failed" in printed.stdout and "test_on_the_kernel" in printed.stdout


def test_the_cores_busy_in_a_phase_come_from_the_readings_around_it():
    from tests.timetable import busy_cores, cpu_counters
    assert cpu_counters("cpu  100 5 50 800 40 3 2 7 30 0\ncpu0 1 2 3 4 5\n") == (160, 1007, 7)
    readings = [{"cpu": t, "busy": busy, "total": total, "steal": steal, "cores": 2}
                for t, busy, total, steal in ((0.0, 0, 0, 0), (10.0, 150, 200, 20), (20.0, 200, 400, 20),
                                              (30.0, 400, 600, 20))]
    assert busy_cores(readings, 0.0, 10.0) == 1.5
    assert busy_cores(readings, 12.0, 18.0) == 0.5, "the readings just outside the span"
    assert busy_cores(readings, 0.0, 30.0) == 2 * 400 / 600
    assert busy_cores(readings[:1], 0.0, 30.0) is None
    run = Run(phases=[{"phase": "venv", "start": 0.0, "end": 10.0, "code": 0, "background": False},
                      {"phase": "make test", "start": 40.0, "end": 50.0, "code": 0, "background": False}],
              cpu=readings)
    rows = {line.split()[0]: line for line in table(run, {}).splitlines() if line.split()}
    assert "1.5 of 2" in rows["venv"] and "cores busy" in table(run, {})
    assert "(the host took 0.2)" in rows["venv"], "a virtual machine's stolen time is shown"
    assert " - " in rows["make"], "no reading after the phase: no figure"


def test_the_sampler_writes_readings_that_the_table_reads(tmp_path):
    import time
    path = tmp_path / "times.jsonl"
    sampler = subprocess.Popen([sys.executable, "-m", "tests.timetable", "--sample-cpu", str(path)],
                               cwd=timetable.ROOT)
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not (path.exists() and path.read_text().strip()):
            time.sleep(0.1)
    finally:
        sampler.kill()
        sampler.wait()
    run = read_events(path)
    assert run.cpu and not run.problems
    assert run.cpu[0]["busy"] <= run.cpu[0]["total"] and run.cpu[0]["cores"] >= 1
