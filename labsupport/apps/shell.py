"""A small POSIX-style command interpreter over a container's files, environment and network verbs.

It parses what `sh -c` and an interactive `kubectl exec -it POD -- sh` receive — quoting, `$VAR` / `${VAR}` /
`$?` / `$(cmd)` / `$((i + 1))` expansion, pipes, `;`, `&&`, `||`, `>`, `>>`, `<`, `2>&1`, `VAR=value`, `for`,
`while`, `until`, `if`/`elif`/`else`, `break`, `continue` — and runs each command
from the image's own set (see `labsupport.apps.images`), so a command the image lacks is `not found`, as it is.
"""
from __future__ import annotations

import ast
import operator
import posixpath
import re
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


@dataclass
class ForLoop:
    """`for NAME in WORDS; do BODY; done`."""

    name: str
    words: list[Word]
    body: "Script"


@dataclass
class WhileLoop:
    """`while COND; do BODY; done` (or `until`)."""

    condition: "Script"
    body: "Script"
    until: bool = False


@dataclass
class IfClause:
    """`if COND; then BODY; elif COND; then BODY; else BODY; fi`."""

    branches: list[tuple["Script", "Script"]]
    otherwise: "Script | None" = None


#: A script: and-or lists, each a list of (operator before it, pipeline of commands).
Script = list[list[tuple[str, list]]]
#: Words that start or end a compound command where a command may begin.
RESERVED = frozenset({"for", "while", "until", "if", "then", "elif", "else", "fi", "do", "done"})
#: How many rounds a loop may run: a shell here must not hold the cluster forever.
MAX_ROUNDS = 1000


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
    """Parse a script into and-or lists of pipelines of commands (simple ones, loops and ifs)."""
    parser = _Parser(_tokens(text))
    script = parser.script(frozenset())
    if parser.peek() is not None:
        raise ShellSyntaxError(f"syntax error: unexpected {_describe(parser.peek())}")
    return script


class _Parser:
    """Recursive descent over the tokens."""

    SEPARATORS = (";", "\n", "&", ";;")
    REDIRECTS = (">", ">>", "<", "2>", "2>>", "&>")

    def __init__(self, tokens: list):
        self.tokens = tokens
        self.i = 0

    def peek(self):
        return self.tokens[self.i] if self.i < len(self.tokens) else None

    def take(self):
        tok = self.peek()
        self.i += 1
        return tok

    def keyword(self) -> str | None:
        tok = self.peek()
        if isinstance(tok, Word) and len(tok.parts) == 1 and tok.parts[0][1] == "" and tok.parts[0][0] in RESERVED:
            return tok.parts[0][0]
        return None

    def expect(self, word: str) -> None:
        if self.keyword() != word:
            found = self.peek()
            raise ShellSyntaxError(f'syntax error: unexpected {_describe(found)} (expecting "{word}")')
        self.take()

    def newlines(self) -> None:
        while self.peek() == "\n":
            self.take()

    def script(self, until: frozenset) -> Script:
        out: Script = []
        while True:
            while self.peek() in self.SEPARATORS:
                self.take()
            if self.peek() is None or self.keyword() in until:
                return out
            out.append(self.and_or(until))

    def and_or(self, until: frozenset) -> list:
        items = [("", self.pipeline(until))]
        while self.peek() in ("&&", "||"):
            op = self.take()
            self.newlines()
            items.append((op, self.pipeline(until)))
        return items

    def pipeline(self, until: frozenset) -> list:
        commands = [self.command(until)]
        while self.peek() == "|":
            self.take()
            self.newlines()
            commands.append(self.command(until))
        return commands

    def command(self, until: frozenset):
        word = self.keyword()
        if word == "for":
            return self.for_loop()
        if word in ("while", "until"):
            self.take()
            condition = self.script(frozenset({"do"}))
            self.expect("do")
            body = self.script(frozenset({"done"}))
            self.expect("done")
            return WhileLoop(condition, body, until=word == "until")
        if word == "if":
            return self.if_clause()
        if word is not None:
            raise ShellSyntaxError(f'syntax error: unexpected "{word}"')
        command = Command()
        while True:
            tok = self.peek()
            if isinstance(tok, Word):
                command.words.append(self.take())
            elif tok in self.REDIRECTS:
                self.take()
                target = self.peek()
                if not isinstance(target, Word):
                    raise ShellSyntaxError(f"syntax error: unexpected {_describe(target)}")
                command.redirects.append((tok, self.take()))
            elif tok == "2>&1":
                command.redirects.append((self.take(), None))
            else:
                break
        if not command.words and not command.redirects:
            raise ShellSyntaxError(f"syntax error: unexpected {_describe(self.peek())}")
        return command

    def for_loop(self) -> ForLoop:
        self.take()
        name = self.take()
        if not isinstance(name, Word) or len(name.parts) != 1:
            raise ShellSyntaxError("syntax error: bad for loop variable")
        words: list[Word] = []
        self.newlines()
        if isinstance(self.peek(), Word) and self.peek().parts == [("in", "")]:
            self.take()
            while isinstance(self.peek(), Word):
                words.append(self.take())
        while self.peek() in self.SEPARATORS:
            self.take()
        self.expect("do")
        body = self.script(frozenset({"done"}))
        self.expect("done")
        return ForLoop(name.parts[0][0], words, body)

    def if_clause(self) -> IfClause:
        self.take()
        branches = []
        while True:
            condition = self.script(frozenset({"then"}))
            self.expect("then")
            body = self.script(frozenset({"elif", "else", "fi"}))
            branches.append((condition, body))
            if self.keyword() == "elif":
                self.take()
                continue
            break
        otherwise = None
        if self.keyword() == "else":
            self.take()
            otherwise = self.script(frozenset({"fi"}))
        self.expect("fi")
        return IfClause(branches, otherwise)


