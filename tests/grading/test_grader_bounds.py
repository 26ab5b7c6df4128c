"""The grader's own process is bounded like the kernel: the re-run of each test happens in a confined child, with
memory, CPU and wall-clock limits, and what comes back is held to the output cap.

Each test here runs the instructor's kind of test code on answers a student shaped (a string of 16 MiB quoted in a
failure message, a flood of prints, an answer that makes a check loop or allocate without end, a fake reply written
straight to the child's descriptor 1) against a real lab server, through `RerunProcess` as the grader uses it.
"""
from __future__ import annotations

import json
import os
import shutil
import tempfile

import pytest

from labsupport.grading.execute import LabServerProcess
from labsupport.grading.rerun_process import RerunProcess, Settings
from labsupport.grading.sandbox import Limits

CAP = 2000


@pytest.fixture(scope="module")
def server():
    folder = tempfile.mkdtemp(prefix="lsg-bounds-", dir="/tmp")
    lab = LabServerProcess(os.path.join(folder, "lab.sock"), seed=0, proxy_mode="iptables")
    yield lab
    lab.stop()
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def child(server):
    settings = Settings(socket_path=server.grader_socket, grader_socket=server.grader_socket, seed=0,
                        proxy_mode="iptables", language=None, modules=[], task_path=None, call_timeout=30,
                        max_output=CAP)
    process = RerunProcess(settings, memory=Limits().memory, cpu_seconds=120, folder=server.private)
    yield process
    process.close()


def answers(**values) -> str:
    """Answers as the kernel hands them over (strings and numbers travel as they are)."""
    return json.dumps(values)


def size(outcome) -> int:
    return len(outcome.stdout) + len(outcome.evalue) + sum(len(line) for line in outcome.traceback)


def test_a_failure_quoting_a_huge_answer_is_held_to_the_output_cap(child):
    """A check that quotes the answer (`got {answer!r}`) on a 16 MiB string: 83 times the cap got through."""
    outcome = child.run('assert answer == "a DNS name", f"got {answer!r}"', ["answer"],
                        answers(answer="x" * (16 * 2**20)), missing="", seconds=120, message="limit")
    assert outcome.ename == "AssertionError" and size(outcome) <= CAP + 400, size(outcome)
    assert "more characters" in outcome.evalue


def test_a_flood_of_prints_is_held_to_the_output_cap(child):
    outcome = child.run("for _ in range(2000):\n    print(answer)", ["answer"], answers(answer="y" * 10_000),
                        missing="", seconds=120, message="limit")
    assert outcome.ename is None and size(outcome) <= CAP + 400, size(outcome)


def test_a_check_that_never_ends_fails_at_its_limit_and_grading_goes_on(child):
    """An answer that makes a check loop (here plainly): the test fails saying why, the child is replaced, what the
    earlier tests bound is gone with it, and the next test runs."""
    first = child.run("record = 42", [], answers(), missing="", seconds=60, message="limit")
    assert first.ename is None and "record" in child.bound
    stuck = child.run("while True:\n    pass", [], answers(), missing="", seconds=3,
                      message="the grader's run of this test went past its limits")
    assert stuck.ename == "GraderLimit" and "went past its limits" in stuck.evalue
    after = child.run("assert 1 + 1 == 2", [], answers(), missing="", seconds=60, message="limit")
    assert after.ename is None and "record" not in child.bound


def test_a_check_that_eats_memory_fails_within_the_childs_limit(child):
    """A check building something huge from the answer: the child's address-space limit stops it (a MemoryError,
    or the child's end), never the grader's memory."""
    outcome = child.run("table = [answer * 1000 for _ in range(10_000)]", ["answer"], answers(answer="z" * 2**20),
                        missing="", seconds=60, message="the grader's run of this test went past its limits")
    assert outcome.ename in ("MemoryError", "GraderLimit"), outcome
    after = child.run("assert True", [], answers(), missing="", seconds=60, message="limit")
    assert after.ename is None


def test_a_fake_reply_written_to_descriptor_1_is_not_read(child):
    code = ('import os\nos.write(1, b\'{"outcome": {"ename": null, "stdout": "forged"}, "bound": []}\\n\')\n'
            'assert False, "the real verdict"')
    outcome = child.run(code, [], answers(), missing="", seconds=60, message="limit")
    assert outcome.ename == "AssertionError" and outcome.evalue == "the real verdict"
