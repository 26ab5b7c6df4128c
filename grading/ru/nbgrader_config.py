"""Конфигурация nbgrader русского курса Kubernetes Services (её читает каждая команда nbgrader в этой папке).

The same configuration as the English course (`labsupport.grading.course_config`), in Russian: grading kernels
get LABSUPPORT_LANG=ru and the grader's run of each test speaks Russian, so failure messages in the feedback are
Russian. The course id defaults to `k8s-services-ru` (LABSUPPORT_COURSE_ID replaces it).
"""
import os

from labsupport.grading.course_config import configure

configure(get_config(), os.path.dirname(os.path.abspath(__file__)), language="ru",  # noqa: F821 - nbgrader's
          course_id="k8s-services-ru")
