"""The grader's own run of one test cell: the instructor's source (hidden tests included, which never reach the
student's kernel), a pristine `labsupport.checks`, the student's answers as plain data, and the lab server's
cluster. Its outcome is the cell's score.

An answer that names a module or a class is honoured only for modules the notebook's own locked cells import: the
grader imports nothing because the kernel named it.
"""
from __future__ import annotations

import ast
import builtins
import contextlib
import importlib
import io
import json
import os
import traceback
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator

from labsupport.errors import LabError
from labsupport.i18n import VARIABLE as LANGUAGE_ENV
from labsupport.i18n import tr
from labsupport.remote import SOCKET_ENV, wire
from labsupport.remote.client import TIMEOUT_ENV, RemoteBackend, RemoteConnection

#: Names every test cell gets from the grader, never from the kernel (`task`: the graded student's own task).
PROVIDED = frozenset({"lab", "checks", "task"})


class AnswerError(LabError):
    """A student's answer cannot be used by the grader: not plain data, or not what the cluster returned."""


@dataclass
class Outcome:
    """What the grader's run of a test cell printed, and the error that failed it (None: it passed)."""

    stdout: str = ""
    ename: str | None = None
    evalue: str = ""
    traceback: list[str] = field(default_factory=list)
    #: What the test's source bound itself (a hidden test's record for a later test), by name.
    bound: dict[str, Any] = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        """Whether the test passed."""
        return self.ename is None


def graded_task(path: str) -> Any:
    """The task of the student whose notebook is graded in `path` (`…/autograded/<student>/<assignment>`), drawn
    by the grader itself, so a test checks the values that student was given whatever the kernel says; None
    for an assignment without variants."""
    import pathlib
    from labsupport.tasks import CATALOG, STUDENT_ENV, draw, grading_env
    assignment = pathlib.Path(path).resolve().name
    if assignment not in CATALOG:
        return None
    return draw(assignment, grading_env(path).get(STUDENT_ENV))


