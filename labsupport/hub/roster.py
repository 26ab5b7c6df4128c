"""Who is in the class: an instructor and students, each a real Unix account named with the class prefix.

Every account the project makes is named `labclass-…`, so `labsupport clean` finds them even when the state file
of the run that made them is gone. A roster is plain data; `create_account` and `delete_account` turn one name into
a Unix user and back. A class on a shared cluster reads its students from a roster file instead (`read_roster`:
nbgrader's `nbgrader db student import` CSV), or takes the students of `numbered_roster`.

>>> r = numbered_roster(2)
>>> r.instructor, r.students
('labclass-teacher', ['labclass-s01', 'labclass-s02'])
"""
from __future__ import annotations

import csv
import os
import pathlib
import pwd
import re
import subprocess
from dataclasses import dataclass, field

from labsupport.errors import LabError
from labsupport.i18n import tr

#: The prefix of every Unix account a class makes.
PREFIX = "labclass-"
#: The comment (GECOS) of every class account: `clean` removes the home only of an account that has it.
COMMENT = "labsupport class account"
#: A Unix user name useradd accepts on every distribution (lower case, no dot), with the prefix.
NAME = re.compile(r"^labclass-[a-z0-9][a-z0-9_-]{0,22}$")
#: The account the class's exchange service runs as: it alone may enter the exchange's store, and nobody logs in
#: as it.
EXCHANGE_ACCOUNT = PREFIX + "exchange"


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
        if EXCHANGE_ACCOUNT in self.everyone:
            raise RosterError(f"roster: {EXCHANGE_ACCOUNT} is the exchange service's account, not a member's")

    @property
    def everyone(self) -> list[str]:
        """The instructor, then the students."""
        return [self.instructor, *self.students]


def numbered_roster(students: int) -> Roster:
    """`labclass-teacher` and `labclass-s01` … for `--students N`."""
    if not 1 <= students <= 999:
        raise RosterError(f"--students {students}: a class has 1 to 999 students")
    return Roster(PREFIX + "teacher", [f"{PREFIX}s{i:02d}" for i in range(1, students + 1)])


#: A student id that can name a namespace `lab-ID`: a DNS label (lower case, digits, '-'), at most 59 characters.
STUDENT_ID = re.compile(r"^[a-z0-9]([a-z0-9-]{0,57}[a-z0-9])?$")


@dataclass(frozen=True)
class Student:
    """One student of a roster file: their id (nbgrader's and JupyterHub's user name) and the line it is on."""

    id: str
    where: str


def read_roster(path: str | pathlib.Path) -> list[Student]:
    """The students of a roster CSV as `nbgrader db student import` reads it: a header naming an `id` column
    (first_name, last_name, email and other columns may follow), then one student a line; blank lines are skipped.
    A bad line is refused with file:line and what is wrong."""
    path = pathlib.Path(path)
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as e:
        raise RosterError(tr("cannot read the roster {path}: {error}", path=path, error=e)) from e
    rows = csv.reader(text.splitlines())
    header: list[str] | None = None
    students: list[Student] = []
    seen: dict[str, str] = {}
    for number, row in enumerate(rows, start=1):
        where = f"{path}:{number}"
        if not any(cell.strip() for cell in row):
            continue
        if header is None:
            header = [cell.strip().lower() for cell in row]
            if "id" not in header:
                raise RosterError(tr("{where}: the roster's first line must name its columns, one of them `id` "
                                     "(as `nbgrader db student import` wants: id,first_name,last_name,email); "
                                     "it is {line!r}", where=where, line=",".join(row)))
            continue
        if len(row) > len(header):
            raise RosterError(tr("{where}: {count} fields, but the header names {columns} columns",
                                 where=where, count=len(row), columns=len(header)))
        student_id = row[header.index("id")].strip() if header.index("id") < len(row) else ""
        if not student_id:
            raise RosterError(tr("{where}: no student id in the `id` column", where=where))
        if not STUDENT_ID.match(student_id):
            raise RosterError(tr("{where}: the student id {id!r} cannot name a namespace: use lower-case letters, "
                                 "digits and '-', starting and ending with a letter or digit, at most 59 characters",
                                 where=where, id=student_id))
        if student_id in seen:
            raise RosterError(tr("{where}: the student id {id!r} is already on {first}", where=where,
                                 id=student_id, first=seen[student_id]))
        seen[student_id] = where
        students.append(Student(student_id, where))
    if not students:
        raise RosterError(tr("{path}: the roster names no student", path=path))
    return students


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


def create_service_account(name: str, home: pathlib.Path) -> None:
    """A Unix user `name` with its own group that nobody logs in as (no password, no shell), whose home is the
    existing folder `home`, made its own and closed to everyone else."""
    if account_exists(name):
        raise RosterError(f"the Unix user {name} exists already: `labsupport class down` (or `labsupport clean`) "
                          "removes what an earlier class left")
    _run(["useradd", "--no-create-home", "--home-dir", str(home), "--user-group", "--shell", "/usr/sbin/nologin",
          "--comment", COMMENT, name])
    entry = pwd.getpwnam(name)
    os.chown(home, entry.pw_uid, entry.pw_gid)
    home.chmod(0o700)


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


__all__ = ["PREFIX", "COMMENT", "EXCHANGE_ACCOUNT", "Roster", "RosterError", "Student", "STUDENT_ID", "read_roster",
           "numbered_roster", "class_accounts", "create_account", "create_service_account", "delete_account",
           "account_exists"]
