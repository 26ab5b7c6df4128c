"""A folder of a student's read as data: by descriptors, never following a link, its bytes, owner and time.

`read_folder(parent_fd, name)` opens the folder (relative to an open parent, `O_NOFOLLOW`) and every file in it
the same way, and judges each on the descriptor it then reads from, so nothing can be swapped between a check and
the copy: a symbolic link (at any depth, at any moment) fails to open; a FIFO, a device or a socket is refused
before it is opened and again on its descriptor (opened non-blocking, so a FIFO cannot hang the reader); a file with
a second name (a hard link to the course's source, say) is refused; a file that is not the one listed, or that
changed while it was read, is refused; so is a folder whose entries changed while it was read. Sizes count twice:
the apparent size (a sparse file of 200 MB that takes 20 KiB of disk) and the allocated blocks, against one limit
for the whole folder, and never more than the limit is read. The time of the folder is the latest change time the
kernel stamped on it or any file in it (`st_ctime`: a student can move their files' modification times back, never
their change times), and every file's owner is recorded, so a folder can be judged by who really owns it.
"""
from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field

import pathlib

from labsupport.errors import LabError

class SubmissionRefused(LabError):
    """A submission holds something other than regular files and folders (a symlink, a device, a hard link), more
    than it may, or changed while it was read."""


#: The most a submission in the course folder may hold, in bytes (what `nbgrader autograde` and `labsupport grade`
#: copy into a sandbox, whose working folder holds 256 MiB).
MAX_SUBMISSION = 64 * 2**20
#: Folders a submission's copy leaves out (editor leftovers).
IGNORED = frozenset({".ipynb_checkpoints", "__pycache__"})
#: The deepest a hand-in's folders may nest, and the most files it may hold.
MAX_DEPTH = 8
MAX_FILES = 1000
_FOLDER_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC | getattr(os, "O_NOCTTY", 0)


@dataclass
class Folder:
    """What a folder held when it was read: each file's bytes by its path inside, its owners and its latest change."""

    files: dict[str, bytes] = field(default_factory=dict)
    owners: set[int] = field(default_factory=set)
    changed: float = 0.0            # the latest st_ctime of the folder, its subfolders and its files
    size: int = 0                   # bytes read

    def note(self, st: os.stat_result) -> None:
        """Count one descriptor's owner and change time."""
        self.owners.add(st.st_uid)
        self.changed = max(self.changed, st.st_ctime)


