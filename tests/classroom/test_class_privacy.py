"""A class on one machine is private (the tier's real class, `classterm.Term`): a classmate cannot listen to another
student's kernel (it talks over Unix sockets in its owner's private folder — a kernel over TCP, as before, gives
everything away to the same probe), a student's pages run no inline script, the formgrader answers only the
instructor, and the instructor cannot enter a student's server."""
from __future__ import annotations

import pytest

from tests.classroom.classterm import BLANK, SOLVED

pytestmark = [pytest.mark.classroom, pytest.mark.slow, pytest.mark.timeout(1800)]


def probed(term, name: str) -> None:
    """Fail with the probe's own error when it did not run through."""
    assert name not in term.failures, term.failures[name]


def test_a_classmate_cannot_listen_to_a_students_kernel(term):
    probed(term, "kernels")
    assert term.kernel_connection["transport"] == "ipc", term.kernel_connection
    probe = term.hub_kernel_probe
    assert not probe["received"], probe
    assert not probe["runtime_listed"] and any("Permission denied" in e for e in probe["errors"]), probe


def test_the_same_probe_hears_a_kernel_over_tcp(term):
    probed(term, "kernels")
    probe = term.tcp_kernel_probe
    assert probe["tcp_ports"] and probe["received"], probe


def test_a_students_pages_run_no_inline_script_and_jupyterlab_works_without_it(term):
    probed(term, "pages")
    csp = term.headers[SOLVED]["content-security-policy"]
    script = next(d for d in csp.split(";") if d.strip().startswith("script-src"))
    assert "'unsafe-inline'" not in script
    assert term.inline_ran == {SOLVED: False, term.state.instructor: True}
    assert term.csp_violations == [], "JupyterLab broke a rule of the students' policy"


def test_the_formgrader_answers_only_the_instructor(term):
    probed(term, "pages")
    teacher = term.state.instructor
    assert term.reach[(BLANK, teacher, "/formgrader/")] == 403
    assert term.reach[(BLANK, BLANK, "/formgrader/")] == 404
    assert term.reach[(teacher, teacher, "/formgrader/")] == 200


def test_nobody_enters_a_students_server_but_the_student(term):
    probed(term, "pages")
    assert term.reach[(term.state.instructor, SOLVED, "/api/contents")] == 403
    assert term.reach[(BLANK, SOLVED, "/api/contents")] == 403
    assert term.reach[(SOLVED, SOLVED, "/api/contents")] == 200
