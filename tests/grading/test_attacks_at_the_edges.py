"""Attacks on what grading does *around* the sandbox, through the real pipeline.

The sandbox holds; these go for its edges: what the grader runs for the student outside it (kubectl with the
student's arguments), what it reads from the submission (links to the instructor's source), what reaches the
student's kernel (hidden tests), what is unbounded (the lab server's clock and memory, a grader call, the scratch
folders), what one submission can do to another (planted folders, a notebook that stops the batch) and who the
sandbox is (root's files, the host's disk, the grader's imports).

Every submission starts from the blank release (an attack in its first solution cell unless it says otherwise),
beside an honest classmate, the solution and the blank. The batch is graded by `labsupport grade`, and the attacks
that reach past the kernel (and the links and broken notebooks) also by serial `nbgrader autograde`; after each:
every attacker is graded no higher than the blank, the honest marks are exact, nothing was read or written outside
the scratch area, nothing is left in TMPDIR.
"""
from __future__ import annotations

import json
import os
import pathlib
import re
import shutil
import subprocess

import pytest

from labsupport.grading.sandbox import problems
from labsupport.testing import require
from tests.grading.course import BIN, Course, cell_by_id, notebook_name

pytestmark = [pytest.mark.slow, pytest.mark.timeout(2400)]

ONE = "01-endpointslices"
REVIEW = "06-review"
FIRST = "deploy"

# The instructor's source notebook, as a graded kernel would have to find it (the course folder is its parent's
# parent's parent while nbgrader grades, and the lab server used to run kubectl there).
SOURCE = "source/01-endpointslices/endpointslices.ipynb"

KUBECTL = {
    # kubectl reads files for `-f`: the instructor's notebook, a classmate's submission, root's secrets.
    "kubectl-read-files": f'''
import glob
paths = ["{SOURCE}", "../../../{SOURCE}", "/etc/shadow", "gradebook.db", "../../../gradebook.db"]
paths += glob.glob("/proc/*/cwd/{SOURCE}")
for path in paths:
    result = lab.kubectl(["get", "-f", path], show=False)
    text = result.stdout + result.stderr
    if "BEGIN SOLUTION" in text or "root:" in text or "SQLite" in text:
        print("FOUND", path)
''',
    # A global flag before the verb, impersonation, writes the student role refuses, through kubectl.
    "kubectl-flags": '''
slice_yaml = """apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: web-forged, labels: {kubernetes.io/service-name: web}}
addressType: IPv4
ports: [{name: http, port: 80, protocol: TCP}]
endpoints: [{addresses: [10.244.1.7], conditions: {ready: true}}]
"""
for argv in (["-n", "default", "apply", "-f", "-"], ["--namespace=kube-system", "create", "configmap", "x"],
             ["--as=kubernetes-admin", "delete", "node", "lab-worker"],
             ["--as-group=system:masters", "delete", "node", "lab-worker"],
             ["-v=0", "delete", "node", "lab-worker"], ["--kubeconfig=/dev/null", "get", "nodes"]):
    result = lab.kubectl(argv, input=slice_yaml, show=False)
    print("EXIT", result.returncode, (result.stdout + result.stderr).strip().splitlines()[-1:])
''',
    # kubectl writes its cache where it is told: once the course folder, now the kernel's own.
    "kubectl-plant": '''
for target in ("gradebook.db-journal", "../../../gradebook.db-journal", "../../../autograded/classmate/01-endpointslices",
               "../../classmate/01-endpointslices"):
    lab.kubectl(["--cache-dir", target, "get", "pods"], show=False)
''',
    # kubectl told to wait for ever: bounded by the cell's limit.
    "kubectl-wait": '''
lab.kubectl(["wait", "--for=condition=Ready", "pod/never", "--timeout=24h"], show=False)
''',
}

