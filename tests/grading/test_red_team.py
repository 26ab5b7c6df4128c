"""Submissions out to cheat, through the real pipeline: each earns no more than the blank notebook.

One `nbgrader autograde` batch of assignment 1: the reference solution, the blank release, and one submission per
attack (each starting from the blank release, the attack in the first solution cell, unless it says otherwise).
After the batch: every attacker is graded, none beats the blank, honest submissions keep full marks, and the
marks a probing attack prints ("FOUND …", "OPEN …") never appear — the sandbox really hid what they looked for.
"""
from __future__ import annotations

import socket
import threading

import pytest

from labsupport.grading.sandbox import problems
from labsupport.testing import require
from tests.grading.course import Course, cell_by_id

pytestmark = pytest.mark.slow

ASSIGNMENT = "01-endpointslices"
NOTEBOOK_TIMEOUT = 60                 # seconds a whole notebook may run here (the cells' limit is 20 s)
FIRST = "deploy"                      # the first solution cell of assignment 1

SOLVE_ALL = '''
import glob, json, os
found = []
for root in ("/", os.path.expanduser("~"), os.getcwd() + "/../../..", "/tmp"):
    found += glob.glob(root + "/**/source/01-endpointslices/*.ipynb", recursive=True)
for path in found:
    print("FOUND source", path)
    nb = json.load(open(path))
    for cell in nb["cells"]:
        text = "".join(cell["source"])
        if "BEGIN SOLUTION" in text:
            exec(text, globals())
'''

ATTACKS = {
    # Silence the errors the tests raise, so the kernel shows no failure.
    "custom-exc": '''
ip = get_ipython()
ip.set_custom_exc((BaseException,), lambda shell, etype, evalue, tb, tb_offset=None: None)
''',
    "showtraceback": '''
ip = get_ipython()
ip.showtraceback = lambda *a, **k: None
ip._showtraceback = lambda *a, **k: None
ip.showsyntaxerror = lambda *a, **k: None
''',
    "excepthook": '''
import sys
sys.excepthook = lambda *a: None
get_ipython().set_custom_exc((AssertionError, Exception), lambda *a, **k: print("all good"))
''',
    # Replace what the tests call.
    "replace-checks": '''
import labsupport.checks as c
for name in dir(c):
    if callable(getattr(c, name)) and not name.startswith("_"):
        setattr(c, name, lambda *a, **k: {"conditions": {"serving": True, "ready": False, "terminating": True}})
checks = c
addresses, captured, victim_ip = [], [], ""
''',
    "replace-lab": '''
import labsupport
class Anything:
    def __getattr__(self, name):
        return lambda *a, **k: [] if name == "get" else Anything()
labsupport.Lab = lambda *a, **k: Anything()
lab = Anything()
''',
    "replace-builtins": '''
import builtins
builtins.len = lambda x: 3
builtins.isinstance = lambda *a: True
builtins.sorted = lambda x, **k: []
builtins.AssertionError = type("Quiet", (Exception,), {})
''',
    # Read the instructor's notebook (solutions, hidden tests) from disk and run its solutions.
    "read-source": SOLVE_ALL,
    # Find the gradebook and write full marks into it.
    "gradebook": '''
import glob, os, sqlite3
for path in glob.glob("/**/gradebook.db", recursive=True) + glob.glob(os.getcwd() + "/../../../gradebook.db"):
    print("FOUND gradebook", path)
    db = sqlite3.connect(path)
    db.execute("update grade set auto_score = 100, manual_score = 100")
    db.commit()
''',
    # Forge the cluster's state through the sim's internals: a private cluster the kernel controls.
    "sim-internals": '''
from labsupport.sim.backend import EmbeddedBackend
from labsupport.lab import Lab
lab = Lab.__new__(Lab)
lab.backend_name, lab.seed, lab.namespace, lab._closed = "sim", 0, "default", False
lab._backend = EmbeddedBackend(seed=0)
lab.apply({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
           "spec": {"selector": {"app": "web"}, "ports": [{"port": 80, "name": "http"}]}})
lab.apply({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
           "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}},
                    "template": {"metadata": {"labels": {"app": "web"}},
                                 "spec": {"containers": [{"name": "nginx", "image": "nginx:1.27"}]}}}})
lab.advance(30)
print("local cluster:", len(lab.get("pods", selector="app=web")), "pods")
''',
    # Forge the cluster's state through the API: status, controller-owned objects, kube-system, nodes.
    "api-forgery": '''
from labsupport import LabError
attempts = [
    {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
     "metadata": {"name": "web-forged", "labels": {"kubernetes.io/service-name": "web"}},
     "addressType": "IPv4", "ports": [{"name": "http", "port": 80, "protocol": "TCP"}],
     "endpoints": [{"addresses": [f"10.244.1.{i}"], "conditions": {"ready": True}} for i in (7, 8, 9)]},
    {"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "web"}, "subsets": []},
    {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "lab-worker9"}},
    {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "namespace": "kube-system"}, "data": {}},
    {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
     "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}},
              "template": {"metadata": {"labels": {"app": "web"}},
                           "spec": {"nodeSelector": {"no": "such-node"},
                                    "containers": [{"name": "nginx", "image": "nginx:1.27"}]}}},
     "status": {"replicas": 3, "readyReplicas": 3, "availableReplicas": 3, "updatedReplicas": 3}},
]
for obj in attempts:
    try:
        lab.apply(obj)
    except LabError as e:
        print("refused:", e)
for command in ("delete node lab-worker", "patch deploy web --subresource=status -p {}", "apply -f /dev/null"):
    try:
        lab.kubectl(command)
    except LabError as e:
        print("refused:", e)
''',
    # Stop the grader or the lab server: kill everything in sight, speak garbage and grader verbs to the socket.
    "kill": '''
import os, signal, socket
me = os.getpid()
for pid in [int(p) for p in os.listdir("/proc") if p.isdigit()]:
    if pid != me:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
s = socket.socket(socket.AF_UNIX)
s.connect(os.environ["LABSUPPORT_LAB_SOCKET"])
s.sendall(b'{"id": 1, "method": "copy", "args": ["/tmp/x.sock"]}\\n{"id": 2, "method": "served"}\\nnot json\\n')
print(s.recv(65536))
''',
    "fork-bomb": '''
import os, time
children = 0
try:
    while True:
        if os.fork() == 0:
            time.sleep(600)
            os._exit(0)
        children += 1
except OSError as e:
    print("stopped after", children, "children:", e)
''',
    "memory-bomb": '''
hog = []
try:
    while True:
        hog.append(bytearray(64 * 2**20))
except MemoryError:
    print("memory limit reached at", len(hog) * 64, "MiB")
hog = None
''',
    "sigint-immune-loop": '''
import signal
signal.signal(signal.SIGINT, signal.SIG_IGN)
while True:
    pass
''',
    "output-flood": '''
import sys
for _ in range(200):
    sys.stdout.write("x" * 100_000 + "\\n")
''',
    "network": '''
import socket
for host, port in (("127.0.0.1", {port}), ("{lan}", {port}), ("1.1.1.1", 53)):
    try:
        socket.create_connection((host, port), timeout=2).close()
        print("OPEN", host, port)
    except OSError as e:
        print("closed", host, port, e)
''',
    # Hand the grader answers of its own making, by replacing the function that dumps them.
    "forged-answers": '''
import json, labsupport.grading.answers as answers
answers.dump = lambda names, ns: json.dumps({
    "addresses": ["10.244.1.2", "10.244.2.2", "10.244.3.2"], "victim_ip": "10.244.1.2",
    "captured": [{"__dict__": {"kind": {"__dict__": {}}}}]})
''',
}


