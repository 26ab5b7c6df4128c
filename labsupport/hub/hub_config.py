"""The JupyterHub configuration of a class: `configure(c, directory)` fills the hub's `c` from the class's state.

* **Login**: PAM against the class's real Unix accounts (their passwords are set with chpasswd when the class is
  made), only the roster may log in. PAM works offline and checks exactly the accounts the servers run as, so a
  login is a login of that Unix user.
* **Roles**: the instructor is in the hub's group `instructors`, with the role `instructor`: the hub's admin page,
  the users and their servers (start, stop), but never another user's server itself or a token for someone else;
  the students are nbgrader's group of the course (`nbgrader-COURSE`). Both may use the exchange service, and the
  token the hub gives each server (JUPYTERHUB_API_TOKEN) carries that one scope besides its own server's.
* **Servers**: JupyterHub's local process spawner starts each user's server as that Unix user in their home. A
  student gets `make lab`'s student JupyterLab (`python -m labsupport.student_lab`: no instructor tools, the
  assignment list on the class's exchange, `Lab()` on `sim`); the instructor gets JupyterLab with nbgrader's
  formgrader on the course folder. Every kernel talks over Unix sockets in its user's private runtime folder
  (`/run/labsupport-class/ACCOUNT`, 0700), not TCP on 127.0.0.1 (where any local account could subscribe to its
  output); a student's server sends a Content-Security-Policy that runs no inline script.
* **Exchange**: the class's exchange service (`labsupport.hub.exchange_service`), managed by the hub and run as its
  own account (`labclass-exchange`), which alone may enter the store; nbgrader reaches it over HTTP with the hub's
  token of whoever runs it.
* Everything listens on 127.0.0.1. The `class` service's token (in the root-only state file) drives the hub's REST
  API for `labsupport class` and its tests.
"""
from __future__ import annotations

import base64
import hashlib
import os
import pathlib
import re
import sys
from typing import Any

from jupyterhub.spawner import LocalProcessSpawner
from traitlets import Unicode

from labsupport.hub.exchange_service import INSTRUCTORS_GROUP, SERVICE_NAME, students_group
from labsupport.hub.roster import EXCHANGE_ACCOUNT
from labsupport.hub.state import ClassState, ClassStateError, read_state

#: The programs a server finds first on its PATH: this Python's (nbgrader, jupyter, labsupport).
BIN = str(pathlib.Path(sys.executable).parent)


def config_dir(state: ClassState, role: str) -> pathlib.Path:
    """The extra Jupyter configuration folder of `role` (student or instructor), on the server's JUPYTER_CONFIG_PATH."""
    return pathlib.Path(state.directory) / "config" / role


class ClassSpawner(LocalProcessSpawner):
    """Starts the instructor's JupyterLab or a student's (`make lab`'s), as that Unix user, on 127.0.0.1."""

    class_dir = Unicode("", help="The class's state folder (`labsupport class up --state-dir`).").tag(config=True)

    @property
    def state(self) -> ClassState:
        """The class this server belongs to, read from its state file."""
        return class_state(self.class_dir)

    def role(self) -> str:
        """`instructor` or `student`."""
        return "instructor" if self.user.name == self.state.instructor else "student"

    def get_env(self) -> dict[str, str]:
        """The hub's environment for the server, plus the class's exchange, language-neutral backend and config."""
        env = super().get_env()
        env.update(PATH=os.pathsep.join([BIN, "/usr/local/bin", "/usr/bin", "/bin"]),
                   LABSUPPORT_EXCHANGE_URL=self.state.exchange_url, LABSUPPORT_BACKEND="sim",
                   JUPYTER_CONFIG_PATH=str(config_dir(self.state, self.role())),
                   JUPYTER_RUNTIME_DIR=str(self.state.runtime(self.user.name)))
        for name in ("LABSUPPORT_GRADING_SANDBOX", "LABSUPPORT_EXCHANGE"):
            env.pop(name, None)
        return env

    async def start(self) -> Any:
        """Start the server for this user's role."""
        if self.role() == "student":
            self.cmd = [sys.executable, "-m", "labsupport.student_lab"]
        else:
            self.cmd = [sys.executable, "-m", "jupyterhub.singleuser"]
        return await super().start()


def jupyterlab_inline_hashes() -> list[str]:
    """CSP sources for the inline scripts of JupyterLab's own page (the snippet that takes a token out of the URL),
    as this JupyterLab ships them: each allowed by its SHA-256, so no other inline script runs."""
    try:
        from jupyterlab.commands import get_app_dir
        page = (pathlib.Path(get_app_dir()) / "static" / "index.html").read_text()
    except (ImportError, OSError):
        return []
    return [f"'sha256-{base64.b64encode(hashlib.sha256(body.encode()).digest()).decode()}'"
            for body in re.findall(r"<script>(.*?)</script>", page, re.S) if "{{" not in body and "{%" not in body]


