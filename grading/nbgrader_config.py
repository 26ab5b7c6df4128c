"""nbgrader configuration of the Kubernetes Services course (read by every nbgrader command run in this folder).

Autograding must give the same marks on every run and machine: every notebook's locked setup cell builds
`Lab(backend=os.environ.get("LABSUPPORT_BACKEND", "sim"), seed=0)`, and the kernels nbgrader starts to grade
get LABSUPPORT_BACKEND=sim whatever the environment says (the students' own kernels are not touched).
"""
import os

from jupyter_client.manager import AsyncKernelManager

COURSE_ROOT = os.path.dirname(os.path.abspath(__file__))

# Kernel variables that would make a graded run differ from the reference run.
PINNED_ENV = {"LABSUPPORT_BACKEND": "sim"}
DROPPED_ENV = ("LABSUPPORT_PROXY_MODE", "KUBECONFIG")


class GradingKernelManager(AsyncKernelManager):
    """Starts grading kernels on the embedded `sim` cluster, whatever backend the grader's shell selects."""

    async def start_kernel(self, **kw):
        env = dict(kw.get("env") or os.environ)
        for name in DROPPED_ENV:
            env.pop(name, None)
        env.update(PINNED_ENV)
        kw["env"] = env
        await super().start_kernel(**kw)


c = get_config()  # noqa: F821 - provided by nbgrader when it loads this file

c.CourseDirectory.course_id = os.environ.get("LABSUPPORT_COURSE_ID", "k8s-services")
c.CourseDirectory.root = COURSE_ROOT
c.CourseDirectory.ignore = [".ipynb_checkpoints", "*.pyc", "__pycache__", "feedback"]

# Execution while autograding (and validating).
c.Execute.kernel_manager_class = GradingKernelManager
# Seconds one cell may run. The heaviest reference cell runs in under 3 s on sim; a cell stuck in a loop is
# interrupted after this, the notebook goes on to the next cell, and the batch goes on to the next student.
c.Execute.timeout = int(os.environ.get("LABSUPPORT_CELL_TIMEOUT", "60"))
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

# Students' files must be notebooks with these names; nothing else is copied into the submission.
c.Autograde.create_student = True
c.GenerateAssignment.create_assignment = True

# The exchange that `release_assignment`, `fetch_assignment`, `submit` and `collect` share: nbgrader's default
# /srv/nbgrader/exchange (world-writable, sticky bit) unless LABSUPPORT_EXCHANGE names another folder.
if os.environ.get("LABSUPPORT_EXCHANGE"):
    c.Exchange.root = os.environ["LABSUPPORT_EXCHANGE"]
