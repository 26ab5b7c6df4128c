"""nbgrader's commands on the exchange service (no root): release, fetch, submit, list, collect, release and fetch
feedback, run as nbgrader runs them (its exchange classes with a course's configuration), against the service of
`exchange_rig`."""
from __future__ import annotations

import logging
import os
import pathlib
import shutil

import nbformat
import pytest
from nbgrader.auth import Authenticator
from nbgrader.coursedir import CourseDirectory
from nbgrader.exchange import ExchangeError
from traitlets.config import Config

from labsupport.grading import exchange_client as ex
from tests.classroom.exchange_rig import COURSE, Rig

ASSIGNMENT = "01-endpointslices"


def notebook(text: str) -> str:
    return nbformat.writes(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(text)]))


def command(rig: Rig, cls: type, token: str, where: pathlib.Path, **settings) -> object:
    """An exchange command as nbgrader builds it, for the course folder (or student's folder) `where`."""
    c = Config()
    c.CourseDirectory.root = str(where)
    c.CourseDirectory.course_id = COURSE
    c.CourseDirectory.assignment_id = ASSIGNMENT
    c.CourseDirectory.db_url = f"sqlite:///{where / 'gradebook.db'}"
    c.Exchange.assignment_dir = str(where)
    c.ServiceExchange.url = rig.url
    c.ServiceExchange.token = token
    for key, value in settings.items():
        section, name = key.split("__")
        setattr(getattr(c, section), name, value)
    coursedir = CourseDirectory(config=c)
    return cls(coursedir=coursedir, authenticator=Authenticator(config=c), config=c)


@pytest.fixture(scope="module")
def term(tmp_path_factory):
    """A released assignment, fetched and handed in by alice (with a forged timestamp.txt) and by bob."""
    base = tmp_path_factory.mktemp("client")
    rig = Rig(base / "store")
    course, alice, bob = base / "course", base / "alice", base / "bob"
    for folder in (course, alice, bob):
        folder.mkdir()
    (course / "release" / ASSIGNMENT).mkdir(parents=True)
    (course / "release" / ASSIGNMENT / "endpointslices.ipynb").write_text(notebook("# YOUR CODE HERE"))
    command(rig, ex.ServiceReleaseAssignment, rig.instructor, course).start()
    receipts = {}
    for name, home, token, answer in (("alice", alice, rig.alice, "x = 1"), ("bob", bob, rig.bob, "")):
        command(rig, ex.ServiceFetchAssignment, token, home).start()
        (home / ASSIGNMENT / "endpointslices.ipynb").write_text(notebook(answer))
        if name == "alice":
            (home / ASSIGNMENT / "timestamp.txt").write_text("2000-01-01 00:00:00.000000 UTC")
        receipts[name] = command(rig, ex.ServiceSubmit, token, home).start()
    yield {"rig": rig, "course": course, "alice": alice, "bob": bob, "receipts": receipts}
    rig.close()


def test_fetch_brings_the_released_notebook(term):
    assert "YOUR CODE HERE" not in (term["alice"] / ASSIGNMENT / "endpointslices.ipynb").read_text()
    with pytest.raises(ExchangeError, match="already have a copy"):
        command(term["rig"], ex.ServiceFetchAssignment, term["rig"].alice, term["alice"]).start()


def test_the_list_shows_released_and_fetched(term):
    listed = command(term["rig"], ex.ServiceList, term["rig"].alice, term["alice"]).start()
    assert [(a["assignment_id"], a["status"]) for a in listed] == [(ASSIGNMENT, "fetched")]
    assert listed[0]["notebooks"][0]["notebook_id"] == "endpointslices"


def test_submit_files_the_hand_in_with_the_servers_time_not_the_students(term):
    receipt = term["receipts"]["alice"]
    assert receipt["student"] == "alice" and not receipt["received"].startswith("2000")
    assert [f["path"] for f in receipt["files"]] == ["endpointslices.ipynb"]


