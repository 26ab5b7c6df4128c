"""The configuration every edition of the nbgrader course shares: `configure(c, root, language=…)` fills nbgrader's
`c` (its `get_config()`) for the course folder `root`.

Autograding must give the same marks on every run and machine: every notebook's locked setup cell builds
`Lab(backend=os.environ.get("LABSUPPORT_BACKEND", "sim"), seed=0)`, and the kernels nbgrader starts to grade get
LABSUPPORT_BACKEND=sim and the course's language whatever the environment says (the students' own kernels are not
touched). While autograding, the kernel runs in a bubblewrap sandbox, the cluster lives in a lab server outside it,
and the marks come from the grader's own run of each test cell (labsupport.grading; grading/README.md has the
threat model). Loading a configuration changes nothing in the loading process: what a kernel needs is put in the
environment the kernel manager builds for that kernel.

>>> from traitlets.config import Config
>>> c = Config()
>>> configure(c, "/srv/course-ru", language="ru", course_id="k8s-services-ru")
>>> c.GradingKernelManager.language, c.GradedExecute.language, c.CourseDirectory.root
('ru', 'ru', '/srv/course-ru')
"""
from __future__ import annotations

import os
from typing import Any

from nbconvert.preprocessors import ClearMetadataPreprocessor, CSSHTMLHeaderPreprocessor
from nbgrader.preprocessors import (AssignLatePenalties, CheckCellMetadata, ClearHiddenTests, ClearOutput,
                                    DeduplicateIds, GetGrades, IgnorePattern, LimitOutput, OverwriteCells,
                                    OverwriteKernelspec, SaveAutoGrades)
from traitlets import List, Unicode

from labsupport.errors import LabError
from labsupport.grading.exchange import HandBackReleaseFeedback, SafeExchangeCollect
from labsupport.grading.exchange_client import URL_ENV as EXCHANGE_URL_ENV, configure_service_exchange
from labsupport.grading.execute import GradedExecute, SandboxedKernelManager
from labsupport.grading.export import SafeCsvExport
from labsupport.grading.feedback import (CleanFeedback, FeedbackPage, PicturesAsImages, ShortTestErrors, page_html,
                                         use_feedback_page)
from labsupport.grading.intake import CheckSubmission, CleanOutputs, CleanSubmission
from labsupport.grading.feedback_style import WrapFailureMessages
from labsupport.i18n import LANGUAGES, VARIABLE
from labsupport.tasks import STUDENT_ENV, grading_env

#: Kernel variables that would make a graded run differ from the reference run.
PINNED_ENV = {"LABSUPPORT_BACKEND": "sim"}
DROPPED_ENV = ("LABSUPPORT_PROXY_MODE", "KUBECONFIG")
#: What a student's solution cell and written answer hold in the student version, per language.
STUBS = {"en": ("# YOUR CODE HERE\nraise NotImplementedError()", "YOUR ANSWER HERE"),
         "ru": ("# ТВОЙ КОД ЗДЕСЬ\nraise NotImplementedError()", "ТВОЙ ОТВЕТ ЗДЕСЬ")}
#: Cells that do more than the rest get a multiple of the limit: starting the cluster, building several
#: workloads at once, rolling kube-proxy to another mode, a StatefulSet's ordered start.
SLOW_CELLS = {"setup": 3, "provided-broken": 2, "cart": 2, "nftables": 2, "ipvs": 2, "statefulset": 2,
              "pod-back": 2, "q4-demo": 2}


class CourseConfigError(LabError, ValueError):
    """A course configuration asks for something there is none of (a language without a catalog or stubs)."""


