"""A small POSIX-style command interpreter over a container's files, environment and network verbs.

It parses what `sh -c` and an interactive `kubectl exec -it POD -- sh` receive — quoting, `$VAR` / `${VAR}` /
`$?` / `$(cmd)` expansion, pipes, `;`, `&&`, `||`, `>`, `>>`, `<`, `2>&1`, `VAR=value` — and runs each command
from the image's own set (see `labsupport.apps.images`), so a command the image lacks is `not found`, as it is.
"""
from __future__ import annotations

import posixpath
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable

if TYPE_CHECKING:
    from labsupport.apps import App

__all__ = ["Shell", "ShellSyntaxError", "Output", "parse"]

OPERATORS = ("&&", "||", ";;", ">>", "2>&1", "2>>", "2>", "&>", "|", ";", "&", ">", "<", "\n")


class ShellSyntaxError(ValueError):
    """A script the shell cannot parse; the message is what sh prints."""


@dataclass
class Output:
    """What one command printed and how it exited; `terminal` is both streams in the order a TTY shows them."""

    code: int = 0
    stdout: str = ""
    stderr: str = ""
    terminal: str | None = None

    @property
    def shown(self) -> str:
        """What a terminal shows of it."""
        return self.terminal if self.terminal is not None else self.stdout + self.stderr


@dataclass
class Word:
    """One word before expansion: (text, quoting) pieces, quoting one of '', "'", '"'."""

    parts: list[tuple[str, str]] = field(default_factory=list)


@dataclass
class Command:
    """A simple command: assignments, words and redirections (operator, target word)."""

    words: list[Word] = field(default_factory=list)
    redirects: list[tuple[str, Word | None]] = field(default_factory=list)


#: A script: and-or lists, each a list of (operator before it, pipeline of commands).
Script = list[list[tuple[str, list[Command]]]]


def _tokens(text: str) -> list[Word | str]:
    out: list[Word | str] = []
    word: Word | None = None
    i = 0

    def piece(s: str, q: str) -> None:
        nonlocal word
        if word is None:
            word = Word()
        if q == "" and word.parts and word.parts[-1][1] == "" and not word.parts[-1][0].startswith("$("):
            word.parts[-1] = (word.parts[-1][0] + s, "")
        else:
            word.parts.append((s, q))

    def end() -> None:
        nonlocal word
        if word is not None:
            out.append(word)
            word = None

    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text):
            if text[i + 1] == "\n":
                i += 2
                continue
            piece(text[i + 1], "'")
            i += 2
            continue
        if ch == "'":
            close = text.find("'", i + 1)
            if close < 0:
                raise ShellSyntaxError("syntax error: unterminated quoted string")
            piece(text[i + 1:close], "'")
            i = close + 1
            continue
        if ch == '"':
            j, buf = i + 1, ""
            while j < len(text) and text[j] != '"':
                if text[j] == "\\" and j + 1 < len(text) and text[j + 1] in '"\\$`':
                    buf += "\\" + text[j + 1] if text[j + 1] == "$" else text[j + 1]
                    j += 2
                    continue
                if text.startswith("$(", j):
                    close = _matching_paren(text, j + 1)
                    buf += text[j:close + 1]
                    j = close + 1
                    continue
                buf += text[j]
                j += 1
            if j >= len(text):
                raise ShellSyntaxError("syntax error: unterminated quoted string")
            piece(buf, '"')
            i = j + 1
            continue
        if ch == "$" and text.startswith("$(", i):
            close = _matching_paren(text, i + 1)
            piece(text[i:close + 1], "")
            i = close + 1
            continue
        if ch == "#" and word is None:
            while i < len(text) and text[i] != "\n":
                i += 1
            continue
        if ch in " \t":
            end()
            i += 1
            continue
        op = next((o for o in OPERATORS if text.startswith(o, i)), None)
        if op is not None and not (op[0] == "2" and word is not None):
            end()
            out.append(op)
            i += len(op)
            continue
        piece(ch, "")
        i += 1
    end()
    return out


def _matching_paren(text: str, start: int) -> int:
    depth = 0
    for j in range(start, len(text)):
        if text[j] == "(":
            depth += 1
        elif text[j] == ")":
            depth -= 1
            if depth == 0:
                return j
    raise ShellSyntaxError("syntax error: unterminated $(...)")