def test_the_cached_list_is_the_students_own_hand_ins_from_the_service(term):
    listed = command(term["rig"], ex.ServiceList, term["rig"].alice, term["alice"], ExchangeList__cached=True).start()
    (group,) = listed
    assert group["student_id"] == "alice"
    assert [s["timestamp"] for s in group["submissions"]] == [term["receipts"]["alice"]["received"]]
    assert group["submissions"][0]["has_exchange_feedback"] is False


def test_submitting_as_a_classmate_is_refused(term, caplog):
    with pytest.raises(ExchangeError, match="you are logged in as bob.*cannot hand in as 'alice'"):
        command(term["rig"], ex.ServiceSubmit, term["rig"].bob, term["bob"], CourseDirectory__student_id="alice").start()


def test_a_link_in_the_folder_is_refused_before_anything_is_sent(term, tmp_path):
    secret = tmp_path / "answers.ipynb"
    secret.write_text(notebook("the instructor's answers"))
    link = term["bob"] / ASSIGNMENT / "answers.ipynb"
    link.symlink_to(secret)
    try:
        before = len(os.listdir(term["rig"].root / COURSE / "handins" / ASSIGNMENT / "bob"))
        with pytest.raises(ExchangeError, match="answers.ipynb is a symbolic link"):
            command(term["rig"], ex.ServiceSubmit, term["rig"].bob, term["bob"]).start()
        assert len(os.listdir(term["rig"].root / COURSE / "handins" / ASSIGNMENT / "bob")) == before
    finally:
        link.unlink()


def test_a_folder_over_the_cap_is_refused_with_the_reason(term):
    big = term["bob"] / ASSIGNMENT / "big.ipynb"
    big.write_text(notebook("x = '" + "a" * (21 * 2**20) + "'"))
    try:
        with pytest.raises(ExchangeError, match="over the exchange's cap of 100 files and 20.0 MiB"):
            command(term["rig"], ex.ServiceSubmit, term["rig"].bob, term["bob"]).start()
    finally:
        big.unlink()


def test_collect_release_feedback_and_fetch_it(term):
    rig, course = term["rig"], term["course"]
    done = command(rig, ex.ServiceCollect, rig.instructor, course).start()
    assert done["collected"] == ["alice", "bob"] and not done["refused"]
    for student in ("alice", "bob"):
        folder = course / "submitted" / student / ASSIGNMENT
        receipt = term["receipts"][student]
        assert (folder / "timestamp.txt").read_text() == receipt["received"]
        assert (folder / "submission_secret.txt").read_text() == receipt["id"]
        assert sorted(os.listdir(folder)) == ["endpointslices.ipynb", "submission_secret.txt", "timestamp.txt"]
    # As `nbgrader generate_feedback` leaves it: the HTML beside the submission's time and secret.
    for student in ("alice", "bob"):
        feedback = course / "feedback" / student / ASSIGNMENT
        feedback.mkdir(parents=True)
        (feedback / "endpointslices.html").write_text(f"<p>feedback for {student}</p>")
        for name in ("timestamp.txt", "submission_secret.txt"):
            shutil.copy(course / "submitted" / student / ASSIGNMENT / name, feedback / name)
    command(rig, ex.ServiceReleaseFeedback, rig.instructor, course).start()
    for student, home, token in (("alice", term["alice"], rig.alice), ("bob", term["bob"], rig.bob)):
        command(rig, ex.ServiceFetchFeedback, token, home).start()
        got = home / ASSIGNMENT / "feedback" / term["receipts"][student]["received"] / "endpointslices.html"
        assert got.read_text() == f"<p>feedback for {student}</p>"
    listed = command(rig, ex.ServiceList, rig.alice, term["alice"], ExchangeList__cached=True).start()
    assert listed[0]["submissions"][0]["has_local_feedback"] and not listed[0]["submissions"][0]["feedback_updated"]