class GradingKernelManager(SandboxedKernelManager):
    """Starts grading kernels on the embedded `sim` cluster in the course's language, whatever backend and language
    the grader's shell selects; while autograding, in the sandbox, with `Lab()` a client of the grader's lab server."""

    language = Unicode("en", help="LABSUPPORT_LANG of the grading kernels (the course's language).").tag(config=True)

    async def start_kernel(self, **kw: Any) -> None:
        """Start the kernel with the pinned environment and the graded student's id."""
        env = dict(kw.get("env") or os.environ)
        for name in DROPPED_ENV:
            env.pop(name, None)
        env.update(PINNED_ENV)
        env[VARIABLE] = self.language
        # The graded student's id (from the folder nbgrader grades in), so the notebook draws that student's task.
        env.pop(STUDENT_ENV, None)
        env.update(grading_env(kw.get("cwd")))
        kw["env"] = env
        await super().start_kernel(**kw)


def cell_time_limit() -> int:
    """Seconds a cell may run (LABSUPPORT_CELL_TIMEOUT, default 60), read when a configuration is loaded."""
    return int(os.environ.get("LABSUPPORT_CELL_TIMEOUT", "60"))


def cell_timeout(cell: dict) -> int:
    """The time limit of one cell, by its nbgrader id."""
    grade_id = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id", "")
    return cell_time_limit() * SLOW_CELLS.get(grade_id, 1)


def accepting_display_priority(cls: type) -> type:
    """The preprocessor `cls` under its own name, with nbgrader's `display_data_priority` a setting it takes: the HTML
    exporter hands every preprocessor that setting, and one that does not take it makes `generate_feedback` warn
    "Config option `display_data_priority` not recognized" once per preprocessor (nbgrader's GetGrades takes it)."""
    return type(cls.__name__, (cls,), {"__doc__": cls.__doc__, "__module__": cls.__module__,
                                        "display_data_priority": List(cls.display_data_priority.default_value)
                                        .tag(config=True)})


