"""The class's exchange service in the tier's real class (`classterm.Term`): every hand-in goes through it, filed
under the login with the server's time; a late hand-in is judged by that time (a forged timestamp.txt changes
nothing); a student handing in as a classmate is refused with a clear message; a link, a file that is no notebook
and one over the cap are each refused alone; a hand-in changed in the store is refused alone at collect while the
class is collected; each student fetches only their own feedback."""
from __future__ import annotations

import os

import pytest
from nbgrader.api import Gradebook
from nbgrader.utils import parse_utc

from labsupport.hub.service import run_as
from tests.classroom.classterm import (ASSIGNMENT, BLANK, FORGED, HALF, INTRUDER, LATE, SOLVED, STUDENTS,
                                       raw_request)

pytestmark = [pytest.mark.classroom, pytest.mark.slow, pytest.mark.timeout(1800)]


def gradebook(term) -> Gradebook:
    return Gradebook(f"sqlite:///{term.state.course / 'gradebook.db'}")


def test_each_hand_in_is_collected_with_the_time_the_service_received_it(term):
    for student in (*STUDENTS, LATE):
        receipts = term.receipts(student)
        assert {r["student"] for r in receipts} == {student}
        submitted = term.state.course / "submitted" / student / ASSIGNMENT
        assert (submitted / "timestamp.txt").read_text() == receipts[-1]["received"], student
        assert (submitted / "submission_secret.txt").read_text() == receipts[-1]["id"], student
    assert "Collected 4, unchanged 0, refused 1 of 5 students" in term.collect.stderr, term.collect.stderr


def test_a_late_hand_in_is_judged_by_the_servers_time_and_its_forged_timestamp_changes_nothing(term):
    assert "timestamp.txt is not sent" in term.late_submit.stderr
    (receipt,) = term.receipts(LATE)
    assert parse_utc(receipt["received"]) > term.due
    assert (term.state.course / "submitted" / LATE / ASSIGNMENT / "timestamp.txt").read_text() != FORGED
    with gradebook(term) as gb:
        late = gb.find_submission(ASSIGNMENT, LATE)
        assert late.timestamp == parse_utc(receipt["received"]) and late.total_seconds_late > 0
        nb = gb.find_submission_notebook("endpointslices", ASSIGNMENT, LATE)
        solved = gb.find_submission_notebook("endpointslices", ASSIGNMENT, SOLVED)
        assert nb.code_score == solved.code_score > 0, "the late solution is the same full solution"
        assert nb.late_submission_penalty == nb.score > 0 and solved.late_submission_penalty in (None, 0)
        assert gb.find_submission(ASSIGNMENT, SOLVED).total_seconds_late == 0
    assert "(Score: 0.0 / " in term.late_feedback.read_text(), "the late student's feedback says 0"


def test_handing_in_as_a_classmate_is_refused_with_a_clear_message(term):
    message = (f"you are logged in as {BLANK}, and a hand-in is filed under the name you logged in with: you "
               f"cannot hand in as '{SOLVED}'")
    assert term.impersonation.returncode != 0 and message in term.impersonation.stderr, term.impersonation.stderr
    status, answer = term.impersonation_by_hand
    assert status == 403 and answer["error"] == message
    assert len(term.receipts(SOLVED)) == 1, "nothing was handed in under the solver's name but their own hand-in"
    with gradebook(term) as gb:
        nb = gb.find_submission_notebook("endpointslices", ASSIGNMENT, SOLVED)
        assert nb.code_score == nb.max_code_score > 0


def test_a_link_a_file_that_is_no_notebook_and_one_over_the_cap_are_each_refused_with_the_reason(term):
    assert term.link_submit.returncode != 0
    assert "endpointslices.ipynb is a symbolic link: a hand-in holds regular files only" in term.link_submit.stderr
    status, answer = term.not_a_notebook
    assert status == 400 and answer["error"].startswith("endpointslices.ipynb is not a notebook:"), answer
    status, answer = term.too_big
    assert status == 413 and "over the exchange's cap" in answer["error"], answer
    assert len(term.receipts(INTRUDER)) == 1, "only the one good hand-in was stored"


def test_a_hand_in_changed_in_the_store_is_refused_alone_and_the_class_is_collected(term):
    assert f"Not collected: {INTRUDER}'s hand-in" in term.collect.stderr, term.collect.stderr
    assert not os.path.lexists(term.state.course / "submitted" / INTRUDER)
    for student in (*STUDENTS, LATE):
        assert (term.state.course / "submitted" / student / ASSIGNMENT / "endpointslices.ipynb").is_file()


def test_nobody_but_the_service_enters_its_store(term):
    assert term.store_listing.returncode != 0 and "Permission denied" in term.store_listing.stderr
    st = os.stat(term.state.exchange)
    assert st.st_mode & 0o077 == 0
    proc = run_as(term.state, term.state.instructor, ["ls", str(term.state.exchange)])
    assert proc.returncode != 0 and "Permission denied" in proc.stderr


def test_a_student_fetches_only_their_own_feedback(term):
    (receipt,) = term.receipts(SOLVED)
    url = f"{term.exchange}/{ASSIGNMENT}/submissions/{SOLVED}/{receipt['id']}/feedback"
    assert raw_request("GET", url, term.tokens[SOLVED])[0] == 200
    for other in (BLANK, HALF, LATE, INTRUDER):
        status, answer, _ = raw_request("GET", url, term.tokens[other])
        assert status == 403 and "your own hand-ins only" in answer["error"], (other, answer)
