"""Every assignment of both courses (English and Russian) through nbgrader's own pipeline: generate, submit,
autograde (one batch per course), feedback.

All assignments of a course are graded once, in one `nbgrader autograde` batch of five submissions each: the
reference solution, the blank release, a plausible wrong answer, the blank release with a locked test cell edited to
pass, and the solution with a cell that loops forever (placed between the others, so the batch has to go on after
it). The Russian course's failure messages must be the Russian ones.
"""
from __future__ import annotations

import base64

import pathlib
import re
from dataclasses import dataclass

import pytest

from labsupport.grading.sandbox import problems
from labsupport.testing import require
from tests.grading.course import COURSES, Course, cell_by_id, notebook_name, source_text

pytestmark = pytest.mark.slow

STUDENTS = ("blank", "loop", "solution", "tampered", "wrong")
LOOP = "import time\nwhile True:\n    time.sleep(0.01)"


@dataclass
class Wrong:
    """A plausible mistake: cell `cell` becomes `code`; test `fails` must fail with `message` in its error (in the
    Russian course, `message_ru`)."""

    cell: str
    code: str
    fails: str
    message: str
    message_ru: str

    def expected(self, language: str) -> str:
        """The part of the failure message the course in `language` must show."""
        return self.message_ru if language == "ru" else self.message


@dataclass
class Plan:
    """How to break each assignment."""

    wrong: Wrong
    tampered_test: str      # a locked test cell the tampering submission replaces with `pass`
    loop_cell: str          # the solution cell the runaway submission replaces with an endless loop
    still_passes: tuple[str, ...]   # tests before the loop that must still pass in the runaway submission


PLANS = {
    "01-endpointslices": Plan(
        wrong=Wrong("deploy", '''WEB = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 3
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: nginx, image: nginx:1.27}]
---
apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  selector: {app: wbe}
  ports: [{port: 80, targetPort: 80, name: http}]
"""
lab.apply(WEB)
lab.advance(20)''', "slice-test", "does the selector 'app=wbe' match any pod's labels?",
                    "выбирает ли селектор 'app=wbe' хоть один под?"),
        tampered_test="slice-test", loop_cell="settle", still_passes=("deploy-test", "terminate-test")),
    "02-dns": Plan(
        wrong=Wrong("headless", '''
HEADLESS_DB = """
apiVersion: v1
kind: Service
metadata: {name: db}
spec:
  clusterIP: None
  selector: {app: db}
  ports: [{port: 5432, targetPort: 80}]
"""
lab.apply(HEADLESS_DB)''', "headless-test", "so it is not headless: set spec.clusterIP: None",
                    "значит, он не headless: задай spec.clusterIP: None"),
        tampered_test="nslookup-test", loop_cell="pod-dns", still_passes=("headless-test", "statefulset-test")),
    "03-nodeport-source-ip": Plan(
        wrong=Wrong("before", '''
pod_node = lab.get("pods", selector="app=echo")[0]["spec"]["nodeName"]
ips = checks.node_ips(lab)
other_node = "lab-worker2"
vip = lab.get("svc", "echo")["spec"]["clusterIP"]
before = lab.curl(f"http://{vip}:{node_port}/clientip", source="client")''',
                    "before-test", "which is not a node's IP", "а это не IP ноды"),
        tampered_test="after-test", loop_cell="after", still_passes=("nodeport-test", "before-test", "local-test")),
    "04-kube-proxy-rules": Plan(
        wrong=Wrong("probabilities", "probabilities = [1 / 3] * 3\nshares = [1 / 3] * 3",
                    "probabilities-test", "are not the probabilities in the rules",
                    "не те вероятности, что в правилах"),
        tampered_test="service-chain-test", loop_cell="lookup",
        still_passes=("service-chain-test", "five-test", "nftables-test", "ipvs-test")),
    "05-troubleshooting": Plan(
        wrong=Wrong("pay", '''
diagnosis_pay = "targetPort"
lab.apply("""
apiVersion: apps/v1
kind: Deployment
metadata: {name: pay}
spec:
  replicas: 2
  selector: {matchLabels: {app: pay}}
  template:
    metadata: {labels: {app: pay}}
    spec:
      containers:
      - name: netexec
        image: registry.k8s.io/e2e-test-images/agnhost:2.53
        args: [netexec, --http-port=8080]
        ports: [{containerPort: 80}]
""")
lab.advance(30)''', "pay-test", "the targetPort does not match the port the container listens on",
                    "targetPort не совпадает с портом, который слушает контейнер"),
        tampered_test="shop-test", loop_cell="api", still_passes=("shop-test", "cart-test", "admin-test")),
    "06-review": Plan(
        wrong=Wrong("q1-numbers", "endpoints_bytes = 1.5e6\nslice_bytes = 1.5e6 / 50",
                    "q1-endpoints-test", "endpoints_bytes is 1.5e+06, which is not what the numbers give",
                    "endpoints_bytes: 1.5e+06 — не то, что получается из чисел"),
        tampered_test="q3-test", loop_cell="q4-answers", still_passes=("q1-slices-test", "q3-test")),
}


