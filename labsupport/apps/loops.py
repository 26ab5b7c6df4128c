"""Containers whose command is an endless shell loop (`sh -c 'while true; do wget -qO- web; sleep 1; done'`):
what runs once at start, what runs each round, and how long a round takes on the cluster's clock."""
from __future__ import annotations

from dataclasses import dataclass

from labsupport.apps.shell import Command, Script, ShellSyntaxError, WhileLoop, parse

#: How long a round takes when its body never sleeps (a real one would spin; here it ticks once a second).
DEFAULT_PERIOD = 1.0


@dataclass(frozen=True)
class EndlessLoop:
    """A script ending in `while true|:; do BODY; done`: the commands before it, the body, seconds per round."""

    setup: Script
    body: Script
    period: float


def endless_loop(script: str) -> EndlessLoop | None:
    """The endless loop a container's script ends in, or None (it ends by itself, or does not parse)."""
    try:
        parsed = parse(script)
    except ShellSyntaxError:
        return None
    if not parsed or len(parsed[-1]) != 1 or len(parsed[-1][0][1]) != 1:
        return None
    loop = parsed[-1][0][1][0]
    if not isinstance(loop, WhileLoop) or loop.until or not _always_true(loop.condition):
        return None
    return EndlessLoop(parsed[:-1], loop.body, _sleeps(loop.body) or DEFAULT_PERIOD)


def _always_true(condition: Script) -> bool:
    if len(condition) != 1 or len(condition[0]) != 1 or len(condition[0][0][1]) != 1:
        return False
    command = condition[0][0][1][0]
    return isinstance(command, Command) and len(command.words) == 1 and \
        command.words[0].parts in ([("true", "")], [(":", "")])


def _sleeps(body: Script) -> float:
    """Seconds the body's top-level `sleep N` commands add up to."""
    total = 0.0
    for and_or in body:
        for _, pipeline in and_or:
            for command in pipeline:
                if isinstance(command, Command) and len(command.words) == 2 and \
                        command.words[0].parts == [("sleep", "")]:
                    try:
                        total += float("".join(text for text, _ in command.words[1].parts))
                    except ValueError:
                        continue
    return total
