"""Benchmark of autograding: the same submissions graded sandboxed and in-kernel, seconds per submission.

Run: .venv/bin/python bench/bench_grading.py [--submissions 20] [--assignment 05-troubleshooting] [--quick]
                                            [--baseline REV]
Targets (2-core machine): sandboxed ≤ 15 s per submission and ≤ 2× in-kernel; with --baseline, also ≤ 1.2× the
sandboxed grading of that git revision (built in a worktree and a venv of its own, its own bench run on the same
submissions in this same run, before ours). The submissions are the reference
solutions of every assignment in turn (so a batch mixes light and heavy notebooks), graded through nbgrader's own
command line in two temporary copies of the course: one with the course's configuration (kernel in the sandbox,
cluster in a lab server, marks from the grader's re-run), one with nbgrader's plain Execute step (the kernel grades
itself, as before the sandbox). Both are measured in this one run, one after the other.
"""
from __future__ import annotations

import argparse
import pathlib
import re
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

from grading.build_source import ASSIGNMENTS  # noqa: E402
from tests.grading.course import Course  # noqa: E402

TARGET_SECONDS = 15.0
TARGET_RATIO = 2.0
TARGET_BASELINE_RATIO = 1.2
ROOT = pathlib.Path(__file__).resolve().parents[1]
# Appended to the in-kernel copy's config: nbgrader's own autograde steps, no lab server, no sandbox.
IN_KERNEL = """
from nbconvert.preprocessors import ClearMetadataPreprocessor
from nbgrader.preprocessors import (AssignLatePenalties, CheckCellMetadata, Execute, IgnorePattern, LimitOutput,
                                    SaveAutoGrades)
c.Autograde.autograde_preprocessors = [Execute, IgnorePattern, ClearMetadataPreprocessor, LimitOutput,
                                       SaveAutoGrades, AssignLatePenalties, CheckCellMetadata]
"""


def grade(root: pathlib.Path, assignments: list[str], submissions: int, in_kernel: bool) -> float:
    """Autograde the submissions in a fresh course copy; print each batch; returns seconds per submission."""
    course = Course(root, cell_timeout=60)
    if in_kernel:
        with open(root / "nbgrader_config.py", "a") as config:
            config.write(IN_KERNEL)
    for assignment in assignments:
        course.nbgrader("generate_assignment", assignment, "--force")
    per_assignment = {a: 0 for a in assignments}
    for i in range(submissions):
        assignment = assignments[i % len(assignments)]
        course.submit(assignment, f"student{i:03d}", course.solved(assignment))
        per_assignment[assignment] += 1
    total = 0.0
    mode = "in-kernel" if in_kernel else "sandboxed"
    for assignment, count in per_assignment.items():
        if not count:
            continue
        start = time.perf_counter()
        course.nbgrader("autograde", assignment, "--force")
        seconds = time.perf_counter() - start
        total += seconds
        full = sum(course.auto_total(assignment, f"student{i:03d}")[0] ==
                   course.auto_total(assignment, f"student{i:03d}")[1]
                   for i in range(submissions) if assignments[i % len(assignments)] == assignment)
        print(f"{mode:10s} {assignment:24s} {count:3d} submissions  {seconds:7.1f} s  {seconds / count:5.1f} s each  "
              f"{full}/{count} full marks", flush=True)
    return total / submissions


def baseline(tmp: pathlib.Path, revision: str, argv: list[str]) -> float:
    """Seconds per submission of a git revision's sandboxed grading: its own bench script, in a worktree and a venv
    of its own, with the same arguments."""
    tree = tmp / "baseline"
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(tree), revision], check=True,
                   capture_output=True)
    try:
        subprocess.run([sys.executable, "-m", "venv", str(tree / ".venv")], check=True)
        subprocess.run([str(tree / ".venv/bin/pip"), "install", "--quiet", "-e", f"{tree}[test]"], check=True)
        run = subprocess.run([str(tree / ".venv/bin/python"), str(tree / "bench/bench_grading.py"), *argv],
                             capture_output=True, text=True)
        print(run.stdout, end="", flush=True)
        found = re.search(r"sandboxed: ([0-9.]+) s per submission", run.stdout)
        if found is None:
            raise SystemExit(f"the baseline's bench printed no figure:\n{run.stdout}\n{run.stderr[-3000:]}")
        return float(found.group(1))
    finally:
        subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)], capture_output=True)


def main(argv: list[str] | None = None) -> int:
    """Autograde N solution submissions per assignment batch and print seconds per submission."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--submissions", type=int, default=20, help="how many submissions in all (default 20)")
    parser.add_argument("--assignment", action="append", choices=ASSIGNMENTS,
                        help="grade only this assignment (repeatable; default: all, in turn)")
    parser.add_argument("--quick", action="store_true", help="6 submissions (what `make bench` runs)")
    parser.add_argument("--baseline", metavar="REV", help="also grade with this git revision and compare")
    args = parser.parse_args(argv)
    submissions = 6 if args.quick else args.submissions
    assignments = args.assignment or list(ASSIGNMENTS)
    with tempfile.TemporaryDirectory(prefix="bench-grading-") as tmp:
        before = None
        if args.baseline:
            passed = [a for a in (argv if argv is not None else sys.argv[1:]) if not a.startswith("--baseline")
                      and a != args.baseline]
            before = baseline(pathlib.Path(tmp), args.baseline, passed)
        plain = grade(pathlib.Path(tmp) / "in-kernel", assignments, submissions, in_kernel=True)
        boxed = grade(pathlib.Path(tmp) / "sandboxed", assignments, submissions, in_kernel=False)
    ratio = boxed / plain
    ok = boxed <= TARGET_SECONDS and ratio <= TARGET_RATIO
    print(f"in-kernel: {plain:.1f} s per submission; sandboxed: {boxed:.1f} s per submission "
          f"({ratio:.2f}x; targets ≤ {TARGET_SECONDS:g} s and ≤ {TARGET_RATIO:g}x): {'ok' if ok else 'SLOW'}")
    if before is not None:
        against = boxed / before
        ok = ok and against <= TARGET_BASELINE_RATIO
        print(f"{args.baseline}: {before:.1f} s per submission sandboxed; this tree: {boxed:.1f} s "
              f"({against:.2f}x; target ≤ {TARGET_BASELINE_RATIO:g}x): {'ok' if against <= TARGET_BASELINE_RATIO else 'SLOW'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