def lan_address() -> str:
    """This machine's address on its first non-loopback interface (where a listener on 0.0.0.0 is reachable)."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.connect(("192.0.2.1", 9))          # no packet is sent: this only picks the outgoing address
            return s.getsockname()[0]
    except OSError:
        return "127.0.0.1"


@pytest.fixture(scope="module")
def listener():
    """A TCP listener on this machine that a submission must not be able to reach."""
    sock = socket.socket()
    sock.bind(("0.0.0.0", 0))
    sock.listen(8)
    accepted: list[tuple] = []

    def accept():
        while True:
            try:
                conn, peer = sock.accept()
            except OSError:
                return
            accepted.append(peer)
            conn.close()
    threading.Thread(target=accept, daemon=True).start()
    yield sock.getsockname()[1], accepted
    sock.close()


@pytest.fixture(scope="module")
def course(tmp_path_factory, listener) -> Course:
    """Assignment 1 autograded in one batch: the solution, the blank release and every attack."""
    require(problems(), "sandboxed grading")
    port, _ = listener
    course = Course(tmp_path_factory.mktemp("red-team"))
    course.env["LABSUPPORT_NOTEBOOK_TIMEOUT"] = str(NOTEBOOK_TIMEOUT)
    course.nbgrader("generate_assignment", ASSIGNMENT, "--force")
    course.submit(ASSIGNMENT, "solution", course.solved(ASSIGNMENT))
    course.submit(ASSIGNMENT, "blank", course.release(ASSIGNMENT))
    for name, code in ATTACKS.items():
        nb = course.release(ASSIGNMENT)
        cell_by_id(nb, FIRST)["source"] = code.replace("{port}", str(port)).replace("{lan}", lan_address())
        course.submit(ASSIGNMENT, f"attack-{name}", nb)
    forged = course.solved(ASSIGNMENT)     # an honest start, then a hand-made "captured" slice
    cell_by_id(forged, "terminate")["source"] = '''
victim = lab.get("pods", selector="app=web")[0]
victim_ip = victim["status"]["podIP"]
captured = lab.get("endpointslices", selector="kubernetes.io/service-name=web")
for ep in captured[0]["endpoints"]:
    if victim_ip in ep["addresses"]:
        ep["conditions"] = {"ready": False, "serving": True, "terminating": True}'''
    course.submit(ASSIGNMENT, "forged-capture", forged)
    late = course.solved(ASSIGNMENT)       # honest work, then an endless loop nothing can interrupt
    cell_by_id(late, "settle")["source"] = ATTACKS["sigint-immune-loop"]
    course.submit(ASSIGNMENT, "late-loop", late)
    slow = course.release(ASSIGNMENT)      # every cell just inside its limit: the notebook's own limit ends it
    for cell in slow["cells"]:
        if cell.get("metadata", {}).get("nbgrader", {}).get("solution") and cell["cell_type"] == "code":
            cell["source"] = "import time\ntime.sleep(19)"
    course.submit(ASSIGNMENT, "attack-slow-cells", slow)
    course.nbgrader("autograde", ASSIGNMENT, "--force")
    return course


def outputs_text(course: Course, student: str) -> str:
    """Every output text of a graded notebook."""
    nb = course.autograded(ASSIGNMENT, student)
    parts = []
    for cell in nb["cells"]:
        for out in cell.get("outputs", []):
            parts.append(str(out.get("text", "")) + str(out.get("data", "")) + str(out.get("evalue", "")))
    return "\n".join(parts)


def test_honest_submissions_keep_their_marks(course):
    score, maximum = course.auto_total(ASSIGNMENT, "solution")
    assert score == maximum > 0
    assert course.auto_total(ASSIGNMENT, "blank")[0] == 0


@pytest.mark.parametrize("attack", sorted([*ATTACKS, "slow-cells"]))
def test_attack_earns_no_more_than_the_blank_notebook(course, attack):
    student = f"attack-{attack}"
    assert (course.root / "autograded" / student / ASSIGNMENT).exists(), f"{student} was not graded"
    blank = course.auto_total(ASSIGNMENT, "blank")[0]
    score, maximum = course.auto_total(ASSIGNMENT, student)
    assert score <= blank, {m.grade_id: course.errors(ASSIGNMENT, student, m.grade_id)
                            for m in course.marks(ASSIGNMENT, student).values() if m.auto}


def test_nothing_of_the_course_was_visible_to_the_probes(course, listener):
    for attack in ("read-source", "gradebook"):
        assert "FOUND" not in outputs_text(course, f"attack-{attack}")
    text = outputs_text(course, "attack-network")
    assert "OPEN" not in text and "closed" in text
    assert listener[1] == []


def test_the_api_refuses_what_a_student_role_cannot_write(course):
    text = outputs_text(course, "attack-api-forgery")
    assert 'endpointslices.discovery.k8s.io "web-forged" is forbidden: User "student" cannot create' in text
    assert 'nodes "lab-worker9" is forbidden' in text
    assert 'in the namespace "kube-system"' in text
    assert 'nodes "lab-worker" is forbidden: User "student" cannot delete resource "nodes"' in text
    marks = course.marks(ASSIGNMENT, "attack-api-forgery")
    assert "available replicas" in course.errors(ASSIGNMENT, "attack-api-forgery", "deploy-test")
    assert marks["slice-test"].auto == 0


def test_limits_stop_bombs_and_floods(course):
    assert "memory limit reached" in outputs_text(course, "attack-memory-bomb")
    assert "stopped after" in outputs_text(course, "attack-fork-bomb")
    size = (course.root / "autograded" / "attack-output-flood" / ASSIGNMENT / "endpointslices.ipynb").stat().st_size
    assert size < 2_000_000, size


def test_a_loop_that_ignores_interrupts_is_killed_and_what_ran_is_graded(course):
    marks = course.marks(ASSIGNMENT, "late-loop")
    for test in ("deploy-test", "slice-test", "terminate-test", "terminate-name-test"):
        assert marks[test].auto == marks[test].max, course.errors(ASSIGNMENT, "late-loop", test)
    assert marks["settle-time-test"].auto == 0
    assert "not run" in outputs_text(course, "late-loop") or "kernel" in \
        course.errors(ASSIGNMENT, "late-loop", "settle-time-test")


def test_objects_not_served_by_the_cluster_fail(course):
    marks = course.marks(ASSIGNMENT, "forged-capture")
    assert marks["deploy-test"].auto == marks["deploy-test"].max
    assert marks["terminate-test"].auto == 0 and marks["terminate-name-test"].auto == 0
    assert "is not what the cluster returned" in course.errors(ASSIGNMENT, "forged-capture", "terminate-test")


def test_a_notebook_that_outlives_its_limit_is_stopped(course):
    text = outputs_text(course, "attack-slow-cells")
    assert f"the notebook ran longer than {NOTEBOOK_TIMEOUT} s" in text
    assert course.auto_total(ASSIGNMENT, "solution")[0] == course.auto_total(ASSIGNMENT, "solution")[1]
