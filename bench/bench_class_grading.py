"""Benchmark of autograding: one batch graded serially by `nbgrader autograde` and in parallel by `labsupport grade`.

Run: .venv/bin/python bench/bench_class_grading.py [--submissions 20] [--workers N] [--assignment 05-troubleshooting]
     [--quick]
Targets (2-core machine): ≤ 15 s per submission serially; parallel ≤ 0.6 × serial. The submissions are the
reference solutions of every assignment in turn (so the batch mixes light and heavy notebooks), each for its own
student (so each is graded against its own variant); the same batch is written into two temporary copies of the
course, one graded by each command, and their gradebooks must agree mark for mark.
"""
from __future__ import annotations

import argparse
import pathlib
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

from grading.build_source import ASSIGNMENTS  # noqa: E402
from labsupport.classroom.grade import default_workers  # noqa: E402
from labsupport.classroom.gradebook import all_marks  # noqa: E402
from tests.grading.course import BIN, Course  # noqa: E402

TARGET_SECONDS = 15.0
TARGET_RATIO = 0.6


def make_course(root: pathlib.Path, batch: list[tuple[str, str]]) -> Course:
    """A course copy holding the batch: (assignment, student) pairs, each the reference solution."""
    course = Course(root, cell_timeout=60)
    for assignment in sorted({a for a, _ in batch}):
        course.nbgrader("generate_assignment", assignment, "--force")
    for assignment, student in batch:
        course.submit(assignment, student, course.solved(assignment))
    return course


def timed(cmd: list[str], course: Course) -> float:
    """Seconds one command takes in the course folder; fails loudly when it fails."""
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=course.root, env=course.env, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} exited {proc.returncode}:\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
    return seconds


def main(argv: list[str] | None = None) -> int:
    """Grade the same batch serially and in parallel; print both, the ratio and seconds per submission."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--submissions", type=int, default=20, help="how many submissions in all (default 20)")
    parser.add_argument("--workers", type=int, default=default_workers(), help="parallel workers (default: cores)")
    parser.add_argument("--assignment", action="append", choices=ASSIGNMENTS,
                        help="grade only this assignment (repeatable; default: all, in turn)")
    parser.add_argument("--quick", action="store_true", help="a small batch (6 submissions)")
    args = parser.parse_args(argv)
    total = 6 if args.quick else args.submissions
    assignments = args.assignment or list(ASSIGNMENTS)
    batch = [(assignments[i % len(assignments)], f"student{i:03d}") for i in range(total)]
    used = sorted({a for a, _ in batch})
    with tempfile.TemporaryDirectory(prefix="bench-grading-") as tmp:
        serial = make_course(pathlib.Path(tmp) / "serial", batch)
        parallel = make_course(pathlib.Path(tmp) / "parallel", batch)
        # One command each for the whole batch, as an instructor would run it after the deadline.
        serial_seconds = timed([str(BIN / "nbgrader"), "autograde", "*"], serial)
        parallel_seconds = timed([str(BIN / "labsupport"), "grade", "*", "--workers", str(args.workers)], parallel)
        for assignment in used:
            count = sum(a == assignment for a, _ in batch)
            print(f"{assignment:24s} {count:3d} submissions")
        full = 0
        for assignment, student in batch:
            score, maximum = parallel.auto_total(assignment, student)
            full += score == maximum > 0
        same = all(all_marks(serial.root / "gradebook.db", a) == all_marks(parallel.root / "gradebook.db", a)
                   for a in used)
    each = serial_seconds / total
    ratio = parallel_seconds / serial_seconds
    print(f"serial:   {total} submissions in {serial_seconds:.1f} s = {each:.1f} s per submission "
          f"(target ≤ {TARGET_SECONDS:g} s): {'ok' if each <= TARGET_SECONDS else 'SLOW'}")
    print(f"parallel: {total} submissions in {parallel_seconds:.1f} s with {args.workers} workers = "
          f"{ratio:.2f} × serial (target ≤ {TARGET_RATIO:g}): {'ok' if ratio <= TARGET_RATIO else 'SLOW'}")
    print(f"marks: {full}/{total} full; serial and parallel gradebooks {'agree' if same else 'DIFFER'}")
    return 0 if each <= TARGET_SECONDS and ratio <= TARGET_RATIO and same else 1


if __name__ == "__main__":
    sys.exit(main())