def parse(text: str) -> Script:
    """Parse a script into and-or lists of pipelines of commands."""
    script: Script = []
    current: list[tuple[str, list[Command]]] = []
    pipeline: list[Command] = []
    command = Command()
    joiner = ""
    tokens = _tokens(text)
    i = 0

    def close_command() -> None:
        nonlocal command
        if command.words or command.redirects:
            pipeline.append(command)
        command = Command()

    while i < len(tokens):
        tok = tokens[i]
        if isinstance(tok, Word):
            command.words.append(tok)
        elif tok in (">", ">>", "<", "2>", "2>>", "&>"):
            target = tokens[i + 1] if i + 1 < len(tokens) else None
            if not isinstance(target, Word):
                raise ShellSyntaxError(f"syntax error: unexpected {_describe(target)}")
            command.redirects.append((tok, target))
            i += 1
        elif tok == "2>&1":
            command.redirects.append((tok, None))
        elif tok == "|":
            if not command.words:
                raise ShellSyntaxError('syntax error: unexpected "|"')
            close_command()
        elif tok in ("&&", "||"):
            close_command()
            if not pipeline:
                raise ShellSyntaxError(f'syntax error: unexpected "{tok}"')
            current.append((joiner, pipeline))
            pipeline, joiner = [], tok
        elif tok in (";", "\n", "&", ";;"):
            close_command()
            if pipeline:
                current.append((joiner, pipeline))
            elif joiner or (tok == ";" and not current):
                if tok != "\n":
                    raise ShellSyntaxError(f'syntax error: unexpected "{tok}"')
            if current:
                script.append(current)
            current, pipeline, joiner = [], [], ""
        i += 1
    close_command()
    if pipeline:
        current.append((joiner, pipeline))
    elif joiner:
        raise ShellSyntaxError("syntax error: unexpected end of file")
    if current:
        script.append(current)
    return script


def _describe(token) -> str:
    if token is None:
        return "end of file"
    return f'"{token}"' if isinstance(token, str) else "word"


class ExitShell(Exception):
    """`exit N`."""

    def __init__(self, code: int):
        super().__init__(code)
        self.code = code


Builtin = Callable[["Shell", list[str], str], Output]