def test_collect_refuses_a_bad_hand_in_alone_and_takes_the_newest(term, caplog):
    rig, course = term["rig"], term["course"]
    newer = command(rig, ex.ServiceSubmit, rig.bob, term["bob"]).start()
    newest_alice = command(rig, ex.ServiceSubmit, rig.alice, term["alice"]).start()
    stored = rig.root / COURSE / "handins" / ASSIGNMENT / "bob" / newer["id"] / "files" / "endpointslices.ipynb"
    stored.write_text(notebook("changed on disk after it was received"))
    caplog.set_level(logging.ERROR)
    done = command(rig, ex.ServiceCollect, rig.instructor, course, ExchangeCollect__update=True).start()
    assert done == {"collected": ["alice"], "unchanged": [], "refused": ["bob"]}, done
    assert "Not collected: bob's hand-in" in caplog.text
    assert (course / "submitted" / "alice" / ASSIGNMENT / "timestamp.txt").read_text() == newest_alice["received"]
    assert (course / "submitted" / "bob" / ASSIGNMENT / "timestamp.txt").read_text() == \
        term["receipts"]["bob"]["received"]


def test_the_instructor_lists_every_hand_in_and_takes_a_release_back(term):
    rig = term["rig"]
    inbound = command(rig, ex.ServiceList, rig.instructor, term["course"], ExchangeList__inbound=True).start()
    assert {g["student_id"] for g in inbound} == {"alice", "bob"}
    with pytest.raises(ExchangeError, match="keeps every hand-in"):
        command(rig, ex.ServiceList, rig.instructor, term["course"], ExchangeList__inbound=True,
                ExchangeList__remove=True).start()


def test_without_a_token_or_url_the_message_says_what_to_do(term, monkeypatch):
    monkeypatch.delenv("JUPYTERHUB_API_TOKEN", raising=False)
    with pytest.raises(ExchangeError, match="no hub token for the exchange"):
        command(term["rig"], ex.ServiceFetchAssignment, "", term["alice"]).start()
    monkeypatch.delenv(ex.URL_ENV, raising=False)
    with pytest.raises(ExchangeError, match="no exchange service is configured"):
        command(term["rig"], ex.ServiceFetchAssignment, "x", term["alice"], ServiceExchange__url="").start()


def test_the_course_configuration_picks_the_service_when_a_class_names_one(monkeypatch):
    from labsupport.grading.course_config import configure
    monkeypatch.setenv(ex.URL_ENV, "http://127.0.0.1:1/services/exchange")
    c = Config()
    configure(c, "/srv/course")
    assert c.ExchangeFactory.collect == "labsupport.grading.exchange_client.ServiceCollect"
    assert c.ExchangeFactory.submit == "labsupport.grading.exchange_client.ServiceSubmit"
    monkeypatch.delenv(ex.URL_ENV)
    c = Config()
    configure(c, "/srv/course")
    assert c.ExchangeFactory.collect.__name__ == "SafeExchangeCollect"


def test_a_collected_hand_in_is_made_data_as_the_folder_exchange_makes_it(term):
    rig, course, home = term["rig"], term["course"], term["alice"]
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("my answer <img src=x onerror=\"fetch('/api/contents')\">"),
        nbformat.v4.new_code_cell("x = 1", outputs=[nbformat.v4.new_output(
            "display_data", data={"text/html": "<script>steal()</script>", "text/plain": "shown"})])])
    (home / ASSIGNMENT / "endpointslices.ipynb").write_text(nbformat.writes(nb))
    receipt = command(rig, ex.ServiceSubmit, rig.alice, home).start()
    done = command(rig, ex.ServiceCollect, rig.instructor, course, ExchangeCollect__update=True,
                   CourseDirectory__student_id="alice").start()
    assert done["collected"] == ["alice"], done
    folder = course / "submitted" / "alice" / ASSIGNMENT
    assert (folder / "timestamp.txt").read_text() == receipt["received"]
    collected = nbformat.reads((folder / "endpointslices.ipynb").read_text(), as_version=4)
    markdown, code = collected.cells
    assert "<img" not in markdown.source and "my answer" in markdown.source, markdown.source
    assert "<script" not in str(code.outputs) and "shown" in str(code.outputs), code.outputs
