"""The nft lexer: rule text (an `nft -f` transaction or `nft list ruleset` output) into tokens, and a cursor over them.

Errors name the line they are on (`RulesSyntaxError`), so a bad transaction points at what to fix.
"""
from __future__ import annotations

import bisect
import re

from labsupport.dataplane.netfilter import RulesSyntaxError

WHAT = "nft"
EOL = "\n"
_DURATION = re.compile(r"(\d+)(ms|d|h|m|s)")
_LEX = re.compile(r'"((?:[^"\\]|\\.)*)("?)|([{};,])|(#.*)|([^\s{};,"#]+)')


class Quoted(str):
    """A token that was a double-quoted string literal."""


def tokenize(text: str) -> tuple[list, list[int], list[str]]:
    """Split nft text into tokens (`{ } ; , \\n` stand alone; `#` starts a comment).

    Returns the tokens, the positions of the line-end tokens (to map a token back to its line) and the lines.
    """
    lines = text.splitlines()
    out: list = []
    eols: list[int] = []
    append = out.append
    for lineno, line in enumerate(lines, 1):
        for quoted, closed, punct, comment, word in _LEX.findall(line):
            if word:
                append(word)
            elif punct:
                append(punct)
            elif comment:
                break
            else:
                if not closed:
                    raise RulesSyntaxError(WHAT, lineno, line, "unterminated string")
                append(Quoted(quoted))
        eols.append(len(out))
        append(EOL)
    return out, eols, lines


def parse_duration(text: str) -> float:
    """`"10800s"`, `"3h"`, `"1d2h3m4s"` or a bare number of seconds → seconds."""
    if text.isdigit():
        return float(text)
    total, pos = 0.0, 0
    for m in _DURATION.finditer(text):
        if m.start() != pos:
            break
        value, unit = int(m.group(1)), m.group(2)
        total += value * {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400}[unit]
        pos = m.end()
    if pos != len(text) or not text:
        raise ValueError(f"not a duration: {text!r}")
    return total



class Cursor:
    """A position in the token list with the small helpers the parser needs."""

    def __init__(self, tokens: list, eols: list[int], lines: list[str]):
        self.tokens = tokens
        self.eols = eols
        self.lines = lines
        self.i = 0

    def lineno(self, index: int) -> int:
        """The 1-based line the token at `index` is on."""
        return bisect.bisect_left(self.eols, index) + 1

    def line(self, index: int) -> str:
        """The text of the line the token at `index` is on."""
        n = self.lineno(index)
        return self.lines[n - 1] if 0 < n <= len(self.lines) else ""

    def peek(self, k: int = 0):
        """The token k places ahead, or None at the end."""
        j = self.i + k
        return self.tokens[j] if j < len(self.tokens) else None

    def next(self):
        """Take the next token (an error at the end of input)."""
        tok = self.peek()
        if tok is None:
            raise self.error("unexpected end of input", self.tokens[-1] if self.tokens else None)
        self.i += 1
        return tok

    def expect(self, value: str):
        """Take the next token, which must be `value`."""
        tok = self.next()
        if tok != value:
            raise self.error(f"expected {value!r}, found {str(tok).strip() or 'end of line'!r}", tok)
        return tok

    def skip_eol(self) -> None:
        """Skip line ends and semicolons."""
        while self.peek() in (EOL, ";"):
            self.i += 1

    def skip_newlines(self) -> None:
        """Skip line ends."""
        while self.peek() == EOL:
            self.i += 1

    def error(self, detail: str, tok=None) -> RulesSyntaxError:
        """An error naming the line of `tok` (default: the current token)."""
        index = min(self.i, len(self.tokens) - 1)
        if tok is not None:
            for j in range(min(self.i, len(self.tokens) - 1), max(-1, self.i - 400), -1):
                if self.tokens[j] is tok:
                    index = j
                    break
        index = max(index, 0)
        return RulesSyntaxError(WHAT, min(self.lineno(index), max(len(self.lines), 1)), self.line(index), detail)