LIMITS = {
    # The lab server's clock, spun for ever under its lock.
    "clock": '''
for seconds in (float("nan"), float("inf"), 1e12, -1):
    try:
        lab.advance(seconds)
        print("MOVED", seconds)
    except Exception as e:
        print("refused", seconds, type(e).__name__)
''',
    # The lab server's memory, through objects.
    "big-objects": '''
for i in range(64):
    try:
        lab.apply({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"big-{i}"},
                   "data": {"blob": "x" * (32 * 2**20)}})
        print("STORED", i)
    except Exception as e:
        print("refused", i, type(e).__name__)
''',
}

IDENTITY = {
    # root's files, and the host's disk through the working copy.
    "identity": '''
try:
    print("SHADOW", open("/etc/shadow").read()[:20])
except OSError as e:
    print("shadow refused", e.errno)
written = 0
try:
    for n in range(16):
        with open(f"fill-{n}", "wb") as f:
            for _ in range(32):
                f.write(b"x" * 2**20)
                written += 1
except OSError as e:
    print("disk stopped at", written, "MiB", e.errno)
''',
    # Make the grader import a module by naming it as an answer.
    "grader-imports": '''
import json, labsupport.grading.answers as answers
answers.dump = lambda names, ns: json.dumps({name: {"__module__": "this"} for name in names})
''',
}

# Read every cell the kernel is asked to run: a test's hidden part must never be among them.
HOOK = '''
seen = []
get_ipython().events.register("pre_run_cell", lambda info: seen.append(info.raw_cell))
'''
REPORT = '''
marker = "BEGIN " + "HIDDEN"
test_call = "checks." + "choice("
print("CELLS SEEN", len(seen), "TEST CELLS SEEN", sum(marker in cell or test_call in cell for cell in seen))
from IPython.display import HTML, display
display(HTML('<script>document.title="owned"</script><img src=x onerror="alert(1)"><b>bold</b>'))
'''


def links(course: Course) -> None:
    """Submissions that are links to the instructor's solution: the notebook, the folder, the student folder."""
    source = course.root / "source" / ONE
    folder = course.root / "submitted" / "link-notebook" / ONE
    folder.mkdir(parents=True)
    (folder / f"{notebook_name(ONE)}.ipynb").symlink_to(source / f"{notebook_name(ONE)}.ipynb")
    (course.root / "submitted" / "link-folder").mkdir()
    (course.root / "submitted" / "link-folder" / ONE).symlink_to(source)
    (course.root / "submitted" / "link-student").symlink_to(course.root / "submitted" / "solution")


def breakers(course: Course) -> None:
    """Notebooks that used to stop a whole serial batch: a repeated test cell, another nbgrader schema."""
    twice = course.release(ONE)
    test = next(c for c in twice["cells"] if c.get("metadata", {}).get("nbgrader", {}).get("grade_id") == "deploy-test")
    twice["cells"].append(json.loads(json.dumps(test)))
    course.submit(ONE, "twice", twice)
    newer = course.release(ONE)
    for cell in newer["cells"]:
        if cell.get("metadata", {}).get("nbgrader"):
            cell["metadata"]["nbgrader"]["schema_version"] = 99
    course.submit(ONE, "newer-schema", newer)


#: The attacks the serial `nbgrader autograde` batch also grades (every attack goes through `labsupport grade`):
#: those that reach past the kernel (the course folder, the grader's imports), where the two differ.
SERIAL = ("kubectl-flags", "kubectl-plant", "grader-imports")


def build(root: pathlib.Path, attacks: dict[str, str]) -> Course:
    """The course with the given attacks and every other submission, not yet graded."""
    course = Course(root, cell_timeout=20)
    course.env["LABSUPPORT_NOTEBOOK_TIMEOUT"] = "120"
    for assignment in (ONE, REVIEW):
        course.nbgrader("generate_assignment", assignment, "--force")
    course.submit(ONE, "solution", course.solved(ONE))
    course.submit(ONE, "classmate", course.solved(ONE))
    course.submit(ONE, "blank", course.release(ONE))
    for name, code in attacks.items():
        nb = course.release(ONE)
        cell_by_id(nb, FIRST)["source"] = code
        course.submit(ONE, name, nb)
    links(course)
    breakers(course)
    hooked = course.release(REVIEW)
    cell_by_id(hooked, "q1-numbers")["source"] = HOOK
    cell_by_id(hooked, "q4-answers")["source"] = REPORT
    cell_by_id(hooked, "q1-text")["source"] = "<script>alert('q1')</script> my answer"
    course.submit(REVIEW, "hook", hooked)
    course.submit(REVIEW, "blank", course.release(REVIEW))
    return course


