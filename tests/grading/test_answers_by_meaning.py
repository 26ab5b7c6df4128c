"""Answers that have the right form but not the right meaning, through the real pipeline: none earns a mark.

Each submission starts from the blank release; a few solution cells are filled from the reference solution where
the cheat needs the cluster in the state the honest work leaves it, and the cheat goes into the cells named. The
cheats of one assignment are autograded in one `nbgrader autograde` batch (only for the assignments the selected
tests need); then each test cell a cheat aimed at must score 0 and say why. The cheats, by assignment:

* 01: `captured` written by hand (a list of bare dicts, or one endpoint dict) with a typed `victim_ip`, no pod
  deleted; and the preStop time typed as `settle_seconds` with no wait at all;
* 02: the provided Service and Deployment `db` deleted, so there are no slices to check a label on and no pods for
  DNS to miss; and `uids_before = {}` typed, so a pod never deleted passes for its replacement;
* 03: `before` sent to the pod's own node, which masquerades too, while `other_node` names another;
* 04: `web` scaled to zero, so the empty lists of chains, probabilities and IPVS real servers match empty rules;
* 05: the API server's refusal typed by hand as `admin_error`; the provided `legacy` moved to another nodePort so
  that `admin` can take the one it asked for; `hits` written down for every pod, with one
  response repeated as the `responses` it claims to count.
"""
from __future__ import annotations

import pytest

from labsupport.grading.sandbox import problems
from labsupport.testing import require
from tests.grading.course import Course, cell_by_id, solution_region, source_text

pytestmark = pytest.mark.slow

#: student → (assignment, solution cells filled honestly, {cell: the cheat's code}).
CHEATS: dict[str, tuple[str, tuple[str, ...], dict[str, str]]] = {
    "bare-dicts": ("01-endpointslices", ("deploy",), {
        "terminate": '''
victim_ip = "10.244.1.7"
captured = [{"endpoints": [{"addresses": [victim_ip],
                            "conditions": {"ready": False, "serving": True, "terminating": True}}]}]''',
        "settle": "settle_seconds = 20.0"}),
    "endpoint-dict": ("01-endpointslices", (), {
        "terminate": '''
victim_ip = "10.244.1.7"
captured = {"addresses": [victim_ip], "conditions": {"ready": False, "serving": True, "terminating": True}}'''}),
    "typed-wait": ("01-endpointslices", ("deploy", "read-addresses", "terminate"), {
        "settle": "settle_seconds = 20.0"}),
    "deleted-db": ("02-dns", ("statefulset",), {
        "headless": '''
lab.delete("svc", "db")
lab.delete("deploy", "db")
lab.advance(60)''',
        "nslookup": 'answer = lab.nslookup("db")',
        "pod-back": '''
uids_before = {}
back_answer = lab.nslookup(f"{task.restart_pod}.web")'''}),
    "pod-node-before": ("03-nodeport-source-ip", ("nodeport",), {
        "before": '''
pod_node = lab.get("pods", selector="app=echo")[0]["spec"]["nodeName"]
ips = checks.node_ips(lab)
other_node = next(n for n in ips if n not in (pod_node, "lab-control-plane"))
before = lab.curl(f"http://{ips[pod_node]}:{node_port}/clientip", source="client")'''}),
    "scaled-to-zero": ("04-kube-proxy-rules", (), {
        "endpoint-chains": '''
lab.scale("web", 0)
lab.wait(lambda l: not checks.ready_addresses(l, "web") and not l.get("pods", selector="app=web"), timeout=120)
sep_chains = []''',
        "probabilities": "probabilities, shares = [], []",
        "ipvs": '''
lab.set_proxy_mode("ipvs")
real_servers, scheduler = [], "rr"'''}),
    "moved-legacy": ("05-troubleshooting", (), {
        "admin": '''
lab.apply(f"""
apiVersion: v1
kind: Service
metadata: {{name: legacy}}
spec:
  type: NodePort
  selector: {{app: legacy}}
  ports: [{{port: 80, nodePort: {task.taken_node_port + 1}}}]
""")
lab.apply(ADMIN_SVC)'''}),
    "typed-answers": ("05-troubleshooting", (), {
        "admin": '''
admin_error = ('The Service "admin" is invalid: spec.ports[0].nodePort: Invalid value: '
               f'{task.taken_node_port}: provided port is already allocated')''',
        "api": '''
conn.close()
one = lab.curl("http://api/hostname", source="pod/client")
pods = [p["metadata"]["name"] for p in lab.get("pods", selector="app=api")]
responses = [one] * 30 * len(pods)
hits = {name: 30 for name in pods}'''}),
}

