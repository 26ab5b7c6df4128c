"""KubeSpawner's settings for a class on one shared cluster: `configure_kubespawner(c, image)` fills JupyterHub's `c`.

Each student's server is a pod in their namespace `lab-ID`, under the ServiceAccount `student` that
`labsupport class cluster` made there (labsupport/hub/cluster.py), running `python -m labsupport.student_lab` with
LABSUPPORT_BACKEND=kube: inside the pod `Lab()` finds the in-cluster account and its namespace by itself. The pod
counts against the namespace's ResourceQuota like the student's own pods, so its requests are small and its limits
are the LimitRange's maximum (`SERVER_SIZING`). Where the hub reaches the cluster, how it is reached from the pods
and how students log in are the hub's own settings, left to the caller.

With `exchange` (the class's exchange service, `labsupport.hub.exchange_service`, where the pods reach it) the
student's nbgrader fetches and submits over HTTP with the server's hub token — no volume is shared — and the token
the hub gives each server also carries the one scope the service asks for (`exchange_server_scopes`); the hub's
`services`, groups and roles are the caller's, as in `labsupport.hub.hub_config`.

>>> from traitlets.config import Config
>>> c = Config()
>>> configure_kubespawner(c, "registry.example/lab:1")
>>> c.KubeSpawner.user_namespace_template, c.KubeSpawner.service_account, c.KubeSpawner.environment
('lab-{username}', 'student', {'LABSUPPORT_BACKEND': 'kube'})
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from labsupport.hub.cluster import ACCOUNT, NAMESPACE_PREFIX

#: The spawner class, as JupyterHub's `spawner_class` names it (pip package jupyterhub-kubespawner).
SPAWNER_CLASS = "kubespawner.KubeSpawner"
#: What the server runs: the student's JupyterLab (labsupport/student_lab.py), the single-user server under a hub.
SERVER_COMMAND = ["python", "-m", "labsupport.student_lab"]


@dataclass(frozen=True)
class ServerSizing:
    """The requests and limits of a student's server pod: what JupyterLab and one notebook kernel with `Lab()`
    use, inside the namespace's LimitRange maximum and leaving the quota's requests to the lessons' pods."""

    cpu_guarantee: float = 0.05
    cpu_limit: float = 1.0
    mem_guarantee: str = "192M"
    mem_limit: str = "512M"


SERVER_SIZING = ServerSizing()


@dataclass(frozen=True)
class ExchangeSettings:
    """The class's exchange service as the student's pod sees it: its URL and the course."""

    url: str
    course_id: str = "k8s-services"


def exchange_server_scopes(service: str = "exchange") -> list[str]:
    """The scopes of each server's token: its own server's (JupyterHub's `server` role) and the exchange service."""
    return ["users:activity!user", "access:servers!server", f"access:services!service={service}"]


def configure_kubespawner(c: Any, image: str, *, pull_policy: str = "IfNotPresent",
                          sizing: ServerSizing = SERVER_SIZING, exchange: ExchangeSettings | None = None) -> None:
    """Set JupyterHub's `c` to spawn each student's server from `image` in their own namespace, as their account
    (and, with `exchange`, their nbgrader on the class's exchange service)."""
    c.JupyterHub.spawner_class = SPAWNER_CLASS
    c.KubeSpawner.enable_user_namespaces = True
    c.KubeSpawner.user_namespace_template = NAMESPACE_PREFIX + "{username}"
    c.KubeSpawner.service_account = ACCOUNT
    c.KubeSpawner.automount_service_account_token = True
    c.KubeSpawner.environment = {"LABSUPPORT_BACKEND": "kube"}
    if exchange is not None:
        c.KubeSpawner.environment.update(LABSUPPORT_EXCHANGE_URL=exchange.url, LABSUPPORT_COURSE_ID=exchange.course_id)
        c.KubeSpawner.server_token_scopes = exchange_server_scopes()
    c.KubeSpawner.image = image
    c.KubeSpawner.image_pull_policy = pull_policy
    c.KubeSpawner.cmd = list(SERVER_COMMAND)
    c.KubeSpawner.default_url = "/lab"
    c.KubeSpawner.cpu_guarantee = sizing.cpu_guarantee
    c.KubeSpawner.cpu_limit = sizing.cpu_limit
    c.KubeSpawner.mem_guarantee = sizing.mem_guarantee
    c.KubeSpawner.mem_limit = sizing.mem_limit


__all__ = ["SPAWNER_CLASS", "SERVER_COMMAND", "ServerSizing", "SERVER_SIZING", "ExchangeSettings",
           "configure_kubespawner", "exchange_server_scopes"]
