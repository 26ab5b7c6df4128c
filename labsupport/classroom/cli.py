"""`labsupport grade|report|variant`: the instructor's commands, run in the nbgrader course folder."""
from __future__ import annotations

import argparse
import json
import pathlib
import sys


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the classroom subcommands to the `labsupport` CLI."""
    grade = subparsers.add_parser("grade", help="autograde every submission of an assignment in parallel")
    grade.add_argument("assignment", nargs="+",
                       help="the assignment id, e.g. 01-endpointslices (several, or '*' for every assignment with "
                            "submissions)")
    grade.add_argument("--workers", type=int, default=None, help="submissions graded at once (default: cores)")
    grade.add_argument("--student", action="append", default=None, metavar="ID",
                       help="grade only this student (repeatable)")
    grade.add_argument("--force", action="store_true", help="grade again submissions already graded")
    grade.add_argument("--timeout", type=float, default=None,
                       help="seconds one submission may take before it is stopped (default 1800)")
    grade.add_argument("--course", default=".", help="the course folder (default: the current folder)")
    grade.set_defaults(func=cmd_grade)
    report = subparsers.add_parser("report", help="write an HTML report of the class from the gradebook")
    report.add_argument("assignment")
    report.add_argument("--output", "-o", default=None, help="the HTML file (default: reports/ASSIGNMENT.html)")
    report.add_argument("--course", default=".", help="the course folder (default: the current folder)")
    report.set_defaults(func=cmd_report)
    variant = subparsers.add_parser("variant", help="print one student's task of an assignment as JSON")
    variant.add_argument("assignment")
    variant.add_argument("student")
    variant.add_argument("--course-id", default=None, help="the course id (default: LABSUPPORT_COURSE_ID or "
                                                           "k8s-services)")
    variant.set_defaults(func=cmd_variant)


def cmd_grade(args) -> int:
    """Grade, print progress on stderr and the summary table on stdout; 1 when a submission failed."""
    from labsupport.classroom.grade import DEFAULT_TIMEOUT, ClassGrader, grade_all, submitted_assignments, summary_table
    from labsupport.classroom.runner import warm_up
    warm_up()
    course = pathlib.Path(args.course)
    assignments = submitted_assignments(course) if args.assignment == ["*"] else args.assignment
    graders = [ClassGrader(course, assignment, workers=args.workers, students=args.student, force=args.force,
                           timeout=args.timeout or DEFAULT_TIMEOUT) for assignment in assignments]
    results = grade_all(graders, lambda line: print(line, file=sys.stderr, flush=True))
    for assignment, outcomes in zip(assignments, results):
        if len(assignments) > 1:
            print(f"== {assignment}")
        print(summary_table(outcomes))
    return 1 if any(o.status in ("failed", "timed out") for outcomes in results for o in outcomes) else 0


def cmd_report(args) -> int:
    """Write the report and print where it is."""
    from labsupport.classroom.report import write_report
    from labsupport.grading.ids import check_assignment_id
    check_assignment_id(args.assignment, "the command line")
    course = pathlib.Path(args.course)
    output = pathlib.Path(args.output) if args.output else course / "reports" / f"{args.assignment}.html"
    write_report(course, args.assignment, output)
    print(output)
    return 0


def cmd_variant(args) -> int:
    """Print the student's task as JSON."""
    from labsupport.grading.ids import check_assignment_id, check_student_id
    from labsupport.tasks import draw
    check_assignment_id(args.assignment, "the command line")
    check_student_id(args.student, "the command line")
    print(json.dumps(draw(args.assignment, args.student, course_id=args.course_id).values, indent=2))
    return 0