class Shell:
    """One shell process in a container: its working directory, variables and last exit status."""

    #: How the shell names itself in its error messages.
    name = "sh"

    def __init__(self, app: "App", commands: dict[str, Builtin], environ: dict[str, str] | None = None):
        self.app = app
        self.commands = commands
        self.environ = dict(environ if environ is not None else app.environ)
        self.variables: dict[str, str] = {}
        self.cwd = "/"
        self.status = 0
        self.exited: int | None = None

    # --- running -------------------------------------------------------------------------------------------
    def run(self, text: str, stdin: str = "") -> Output:
        """Run a script; its combined output and the exit status of its last command."""
        try:
            script = parse(text)
        except ShellSyntaxError as e:
            self.status = 2
            return Output(2, "", f"{self.name}: {e}\n")
        out, err, shown = [], [], []
        try:
            for and_or in script:
                for joiner, pipeline in and_or:
                    if joiner == "&&" and self.status != 0 or joiner == "||" and self.status == 0:
                        continue
                    result = self._pipeline(pipeline, stdin)
                    stdin = ""
                    out.append(result.stdout)
                    err.append(result.stderr)
                    shown.append(result.stderr + result.stdout)
                    self.status = result.code
        except ExitShell as e:
            self.status = e.code
            self.exited = e.code
        return Output(self.status, "".join(out), "".join(err), "".join(shown))

    def run_argv(self, argv: list[str], stdin: str = "") -> Output:
        """Run one command given as words (no parsing, as the kubelet's exec hands them over)."""
        try:
            return self._simple(argv, stdin)
        except ExitShell as e:
            return Output(e.code)

    def _pipeline(self, pipeline: list[Command], stdin: str) -> Output:
        data, err = stdin, []
        result = Output()
        for command in pipeline:
            result = self._command(command, data)
            data = result.stdout
            err.append(result.stderr)
        return Output(result.code, data, "".join(err))

    def _command(self, command: Command, stdin: str) -> Output:
        words: list[str] = []
        for word in command.words:
            words += self.expand(word)
        assignments: dict[str, str] = {}
        while words and _is_assignment(words[0]):
            name, _, value = words.pop(0).partition("=")
            assignments[name] = value
        if not words:
            self.variables.update(assignments)
            for name in assignments:
                if name in self.environ:
                    self.environ[name] = assignments[name]
            return Output(0)
        stdout_to: tuple[str, bool] | None = None
        stderr_to: tuple[str, bool] | None = None
        merge = False
        for op, target in command.redirects:
            path = self.path(" ".join(self.expand(target))) if target is not None else ""
            if op == "<":
                if path not in self.app.files:
                    return Output(1, "", f"{self.name}: can't open '{target and self.expand(target)[0]}': "
                                         f"No such file or directory\n")
                stdin = self.app.files[path]
            elif op in (">", ">>"):
                stdout_to = (path, op == ">>")
            elif op in ("2>", "2>>"):
                stderr_to = (path, op == "2>>")
            elif op == "&>":
                stdout_to = (path, False)
                merge = True
            elif op == "2>&1":
                merge = True
        saved = dict(self.environ)
        self.environ.update(assignments)
        try:
            result = self._simple(words, stdin)
        finally:
            if assignments:
                self.environ = {**saved, **{k: v for k, v in self.environ.items() if k not in assignments}}
        if merge:
            result = Output(result.code, result.stdout + result.stderr, "")
        if stdout_to is not None:
            self._write(stdout_to, result.stdout)
            result = Output(result.code, "", result.stderr)
        if stderr_to is not None:
            self._write(stderr_to, result.stderr)
            result = Output(result.code, result.stdout, "")
        return result

    def _write(self, target: tuple[str, bool], text: str) -> None:
        path, append = target
        if path == "/dev/null":
            return
        self.app.files[path] = (self.app.files.get(path, "") if append else "") + text

    def _simple(self, words: list[str], stdin: str) -> Output:
        name = words[0]
        handler = self.commands.get(posixpath.basename(name) if name.startswith("/") else name)
        if handler is None or (name.startswith("/") and not self.exists(name)):
            return Output(127, "", f"{self.name}: {name}: not found\n")
        return handler(self, words[1:], stdin)

    # --- expansion ---------------------------------------------------------------------------------------
    def lookup(self, name: str) -> str:
        """A variable's value ('' when unset)."""
        if name == "?":
            return str(self.status)
        if name == "$":
            return "1"
        if name == "PWD":
            return self.cwd
        return self.variables.get(name, self.environ.get(name, ""))

    def expand(self, word: Word) -> list[str]:
        """The fields one word expands to (unquoted expansions split on blanks)."""
        fields: list[str] = [""]
        any_quoted = False
        for text, quote in word.parts:
            if quote == "'":
                fields[-1] += text
                any_quoted = True
                continue
            value = self._substitute(text)
            if quote == '"':
                fields[-1] += value
                any_quoted = True
            elif "$" in text:
                pieces = value.split()
                if value[:1].isspace() and fields[-1]:
                    fields.append("")
                for k, p in enumerate(pieces):
                    if k:
                        fields.append("")
                    fields[-1] += p
                if value[-1:].isspace() and pieces:
                    fields.append("")
            else:
                fields[-1] += value
        if fields and fields[-1] == "" and len(fields) > 1:
            fields.pop()
        if fields == [""] and not any_quoted:
            return []
        return fields

    def _substitute(self, text: str) -> str:
        out, i = "", 0
        while i < len(text):
            ch = text[i]
            if ch == "\\" and text.startswith("\\$", i):
                out += "$"
                i += 2
                continue
            if ch != "$" or i + 1 >= len(text):
                out += ch
                i += 1
                continue
            nxt = text[i + 1]
            if nxt == "(":
                close = _matching_paren(text, i + 1)
                inner = Shell(self.app, self.commands, self.environ)
                inner.variables, inner.cwd = dict(self.variables), self.cwd
                result = inner.run(text[i + 2:close])
                out += result.stdout.rstrip("\n")
                i = close + 1
            elif nxt == "{":
                close = text.find("}", i)
                if close < 0:
                    raise ShellSyntaxError("syntax error: bad substitution")
                body = text[i + 2:close]
                name, sep, default = body.partition(":-")
                value = self.lookup(name)
                out += value if value or not sep else default
                i = close + 1
            elif nxt in "?$":
                out += self.lookup(nxt)
                i += 2
            elif nxt.isalnum() or nxt == "_":
                j = i + 1
                while j < len(text) and (text[j].isalnum() or text[j] == "_"):
                    j += 1
                out += self.lookup(text[i + 1:j])
                i = j
            else:
                out += ch
                i += 1
        return out

    # --- files ---------------------------------------------------------------------------------------------
    def path(self, name: str) -> str:
        """An absolute, normalised path for a name relative to the working directory."""
        if not name:
            return self.cwd
        if name.startswith("~"):
            name = self.environ.get("HOME", "/") + name[1:]
        return posixpath.normpath(posixpath.join(self.cwd, name)).replace("//", "/")

    def is_dir(self, path: str) -> bool:
        """Whether a path is a directory of the container's file system."""
        path = path.rstrip("/") or "/"
        if path == "/" or path in self.app.dirs:
            return True
        prefix = path + "/"
        return any(p.startswith(prefix) for p in self.app.files)

    def exists(self, path: str) -> bool:
        """Whether a path is a file or directory."""
        return path in self.app.files or self.is_dir(path)

    def listing(self, path: str) -> list[str]:
        """The names directly inside a directory, sorted."""
        prefix = path.rstrip("/") + "/"
        names = set()
        for p in [*self.app.files, *self.app.dirs]:
            if p.startswith(prefix) and len(p) > len(prefix):
                names.add(p[len(prefix):].split("/", 1)[0])
        return sorted(names)


def _is_assignment(word: str) -> bool:
    name, sep, _ = word.partition("=")
    return bool(sep) and bool(name) and (name[0].isalpha() or name[0] == "_") and \
        all(c.isalnum() or c == "_" for c in name)
