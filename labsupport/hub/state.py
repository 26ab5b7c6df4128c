"""What a running class made, in one JSON file: accounts, folders, processes, addresses. `down` and `clean` remove
exactly what it lists.

The file is written before each thing is made and again after, so a run killed half-way still names all it made.
"""
from __future__ import annotations

import json
import os
import pathlib
from dataclasses import asdict, dataclass, field

from labsupport.errors import LabError

#: Where a class keeps its state unless LABSUPPORT_CLASS_DIR or `--state-dir` names another folder.
DEFAULT_DIR = "/srv/labsupport-class"
#: Where each member's private runtime folder lies (their kernels' Unix sockets and connection files): a short path
#: in a folder only root may write, because a Unix socket's path may be 107 bytes at most.
RUNTIME_ROOT = "/run/labsupport-class"
STATE_FILE = "class.json"


class ClassStateError(LabError, RuntimeError):
    """A class state file that cannot be read."""


def state_dir(explicit: str | os.PathLike | None = None) -> pathlib.Path:
    """The class's state folder: `explicit`, else LABSUPPORT_CLASS_DIR, else /srv/labsupport-class."""
    return pathlib.Path(explicit or os.environ.get("LABSUPPORT_CLASS_DIR") or DEFAULT_DIR).absolute()


@dataclass
class ClassState:
    """One class: its folder, roster, hub address, the driver's API token and everything made for it."""

    directory: str
    instructor: str
    students: list[str]
    course_id: str = "k8s-services"
    url: str = ""                                   # the hub's public address, http://127.0.0.1:PORT
    api_token: str = ""                             # the `class` service's token (an admin of the hub)
    password: str = ""                              # every account's password (the hub logs in through PAM)
    accounts: list[str] = field(default_factory=list)   # Unix users made
    folders: list[str] = field(default_factory=list)    # folders made (removed whole by `down`)
    pids: dict[str, int] = field(default_factory=dict)  # the hub's and the proxy's process ids
    proxy: str = ""                                 # the configurable-http-proxy program
    ports: dict[str, int] = field(default_factory=dict)  # hub (public), hub-api (internal), proxy-api

    @property
    def path(self) -> pathlib.Path:
        return pathlib.Path(self.directory) / STATE_FILE

    @property
    def exchange(self) -> pathlib.Path:
        """The exchange service's store: every release, hand-in and feedback of the class (its account's alone)."""
        return pathlib.Path(self.directory) / "exchange"

    @property
    def exchange_url(self) -> str:
        """Where the members' nbgrader reaches the exchange service (its own address on 127.0.0.1)."""
        return f"http://127.0.0.1:{self.ports['exchange']}/services/exchange"

    def home(self, account: str) -> pathlib.Path:
        """The home folder of one account."""
        return pathlib.Path(self.directory) / "home" / account

    def runtime(self, account: str) -> pathlib.Path:
        """The private runtime folder of one account (JUPYTER_RUNTIME_DIR of their servers and kernels)."""
        return pathlib.Path(RUNTIME_ROOT) / account

    @property
    def course(self) -> pathlib.Path:
        """The instructor's course folder (a copy of grading/)."""
        return self.home(self.instructor) / "course"

    def save(self) -> None:
        """Write the state file (readable by root only: it holds the password and the token)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            json.dump(asdict(self), f, indent=1)
        os.replace(tmp, self.path)


def read_state(directory: pathlib.Path) -> ClassState | None:
    """The class whose state is in `directory`, or None when there is none."""
    path = directory / STATE_FILE
    if not path.is_file():
        return None
    try:
        return ClassState(**json.loads(path.read_text()))
    except (ValueError, TypeError) as e:
        raise ClassStateError(f"{path}: not a class state file ({e}); remove it by hand") from e


__all__ = ["ClassState", "ClassStateError", "read_state", "state_dir", "DEFAULT_DIR", "STATE_FILE", "RUNTIME_ROOT"]
