"""The TTY line discipline in front of an interactive container shell."""
from __future__ import annotations

from labsupport.apiserver.terminal import CTRL_C, CTRL_D, LineDiscipline, prompt


def test_echo_backspace_and_lines():
    keys = LineDiscipline()
    echo, events = keys.feed(b"lsx\x7f -l\r")
    assert echo == b"lsx\b \b -l\r\n" and events == ["ls -l"]


def test_interrupt_and_end_of_input():
    keys = LineDiscipline()
    echo, events = keys.feed(b"sleep 9\x03\x04")
    assert echo == b"sleep 9^C\r\n" and events == [CTRL_C, CTRL_D]
    assert keys.feed(b"ab\x04")[1] == []  # Ctrl-D with text on the line does nothing


def test_arrow_keys_are_dropped():
    assert LineDiscipline().feed(b"a\x1b[Ab\r") == (b"ab\r\n", ["ab"])


def test_prompts():
    assert prompt("ash", "/", "/root") == "/ # " and prompt("ash", "/root", "/root") == "~ # "
    assert prompt("bash", "/etc", "/root", "web-1") == "root@web-1:/etc# " and prompt("dash", "/", "/root") == "# "
