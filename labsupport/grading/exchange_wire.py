"""A hand-in as bytes: the names its files may have, the bundle the class's exchange service and its clients send
each other, and a folder read or written without following a link.

A bundle is JSON, `{"files": [{"path": "endpointslices.ipynb", "content": "<base64>"}]}`: every path a relative
POSIX path of plain names (no `..`, no hidden name, no control character), every file a regular file, the whole
under a cap of bytes and files (`Caps`). `decode` is strict — an unknown field, a repeated path, bad base64 or a
cap passed is a `HandInError` that names the file and the rule — so the service can answer a malformed request
with a clear 4xx and store nothing. `read_folder` opens each file of a student's folder with `O_NOFOLLOW` and
checks what it opened (a link or a device is refused, not read); `write_folder` makes a new folder and every file
in it with `O_EXCL | O_NOFOLLOW`, so nothing already there (a link planted in advance) is ever written through.

>>> decode(encode({"a.ipynb": b"{}"}))
{'a.ipynb': b'{}'}
>>> try:
...     check_path("../source/a.ipynb")
... except HandInError as e:
...     print(e)
'../source/a.ipynb': a file's path is made of plain names (no '..', '.', empty or hidden name)
"""
from __future__ import annotations

import base64
import binascii
import errno
import fnmatch
import hashlib
import json
import os
import pathlib
import re
import stat
from dataclasses import dataclass
from typing import Any, Iterable

from labsupport.errors import LabError
from labsupport.grading.ids import BadStudentId, check_assignment_id, check_course_id, check_student_id
from labsupport.i18n import tr

#: nbgrader's own bookkeeping in a submission folder: the exchange writes these, a student never does.
RESERVED = frozenset({"timestamp.txt", "submission_secret.txt"})
#: What a student's folder holds that is never part of a hand-in (nbgrader's default `CourseDirectory.ignore`).
SKIPPED = (".ipynb_checkpoints", "*.pyc", "__pycache__", "feedback")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


class HandInError(LabError, ValueError):
    """A hand-in that cannot be sent or stored: the message names the file and what is wrong with it."""


class TooBig(HandInError):
    """A hand-in over the exchange's cap of bytes or files."""


@dataclass(frozen=True)
class Caps:
    """How much one hand-in (or one released assignment, or one feedback) may hold."""

    bytes: int = 20 * 2**20
    files: int = 100
    depth: int = 8

    def describe(self) -> str:
        """The caps in words, for a refusal."""
        return tr("{files} files and {mib} MiB at most", files=self.files, mib=round(self.bytes / 2**20, 1))


CAPS = Caps()


def mib(size: int) -> str:
    """A size in MiB with one decimal, for a message."""
    return f"{size / 2**20:.1f} MiB"


def check_path(path: object) -> str:
    """`path` when it is a relative path of plain names; HandInError otherwise."""
    if not isinstance(path, str) or not path:
        raise HandInError(tr("a file's path must be a non-empty string, not {path!r}", path=path))
    if _CONTROL.search(path) or "\\" in path:
        raise HandInError(tr("{path!r}: a file's path may not hold a control character or a backslash", path=path))
    parts = path.split("/")
    if any(part in ("", ".", "..") or part.startswith(".") for part in parts):
        raise HandInError(tr("{path!r}: a file's path is made of plain names (no '..', '.', empty or hidden name)",
                             path=path))
    if any(len(part.encode()) > 255 for part in parts) or len(parts) > CAPS.depth:
        raise HandInError(tr("{path!r}: a name is longer than 255 bytes or the path deeper than {depth} folders",
                             path=path, depth=CAPS.depth))
    return path


def check_id(kind: str, value: object) -> str:
    """A course or assignment id (`kind` names which) under the course's one grammar (`labsupport.grading.ids`, the
    grammar of student ids too); HandInError naming the id, what is wrong and the rule when it is not one."""
    check = check_course_id if kind == "course" else check_assignment_id
    try:
        return check(value)
    except BadStudentId as e:
        raise HandInError(str(e)) from None


