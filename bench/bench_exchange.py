"""Benchmark of the class's exchange service alone (no root): what a hand-in, a listing and a collect cost.

Run: .venv/bin/python bench/bench_exchange.py [--quick]
The service runs on a thread in front of the hub API stand-in of its tests (tests/classroom/exchange_rig.py: the
same two questions a hub answers); N students hand in the course's 01-endpointslices notebook (and one hand-in of
5 MiB), then nbgrader's collect (the service's `ServiceCollect`) takes the class. Prints milliseconds per hand-in
(median and max, the service's clock from request to receipt as the client sees it), the collect's seconds, and the
store's size.
"""
from __future__ import annotations

import argparse
import pathlib
import statistics
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from nbgrader.auth import Authenticator  # noqa: E402
from nbgrader.coursedir import CourseDirectory  # noqa: E402
from traitlets.config import Config  # noqa: E402

from labsupport.grading import exchange_client as ex  # noqa: E402
from labsupport.grading.exchange_wire import encode  # noqa: E402
from labsupport.hub.exchange_service import students_group  # noqa: E402
from tests.classroom.exchange_rig import COURSE, Rig  # noqa: E402

ASSIGNMENT = "01-endpointslices"
NOTEBOOK = ROOT / "grading" / "source" / ASSIGNMENT / "endpointslices.ipynb"


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    students = 10 if args.quick else 60
    with tempfile.TemporaryDirectory(prefix="labsupport-exchange-bench-") as tmp:
        base = pathlib.Path(tmp)
        rig = Rig(base / "store")
        try:
            tokens = {f"s{i:03d}": rig.hub.add(f"s{i:03d}", groups=(students_group(COURSE),))
                      for i in range(students)}
            data = NOTEBOOK.read_bytes()
            api = f"api/courses/{COURSE}/assignments"
            assert rig.call("PUT", f"{api}/{ASSIGNMENT}", rig.instructor,
                            encode({"endpointslices.ipynb": data}))[0] == 201
            took = []
            for token in tokens.values():
                began = time.perf_counter()
                status, _ = rig.call("POST", f"{api}/{ASSIGNMENT}/submissions", token,
                                     encode({"endpointslices.ipynb": data}))
                took.append((time.perf_counter() - began) * 1000)
                assert status == 201
            padding = b'{"cell_type": "markdown", "id": "padding", "metadata": {}, "source": "' + b"x" * (5 * 2**20)
            big = data.replace(b'"cells": [', b'"cells": [' + padding + b'"}, ', 1)
            began = time.perf_counter()
            status, _ = rig.call("POST", f"{api}/{ASSIGNMENT}/submissions", tokens["s000"],
                                 encode({"endpointslices.ipynb": big}))
            big_ms = (time.perf_counter() - began) * 1000
            assert status == 201
            began = time.perf_counter()
            listed = rig.call("GET", f"{api}/{ASSIGNMENT}/submissions", rig.instructor)[1]["submissions"]
            list_ms = (time.perf_counter() - began) * 1000
            course = base / "course"
            course.mkdir()
            c = Config()
            c.CourseDirectory.root = str(course)
            c.CourseDirectory.course_id = COURSE
            c.CourseDirectory.assignment_id = ASSIGNMENT
            c.ServiceExchange.url = rig.url
            c.ServiceExchange.token = rig.instructor
            collect = ex.ServiceCollect(coursedir=CourseDirectory(config=c), authenticator=Authenticator(config=c),
                                        config=c)
            began = time.perf_counter()
            done = collect.start()
            collect_s = time.perf_counter() - began
            assert len(done["collected"]) == students
            size = sum(p.stat().st_size for p in (base / "store").rglob("*") if p.is_file())
        finally:
            rig.close()
    print(f"{'hand-in of ' + str(len(data) // 1024) + ' KiB (' + str(students) + ' students)':<44} "
          f"median {statistics.median(took):6.1f} ms   max {max(took):6.1f} ms")
    print(f"{'hand-in of 5 MiB':<44} {big_ms:6.0f} ms")
    print(f"{'list ' + str(len(listed)) + ' hand-ins (instructor)':<44} {list_ms:6.1f} ms")
    print(f"{'collect ' + str(students) + ' students (ServiceCollect)':<44} {collect_s:6.1f} s")
    print(f"{'store size':<44} {size / 2**20:6.1f} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
