"""nbgrader configuration of the Kubernetes Services course (read by every nbgrader command run in this folder).

Everything the English and the Russian (`ru/`) course share is in `labsupport.grading.course_config`: the grading
kernel pinned to `sim` with seed 0, the sandbox and the lab server, time limits, feedback. grading/README.md has
the threat model. Settings written below the `configure(...)` line replace its own, as in any nbgrader config.
"""
import os

from labsupport.grading.course_config import configure

c = get_config()  # noqa: F821 - provided by nbgrader when it loads this file
configure(c, os.path.dirname(os.path.abspath(__file__)), language="en", course_id="k8s-services")
