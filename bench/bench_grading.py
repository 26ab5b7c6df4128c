"""Benchmark of autograding: 20 submissions graded in one `nbgrader autograde` batch, seconds per submission.

Run: .venv/bin/python bench/bench_grading.py [--submissions 20] [--assignment 05-troubleshooting]
Target (2-core machine): ≤ 15 s per submission. The submissions are the reference solutions of every assignment
in turn (so the batch mixes light and heavy notebooks), graded through nbgrader's own command line in a temporary
copy of the course.
"""
from __future__ import annotations

import argparse
import pathlib
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

from grading.build_source import ASSIGNMENTS  # noqa: E402
from tests.grading.course import Course  # noqa: E402

TARGET_SECONDS = 15.0


def main(argv: list[str] | None = None) -> int:
    """Autograde N solution submissions per assignment batch and print seconds per submission."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--submissions", type=int, default=20, help="how many submissions in all (default 20)")
    parser.add_argument("--assignment", action="append", choices=ASSIGNMENTS,
                        help="grade only this assignment (repeatable; default: all, in turn)")
    args = parser.parse_args(argv)
    assignments = args.assignment or list(ASSIGNMENTS)
    with tempfile.TemporaryDirectory(prefix="bench-grading-") as tmp:
        course = Course(pathlib.Path(tmp) / "course", cell_timeout=60)
        for assignment in assignments:
            course.nbgrader("generate_assignment", assignment, "--force")
        per_assignment = {a: 0 for a in assignments}
        for i in range(args.submissions):
            assignment = assignments[i % len(assignments)]
            course.submit(assignment, f"student{i:03d}", course.solved(assignment))
            per_assignment[assignment] += 1
        total = 0.0
        for assignment, count in per_assignment.items():
            if not count:
                continue
            start = time.perf_counter()
            course.nbgrader("autograde", assignment, "--force")
            seconds = time.perf_counter() - start
            total += seconds
            full = sum(course.auto_total(assignment, f"student{i:03d}")[0] ==
                       course.auto_total(assignment, f"student{i:03d}")[1]
                       for i in range(args.submissions) if assignments[i % len(assignments)] == assignment)
            print(f"{assignment:24s} {count:3d} submissions  {seconds:7.1f} s  {seconds / count:5.1f} s each  "
                  f"{full}/{count} full marks")
        each = total / args.submissions
        verdict = "ok" if each <= TARGET_SECONDS else "SLOW"
        print(f"total: {args.submissions} submissions in {total:.1f} s = {each:.1f} s per submission "
              f"(target ≤ {TARGET_SECONDS:g} s): {verdict}")
        return 0 if each <= TARGET_SECONDS else 1


if __name__ == "__main__":
    sys.exit(main())