def check_student(value: object) -> str:
    """A student id the exchange may file a hand-in under (the course's one grammar, `labsupport.grading.ids`);
    HandInError naming the id, what is wrong and the rule when it is not one."""
    try:
        return check_student_id(value)
    except BadStudentId as e:
        raise HandInError(str(e)) from None


def sha256(data: bytes) -> str:
    """The hex SHA-256 of `data`."""
    return hashlib.sha256(data).hexdigest()


def encode(files: dict[str, bytes]) -> dict[str, Any]:
    """The bundle of `files` (path → bytes), ready for `json.dumps`."""
    return {"files": [{"path": path, "content": base64.b64encode(data).decode("ascii")}
                      for path, data in sorted(files.items())]}


def decode(bundle: object, caps: Caps = CAPS) -> dict[str, bytes]:
    """The files of a bundle (path → bytes); HandInError for anything a bundle may not be or hold."""
    if not isinstance(bundle, dict) or set(bundle) != {"files"} or not isinstance(bundle["files"], list):
        keys = sorted(bundle) if isinstance(bundle, dict) else type(bundle).__name__
        raise HandInError(tr('a hand-in is a JSON object with one field, "files" (a list of {{"path", "content"}}); '
                             "this one has {keys}", keys=keys))
    entries = bundle["files"]
    if len(entries) > caps.files:
        raise TooBig(tr("{count} files: a hand-in holds {caps}", count=len(entries), caps=caps.describe()))
    files: dict[str, bytes] = {}
    total = 0
    for number, entry in enumerate(entries, start=1):
        if not isinstance(entry, dict) or set(entry) != {"path", "content"}:
            raise HandInError(tr('file {number} of the hand-in: each file is {{"path": …, "content": base64}} and '
                                 "nothing else", number=number))
        path = check_path(entry["path"])
        if path in files:
            raise HandInError(tr("{path!r} is in the hand-in twice", path=path))
        if not isinstance(entry["content"], str):
            raise HandInError(tr("{path!r}: its content must be a base64 string", path=path))
        total += len(entry["content"]) * 3 // 4
        if total > caps.bytes + 3:
            raise TooBig(tr("{path!r}: the hand-in is over its cap of {caps}", path=path, caps=caps.describe()))
        try:
            files[path] = base64.b64decode(entry["content"], validate=True)
        except (binascii.Error, ValueError) as e:
            raise HandInError(tr("{path!r}: its content is not base64 ({error})", path=path, error=e)) from None
    if sum(len(data) for data in files.values()) > caps.bytes:
        raise TooBig(tr("the hand-in is over its cap of {caps}", caps=caps.describe()))
    for path in files:
        for other in files:
            if other.startswith(path + "/"):
                raise HandInError(tr("{path!r} is both a file and a folder of {other!r}", path=path, other=other))
    return files


def notebook_problem(data: bytes) -> str | None:
    """What keeps `data` from being a Jupyter notebook (None when it is one nbformat 4 validates)."""
    import nbformat
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        return tr("not UTF-8 text ({error})", error=e)
    try:
        raw = json.loads(text)
    except ValueError as e:
        return tr("not JSON ({error})", error=e)
    if not isinstance(raw, dict) or not isinstance(raw.get("cells"), list):
        return tr("JSON, but not a notebook (no list of cells)")
    try:
        nb = nbformat.reads(text, as_version=4)
        nbformat.validate(nb)
    except Exception as e:  # nbformat raises ValidationError and a handful of others for a broken notebook
        return tr("not a valid notebook ({error})", error=str(e).splitlines()[0][:200])
    return None


def skipped(name: str, patterns: Iterable[str] = SKIPPED) -> bool:
    """Whether a file or folder called `name` is left out of a hand-in (hidden, a checkpoint, a cache)."""
    return name.startswith(".") or any(fnmatch.fnmatch(name, p) for p in patterns)


