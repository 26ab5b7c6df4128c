"""The class's exchange service alone (no root, no accounts): who may do what, what a hand-in may be, whose name and
whose time it is filed under, and that a malformed or hostile request gets a clear 4xx and changes nothing."""
from __future__ import annotations

import base64
import concurrent.futures
import datetime
import json

import nbformat
import pytest

from labsupport.grading.exchange_wire import encode
from labsupport.hub.exchange_store import ExchangeStore, StoreError, timestamp
from tests.classroom.exchange_rig import COURSE, Rig

ASSIGNMENT = "01-endpointslices"
API = f"api/courses/{COURSE}/assignments"


def notebook(text: str = "print('hi')") -> bytes:
    """A small valid notebook with one code cell."""
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(text)])
    return nbformat.writes(nb).encode()


@pytest.fixture(scope="module")
def rig(tmp_path_factory):
    rig = Rig(tmp_path_factory.mktemp("exchange") / "store")
    status, _ = rig.call("PUT", f"{API}/{ASSIGNMENT}", rig.instructor,
                         encode({"endpointslices.ipynb": notebook("# YOUR CODE HERE"), "data/hosts.txt": b"web\n"}))
    assert status == 201
    yield rig
    rig.close()


def submit(rig: Rig, token: str, files: dict[str, bytes] | None = None, **extra) -> tuple[int, dict]:
    body = {**encode(files if files is not None else {"endpointslices.ipynb": notebook()}), **extra}
    return rig.call("POST", f"{API}/{ASSIGNMENT}/submissions", token, body)


def handins(rig: Rig, student: str) -> list[str]:
    folder = rig.root / COURSE / "handins" / ASSIGNMENT / student
    return sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []


# --- who is asking -----------------------------------------------------------------------------------------------
def test_no_token_is_refused_with_how_to_send_one(rig):
    status, answer = rig.call("GET", API, None)
    assert status == 401 and "JUPYTERHUB_API_TOKEN" in answer["error"]


def test_a_token_the_hub_does_not_know_is_refused(rig):
    status, answer = rig.call("GET", API, "0" * 32)
    assert status == 401 and "does not know this token" in answer["error"]


def test_a_token_in_the_url_is_not_taken(rig):
    status, _ = rig.call("GET", f"{API}?token={rig.alice}", None)
    assert status == 401


def test_a_token_without_the_services_scope_is_refused(rig):
    status, answer = rig.call("GET", API, rig.unscoped)
    assert status == 403 and "access:services!service=exchange" in answer["error"]


def test_someone_outside_the_course_gets_nothing(rig):
    for method, path in (("GET", API), ("GET", f"{API}/{ASSIGNMENT}"),
                         ("GET", f"{API}/{ASSIGNMENT}/submissions")):
        status, answer = rig.call(method, path, rig.stranger)
        assert status == 403 and "neither a student nor an instructor" in answer["error"], (path, answer)
    assert submit(rig, rig.stranger)[0] == 403
    assert handins(rig, "mallory") == []


def test_who_am_i(rig):
    assert rig.call("GET", f"api/courses/{COURSE}", rig.alice)[1] == {"course": COURSE, "user": "alice",
                                                                      "role": "student"}
    assert rig.call("GET", f"api/courses/{COURSE}", rig.instructor)[1]["role"] == "instructor"


def test_an_unknown_course_or_path_is_a_clear_404(rig):
    status, answer = rig.call("GET", "api/courses/other-course/assignments", rig.instructor)
    assert status == 404 and "this exchange serves k8s-services" in answer["error"]
    status, answer = rig.call("GET", "nothing/here", rig.instructor)
    assert status == 404 and "api/courses" in answer["error"]


# --- roles -------------------------------------------------------------------------------------------------------
def test_a_student_may_not_release_or_take_back(rig):
    status, answer = rig.call("PUT", f"{API}/{ASSIGNMENT}?force=1", rig.alice, encode({"x.ipynb": notebook()}))
    assert status == 403 and "alice is a student of k8s-services" in answer["error"]
    assert rig.call("DELETE", f"{API}/{ASSIGNMENT}", rig.alice)[0] == 403
    assert rig.call("GET", f"{API}/{ASSIGNMENT}", rig.alice)[0] == 200


def test_an_instructor_may_not_hand_in(rig):
    status, answer = submit(rig, rig.instructor)
    assert status == 403 and "instructor" in answer["error"]


