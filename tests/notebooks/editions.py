"""The two editions of the series, English (`notebooks/`) and Russian (`notebooks/ru/`), as test parameters, and
what makes a Russian notebook the twin of an English one (the same code once strings and comments are set aside,
Russian prose); the Russian nbgrader course (`grading/ru/`) is held to the same.

A Russian lesson is expected for every English one, under the same file name. Until `notebooks/ru/` holds it, its
tests skip with the reason; under CI (the lessons are there before CI runs) they fail instead.
"""
from __future__ import annotations

import io
import pathlib
import re
import tokenize
from dataclasses import dataclass

import pytest

from labsupport.testing import require

ROOT = pathlib.Path(__file__).resolve().parents[2]
NOTEBOOKS = ROOT / "notebooks"


@dataclass(frozen=True)
class Edition:
    """One language's lessons: their folder and the skeleton's headings, in order."""

    language: str
    folder: pathlib.Path
    sections: tuple[str, ...]


ENGLISH = Edition("en", NOTEBOOKS, ("**Goals**", "## Try it", "## Self-check", "## Summary", "## Next"))
RUSSIAN = Edition("ru", NOTEBOOKS / "ru", ("**Цели**", "## Попробуй", "## Самопроверка", "## Итоги", "## Дальше"))
EDITIONS = (ENGLISH, RUSSIAN)
LESSON_GLOB = "[0-9][0-9]-*.ipynb"
#: The one line a Russian lesson adds: its first code cell chooses the language of what labsupport prints.
LANGUAGE_LINE = "%env LABSUPPORT_LANG=ru"
CYRILLIC = re.compile(r"[А-Яа-яЁё]")
LATIN = re.compile(r"[A-Za-z]")


def code_shape(source: str) -> list[str]:
    """The code's tokens with every string literal and comment set aside (and the language line dropped)."""
    lines = [line for line in source.splitlines() if line.strip() != LANGUAGE_LINE]
    out = []
    for tok in tokenize.generate_tokens(io.StringIO("\n".join(lines) + "\n").readline):
        if tok.type in (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT,
                        tokenize.ENDMARKER):
            continue
        out.append("<str>" if tok.type == tokenize.STRING else tok.string)
    return out


def prose(markdown: str) -> str:
    """A markdown cell's words: without fenced code, inline code, links' targets, HTML tags and tables' pipes."""
    text = re.sub(r"```.*?```", " ", markdown, flags=re.S)
    text = re.sub(r"`[^`]*`", " ", text)
    text = re.sub(r"\]\([^)]*\)", "]", text)
    return re.sub(r"<[^>]+>", " ", text)


def is_russian(markdown: str) -> bool:
    """Whether a cell's prose is Russian: most of its letters outside code are Cyrillic (terms stay English)."""
    words = prose(markdown)
    cyrillic, latin = len(CYRILLIC.findall(words)), len(LATIN.findall(words))
    if cyrillic + latin < 40:
        return cyrillic > 0 or latin == 0 or not re.search(r"\b(the|and|is|of|to)\b", words, re.I)
    return cyrillic >= 0.5 * (cyrillic + latin)


def lessons(edition: Edition) -> list[pathlib.Path]:
    """The edition's lessons: the English ones found, the Russian twin of each English one (found or not)."""
    english = sorted(NOTEBOOKS.glob(LESSON_GLOB))
    if edition is ENGLISH:
        return english
    return sorted({edition.folder / p.name for p in english} | set(edition.folder.glob(LESSON_GLOB)))


def lesson_params(*editions: Edition) -> list:
    """pytest parameters (edition, path) for every lesson of `editions`; English ids stay the lesson's stem."""
    return [pytest.param(e, path, id=path.stem if e is ENGLISH else f"{e.language}-{path.stem}")
            for e in editions for path in lessons(e)]


def require_lesson(path: pathlib.Path) -> None:
    """Skip (or, under CI, fail) when a lesson of an edition is not there yet."""
    require([] if path.exists() else [f"{path.relative_to(ROOT)} (the Russian edition lands in notebooks/ru/)"],
            "Russian edition")


def require_edition(edition: Edition) -> None:
    """Skip (or, under CI, fail) when an edition's folder has no lesson yet."""
    present = edition.folder.is_dir() and any(edition.folder.glob(LESSON_GLOB))
    require([] if present else [f"lessons in {edition.folder.relative_to(ROOT)}/"], f"{edition.language} edition")


def errors_on_netns(path: pathlib.Path, tmp_path: pathlib.Path) -> list[tuple[str, str, str]]:
    """Run a lesson top to bottom on the netns backend (the environment chooses it and its options); return each
    failed cell's start, error name and message. Whatever the lesson left in the kernel is cleaned up."""
    import nbformat
    from nbclient import NotebookClient
    from labsupport.testing import require_kernel
    require_kernel("nft", "iptables-restore", "conntrack", "curl", "nslookup")
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, kernel_name="python3", timeout=300, resources={"metadata": {"path": str(tmp_path)}})
    diagnosis = nbformat.v4.new_code_cell(DIAGNOSIS)

    async def diagnose(cell, cell_index, execute_reply):
        """While the kernel that failed is still up: what the cluster and the data plane looked like."""
        client.on_cell_error = None       # once: a failing diagnosis must not diagnose itself
        try:
            await client.async_execute_cell(diagnosis, len(nb.cells), execution_count=None)
        except Exception as e:  # noqa: BLE001 - the diagnosis must not hide the failure it describes
            diagnosis.outputs.append(nbformat.v4.new_output("stream", name="stderr", text=f"no diagnosis: {e}"))

    client.on_cell_error = diagnose
    try:
        client.execute()
    except Exception:
        text = "".join(o.get("text", "") for o in diagnosis.outputs if o.output_type == "stream")
        print(f"--- {path.name}: the cluster when the cell failed ---\n{text}")
        raise
    finally:
        from labsupport.netns.machine import clean
        clean()
    return [(c.source[:200], o.get("ename", ""), o.get("evalue", ""))
            for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]


#: Run in a lesson's kernel when one of its cells fails on netns: what a test failure report needs to explain it.
DIAGNOSIS = """
for name in ("reply", "replies", "trace"):
    if name in globals():
        print(f"{name} = {globals()[name]!r}"[:2000])
print(lab.kubectl("get nodes,pods,svc,endpointslices -o wide", show=False).stdout)
backend = lab._backend
upstream = getattr(backend, "upstream", None)
nodes = sorted(upstream.nodes) if upstream is not None else []
for node in nodes:   # every node's state first: a report may be cut short
    kube_proxy = upstream.nodes[node].kube_proxy
    print(f"== {node}: sync state {kube_proxy.sync_state()}, changes received {kube_proxy.changes_received()}")
    print("\\n".join(kube_proxy.log().splitlines()[-12:]))
for node in nodes:
    print(f"== {node}: the rules kube-proxy wrote (the end)")
    print(upstream.nodes[node].kube_proxy.rules()[-3000:])
"""