def bound_names(source: str) -> set[str]:
    """The names a test cell's source binds at its top level (assignments, imports, definitions)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            names.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
    return names


def free_names(source: str) -> list[str]:
    """The names a test cell reads but never binds itself (its answers)."""
    tree = ast.parse(source)
    bound: set[str] = set()
    loaded: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            if isinstance(node.ctx, ast.Load):
                loaded.append(node.id)
            else:
                bound.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, ast.alias):
            bound.add((node.asname or node.name).split(".")[0])
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bound.add(node.name)
    seen = dict.fromkeys(n for n in loaded if n not in bound and n not in PROVIDED and not hasattr(builtins, n))
    return list(seen)


def imported_modules(sources: Iterable[str]) -> frozenset[str]:
    """The modules (and their parent packages) that some code imports: what a test may get from the kernel by name."""
    found: set[str] = set()
    for source in sources:
        try:
            tree = ast.parse(source)
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module] if isinstance(node, ast.ImportFrom) and node.module and not node.level else []
            for module in names:
                parts = module.split(".")
                found.update(".".join(parts[:i]) for i in range(1, len(parts) + 1))
    return frozenset(found)


def from_plain(value: Any, backend: RemoteBackend, name: str, modules: frozenset[str] = frozenset()) -> Any:
    """Rebuild an answer from its plain form; refuse what is not plain data (a module or class only from
    `modules`, those the notebook's locked cells import)."""
    if isinstance(value, list):
        return [from_plain(v, backend, name, modules) for v in value]
    if not isinstance(value, dict):
        return value
    if len(value) != 1:
        raise AnswerError(tr("{name}: the kernel sent an answer the grader cannot read", name=name))
    (tag, inner), = value.items()
    if tag == "__dict__" and isinstance(inner, dict):
        return {k: from_plain(v, backend, name, modules) for k, v in inner.items()}
    if tag == "__tuple__" and isinstance(inner, list):
        return tuple(from_plain(v, backend, name, modules) for v in inner)
    if tag == "__set__" and isinstance(inner, list):
        try:
            return set(from_plain(v, backend, name, modules) for v in inner)
        except TypeError as e:
            raise AnswerError(tr("{name}: a set of values that cannot be in a set", name=name)) from e
    if tag == "__float__" and inner in ("nan", "inf", "-inf"):
        return float(inner)
    if tag == "__record__":
        return wire.decode(inner)
    if tag == "__connection__" and isinstance(inner, int):
        return RemoteConnection(backend, inner, backend.call("connection_state", inner))
    if tag == "__module__" and isinstance(inner, str) and inner in modules:
        return importlib.import_module(inner)
    if tag == "__object__" and isinstance(inner, list) and len(inner) == 2 and str(inner[0]) in modules:
        target: Any = importlib.import_module(inner[0])
        for part in str(inner[1]).split("."):
            target = getattr(target, part, None)
        if isinstance(target, type):
            return target
        raise AnswerError(tr("{name}: only classes of labsupport or the standard library travel by name",
                              name=name))
    if tag == "__missing__":
        raise AnswerError(tr("name '{name}' is not defined: run the cell that sets it before this test", name=name))
    if tag == "__unsupported__":
        raise AnswerError(tr("{name} holds {inner}, which the grader cannot check: answers must be plain data "
                             "(numbers, strings, lists, sets, dicts) or what the lab's verbs returned",
                             name=name, inner=inner))
    raise AnswerError(tr("{name}: the kernel sent an answer the grader cannot read", name=name))


def is_api_object(value: Any) -> bool:
    """Whether a dict stands for a Kubernetes object (it has metadata, a kind or an apiVersion): such an answer must
    be one the cluster served, exactly."""
    return isinstance(value, dict) and any(key in value for key in ("metadata", "kind", "apiVersion"))


def check_served(name: str, value: Any, grader: RemoteBackend) -> None:
    """Refuse objects and results that the lab server did not hand out exactly like this."""
    from labsupport.results import CurlResult, NslookupAnswer, Trace
    if is_api_object(value) or isinstance(value, (CurlResult, NslookupAnswer, Trace)):
        if not grader.call("served", value):
            meta = value.get("metadata") if isinstance(value, dict) else None
            what = (f'{value.get("kind", "object")} "{meta.get("name", "") if isinstance(meta, dict) else ""}"'
                    if isinstance(value, dict) else type(value).__name__)
            raise AnswerError(tr("{name}: the {what} is not what the cluster returned (its name, uid, "
                                 "resourceVersion and content must be those of an object the cluster served): "
                                 "keep what lab.get / lab.curl / lab.nslookup returned, unchanged",
                                 name=name, what=what))
        return
    if isinstance(value, dict):
        for v in value.values():
            check_served(name, v, grader)
    elif isinstance(value, (list, tuple, set)):
        for v in value:
            check_served(name, v, grader)


def load_answers(text: str | None, names: list[str], backend: RemoteBackend, grader: RemoteBackend,
                 modules: frozenset[str] = frozenset()) -> dict:
    """The student's answers, rebuilt and checked; a name that fails is left out and its error kept."""
    if text is None:
        return {}
    data = json.loads(text)
    if not isinstance(data, dict):
        raise AnswerError(tr("the kernel sent answers the grader cannot read"))
    out = {}
    for name in names:
        if name in data:
            value = from_plain(data[name], backend, name, modules)
            check_served(name, value, grader)
            out[name] = value
    return out


@contextlib.contextmanager
def environment(**values: str | None) -> Iterator[None]:
    """Environment variables set (None: unset) for the length of the block, then restored as they were."""
    def put(settings: dict[str, str | None]) -> None:
        for name, value in settings.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value

    previous = {name: os.environ.get(name) for name in values}
    try:
        put(values)
        yield
    finally:
        put(previous)


def run_test(source: str, names: list[str], answers_text: str | None, socket_path: str, grader: RemoteBackend,
             *, seed: int = 0, proxy_mode: str = "iptables", missing: str = "", task: Any = None,
             language: str | None = None, modules: frozenset[str] = frozenset(),
             call_timeout: float = 60.0, carried: dict[str, Any] | None = None) -> Outcome:
    """Run a test cell's whole source in this process against the lab server's cluster (at `socket_path`); the
    outcome decides its score. `language` (LABSUPPORT_LANG while it runs; None: the grader's own) is the language
    of its messages; every request to the server may take `call_timeout` seconds; `carried` are names earlier test
    cells bound (never fetched from the kernel, which never ran them)."""
    from labsupport.lab import Lab
    out = io.StringIO()
    outcome = Outcome()
    lab = None
    with environment(**{SOCKET_ENV: socket_path, TIMEOUT_ENV: str(call_timeout),
                        LANGUAGE_ENV: language or os.environ.get(LANGUAGE_ENV)}):
        try:
            lab = Lab(backend="sim", seed=seed, proxy_mode=proxy_mode)
            checks = importlib.import_module("labsupport.checks")
            namespace: dict[str, Any] = {"__name__": "__graded__", "__builtins__": builtins, "lab": lab,
                                         "checks": checks}
            if task is not None:
                namespace["task"] = task
            namespace.update(carried or {})
            namespace.update(load_answers(answers_text, [n for n in names if n not in (carried or {})],
                                          lab.backend, grader, modules))
            for name in names:
                if name not in namespace and missing:
                    raise AnswerError(tr("{name} could not be read: {missing}", name=name, missing=missing))
            code = compile(source, "<test>", "exec")
            with contextlib.redirect_stdout(out):
                exec(code, namespace)
            outcome.bound = {name: namespace[name] for name in bound_names(source) if name in namespace}
        except (Exception, SystemExit) as e:      # the test failed: its error is the cell's verdict
            outcome.ename = type(e).__name__
            outcome.evalue = str(e)
            outcome.traceback = [line.rstrip("\n") for line in traceback.format_exception_only(type(e), e)]
        finally:
            if lab is not None:
                lab.close()
    outcome.stdout = out.getvalue()
    return outcome


__all__ = ["AnswerError", "Outcome", "graded_task", "free_names", "from_plain", "check_served", "load_answers", "run_test",
           "PROVIDED", "environment", "imported_modules", "bound_names"]