def test_a_student_sees_only_their_own_hand_ins_and_feedback(rig):
    status, receipt = submit(rig, rig.alice)
    assert status == 201
    own = rig.call("GET", f"{API}/{ASSIGNMENT}/submissions", rig.alice)[1]["submissions"]
    assert own and {r["student"] for r in own} == {"alice"}
    status, answer = rig.call("GET", f"{API}/{ASSIGNMENT}/submissions?student=alice", rig.bob)
    assert status == 403 and "your own hand-ins only" in answer["error"]
    assert {r["student"] for r in rig.call("GET", f"{API}/{ASSIGNMENT}/submissions", rig.bob)[1]["submissions"]} \
        <= {"bob"}
    path = f"{API}/{ASSIGNMENT}/submissions/alice/{receipt['id']}"
    assert rig.call("GET", path, rig.bob)[0] == 403
    assert rig.call("GET", path, rig.alice)[0] == 200
    assert rig.call("PUT", path + "/feedback", rig.instructor,
                    encode({"endpointslices.html": b"<p>well done</p>"}))[0] == 201
    assert rig.call("GET", path + "/feedback", rig.bob)[0] == 403
    assert rig.call("PUT", path + "/feedback", rig.alice, encode({"endpointslices.html": b"<p>100</p>"}))[0] == 403
    status, feedback = rig.call("GET", path + "/feedback", rig.alice)
    assert status == 200 and base64.b64decode(feedback["files"][0]["content"]) == b"<p>well done</p>"


# --- whose name, whose time --------------------------------------------------------------------------------------
def test_a_hand_in_is_filed_under_the_login_with_the_servers_time(rig):
    before = datetime.datetime.now(datetime.timezone.utc)
    status, receipt = submit(rig, rig.bob)
    after = datetime.datetime.now(datetime.timezone.utc)
    assert status == 201 and receipt["student"] == "bob"
    assert timestamp(before) <= receipt["received"] <= timestamp(after)
    stored = json.loads((rig.root / COURSE / "handins" / ASSIGNMENT / "bob" / receipt["id"] /
                         "receipt.json").read_text())
    assert stored["received"] == receipt["received"] and stored["student"] == "bob"


def test_impersonation_is_refused_with_a_clear_message_and_stores_nothing(rig):
    before = handins(rig, "alice"), handins(rig, "bob")
    status, answer = submit(rig, rig.bob, student="alice")
    assert status == 403
    assert answer["error"] == ("you are logged in as bob, and a hand-in is filed under the name you logged in "
                               "with: you cannot hand in as 'alice'")
    status, answer = rig.call("GET", f"{API}/{ASSIGNMENT}/submissions/alice/x", rig.bob)
    assert status == 403
    assert (handins(rig, "alice"), handins(rig, "bob")) == before
    assert submit(rig, rig.bob, student="bob")[0] == 201


def test_a_forged_time_changes_nothing(rig):
    status, answer = submit(rig, rig.bob, timestamp="2000-01-01 00:00:00.000000 UTC")
    assert status == 400 and "one field" in answer["error"]
    status, answer = submit(rig, rig.bob, {"endpointslices.ipynb": notebook(),
                                           "timestamp.txt": b"2000-01-01 00:00:00.000000 UTC"})
    assert status == 400 and "time the server received it" in answer["error"]


def test_every_hand_in_is_kept(rig):
    first = submit(rig, rig.alice, {"endpointslices.ipynb": notebook("1")})[1]
    second = submit(rig, rig.alice, {"endpointslices.ipynb": notebook("2")})[1]
    assert first["id"] != second["id"] and first["received"] < second["received"]
    assert {first["id"], second["id"]} <= set(handins(rig, "alice"))
    for receipt, text in ((first, "1"), (second, "2")):
        answer = rig.call("GET", f"{API}/{ASSIGNMENT}/submissions/alice/{receipt['id']}", rig.instructor)[1]
        assert json.loads(base64.b64decode(answer["files"][0]["content"]))["cells"][0]["source"] in (text, [text])


def test_concurrent_hand_ins_each_get_a_receipt_and_are_stored_whole(rig):
    def one(i: int) -> dict:
        token = rig.alice if i % 2 else rig.bob
        status, receipt = submit(rig, token, {"endpointslices.ipynb": notebook(f"answer {i}"),
                                              "data/hosts.txt": f"{i}\n".encode()})
        assert status == 201, receipt
        return receipt
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        receipts = list(pool.map(one, range(16)))
    assert len({r["id"] for r in receipts}) == 16
    for receipt in receipts:
        answer = rig.call("GET", f"{API}/{ASSIGNMENT}/submissions/{receipt['student']}/{receipt['id']}",
                          rig.instructor)[1]
        files = {f["path"]: base64.b64decode(f["content"]) for f in answer["files"]}
        number = files["data/hosts.txt"].decode().strip()
        assert json.loads(files["endpointslices.ipynb"])["cells"][0]["source"] in (f"answer {number}", [f"answer {number}"])
    assert not any((rig.root / COURSE / ".incoming").iterdir())


# --- what a hand-in may be ---------------------------------------------------------------------------------------
def test_a_hand_in_over_the_cap_is_refused_before_it_is_read(rig, tmp_path):
    big = {"endpointslices.ipynb": notebook("x = '" + "a" * (21 * 2**20) + "'")}
    status, answer = submit(rig, rig.alice, big)
    assert status == 413 and "cap" in answer["error"]
    many = {f"n{i}.ipynb": notebook() for i in range(101)}
    status, answer = submit(rig, rig.alice, many)
    assert status == 413 and "100 files" in answer["error"]