def configure(c: Any, root: str | os.PathLike, *, language: str = "en", course_id: str = "k8s-services") -> None:
    """Fill nbgrader's config `c` for the course folder `root` in `language`; LABSUPPORT_COURSE_ID, when set,
    replaces `course_id` (the default id of this edition)."""
    if language not in LANGUAGES or language not in STUBS:
        raise CourseConfigError(f"no course language {language!r}: configure(c, root, language=…) takes one of "
                                f"{', '.join(l for l in LANGUAGES if l in STUBS)}")
    limit = cell_time_limit()
    c.CourseDirectory.course_id = os.environ.get("LABSUPPORT_COURSE_ID") or course_id
    c.CourseDirectory.root = os.fspath(root)
    c.CourseDirectory.ignore = [".ipynb_checkpoints", "*.pyc", "__pycache__", "feedback"]

    # Execution while autograding (and validating), in the course's language.
    c.Execute.kernel_manager_class = GradingKernelManager
    c.GradingKernelManager.language = language
    # Autograding: the kernel in a bubblewrap sandbox, the cluster in a lab server outside it (seed 0, iptables),
    # each test cell run again by the grader on a copy of that cluster with the student's answers as plain data
    # (its messages in the course's language); the grader's run decides the marks. Where bubblewrap cannot run,
    # autograde refuses and says why; LABSUPPORT_GRADING_SANDBOX=off grades without the sandbox (an instructor's
    # own tests only: grading/README.md).
    # Before anything else, a submitted notebook must be a plain notebook file of this nbgrader's schema (no link
    # to the source, no foreign metadata that would stop the whole batch) of a plain student id: refused for that
    # student alone. Then it is made data (the student's markup text, outputs plain), and so are the outputs of the
    # graded run: the autograded notebook, which the formgrader, feedback and the report read, is clean.
    c.Autograde.sanitize_preprocessors = [CheckSubmission, CleanSubmission, ClearOutput, DeduplicateIds,
                                          OverwriteKernelspec, OverwriteCells, CheckCellMetadata]
    c.Autograde.autograde_preprocessors = [GradedExecute, CleanOutputs, IgnorePattern, ClearMetadataPreprocessor,
                                           LimitOutput, SaveAutoGrades, AssignLatePenalties, CheckCellMetadata]
    c.GradedExecute.seed = 0
    c.GradedExecute.proxy_mode = "iptables"
    c.GradedExecute.language = language
    # A whole notebook may run this long (a kernel still running then is killed, and the rest graded on what ran).
    c.GradedExecute.notebook_timeout = int(os.environ.get("LABSUPPORT_NOTEBOOK_TIMEOUT", str(limit * 30)))
    # Seconds a cell may run. Reference cells run in under 3 s on sim (a busy machine may be ten times slower); a
    # cell stuck in a loop is interrupted after its limit, the notebook goes on to the next cell, and the batch
    # goes on to the next student.
    c.Execute.timeout = limit
    c.Execute.timeout_func = cell_timeout
    c.Execute.interrupt_on_timeout = True
    c.Execute.startup_timeout = 120
    # Without stored widget state, exported HTML (feedback, formgrader) shows each widget's static picture.
    c.Execute.store_widget_state = False
    # Cap what a runaway print loop can put into a graded notebook.
    c.LimitOutput.max_lines = 1000
    c.LimitOutput.max_traceback = 100

    # Locked cells and test cells are restored from the gradebook before grading (nbgrader's default, explicit).
    code_stub, text_stub = STUBS[language]
    c.ClearSolutions.enforce_metadata = True
    c.ClearSolutions.code_stub = {"python": code_stub}
    c.ClearSolutions.text_stub = text_stub

    # Feedback shows each test's score and message, but not the hidden checks' code, so the course can be reused.
    # The notebook is clean already; the page is sanitized again (tables and headings kept, anything else escaped)
    # and carries a Content-Security-Policy without script; the cluster's picture is kept as an image; a failed
    # test's message wraps in its box.
    c.GenerateFeedback.preprocessors = [accepting_display_priority(CleanFeedback), GetGrades] + [
        accepting_display_priority(p) for p in (
        ClearHiddenTests, ShortTestErrors, PicturesAsImages)] + [
        CSSHTMLHeaderPreprocessor, accepting_display_priority(WrapFailureMessages)]
    c.GenerateFeedback.exporter_class = FeedbackPage
    c.HTMLExporter.sanitize_html = True
    c.HTMLExporter.filters = {"clean_html": page_html}
    # grades.csv quotes every field and writes text a spreadsheet would evaluate (=, +, -, @) as text.
    c.ExportApp.plugin_class = SafeCsvExport
    use_feedback_page(c, language)      # the page's own words in the course's language

    # Students' files must be notebooks with these names; nothing else is copied into the submission.
    c.Autograde.create_student = True
    c.GenerateAssignment.create_assignment = True

    # The exchange that `release_assignment`, `fetch_assignment`, `submit` and `collect` share. In a class on a hub
    # (LABSUPPORT_EXCHANGE_URL, set by `labsupport class up`): the class's exchange service, which files each
    # hand-in under the hub's login with its own clock. Otherwise nbgrader's folder, /srv/nbgrader/exchange
    # (world-writable, sticky bit) unless LABSUPPORT_EXCHANGE names another, where `nbgrader collect` reads each
    # hand-in as data (labsupport.grading.exchange): its owner, its time and its bytes are the server's, a bad
    # hand-in is refused alone, the copy in submitted/ is clean. `nbgrader release_feedback` leaves out, by name,
    # submissions that did not come through the exchange.
    if os.environ.get(EXCHANGE_URL_ENV):
        configure_service_exchange(c)
        return
    c.ExchangeFactory.collect = SafeExchangeCollect
    c.ExchangeFactory.release_feedback = HandBackReleaseFeedback
    if os.environ.get("LABSUPPORT_EXCHANGE"):
        c.Exchange.root = os.environ["LABSUPPORT_EXCHANGE"]


__all__ = ["configure", "GradingKernelManager", "CourseConfigError", "cell_timeout",
           "cell_time_limit", "accepting_display_priority", "PINNED_ENV", "DROPPED_ENV", "STUBS", "SLOW_CELLS"]
