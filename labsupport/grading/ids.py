"""Who a hand-in belongs to, written so that nothing downstream can mistake it for markup, a path or a formula.

A student id names a folder (`submitted/<id>/…`), a row of the gradebook, a line of `grades.csv`, a cell of the
class report and a seed of the student's task. One grammar holds at every entry point (`nbgrader collect`,
`nbgrader autograde`, `labsupport grade`, `variant`, `report`, `nbgrader export`): 1 to 64 ASCII characters,
letters, digits and `. _ @ + -`, the first a letter, a digit or `_`. So an id holds no markup (`<`, `>`, `&`,
quotes), no line break or other control character, no path (`/`, `\\`, a leading dot), no lookalike letter of
another script nor a bidirectional control, and no leading `=`, `+`, `-` or `@` that a spreadsheet evaluates.
Ids that differ only in case name the same person to most people (and to a case-insensitive disk): `collisions`
finds them.

>>> check_student_id("ann.lee+2")
'ann.lee+2'
>>> spreadsheet_text("=HYPERLINK(\\"http://x\\")")
'\\'=HYPERLINK("http://x")'
"""
from __future__ import annotations

import re
import unicodedata
from typing import Iterable

from labsupport.errors import LabError

#: The grammar of a student id (and of an assignment or course id).
STUDENT_ID = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._@+-]{0,63}")
MAX_LENGTH = 64
#: What the grammar says, in the words of every refusal.
RULE = ("an id is 1 to 64 characters: letters a-z and A-Z, digits and . _ @ + -, starting with a letter, a digit "
        "or _")
#: What a spreadsheet reads as the start of a formula (ASCII and the full-width forms some editions accept).
FORMULA_START = tuple("=+-@\t\r\n") + ("\uff1d", "\uff0b", "\uff0d", "\uff20")


class BadStudentId(LabError, ValueError):
    """A student id outside the grammar: the message names the id, what is wrong with it and the rule."""


def shown(text: str, limit: int = 80) -> str:
    """An id as a message shows it: quoted, control characters escaped, cut when long."""
    text = text if len(text) <= limit else text[:limit] + "…"
    return repr(text)


def problem(student: object) -> str | None:
    """What is wrong with a student id (None: it is a plain id)."""
    if not isinstance(student, str):
        return f"it is not text but {type(student).__name__}"
    if not student:
        return "it is empty"
    if len(student) > MAX_LENGTH:
        return f"it is {len(student)} characters long"
    for char in student:
        if char in "\r\n" or unicodedata.category(char) == "Cc":
            return "it holds a line break or a control character"
        if unicodedata.bidirectional(char) in ("LRE", "RLE", "LRO", "RLO", "PDF", "LRI", "RLI", "FSI", "PDI") \
                or char in "\u200e\u200f\u061c":
            return f"it holds a bidirectional control (U+{ord(char):04X}) that reorders how it reads"
        if ord(char) > 127:
            return (f"it holds {char!r} (U+{ord(char):04X}, {unicodedata.name(char, 'unnamed')}), outside ASCII: a "
                    "letter of another script can pass for a classmate's")
    if "/" in student or "\\" in student or student.startswith(".") or ".." in student:
        return "it names a path (a slash, a leading dot or ..)"
    if any(char in student for char in "<>&\"'`"):
        return "it holds markup characters (< > & quotes)"
    if student[0] in "=+-@":
        return f"it starts with {student[0]!r}, which a spreadsheet evaluates as a formula"
    if not STUDENT_ID.fullmatch(student):
        odd = next(char for char in student if not re.fullmatch(r"[A-Za-z0-9._@+-]", char))
        return f"it holds {odd!r}"
    return None


def _checked(kind: str, value: object, where: str) -> str:
    """`value` when it is a plain id; BadStudentId naming the kind of id, the id, where it was found (if said), what is
    wrong and the rule otherwise."""
    why = problem(value)
    if why is None:
        return value  # type: ignore[return-value]
    place = f" ({where})" if where else ""
    raise BadStudentId(f"{kind} id {shown(str(value))}{place} is refused: {why}; {RULE}")


def check_student_id(student: object, where: str = "") -> str:
    """The id itself when it is a plain student id; BadStudentId naming the id, what is wrong and the rule else.
    `where` says where it was found (a folder, a command line)."""
    return _checked("student", student, where)


def check_assignment_id(assignment: object, where: str = "") -> str:
    """An assignment id under the same grammar; BadStudentId (worded for an assignment) otherwise."""
    return _checked("assignment", assignment, where)


def check_course_id(course: object, where: str = "") -> str:
    """A course id under the same grammar (it names the exchange's folders and URLs); BadStudentId otherwise."""
    return _checked("course", course, where)


def collisions(ids: Iterable[str]) -> dict[str, list[str]]:
    """Ids that differ only in case, each mapped to the others it collides with (empty: none collide)."""
    groups: dict[str, list[str]] = {}
    for student in dict.fromkeys(ids):
        groups.setdefault(student.casefold(), []).append(student)
    return {student: [other for other in group if other != student]
            for group in groups.values() if len(group) > 1 for student in group}


def spreadsheet_text(value: object) -> object:
    """A value as a spreadsheet cell may hold it: text a spreadsheet would evaluate as a formula gets a leading `'`
    (shown as text); numbers and other text pass unchanged."""
    if isinstance(value, str) and value.startswith(FORMULA_START):
        return "'" + value
    return value


__all__ = ["BadStudentId", "check_student_id", "check_assignment_id", "check_course_id", "collisions", "problem", "spreadsheet_text",
           "STUDENT_ID", "RULE", "MAX_LENGTH", "FORMULA_START"]
