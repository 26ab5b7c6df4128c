"""README.ru.md is the whole README in Russian, not a digest: every section, every command and code block, every
link of README.md is there."""
from __future__ import annotations

import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[2]
FENCE = re.compile(r"```(\w*)\n(.*?)```", re.S)
LINK = re.compile(r"\]\(([^)]+)\)")


def read(name: str) -> str:
    return (ROOT / name).read_text()


def code(block: str) -> list[str]:
    """A code block's lines without comments and trailing blanks (comments are prose, and get translated)."""
    return [line.split("  #")[0].split(" # ")[0].rstrip() for line in block.splitlines()]


def fenced(text: str) -> list[tuple[str, list[str]]]:
    """Every fenced block but the folder listings (their descriptions are prose): language and code."""
    return [(language, code(body)) for language, body in FENCE.findall(text) if language]


def test_the_russian_readme_has_every_section():
    english = re.findall(r"^## .+$", read("README.md"), re.M)
    russian = re.findall(r"^## .+$", read("README.ru.md"), re.M)
    assert len(russian) >= len(english), f"README.ru.md has {len(russian)} sections for README.md's {len(english)}"


def test_the_russian_readme_has_every_code_block():
    russian = fenced(read("README.ru.md"))
    missing = [block for block in fenced(read("README.md")) if block not in russian]
    assert not missing, f"code blocks of README.md missing from README.ru.md: {missing}"


def test_the_russian_readme_has_every_link_and_command():
    english, russian = read("README.md"), read("README.ru.md")
    links = set(LINK.findall(english)) - {"README.ru.md"}
    assert not links - set(LINK.findall(russian)), f"links missing: {sorted(links - set(LINK.findall(russian)))}"
    # A command up to its first placeholder (ASSIGNMENT may be spelled in Russian): `labsupport grade ЗАДАНИЕ`.
    commands = {re.split(r" [A-Z]{2,}\b", c)[0] for c in
                re.findall(r"`((?:labsupport|make|sudo|nbgrader|conda|pip|jupyter) [^`]*)`", english)}
    assert not {c for c in commands if f"`{c}" not in russian}, sorted(c for c in commands if f"`{c}" not in russian)
