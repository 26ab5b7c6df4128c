"""One term of one assignment in a real class on this machine (the tier's class, `classterm.Term`): the servers
run as their users, Validate tells each student how they did, the gradebook has each student's marks, each student
reads their own feedback, the instructor sees the hand-ins in the formgrader, and nobody reads a classmate's work,
the course's source or the exchange's store.

Needs root, node and npm, Chromium, bubblewrap, and a Python the class's accounts may run (not one under /root):
skipped without them on a laptop, failed under CI.
"""
from __future__ import annotations

import os
import pathlib

import pytest

from labsupport.hub.client import HubRequestError, MemberServer
from labsupport.hub.service import run_as
from tests.classroom.classterm import ASSIGNMENT, BLANK, HALF, NOTEBOOK, SOLVED, STUDENTS
from tests.classroom.classterm import missing  # noqa: F401 - test_class_clean imports it from here

pytestmark = [pytest.mark.classroom, pytest.mark.slow, pytest.mark.timeout(1800)]

def test_the_class_is_real_unix_accounts_and_a_hub_on_loopback(term):
    import pwd
    for account in term.state.accounts:
        entry = pwd.getpwnam(account)
        assert entry.pw_uid != 0 and pathlib.Path(entry.pw_dir).stat().st_mode & 0o077 == 0
    assert term.state.url.startswith("http://127.0.0.1:")
    for user in (term.state.instructor, *STUDENTS):
        pid = term.hub.server_pid(user)
        assert os.stat(f"/proc/{pid}").st_uid == pwd.getpwnam(user).pw_uid, f"{user}'s server runs as someone else"


def test_validate_tells_each_student_how_they_did(term):
    assert "Success! Your notebook passes all the tests." in term.validated_in_browser, term.validated_in_browser
    for student in (BLANK, HALF):
        assert term.validated[student]["success"] and term.validated[student]["value"]["failed"], student
    assert len(term.validated[BLANK]["value"]["failed"]) > len(term.validated[HALF]["value"]["failed"])


def test_the_gradebook_has_each_students_marks(term):
    from nbgrader.api import Gradebook
    totals = {}
    with Gradebook(f"sqlite:///{term.state.course / 'gradebook.db'}") as gb:
        for student in STUDENTS:
            sub = gb.find_submission_notebook("endpointslices", ASSIGNMENT, student)
            tests = [g for g in sub.grades if g.cell.cell_type == "code"]
            totals[student] = (sum(g.auto_score or 0 for g in tests), sum(g.max_score for g in tests))
    score, maximum = totals[SOLVED]
    assert score == maximum > 0, totals
    assert totals[BLANK][0] == 0, totals
    assert 0 < totals[HALF][0] < maximum, totals
    assert "4 graded" in term.grade.stdout, term.grade.stdout


def headline(score: float, maximum: float) -> str:
    """The first line of a notebook's feedback, as nbgrader writes it."""
    return f"endpointslices (Score: {round(float(score), 2)} / {round(float(maximum), 2)})"


def test_each_student_reads_their_own_feedback(term):
    from nbgrader.api import Gradebook
    seen = {}
    with Gradebook(f"sqlite:///{term.state.course / 'gradebook.db'}") as gb:
        for student in STUDENTS:
            sub = gb.find_submission_notebook("endpointslices", ASSIGNMENT, student)
            seen[student] = headline(sub.score, sub.max_score)
            assert seen[student] in term.feedback[student], student
    assert len(set(seen.values())) == 3, seen
    assert seen[SOLVED] in term.feedback_in_browser


def test_the_instructor_sees_the_submissions_in_the_formgrader(term):
    for student in STUDENTS:
        assert student in term.formgrader


def test_a_student_cannot_read_a_classmates_work_or_the_source(term):
    state = term.state
    peer = state.home(SOLVED) / NOTEBOOK
    denied = [state.course / "source" / NOTEBOOK, state.course / "submitted" / SOLVED / NOTEBOOK,
              state.course / "gradebook.db", peer]
    for path in denied:
        assert path.exists(), path
        proc = run_as(state, BLANK, ["cat", str(path)])
        assert proc.returncode != 0 and "Permission denied" in proc.stderr, (path, proc.stdout[:200])
    proc = run_as(state, BLANK, ["ls", str(state.exchange)])
    assert proc.returncode != 0 and "Permission denied" in proc.stderr
    # Through the student's own Jupyter server: out of their folder, through a link they made, or on another's server.
    own = term.servers[BLANK]
    assert run_as(state, BLANK, ["ln", "-s", str(state.home(SOLVED)), "peek"]).returncode == 0
    assert run_as(state, BLANK, ["ln", "-s", str(state.course / "source"), "source"]).returncode == 0
    for path in ("../" + SOLVED, "peek/" + NOTEBOOK, "source/" + NOTEBOOK, "source"):
        with pytest.raises(HubRequestError) as refused:
            own.contents(path)
        assert refused.value.status >= 400 and "\"cells\"" not in str(refused.value), (path, refused.value)
    intruder = MemberServer(state, SOLVED, own.token)
    with pytest.raises(HubRequestError) as refused:
        intruder.contents(NOTEBOOK)
    assert refused.value.status == 403
