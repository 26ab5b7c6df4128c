"""The JupyterHub configuration of a class: `configure(c, directory)` fills the hub's `c` from the class's state.

* **Login**: PAM against the class's real Unix accounts (their passwords are set with chpasswd when the class is
  made), only the roster may log in, the instructor is the hub's admin. PAM works offline and checks exactly the
  accounts the servers run as, so a login is a login of that Unix user.
* **Servers**: JupyterHub's local process spawner starts each user's server as that Unix user in their home. A
  student gets `make lab`'s student JupyterLab (`python -m labsupport.student_lab`: no instructor tools, the
  assignment list on the class's exchange, `Lab()` on `sim`); the instructor gets JupyterLab with nbgrader's
  formgrader on the course folder.
* **Exchange**: nbgrader's exchange is the class's own folder (LABSUPPORT_EXCHANGE), through the course id of the
  copied course.
* Everything listens on 127.0.0.1. The `class` service's token (in the root-only state file) drives the hub's REST
  API for `labsupport class` and its tests.
"""
from __future__ import annotations

import os
import pathlib
import sys
from typing import Any

from jupyterhub.spawner import LocalProcessSpawner
from traitlets import Unicode

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
                   LABSUPPORT_EXCHANGE=str(self.state.exchange), LABSUPPORT_BACKEND="sim",
                   JUPYTER_CONFIG_PATH=str(config_dir(self.state, self.role())))
        env.pop("LABSUPPORT_GRADING_SANDBOX", None)
        return env

    async def start(self) -> Any:
        """Start the server for this user's role."""
        if self.role() == "student":
            self.cmd = [sys.executable, "-m", "labsupport.student_lab"]
        else:
            self.cmd = [sys.executable, "-m", "jupyterhub.singleuser"]
        return await super().start()


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
    c.Authenticator.allowed_users = set(state.students)
    c.Authenticator.admin_users = {state.instructor}

    c.JupyterHub.spawner_class = ClassSpawner
    c.ClassSpawner.class_dir = state.directory
    c.Spawner.ip = "127.0.0.1"
    c.Spawner.default_url = "/lab"
    c.Spawner.notebook_dir = "~"
    c.Spawner.start_timeout = 180
    c.Spawner.http_timeout = 180

    c.JupyterHub.services = [{"name": "class", "api_token": state.api_token}]
    c.JupyterHub.load_roles = [{"name": "admin", "services": ["class"], "users": [state.instructor]}]


__all__ = ["configure", "ClassSpawner", "config_dir", "class_state"]
