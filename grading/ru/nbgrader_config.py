"""Конфигурация nbgrader русского курса Kubernetes Services (её читает каждая команда nbgrader в этой папке).

Всё общее с английским курсом — ядро проверки на `sim` с seed 0, песочница и лабораторный сервер, лимиты времени,
отзывы — в `labsupport.grading.course_config`. Здесь только язык: ядра проверки получают LABSUPPORT_LANG=ru, и
повторный прогон тестов проверяющим идёт по-русски. Id курса — `k8s-services-ru`, если не задан
LABSUPPORT_COURSE_ID (README.md в этой папке). Настройки, записанные ниже строки `configure(...)`, заменяют её
собственные, как в любой конфигурации nbgrader.
"""
import os

from labsupport.grading.course_config import configure

c = get_config()  # noqa: F821 - provided by nbgrader when it loads this file
configure(c, os.path.dirname(os.path.abspath(__file__)), language="ru", course_id="k8s-services-ru")