ATTACKS = {**KUBECTL, **LIMITS, **IDENTITY}
ATTACKERS = {"labsupport": [*ATTACKS, "twice", "newer-schema"], "nbgrader": [*SERIAL, "twice", "newer-schema"]}
LINKED = ["link-notebook", "link-folder", "link-student"]


def leftovers(tmp: pathlib.Path) -> list[str]:
    """What grading left in a TMPDIR."""
    return sorted(p.name for p in tmp.iterdir())


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """The batch graded by serial `nbgrader autograde` and by `labsupport grade`: {"nbgrader": …, "labsupport": …}."""
    require(problems(), "sandboxed grading")
    out = {}
    for how in ("nbgrader", "labsupport"):
        root = tmp_path_factory.mktemp(f"edges-{how}")
        course = build(root / "course", ATTACKS if how == "labsupport" else {a: ATTACKS[a] for a in SERIAL})
        tmp = root / "tmp"
        tmp.mkdir()
        course.env["TMPDIR"] = str(tmp)
        for assignment in (ONE, REVIEW):
            if how == "nbgrader":
                run = subprocess.run([str(BIN / "nbgrader"), "autograde", assignment], cwd=course.root,
                                     env=course.env, capture_output=True, text=True, timeout=1800)
            else:
                run = subprocess.run([str(BIN / "labsupport"), "grade", assignment, "--workers", "2"],
                                     cwd=course.root, env=course.env, capture_output=True, text=True, timeout=1800)
            course.runs = getattr(course, "runs", {})
            course.runs[assignment] = run
        course.tmp = tmp
        out[how] = course
    return out


def outputs_text(course: Course, assignment: str, student: str) -> str:
    """Every output text of a graded notebook."""
    nb = course.autograded(assignment, student)
    parts = []
    for cell in nb["cells"]:
        for out in cell.get("outputs", []):
            parts.append(str(out.get("text", "")) + str(out.get("data", "")) + str(out.get("evalue", "")))
    return "\n".join(parts)


HOW = ["nbgrader", "labsupport"]


@pytest.mark.parametrize("how", HOW)
def test_honest_marks_are_exact_and_the_batch_completed(graded, how):
    course = graded[how]
    for student in ("solution", "classmate"):
        score, maximum = course.auto_total(ONE, student)
        said = [line for line in (course.runs[ONE].stdout + course.runs[ONE].stderr).splitlines() if student in line]
        assert score == maximum > 0, (student, said, course.errors(ONE, student, "deploy-test")[-2000:])
    assert course.auto_total(ONE, "blank")[0] == 0
    assert course.auto_total(REVIEW, "blank")[0] == 0


@pytest.mark.parametrize("how, attacker", [(how, a) for how in HOW for a in ATTACKERS[how]])
def test_no_attack_beats_the_blank(graded, how, attacker):
    course = graded[how]
    marks = course.marks(ONE, attacker)
    assert sum(m.auto or 0 for m in marks.values() if m.kind == "test") <= course.auto_total(ONE, "blank")[0]


def test_kubectl_reads_no_file_and_waits_no_longer_than_a_cell(graded):
    course = graded["labsupport"]
    text = outputs_text(course, ONE, "kubectl-read-files")
    assert "FOUND" not in text and "BEGIN SOLUTION" not in text
    assert (course.root / "autograded" / "kubectl-wait" / ONE).exists()