def student_csp() -> str:
    """What a student's server runs: its own scripts only (no inline script but JupyterLab's own, by hash; no
    event-handler attribute; nothing from elsewhere), so markup a page shows cannot act in the student's name; styles
    inline, as JupyterLab sets them."""
    return "; ".join([
        "default-src 'self'", " ".join(["script-src 'self' 'unsafe-eval'", *jupyterlab_inline_hashes()]),
        "style-src 'self' 'unsafe-inline'", "img-src 'self' data: blob:", "font-src 'self' data:",
        "connect-src 'self'", "worker-src 'self' blob:", "frame-src 'self' blob: data:", "object-src 'none'",
        "base-uri 'self'", "form-action 'self'", "frame-ancestors 'self'",
    ])


#: The hub's role of the instructor: see the class and start or stop its servers, not enter them.
INSTRUCTOR_SCOPES = ["admin-ui", "list:users", "read:users", "servers", "list:groups", "read:groups",
                     f"access:services!service={SERVICE_NAME}"]
#: The token each server gets (JUPYTERHUB_API_TOKEN): its own server, and the exchange.
SERVER_TOKEN_SCOPES = ["users:activity!user", "access:servers!server", f"access:services!service={SERVICE_NAME}"]
#: What the exchange service may ask the hub: a user's name, admin flag and groups.
EXCHANGE_SCOPES = ["read:users:name", "read:users:groups"]


def server_config(role: str) -> dict[str, Any]:
    """The Jupyter server settings a role's server adds to its own: kernels over Unix sockets; for a student, the
    Content-Security-Policy."""
    config: dict[str, Any] = {"KernelManager": {"transport": "ipc"}}
    if role == "student":
        config["ServerApp"] = {"tornado_settings": {"headers": {"Content-Security-Policy": student_csp()}}}
    return config


def class_state(directory: str | os.PathLike) -> ClassState:
    """The class whose state is in `directory`; ClassStateError when there is none."""
    state = read_state(pathlib.Path(directory))
    if state is None:
        raise ClassStateError(f"no class state file in {directory}: make the class with `labsupport class up`")
    return state


def configure(c: Any, directory: str | os.PathLike) -> None:
    """Fill JupyterHub's config `c` for the class whose state is in `directory`."""
    state = class_state(directory)
    hub_dir = pathlib.Path(state.directory) / "hub"
    c.JupyterHub.bind_url = state.url
    c.JupyterHub.hub_ip = "127.0.0.1"
    c.JupyterHub.hub_port = state.ports["hub-api"]
    c.ConfigurableHTTPProxy.api_url = f"http://127.0.0.1:{state.ports['proxy-api']}"
    c.ConfigurableHTTPProxy.command = [state.proxy]
    c.ConfigurableHTTPProxy.pid_file = str(hub_dir / "proxy.pid")
    c.ConfigurableHTTPProxy.should_start = True
    c.JupyterHub.db_url = f"sqlite:///{hub_dir / 'jupyterhub.sqlite'}"
    c.JupyterHub.cookie_secret_file = str(hub_dir / "cookie_secret")
    c.JupyterHub.pid_file = str(hub_dir / "hub.pid")
    c.JupyterHub.cleanup_servers = True
    c.JupyterHub.cleanup_proxy = True

    c.JupyterHub.authenticator_class = "pam"
    c.PAMAuthenticator.open_sessions = False
    c.Authenticator.allowed_users = {state.instructor, *state.students}
    c.JupyterHub.load_groups = {INSTRUCTORS_GROUP: {"users": [state.instructor]},
                                students_group(state.course_id): {"users": list(state.students)}}

    c.JupyterHub.spawner_class = ClassSpawner
    c.ClassSpawner.class_dir = state.directory
    c.Spawner.ip = "127.0.0.1"
    c.Spawner.default_url = "/lab"
    c.Spawner.notebook_dir = "~"
    c.Spawner.start_timeout = 180
    c.Spawner.http_timeout = 180

    c.Spawner.server_token_scopes = list(SERVER_TOKEN_SCOPES)

    c.JupyterHub.services = [
        {"name": "class", "api_token": state.api_token},
        {"name": SERVICE_NAME, "url": f"http://127.0.0.1:{state.ports['exchange']}", "user": EXCHANGE_ACCOUNT,
         "cwd": str(state.exchange), "display": False, "oauth_no_confirm": True,
         "command": [sys.executable, "-m", "labsupport.hub.exchange_service", "--root", str(state.exchange),
                     "--course", state.course_id],
         "environment": {"PATH": os.pathsep.join([BIN, "/usr/bin", "/bin"]), "HOME": str(state.exchange)}},
    ]
    c.JupyterHub.load_roles = [
        {"name": "admin", "services": ["class"]},
        {"name": "instructor", "scopes": list(INSTRUCTOR_SCOPES), "groups": [INSTRUCTORS_GROUP]},
        {"name": "exchange-user", "scopes": [f"access:services!service={SERVICE_NAME}"],
         "groups": [students_group(state.course_id)]},
        {"name": "exchange-service", "scopes": list(EXCHANGE_SCOPES), "services": [SERVICE_NAME]},
    ]


__all__ = ["configure", "ClassSpawner", "config_dir", "class_state", "server_config", "student_csp",
           "INSTRUCTOR_SCOPES", "SERVER_TOKEN_SCOPES", "EXCHANGE_SCOPES"]