def _describe(token) -> str:
    if token is None:
        return "end of file"
    return f'"{token}"' if isinstance(token, str) else "word"


class ExitShell(Exception):
    """`exit N`; `output` carries what the script printed before it."""

    def __init__(self, code: int):
        super().__init__(code)
        self.code = code
        self.output: Output | None = None


class LoopControl(Exception):
    """`break` or `continue` inside a loop."""

    def __init__(self, kind: str):
        super().__init__(kind)
        self.kind = kind
        self.output: Output | None = None


def _joined(parts: list[Output], code: int) -> Output:
    return Output(code, "".join(p.stdout for p in parts), "".join(p.stderr for p in parts),
                  "".join(p.shown for p in parts))


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
        try:
            return self._script(script, stdin)
        except ExitShell as e:
            self.status = e.code
            self.exited = e.code
            done = e.output or Output()
            return Output(e.code, done.stdout, done.stderr, done.terminal)
        except LoopControl:
            return Output(self.status)

    def _script(self, script: Script, stdin: str = "") -> Output:
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
                    shown.append(result.shown if result.terminal is not None else result.stderr + result.stdout)
                    self.status = result.code
        except (ExitShell, LoopControl) as e:
            partial = e.output or Output()
            e.output = Output(self.status, "".join(out) + partial.stdout, "".join(err) + partial.stderr,
                              "".join(shown) + partial.shown)
            raise
        return Output(self.status, "".join(out), "".join(err), "".join(shown))

    def _compound(self, node, stdin: str) -> Output:
        parts: list[Output] = []
        if isinstance(node, IfClause):
            for condition, body in node.branches:
                parts.append(self._script(condition, stdin))
                if self.status == 0:
                    parts.append(self._script(body))
                    return _joined(parts, self.status)
            if node.otherwise is not None:
                parts.append(self._script(node.otherwise))
                return _joined(parts, self.status)
            return _joined(parts, 0)
        values = None
        if isinstance(node, ForLoop):
            values = [v for word in node.words for v in self.expand(word)]
        rounds = 0
        self.status = 0
        while True:
            if values is not None:
                if rounds >= len(values):
                    break
                self.variables[node.name] = values[rounds]
            else:
                check = self._script(node.condition, stdin)
                parts.append(check)
                if (self.status == 0) == node.until:
                    self.status = 0
                    break
            rounds += 1
            if rounds > MAX_ROUNDS:
                parts.append(Output(130, "", f"{self.name}: loop stopped after {MAX_ROUNDS} rounds\n"))
                return _joined(parts, 130)
            try:
                parts.append(self._script(node.body))
            except LoopControl as e:
                parts.append(e.output or Output())
                if e.kind == "break":
                    break
        return _joined(parts, self.status)

    def run_script(self, script: Script) -> Output:
        """Run an already parsed script; `exited` is set if it ran `exit`."""
        try:
            return self._script(script)
        except ExitShell as e:
            self.status = self.exited = e.code
            done = e.output or Output()
            return Output(e.code, done.stdout, done.stderr, done.terminal)
        except LoopControl:
            return Output(self.status)

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
            if isinstance(command, (ForLoop, WhileLoop, IfClause)):
                result = self._compound(command, data)
                if len(pipeline) == 1:
                    return result
            else:
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
            if text.startswith("$((", i):
                close = text.find("))", i)
                if close < 0:
                    raise ShellSyntaxError("syntax error: missing '))'")
                out += str(self.arithmetic(text[i + 3:close]))
                i = close + 2
            elif nxt == "(":
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

    def arithmetic(self, expression: str) -> int:
        """The value of `$(( … ))`: integers, variables, + - * / % and comparisons."""
        ops = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
               ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Lt: operator.lt, ast.LtE: operator.le,
               ast.Gt: operator.gt, ast.GtE: operator.ge, ast.Eq: operator.eq, ast.NotEq: operator.ne}

        def value(node) -> int:
            if isinstance(node, ast.Constant) and isinstance(node.value, int):
                return node.value
            if isinstance(node, ast.Name):
                text = self.lookup(node.id)
                return int(text) if text.lstrip("-").isdigit() else 0
            if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
                return -value(node.operand)
            if isinstance(node, ast.BinOp) and type(node.op) in ops:
                right = value(node.right)
                if isinstance(node.op, (ast.FloorDiv, ast.Mod)) and right == 0:
                    raise ShellSyntaxError("arithmetic: division by zero")
                return ops[type(node.op)](value(node.left), right)
            if isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in ops:
                return int(ops[type(node.ops[0])](value(node.left), value(node.comparators[0])))
            raise ShellSyntaxError(f"arithmetic syntax error: {expression.strip()}")

        text = re.sub(r"\$\{?(\w+)\}?", r"\1", expression).replace("/", "//").replace("////", "//")
        try:
            tree = ast.parse(text.strip() or "0", mode="eval")
        except SyntaxError as e:
            raise ShellSyntaxError(f"arithmetic syntax error: {expression.strip()}") from e
        return value(tree.body)

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