@pytest.mark.parametrize("how", HOW)
def test_kubectl_runs_with_the_students_rights_only(graded, how):
    course = graded[how]
    text = outputs_text(course, ONE, "kubectl-flags")
    assert text.count("EXIT 0") == 0, text
    assert 'is forbidden: User "student" cannot create resource "endpointslices"' in text
    assert 'cannot impersonate resource "users"' in text
    assert 'nodes "lab-worker" is forbidden: User "student" cannot delete resource "nodes"' in text
    assert not os.path.lexists(course.root / "gradebook.db-journal")
    for folder in (course.root / "autograded" / "classmate" / ONE, course.root / "submitted" / "classmate" / ONE):
        assert not {"discovery", "http"} & set(os.listdir(folder)), os.listdir(folder)
    assert course.auto_total(ONE, "classmate")[0] == course.auto_total(ONE, "classmate")[1]


@pytest.mark.parametrize("how", HOW)
def test_links_to_the_source_are_refused(graded, how):
    course = graded[how]
    for student in LINKED:
        folder = course.root / "autograded" / student / ONE
        if folder.exists():
            assert "BEGIN SOLUTION" not in json.dumps(course.autograded(ONE, student))
            assert course.auto_total(ONE, student)[0] == 0
    assert "symbolic link" in course.runs[ONE].stdout + course.runs[ONE].stderr


@pytest.mark.parametrize("how", HOW)
def test_hidden_tests_never_reach_the_kernel(graded, how):
    course = graded[how]
    text = outputs_text(course, REVIEW, "hook")
    assert "TEST CELLS SEEN 0" in text and "CELLS SEEN 0 " not in text, text[-2000:]
    assert course.auto_total(REVIEW, "hook")[0] == 0


def test_feedback_hides_hidden_tests_and_escapes_the_students_markup(graded):
    course = graded["nbgrader"]
    course.nbgrader("generate_feedback", REVIEW, "--force")
    source = course.source(REVIEW)
    hidden = []
    for cell in source["cells"]:
        text = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
        if "### BEGIN HIDDEN TESTS" in text:
            body = text.split("### BEGIN HIDDEN TESTS", 1)[1].split("### END HIDDEN TESTS", 1)[0]
            hidden += [line.strip() for line in body.splitlines() if len(line.strip()) > 12]
    assert hidden
    for student in ("hook", "blank"):
        html = course.feedback(REVIEW, student)
        import html as escaping
        leaked = [line for line in hidden if line in html or escaping.escape(line) in html]
        assert not leaked, leaked[:3]
    html = course.feedback(REVIEW, "hook")
    # the student's tags arrive as text, never as live markup
    assert "<script>alert" not in html and "<script>document" not in html
    assert not re.search(r"<[a-z]+[^>]*onerror=", html), re.findall(r"<[^>]*onerror=[^>]*>", html)
    assert "my answer" in html


def test_the_lab_server_is_bounded(graded):
    course = graded["labsupport"]
    clock = outputs_text(course, ONE, "clock")
    assert not re.search(r"MOVED [-\w.]+", clock), clock
    assert len(re.findall(r"refused (?:nan|inf|1000000000000\.0|-1) ", clock)) == 4, clock
    big = outputs_text(course, ONE, "big-objects")
    # 64 objects of 32 MiB would pass the server's memory limit if it kept them; the cell has its time limit (20 s),
    # so on a loaded machine it may be stopped before the last: every request it made must be refused, at least 16
    # of them (512 MiB), and the server must still answer the tests that follow
    refused = [int(n) for n in re.findall(r"refused (\d+) APIError", big)]
    assert not re.search(r"STORED \d+", big) and len(refused) >= 16 and refused == list(range(len(refused))), \
        big[:3000]
    assert 'there is no Deployment "web"' in big, big[-3000:]


