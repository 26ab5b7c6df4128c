"""nbgrader configuration of the Kubernetes Services course (read by every nbgrader command run in this folder).

Autograding must give the same marks on every run and machine: every notebook's locked setup cell builds
`Lab(backend=os.environ.get("LABSUPPORT_BACKEND", "sim"), seed=0)`, and the kernels nbgrader starts to grade
get LABSUPPORT_BACKEND=sim whatever the environment says (the students' own kernels are not touched).
While autograding, the kernel runs in a bubblewrap sandbox, the cluster lives in a lab server outside it, and the
marks come from the grader's own run of each test cell (labsupport.grading; grading/README.md has the threat model).
"""
import os

from nbconvert.preprocessors import ClearMetadataPreprocessor, CSSHTMLHeaderPreprocessor
from nbgrader.preprocessors import (AssignLatePenalties, CheckCellMetadata, ClearHiddenTests, GetGrades,
                                    IgnorePattern, LimitOutput, NbGraderPreprocessor, SaveAutoGrades)

from labsupport.grading.execute import GradedExecute, SandboxedKernelManager

from labsupport.tasks import STUDENT_ENV, grading_env

COURSE_ROOT = os.path.dirname(os.path.abspath(__file__))

# Kernel variables that would make a graded run differ from the reference run.
PINNED_ENV = {"LABSUPPORT_BACKEND": "sim"}
DROPPED_ENV = ("LABSUPPORT_PROXY_MODE", "KUBECONFIG")


class GradingKernelManager(SandboxedKernelManager):
    """Starts grading kernels on the embedded `sim` cluster, whatever backend the grader's shell selects; while
    autograding, in the sandbox, with `Lab()` a client of the grader's lab server."""

    async def start_kernel(self, **kw):
        env = dict(kw.get("env") or os.environ)
        for name in DROPPED_ENV:
            env.pop(name, None)
        env.update(PINNED_ENV)
        # The graded student's id (from the folder nbgrader grades in), so the notebook draws that student's task.
        env.pop(STUDENT_ENV, None)
        env.update(grading_env(kw.get("cwd")))
        kw["env"] = env
        await super().start_kernel(**kw)


class ShortTestErrors(NbGraderPreprocessor):
    """In feedback, a failed test shows its message only: a traceback would quote the (hidden) test's code."""

    def preprocess_cell(self, cell, resources, index):
        meta = cell.metadata.get("nbgrader", {})
        if cell.cell_type == "code" and meta.get("grade") and not meta.get("solution"):
            for output in cell.get("outputs", []):
                if output.get("output_type") == "error":
                    output["traceback"] = [f"\x1b[0;31m{output['ename']}\x1b[0m: {output['evalue']}"]
        return cell, resources


CELL_TIMEOUT = int(os.environ.get("LABSUPPORT_CELL_TIMEOUT", "60"))
# Cells that do more than the rest get a multiple of the limit: starting the cluster, building several
# workloads at once, rolling kube-proxy to another mode, a StatefulSet's ordered start.
SLOW_CELLS = {"setup": 3, "provided-broken": 2, "cart": 2, "nftables": 2, "ipvs": 2, "statefulset": 2,
              "pod-back": 2, "q4-demo": 2}


def cell_timeout(cell) -> int:
    """The time limit of one cell, by its nbgrader id."""
    grade_id = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id", "")
    return CELL_TIMEOUT * SLOW_CELLS.get(grade_id, 1)


c = get_config()  # noqa: F821 - provided by nbgrader when it loads this file

c.CourseDirectory.course_id = os.environ.get("LABSUPPORT_COURSE_ID", "k8s-services")
c.CourseDirectory.root = COURSE_ROOT
c.CourseDirectory.ignore = [".ipynb_checkpoints", "*.pyc", "__pycache__", "feedback"]

# Execution while autograding (and validating).
c.Execute.kernel_manager_class = GradingKernelManager
# Autograding: the kernel in a bubblewrap sandbox, the cluster in a lab server outside it (seed 0, iptables), each
# test cell run again by the grader on a copy of that cluster with the student's answers as plain data; the
# grader's run decides the marks. Where bubblewrap cannot run, autograde refuses and says why;
# LABSUPPORT_GRADING_SANDBOX=off grades without the sandbox (an instructor's own tests only: grading/README.md).
c.Autograde.autograde_preprocessors = [GradedExecute, IgnorePattern, ClearMetadataPreprocessor, LimitOutput,
                                       SaveAutoGrades, AssignLatePenalties, CheckCellMetadata]
c.GradedExecute.seed = 0
c.GradedExecute.proxy_mode = "iptables"
# A whole notebook may run this long (a kernel still running then is killed, and the rest graded on what ran).
c.GradedExecute.notebook_timeout = int(os.environ.get("LABSUPPORT_NOTEBOOK_TIMEOUT", str(CELL_TIMEOUT * 30)))
# Seconds a cell may run. Reference cells run in under 3 s on sim (a busy machine may be ten times slower); a
# cell stuck in a loop is interrupted after its limit, the notebook goes on to the next cell, and the batch goes
# on to the next student.
c.Execute.timeout = CELL_TIMEOUT
c.Execute.timeout_func = cell_timeout
c.Execute.interrupt_on_timeout = True
c.Execute.startup_timeout = 120
# Without stored widget state, exported HTML (feedback, formgrader) shows each widget's static picture.
c.Execute.store_widget_state = False
# Cap what a runaway print loop can put into a graded notebook.
c.LimitOutput.max_lines = 1000
c.LimitOutput.max_traceback = 100

# Locked cells and test cells are restored from the gradebook before grading (nbgrader's default, kept explicit).
c.ClearSolutions.enforce_metadata = True
c.ClearSolutions.code_stub = {"python": "# YOUR CODE HERE\nraise NotImplementedError()"}
c.ClearSolutions.text_stub = "YOUR ANSWER HERE"

# Feedback shows each test's score and message, but not the hidden checks' code, so the course can be reused.
c.GenerateFeedback.preprocessors = [GetGrades, ClearHiddenTests, ShortTestErrors, CSSHTMLHeaderPreprocessor]

# Students' files must be notebooks with these names; nothing else is copied into the submission.
c.Autograde.create_student = True
c.GenerateAssignment.create_assignment = True

# The exchange that `release_assignment`, `fetch_assignment`, `submit` and `collect` share: nbgrader's default
# /srv/nbgrader/exchange (world-writable, sticky bit) unless LABSUPPORT_EXCHANGE names another folder.
if os.environ.get("LABSUPPORT_EXCHANGE"):
    c.Exchange.root = os.environ["LABSUPPORT_EXCHANGE"]