def submit_variants(course: Course, assignment: str) -> None:
    """The five submissions of one assignment."""
    plan = PLANS[assignment]
    course.submit(assignment, "solution", course.solved(assignment))
    course.submit(assignment, "blank", course.release(assignment))

    wrong = course.solved(assignment)
    cell_by_id(wrong, plan.wrong.cell)["source"] = plan.wrong.code
    course.submit(assignment, "wrong", wrong)

    tampered = course.release(assignment)
    cell_by_id(tampered, plan.tampered_test)["source"] = "pass"
    course.submit(assignment, "tampered", tampered)

    loop = course.solved(assignment)
    cell_by_id(loop, plan.loop_cell)["source"] = LOOP
    course.submit(assignment, "loop", loop)


@pytest.fixture(scope="module", params=sorted(COURSES))
def course(request, tmp_path_factory) -> Course:
    """One course per language for the module: every assignment generated, five submissions each, autograded in one
    batch (`nbgrader autograde "*"`), feedback generated. Autograding runs sandboxed, so it needs bubblewrap."""
    require(problems(), "sandboxed grading")
    course = Course(tmp_path_factory.mktemp(f"course-{request.param}"), folder=COURSES[request.param])
    course.nbgrader("generate_assignment", "*", "--force")
    for assignment in PLANS:
        submit_variants(course, assignment)
    course.nbgrader("autograde", "*", "--force")
    course.nbgrader("generate_feedback", "*", "--force")
    return course


def graded(course: Course, assignment: str) -> Course:
    """The course, once `assignment` has been through the pipeline."""
    assert (course.root / "autograded" / "solution" / assignment).exists()
    return course