def test_the_sandbox_is_nobody_on_a_capped_disk(graded):
    course = graded["labsupport"]
    text = outputs_text(course, ONE, "identity")
    assert "SHADOW" not in text and "shadow refused 13" in text, text
    stopped = re.search(r"disk stopped at (\d+) MiB (\d+)", text)
    assert stopped and int(stopped.group(1)) <= 256 and stopped.group(2) == "28", text[:3000]


def test_the_grader_imports_no_module_a_kernel_names(graded):
    course = graded["nbgrader"]           # the grader's own output is nbgrader's here
    runs = course.runs[ONE].stdout + course.runs[ONE].stderr
    assert "Beautiful is better than ugly" not in runs
    assert "the kernel sent an answer the grader cannot read" in outputs_text(course, ONE, "grader-imports")


@pytest.mark.parametrize("how", HOW)
def test_one_notebook_does_not_stop_the_batch(graded, how):
    course = graded[how]
    for student in ("twice", "newer-schema"):
        assert not (course.root / "autograded" / student / ONE / f"{notebook_name(ONE)}.ipynb").exists() or \
            course.auto_total(ONE, student)[0] == 0
    # graded after them in the batch's order, still graded
    for student in ("solution",):
        assert (course.root / "autograded" / student / ONE).exists(), student


@pytest.mark.parametrize("how", HOW)
def test_nothing_is_left_in_tmpdir(graded, how):
    assert leftovers(graded[how].tmp) == []


def test_a_planted_autograded_folder_does_not_skip_a_classmate(tmp_path):
    require(problems(), "sandboxed grading")
    course = Course(tmp_path / "course", cell_timeout=20)
    course.nbgrader("generate_assignment", ONE, "--force")
    course.submit(ONE, "classmate", course.solved(ONE))
    planted = course.root / "autograded" / "classmate" / ONE / f"{notebook_name(ONE)}.ipynb"
    planted.mkdir(parents=True)
    run = subprocess.run([str(BIN / "labsupport"), "grade", ONE], cwd=course.root, env=course.env,
                         capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stderr[-2000:]
    assert course.auto_total(ONE, "classmate")[0] == course.auto_total(ONE, "classmate")[1] > 0
    journal = course.root / "gradebook.db-journal"
    journal.mkdir()
    run = subprocess.run([str(BIN / "labsupport"), "grade", ONE, "--force"], cwd=course.root, env=course.env,
                         capture_output=True, text=True, timeout=900)
    assert run.returncode != 0 and "gradebook.db-journal is not a plain file" in run.stderr
    shutil.rmtree(journal)
    assert course.auto_total(ONE, "classmate")[0] > 0


def test_collect_refuses_links(tmp_path):
    course = Course(tmp_path / "course")
    course.nbgrader("generate_assignment", ONE, "--force")
    course.nbgrader("release_assignment", ONE, "--force")
    inbound = course.root / "exchange" / "k8s-services" / "inbound"
    inbound.mkdir(parents=True, exist_ok=True)
    stamp = "2026-12-05 10:00:00.000000 UTC"
    honest = inbound / f"honest+{ONE}+{stamp}"
    honest.mkdir()
    (honest / f"{notebook_name(ONE)}.ipynb").write_text(json.dumps(course.solved(ONE)))
    linked = inbound / f"mallory+{ONE}+{stamp}"
    linked.mkdir()
    (linked / f"{notebook_name(ONE)}.ipynb").symlink_to(course.root / "source" / ONE /
                                                        f"{notebook_name(ONE)}.ipynb")
    run = subprocess.run([str(BIN / "nbgrader"), "collect", ONE, "--ExchangeCollect.check_owner=False"],
                         cwd=course.root, env=course.env, capture_output=True, text=True, timeout=300)
    assert (course.root / "submitted" / "honest" / ONE / f"{notebook_name(ONE)}.ipynb").is_file(), run.stderr
    assert not (course.root / "submitted" / "mallory").exists(), run.stderr
    assert "Not collected" in run.stderr and "is a symbolic link" in run.stderr, run.stderr
