"""Who is in the class: an instructor and students, each a real Unix account named with the class prefix.

Every account the project makes is named `labclass-…`, so `labsupport clean` finds them even when the state file
of the run that made them is gone. A roster is plain data; `create_account` and `delete_account` turn one name into
a Unix user and back. (A cluster-side roster, a namespace and a Role per student, would read the same `Roster`.)

>>> r = numbered_roster(2)
>>> r.instructor, r.students
('labclass-teacher', ['labclass-s01', 'labclass-s02'])
"""
from __future__ import annotations

import pathlib
import pwd
import re
import subprocess
from dataclasses import dataclass, field

from labsupport.errors import LabError

#: The prefix of every Unix account a class makes.
PREFIX = "labclass-"
#: The comment (GECOS) of every class account: `clean` removes the home only of an account that has it.
COMMENT = "labsupport class account"
#: A Unix user name useradd accepts on every distribution (lower case, no dot), with the prefix.
NAME = re.compile(r"^labclass-[a-z0-9][a-z0-9_-]{0,22}$")


class RosterError(LabError, ValueError):
    """A roster that cannot become Unix accounts (a bad name, a name taken by someone else)."""


@dataclass(frozen=True)
class Roster:
    """The class's accounts: one instructor, the students (their Unix names are also their nbgrader ids)."""

    instructor: str
    students: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        for name in [self.instructor, *self.students]:
            if not NAME.match(name):
                raise RosterError(f"roster: {name!r} is not a class account name (it must match {NAME.pattern})")
        if len(set(self.students)) != len(self.students) or self.instructor in self.students:
            raise RosterError("roster: every account name must appear once")

    @property
    def everyone(self) -> list[str]:
        """The instructor, then the students."""
        return [self.instructor, *self.students]


def numbered_roster(students: int) -> Roster:
    """`labclass-teacher` and `labclass-s01` … for `--students N`."""
    if not 1 <= students <= 999:
        raise RosterError(f"--students {students}: a class has 1 to 999 students")
    return Roster(PREFIX + "teacher", [f"{PREFIX}s{i:02d}" for i in range(1, students + 1)])


def account_exists(name: str) -> bool:
    """Whether a Unix user of this name exists."""
    try:
        pwd.getpwnam(name)
        return True
    except KeyError:
        return False


def class_accounts() -> list[str]:
    """Every Unix account with the class prefix (what a run made, whatever happened to it)."""
    return sorted(p.pw_name for p in pwd.getpwall() if p.pw_name.startswith(PREFIX))


def create_account(name: str, home: pathlib.Path, password: str) -> None:
    """A Unix user `name` with its own group, a private home at `home` and `password` (for the hub's PAM login)."""
    if account_exists(name):
        raise RosterError(f"the Unix user {name} exists already: `labsupport class down` (or `labsupport clean`) "
                          "removes what an earlier class left")
    _run(["useradd", "--create-home", "--home-dir", str(home), "--user-group", "--shell", "/bin/bash",
          "--comment", COMMENT, name])
    home.chmod(0o700)
    _run(["chpasswd"], stdin=f"{name}:{password}\n")


def delete_account(name: str) -> None:
    """Remove the Unix user `name` and its group (its home is removed by whoever made it); missing is fine."""
    if not name.startswith(PREFIX):
        raise RosterError(f"refusing to delete {name!r}: not a class account")
    if account_exists(name):
        _run(["userdel", name])
    if subprocess.run(["getent", "group", name], capture_output=True).returncode == 0:
        subprocess.run(["groupdel", name], capture_output=True)


def _run(argv: list[str], stdin: str | None = None) -> None:
    proc = subprocess.run(argv, input=stdin, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RosterError(f"{argv[0]} failed ({proc.returncode}): {proc.stderr.strip()}")


__all__ = ["PREFIX", "COMMENT", "Roster", "RosterError", "numbered_roster", "class_accounts", "create_account",
           "delete_account", "account_exists"]