ASSIGNMENTS = sorted(PLANS)


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_student_version_hides_solutions_and_hidden_tests(course, assignment):
    graded(course, assignment)
    release = course.release(assignment)
    text = "\n".join(source_text(c) for c in release["cells"])
    assert "BEGIN SOLUTION" not in text and "HIDDEN TESTS" not in text
    assert "raise NotImplementedError()" in text
    for cell in release["cells"]:
        meta = cell["metadata"].get("nbgrader", {})
        if meta.get("locked"):
            assert cell["metadata"].get("editable") is False and cell["metadata"].get("deletable") is False
        assert cell.get("outputs", []) == []
    setup = source_text(cell_by_id(release, "setup"))
    assert 'os.environ.get("LABSUPPORT_BACKEND", "sim"), seed=0' in setup


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_solution_gets_full_autograded_marks(course, assignment):
    graded(course, assignment)
    score, maximum = course.auto_total(assignment, "solution")
    failing = {m.grade_id: course.errors(assignment, "solution", m.grade_id)[-800:]
               for m in course.marks(assignment, "solution").values() if m.kind == "test" and m.auto != m.max}
    assert score == maximum > 0, failing


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_blank_release_gets_zero(course, assignment):
    graded(course, assignment)
    score, maximum = course.auto_total(assignment, "blank")
    assert score == 0 and maximum > 0


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_wrong_answer_fails_its_test_with_a_teaching_message(course, assignment):
    graded(course, assignment)
    wrong = PLANS[assignment].wrong
    marks = course.marks(assignment, "wrong")
    assert marks[wrong.fails].auto == 0
    assert wrong.expected(course.language) in course.errors(assignment, "wrong", wrong.fails)
    score, maximum = course.auto_total(assignment, "wrong")
    assert 0 <= score < maximum


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_edited_locked_test_is_restored(course, assignment):
    graded(course, assignment)
    plan = PLANS[assignment]
    restored = source_text(cell_by_id(course.autograded(assignment, "tampered"), plan.tampered_test))
    original = source_text(cell_by_id(course.source(assignment), plan.tampered_test))
    assert restored == original
    assert course.marks(assignment, "tampered")[plan.tampered_test].auto == 0
    assert course.auto_total(assignment, "tampered")[0] == 0


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_runaway_cell_times_out_and_the_batch_goes_on(course, assignment):
    graded(course, assignment)
    plan = PLANS[assignment]
    error = course.errors(assignment, "loop", plan.loop_cell)
    assert "KeyboardInterrupt" in error or "CellTimeoutError" in error or "Timeout" in error, error
    marks = course.marks(assignment, "loop")
    for test in plan.still_passes:
        assert marks[test].auto == marks[test].max, course.errors(assignment, "loop", test)
    score, maximum = course.auto_total(assignment, "loop")
    assert 0 < score < maximum
    # Students after "loop" in the batch were graded too.
    assert course.auto_total(assignment, "solution")[0] > 0
    assert (course.root / "autograded" / "wrong" / assignment).exists()


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_feedback_shows_the_result_and_the_cluster_picture(course, assignment):
    graded(course, assignment)
    html = course.feedback(assignment, "solution")
    score, maximum = course.auto_total(assignment, "solution")
    total = {"en": f"(Score: {score:.1f} / ", "ru": f"(баллы: {score:g} из ".replace(".", ",")}[course.language]
    assert total in html    # the Russian course's page says its own words in Russian
    # the picture comes as an image (the student's own markup is sanitized; an image's SVG runs no script)
    pictures = [base64.b64decode(m).decode() for m in re.findall(r'src="data:image/svg\+xml;base64,([^"]+)"', html)]
    assert any("<svg" in svg and "lab-worker" in svg for svg in pictures), len(pictures)
    assert "application/vnd.jupyter.widget-view+json" not in html
    wrong = PLANS[assignment].wrong
    feedback = course.feedback(assignment, "wrong")
    assert wrong.expected(course.language).split("'")[0][:30] in feedback
    assert "HIDDEN TESTS" not in feedback and "HIDDEN TESTS" not in html


def test_autograde_ignores_the_graders_backend_setting(course):
    assignment = ASSIGNMENTS[0]
    graded(course, assignment)
    assert course.env["LABSUPPORT_BACKEND"] == "kind"
    nb = course.autograded(assignment, "solution")
    shown = " ".join(str(o.get("data", {}).get("text/plain", "")) for o in cell_by_id(nb, "setup")["outputs"])
    assert "backend='sim'" in shown and "proxy_mode='iptables'" in shown and "seed=0" in shown


#: What the autograded notebook shows in each course's language: the task card's head, a passed test's line.
SPOKEN = {"en": ("Your task", "checks passed"), "ru": ("Твоё задание", "проверки пройдены")}


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_the_graded_notebook_speaks_the_course_language(course, assignment):
    graded(course, assignment)
    card, passed = SPOKEN[course.language]
    nb = course.autograded(assignment, "solution")
    shown = " ".join(str(o.get("data", {}).get("text/html", "")) for o in cell_by_id(nb, "task")["outputs"])
    assert card in shown
    first_test = next(c for c in nb["cells"] if c["metadata"].get("nbgrader", {}).get("grade")
                      and c["cell_type"] == "code")
    assert passed in " ".join(str(o.get("text", "")) for o in first_test["outputs"])
    blank = course.errors(assignment, "blank", first_test["metadata"]["nbgrader"]["grade_id"])
    assert blank and bool(re.search("[А-Яа-я]", blank)) == (course.language == "ru"), blank