@pytest.mark.parametrize("path, problem", [
    ("../endpointslices.ipynb", "plain names"), ("/etc/passwd", "plain names"), (".hidden.ipynb", "plain names"),
    ("a/../../b.ipynb", "plain names"), ("a\\b.ipynb", "backslash"), ("x\n.ipynb", "control character"),
])
def test_a_path_that_could_escape_is_refused(rig, path, problem):
    status, answer = submit(rig, rig.alice, {path: notebook()})
    assert status == 400 and problem in answer["error"], answer


@pytest.mark.parametrize("files, problem", [
    ({"endpointslices.ipynb": b"\x7fELF\xff\xfe\x00"}, "not UTF-8"),
    ({"endpointslices.ipynb": b"{not json"}, "not JSON"),
    ({"endpointslices.ipynb": b'{"cells": "no"}'}, "not a notebook"),
    ({"endpointslices.ipynb": b'{"cells": [{"cell_type": "script"}], "nbformat": 4, "nbformat_minor": 5, '
                              b'"metadata": {}}'}, "not a valid notebook"),
    ({"endpointslices.ipynb": notebook(), "evil.sh": b"rm -rf ~"}, "neither a notebook nor a file"),
    ({"data/hosts.txt": b"web\n"}, "no notebook"),
])
def test_a_hand_in_that_is_not_the_assignment_is_refused(rig, files, problem):
    status, answer = submit(rig, rig.alice, files)
    assert status == 400 and problem in answer["error"], answer


@pytest.mark.parametrize("raw, problem", [
    (b"not json", "not JSON"), (b"[1, 2]", "one field"), (b'{"files": {}}', "one field"),
    (b'{"files": [{"path": "a.ipynb"}]}', "nothing else"),
    (b'{"files": [{"path": "a.ipynb", "content": "!!!"}]}', "not base64"),
    (b'{"files": [{"path": "a.ipynb", "content": 5}]}', "base64 string"),
    (b'{"files": [{"path": "a.ipynb", "content": ""}, {"path": "a.ipynb", "content": ""}]}', "twice"),
    (b'{"files": [{"path": "a", "content": ""}, {"path": "a/b.ipynb", "content": ""}]}', "both a file"),
])
def test_a_malformed_request_gets_a_clear_400(rig, raw, problem):
    status, answer = rig.call("POST", f"{API}/{ASSIGNMENT}/submissions", rig.alice, raw=raw)
    assert status == 400 and problem in answer["error"], answer


def test_bad_ids_in_the_url_are_refused(rig):
    status, answer = rig.call("POST", f"{API}/..%2Fsource/submissions", rig.alice,
                              encode({"a.ipynb": notebook()}))
    assert status == 400 and "assignment id '../source' is refused: it names a path" in answer["error"], answer
    status, answer = rig.call("GET", f"{API}/{ASSIGNMENT}/submissions/alice/..%2F..%2Freleased", rig.instructor)
    assert status == 404
    status, answer = rig.call("POST", f"{API}/02-not-released/submissions", rig.alice,
                              encode({"a.ipynb": notebook()}))
    assert status == 404 and "not released" in answer["error"]


def test_a_release_twice_needs_force(rig):
    status, answer = rig.call("PUT", f"{API}/{ASSIGNMENT}", rig.instructor,
                              encode({"endpointslices.ipynb": notebook("# YOUR CODE HERE")}))
    assert status == 409 and "--force" in answer["error"]


# --- links -------------------------------------------------------------------------------------------------------
def test_a_link_in_the_store_is_never_followed(rig, tmp_path):
    status, receipt = submit(rig, rig.bob)
    stored = rig.root / COURSE / "handins" / ASSIGNMENT / "bob" / receipt["id"] / "files" / "endpointslices.ipynb"
    secret = tmp_path / "secret.ipynb"
    secret.write_bytes(notebook("the hidden tests"))
    stored.unlink()
    stored.symlink_to(secret)
    status, answer = rig.call("GET", f"{API}/{ASSIGNMENT}/submissions/bob/{receipt['id']}", rig.instructor)
    assert status == 500 and "hidden tests" not in json.dumps(answer)


def test_the_store_refuses_a_folder_others_may_enter_or_a_link(tmp_path):
    open_folder = tmp_path / "open"
    open_folder.mkdir(mode=0o755)
    open_folder.chmod(0o755)
    with pytest.raises(StoreError, match="nobody else may enter"):
        ExchangeStore(open_folder)
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    (tmp_path / "link").symlink_to(private)
    with pytest.raises(StoreError, match="not a link"):
        ExchangeStore(tmp_path / "link")
