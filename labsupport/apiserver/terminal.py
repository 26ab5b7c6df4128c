"""An interactive shell on a TTY, as `kubectl exec -it POD -- sh` meets it: the terminal's line discipline (echo,
backspace, Ctrl-C, Ctrl-D, CR to NL) in front of the container's shell, with the image's prompt."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

CTRL_C, CTRL_D, CTRL_U, BACKSPACE, DELETE = 0x03, 0x04, 0x15, 0x08, 0x7F


@dataclass
class LineDiscipline:
    """Turns the keys a terminal sends into what it echoes and the lines it completes."""

    buffer: bytearray = field(default_factory=bytearray)
    escape: bool = False

    def feed(self, data: bytes) -> tuple[bytes, list[str | int]]:
        """Echo for `data`, and what happened: a finished line (str), CTRL_C or CTRL_D (int)."""
        echo = bytearray()
        events: list[str | int] = []
        for byte in data:
            if self.escape:
                # an ANSI escape sequence (arrow keys): dropped up to its final letter
                if chr(byte).isalpha() or byte == 0x7E:
                    self.escape = False
                continue
            if byte == 0x1B:
                self.escape = True
            elif byte in (0x0D, 0x0A):
                echo += b"\r\n"
                events.append(self.buffer.decode("utf-8", errors="replace"))
                self.buffer.clear()
            elif byte in (BACKSPACE, DELETE):
                if self.buffer:
                    self.buffer.pop()
                    echo += b"\b \b"
            elif byte == CTRL_C:
                echo += b"^C\r\n"
                self.buffer.clear()
                events.append(CTRL_C)
            elif byte == CTRL_D:
                if not self.buffer:
                    events.append(CTRL_D)
            elif byte == CTRL_U:
                echo += b"\b \b" * len(self.buffer)
                self.buffer.clear()
            elif byte >= 0x20 or byte == 0x09:
                self.buffer.append(byte)
                echo.append(byte)
        return bytes(echo), events


def prompt(style: str, cwd: str, home: str, hostname: str = "") -> str:
    """The prompt a root shell shows: busybox ash `/ # ` (the directory, `~` at home), bash
    `root@HOST:/# `, dash `# `."""
    where = "~" if cwd == home else cwd
    if style == "ash":
        return where + " # "
    if style == "bash":
        return f"root@{hostname}:{where}# "
    return "# "


def to_terminal(text: str) -> bytes:
    """Output as a TTY delivers it (NL becomes CR NL)."""
    return text.replace("\r\n", "\n").replace("\n", "\r\n").encode()


class InteractiveShell:
    """One interactive session: feed it the client's keys, it answers what the terminal shows."""

    def __init__(self, shell, style: str, run: Callable[[Callable[[], object]], object] | None = None):
        self.shell = shell
        self.style = style
        self.keys = LineDiscipline()
        self.run = run or (lambda f: f())
        self.exit_code: int | None = None

    def prompt(self) -> bytes:
        """The prompt for the next line."""
        return prompt(self.style, self.shell.cwd, self.shell.environ.get("HOME", "/root"),
                      self.shell.app.hostname).encode()

    def feed(self, data: bytes) -> bytes:
        """What the terminal shows after these keys; `exit_code` is set once the shell has ended."""
        echo, events = self.keys.feed(data)
        out = bytearray(echo)
        for event in events:
            if self.exit_code is not None:
                break
            if event == CTRL_D:
                out += b"\r\n" if self.keys.buffer else b""
                self.exit_code = self.shell.status
                break
            if event == CTRL_C:
                self.shell.status = 130
                out += self.prompt()
                continue
            result = self.run(lambda line=event: self.shell.run(line))
            out += to_terminal(result.shown)
            if self.shell.exited is not None:
                self.exit_code = self.shell.exited
                break
            out += self.prompt()
        return bytes(out)