#: (student, test cell that must score 0, a part of the message it must fail with).
FINDINGS = [
    ("bare-dicts", "terminate-test", "not an EndpointSlice object as the cluster returns it"),
    ("endpoint-dict", "terminate-test", "not an EndpointSlice object as the cluster returns it"),
    ("bare-dicts", "settle-test", "not an EndpointSlice object as the cluster returns it"),
    ("typed-wait", "settle-time-test", "more cluster time than has passed since the pod was deleted"),
    ("deleted-db", "headless-label-test", "a check over no slices would prove nothing"),
    ("deleted-db", "nslookup-test", "would match an empty list and prove nothing"),
    ("deleted-db", "pod-back-test", "is the pod that was there before"),
    ("pod-node-before", "before-test", "send it to that node's IP"),
    ("scaled-to-zero", "endpoint-chains-test", "list 0 ready address(es), expected"),
    ("scaled-to-zero", "probabilities-test", "list 0 ready address(es), expected"),
    ("scaled-to-zero", "ipvs-test", "list 0 ready address(es), expected"),
    ("typed-answers", "admin-error-test", "is not a message the cluster returned to you"),
    ("typed-answers", "api-test", "holds the same result more than once"),
    ("moved-legacy", "admin-test", "legacy must keep its nodePort"),
]


def submission(course: Course, assignment: str, honest: tuple[str, ...], cheat: dict[str, str]) -> dict:
    """The blank release with the `honest` solution cells filled from the reference and the cheat's cells."""
    nb, source = course.release(assignment), course.source(assignment)
    for grade_id in honest:
        cell_by_id(nb, grade_id)["source"] = solution_region(source_text(cell_by_id(source, grade_id)))
    for grade_id, code in cheat.items():
        cell_by_id(nb, grade_id)["source"] = code.strip("\n")
    return nb


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """An assignment's cheats autograded in one batch, in a course of their own (made once, when a test asks)."""
    require(problems(), "sandboxed grading")
    courses: dict[str, Course] = {}

    def course_of(assignment: str) -> Course:
        if assignment not in courses:
            course = Course(tmp_path_factory.mktemp(f"by-meaning-{assignment[:2]}"))
            course.nbgrader("generate_assignment", assignment, "--force")
            for student, (graded_in, honest, cheat) in CHEATS.items():
                if graded_in == assignment:
                    course.submit(assignment, student, submission(course, assignment, honest, cheat))
            course.nbgrader("autograde", assignment, "--force")
            courses[assignment] = course
        return courses[assignment]
    return course_of


@pytest.mark.parametrize("student, test, message", FINDINGS,
                         ids=[f"{CHEATS[s][0][:2]}-{s}-{t}" for s, t, _ in FINDINGS])
def test_an_answer_right_in_form_only_earns_nothing(graded, student, test, message):
    assignment = CHEATS[student][0]
    course = graded(assignment)
    assert (course.root / "autograded" / student / assignment).exists(), f"{student} was not graded"
    mark = course.marks(assignment, student)[test]
    errors = course.errors(assignment, student, test)
    assert mark.auto == 0, f"{student} earned {mark.auto} of {mark.max} on {test}"
    assert message in errors, errors[-1500:]