def kind(mode: int) -> str:
    """What a file that is not a regular file or folder is, in words."""
    for test, word in ((stat.S_ISLNK, "a symbolic link"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device")):
        if test(mode):
            return word
    return "not a regular file"


def _same(before: os.stat_result, after: os.stat_result) -> bool:
    return (before.st_ino, before.st_dev, before.st_size, before.st_mtime_ns, before.st_ctime_ns) == \
        (after.st_ino, after.st_dev, after.st_size, after.st_mtime_ns, after.st_ctime_ns)


def open_folder(parent_fd: int | None, name: str, where: str) -> int:
    """A descriptor of the folder `name` (relative to `parent_fd`, or a path when None), never through a link."""
    try:
        return os.open(name, _FOLDER_FLAGS, dir_fd=parent_fd)
    except OSError as e:
        try:
            st = os.stat(name, dir_fd=parent_fd, follow_symlinks=False)
        except OSError:
            raise SubmissionRefused(f"{where}: cannot be read ({e.strerror})") from e
        if not stat.S_ISDIR(st.st_mode):
            raise SubmissionRefused(f"{where} is {kind(st.st_mode)}, not a folder: refused") from e
        raise SubmissionRefused(f"{where}: cannot be read ({e.strerror})") from e


def read_file(folder_fd: int, name: str, where: str, room: int) -> tuple[bytes, os.stat_result]:
    """The bytes of the regular file `name` in an open folder, judged on its own descriptor; at most `room`."""
    listed = os.stat(name, dir_fd=folder_fd, follow_symlinks=False)
    if not stat.S_ISREG(listed.st_mode):
        raise SubmissionRefused(f"{where} is {kind(listed.st_mode)}, not a regular file: a submission holds regular "
                                "files only")
    try:
        fd = os.open(name, _FILE_FLAGS, dir_fd=folder_fd)
    except OSError as e:
        raise SubmissionRefused(f"{where} changed into something else while it was read ({e.strerror}): "
                                "refused") from e
    with os.fdopen(fd, "rb") as handle:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise SubmissionRefused(f"{where} is {kind(st.st_mode)}, not a regular file: a submission holds regular "
                                    "files only")
        if (st.st_ino, st.st_dev) != (listed.st_ino, listed.st_dev):
            raise SubmissionRefused(f"{where} was replaced while it was read: refused (hand it in again)")
        if st.st_nlink != 1:
            raise SubmissionRefused(f"{where} has other names (a hard link): a submission holds its own files only")
        if st.st_size > room:
            raise SubmissionRefused(f"{where} is {st.st_size} bytes long: more than the {room} bytes a hand-in may "
                                    "still hold")
        if st.st_blocks * 512 > room + 64 * 1024:
            raise SubmissionRefused(f"{where} takes {st.st_blocks * 512} bytes of disk: more than the {room} bytes a "
                                    "hand-in may still hold")
        data = handle.read(room + 1)
        after = os.fstat(fd)
    if len(data) > room:
        raise SubmissionRefused(f"{where} grew past the {room} bytes a hand-in may still hold while it was read")
    if not _same(st, after) or len(data) != st.st_size:
        raise SubmissionRefused(f"{where} changed while it was read: refused (hand it in again)")
    return data, st


def read_folder(parent_fd: int | None, name: str, where: str, limit: int, *, depth: int = 0,
                into: Folder | None = None, prefix: str = "") -> Folder:
    """Every regular file under the folder `name` (relative to the open `parent_fd`, or a path when None), read as
    the module's docstring says; SubmissionRefused naming the file and why, at the first thing that is not."""
    folder = into if into is not None else Folder()
    fd = open_folder(parent_fd, name, where)
    try:
        before = os.fstat(fd)
        folder.note(before)
        for entry in sorted(os.listdir(fd)):
            path = f"{prefix}{entry}"
            place = f"{where}/{entry}"
            listed = os.stat(entry, dir_fd=fd, follow_symlinks=False)
            if stat.S_ISDIR(listed.st_mode):
                if entry in IGNORED:
                    continue
                if depth + 1 > MAX_DEPTH:
                    raise SubmissionRefused(f"{place}: folders nested deeper than {MAX_DEPTH}: refused")
                read_folder(fd, entry, place, limit, depth=depth + 1, into=folder, prefix=f"{path}/")
                continue
            if len(folder.files) >= MAX_FILES:
                raise SubmissionRefused(f"{where}: more than {MAX_FILES} files: refused")
            data, st = read_file(fd, entry, place, limit - folder.size)
            folder.files[path] = data
            folder.size += len(data)
            folder.note(st)
        after = os.fstat(fd)
        if (after.st_mtime_ns, after.st_ctime_ns, after.st_nlink) != \
                (before.st_mtime_ns, before.st_ctime_ns, before.st_nlink):
            raise SubmissionRefused(f"{where} changed while it was read: refused (hand it in again)")
    finally:
        os.close(fd)
    return folder


def regular_file(path: pathlib.Path) -> os.stat_result:
    """The stat of a file a submission may hold: a regular file, not a symlink, with no other name (hard link);
    SubmissionRefused otherwise."""
    try:
        st = os.lstat(path)
    except OSError as e:
        raise SubmissionRefused(f"{path}: cannot be read ({e.strerror})") from e
    if not stat.S_ISREG(st.st_mode):
        raise SubmissionRefused(f"{path} is {kind(st.st_mode)}, not a regular file: a submission holds regular "
                                "files only")
    if st.st_nlink != 1:
        raise SubmissionRefused(f"{path} has other names (a hard link): a submission holds its own files only")
    return st


def check_submission(folder: pathlib.Path, limit: int = MAX_SUBMISSION) -> list[pathlib.Path]:
    """Every file of a submission folder, read as `read_folder` reads it (SubmissionRefused at the first link,
    special file, second name or excess); checkpoints and caches are left out."""
    read = read_folder(None, str(folder), str(folder), limit)
    return [pathlib.Path(folder, path) for path in read.files]


def copy_submission(source: pathlib.Path, dest: pathlib.Path, limit: int = MAX_SUBMISSION) -> None:
    """Copy a submission's regular files into `dest` exactly as they were read (refusing anything else)."""
    write_folder(read_folder(None, str(source), str(source), limit).files, dest)


def write_folder(folder: dict[str, bytes], dest: os.PathLike | str) -> None:
    """Write files (path inside -> bytes) into the folder `dest`, making it; no file of it may exist yet."""
    os.makedirs(dest, exist_ok=True)
    for path, data in folder.items():
        target = os.path.join(dest, path)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)


__all__ = ["SubmissionRefused", "Folder", "read_folder", "read_file", "open_folder", "write_folder", "kind",
           "regular_file", "check_submission", "copy_submission", "IGNORED", "MAX_DEPTH", "MAX_FILES",
           "MAX_SUBMISSION"]