def read_folder(folder: pathlib.Path, caps: Caps = CAPS, patterns: Iterable[str] = SKIPPED,
                reserved: Iterable[str] = ()) -> dict[str, bytes]:
    """The files of `folder` (relative path → bytes), each opened without following a link and checked on the open
    descriptor; HandInError for a link, a special file, or a folder over `caps`. Hidden files, `patterns` and, at the
    top, the `reserved` names are left out."""
    patterns, reserved = tuple(patterns), frozenset(reserved)
    files: dict[str, bytes] = {}
    total = 0

    def walk(directory: int, prefix: str, depth: int) -> None:
        nonlocal total
        for name in sorted(os.listdir(directory)):
            path = prefix + name
            if skipped(name, patterns) or (not prefix and name in reserved):
                continue
            try:
                fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=directory)
            except OSError as e:
                if e.errno == errno.ELOOP:
                    raise HandInError(tr("{path} is a symbolic link: a hand-in holds regular files only, and the "
                                         "exchange never follows a link", path=folder / path)) from None
                raise HandInError(tr("{path}: cannot be read ({error})", path=folder / path,
                                     error=e.strerror)) from None
            try:
                st = os.fstat(fd)
                if stat.S_ISDIR(st.st_mode):
                    if depth >= caps.depth:
                        raise HandInError(tr("{path}: folders nest deeper than {depth}", path=folder / path,
                                             depth=caps.depth))
                    walk(fd, path + "/", depth + 1)
                    continue
                if not stat.S_ISREG(st.st_mode):
                    raise HandInError(tr("{path} is not a regular file: a hand-in holds regular files only",
                                         path=folder / path))
                check_path(path)
                total += st.st_size
                if total > caps.bytes or len(files) >= caps.files:
                    raise TooBig(tr("{folder} is over the exchange's cap of {caps} (at {path}, {size}): make "
                                         "it smaller (clear large outputs) and submit again", folder=folder,
                                         caps=caps.describe(), path=path, size=mib(total)))
                with os.fdopen(os.dup(fd), "rb") as f:
                    data = f.read(st.st_size + 1)
                if len(data) != st.st_size:
                    raise HandInError(tr("{path} changed while it was read: submit again", path=folder / path))
                files[path] = data
            finally:
                os.close(fd)

    try:
        top = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError as e:
        raise HandInError(tr("{folder} is not a folder the exchange can read ({error}; a symbolic link is not "
                             "followed)", folder=folder, error=e.strerror)) from None
    try:
        walk(top, "", 0)
    finally:
        os.close(top)
    return files


def write_folder(folder: pathlib.Path, files: dict[str, bytes], mode: int = 0o700, file_mode: int = 0o600) -> None:
    """Make the new folder `folder` and write `files` (relative path → bytes) into it; nothing that exists already
    is written to or through (each folder is made here, each file created with O_EXCL | O_NOFOLLOW)."""
    os.mkdir(folder, mode)
    top = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    try:
        for path, data in sorted(files.items()):
            parts = check_path(path).split("/")
            directory = os.dup(top)
            try:
                for part in parts[:-1]:
                    try:
                        os.mkdir(part, mode, dir_fd=directory)
                    except FileExistsError:
                        pass
                    inner = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=directory)
                    os.close(directory)
                    directory = inner
                fd = os.open(parts[-1], os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, file_mode,
                             dir_fd=directory)
                with os.fdopen(fd, "wb") as f:
                    f.write(data)
            finally:
                os.close(directory)
    finally:
        os.close(top)


__all__ = ["HandInError", "TooBig", "Caps", "CAPS", "RESERVED", "SKIPPED", "check_path", "check_id", "check_student",
           "encode", "decode", "notebook_problem", "read_folder", "write_folder", "skipped", "sha256", "mib"]
