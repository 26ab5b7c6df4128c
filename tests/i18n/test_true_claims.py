"""What both editions say about upstream stays true: each claim once found false (checked against the Kubernetes
v1.37.2 source the project builds and sig-scalability's SLO list) is looked for, in English and in Russian, in the
lessons, their READMEs, the course's texts and labsupport's messages. Each rule is held to an example of the false
sentence it must catch and of the true one that replaced it, which it must spare."""
from __future__ import annotations

import ast
import json
import pathlib
import re
from dataclasses import dataclass

import pytest

from labsupport.locale import ru

ROOT = pathlib.Path(__file__).resolve().parents[2]
#: Something said about upstream's behaviour that must also name the case it holds in.
MODES = re.compile(r"iptables|nftables|IPVS|kube-ipvs0")


@dataclass(frozen=True)
class Claim:
    """A false statement: the pattern that finds it, a sentence it must catch, one it must spare, and why."""

    name: str
    pattern: re.Pattern
    caught: tuple[str, ...]
    spared: tuple[str, ...]
    why: str
    unless: re.Pattern | None = None     # in the same sentence, this makes it true


def claim(name, pattern, caught, spared, why, unless=None) -> Claim:
    return Claim(name, re.compile(pattern, re.I | re.S), tuple(caught), tuple(spared), why,
                 re.compile(unless, re.I) if unless else None)


CLAIMS = (
    claim("kube-proxy rewrites packets",
          r"kube-proxy\s+(?:re)?writes\s+(?:the\s+)?packets|"
          r"\b(?:packets?|it)\b[^.;]{0,60}\b(?:rewritten|DNATed)\s+by\s+kube-proxy|"
          r"переписывает\s+kube-proxy|kube-proxy\s+(?:пере)?пишет\s+(?:пакет|адрес)",
          ["kube-proxy rewrites packets sent to it.", "пакеты, отправленные на него, переписывает kube-proxy."],
          ["the kernel rewrites packets sent to it, following the rules kube-proxy writes.",
           "пакеты к нему переписывает ядро по правилам, которые пишет kube-proxy."],
          "kube-proxy writes rules; the kernel rewrites the packets (lesson 04)."),
    claim("no node carries a ClusterIP",
          r"no pod (?:or|and|nor) (?:on )?(?:no )?node|ни (?:на )?одном поде\W+(?:и )?ни (?:на )?одной ноде|"
          r"ни (?:на )?поде, ни (?:на )?ноде|ни под, ни нода|ни поду, ни ноде",
          ["None does: it is on no pod and on no node.", "адрес не висит ни на одном поде и ни на одной ноде.",
           "им не владеет ни под, ни нода"],
          ["In iptables and nftables mode the address is on no pod and on no node.",
           "в режимах iptables и nftables его нет ни на одном поде и ни на одной ноде"],
          "IPVS mode puts every ClusterIP on kube-ipvs0 on every node: say which modes you mean.",
          unless=MODES.pattern),
    claim("kube-proxy never reads back, resyncs only at start or after an error",
          r"(?:does not|never)\s+read\w*[^.;]{0,30}\brules\s+back|at start-up or after an error|"
          r"обратно не перечитывает|на старте или после ошибки",
          ["It does not read the kernel's rules back to compare them", "Правила ядра он обратно не перечитывает",
           "при полной ресинхронизации: на старте или после ошибки"],
          ["It never compares the rules in the kernel with what it wrote.",
           "Всё целиком он переписывает на старте, после неудачной синхронизации, … и раз в час"],
          "it reads back its chains (iptables-save / the nft table), and fully syncs hourly (FullSyncPeriod = 1 h), "
          "after a failure, on a topology change and when KUBE-PROXY-CANARY is gone."),
    claim("a headless Service publishes every address",
          r"publish(?:es)?\s+(?:every|all)\s+(?:the\s+)?address|публику\w*\s+все\s+адреса",
          ["the headless Service that governs them publishes every address, ready or not",
           "headless-сервис, который ими управляет, публикует все адреса — готовые или нет"],
          ["So the headless Service often sets this field: then DNS lists every pod, ready or not.",
           "тогда DNS отдаёт все поды, и готовые, и неготовые"],
          "only with publishNotReadyAddresses: true; by default DNS lists the ready pods."),
    claim("a terminating endpoint is never ready",
          r"never\s+ready|ready\s+не\s+бывает",
          ["a terminating endpoint is never ready", "terminating-эндпоинт ready не бывает никогда"],
          ["unless its Service sets publishNotReadyAddresses, a terminating endpoint is never ready"],
          "publishNotReadyAddresses makes every endpoint ready, terminating or not.",
          unless="publishNotReadyAddresses"),
    claim("a restart gives a pod a new IP",
          r"(?:restart|рестарт|перезапуск)\w*[^.;]{0,80}\b(?:new|chang\w*|нов\w*|меня\w*)\s+(?:\w+\s+){0,2}IP|"
          r"\b(?:new|нов\w*)\s+IP[^.;]{0,40}(?:restart|рестарт)|every restart|каждый рестарт|при рестарте",
          ["every restart, rollout or scale event creates pods with new IPs",
           "каждый рестарт, выкатка или скейл даёт поды с новыми IP", "IP пода меняется при рестарте"],
          ["(a container restarting inside its pod keeps the IP)",
           "контейнер, перезапущенный внутри пода, IP сохраняет"],
          "a container restarts inside its pod and keeps the IP; a new pod gets a new one.",
          unless=r"container|контейнер"),
    claim("no official SLO number",
          r"no official SLO|официального SLO",
          ["there is no official SLO number", "Официального SLO-числа для него нет"],
          ["The SLO list of sig-scalability names it, but as work in progress, with no target number yet.",
           "В списке SLO группы sig-scalability она есть, но в статусе WIP и пока без целевого числа."],
          "sig-scalability's SLO list has it, WIP, target X; 30 s is clusterloader2's default threshold."),
)


# --- what is read -----------------------------------------------------------------------------------------------------
def markdown_prose(text: str) -> str:
    """Markdown without fenced code (inline code kept: the claims name fields)."""
    return re.sub(r"```.*?```", " ", text, flags=re.S)


def strings(source: str) -> list[str]:
    """The string literals of Python source (a notebook's magics set aside)."""
    code = "\n".join("" if line.lstrip().startswith(("%", "!")) else line for line in source.split("\n"))
    return [node.value for node in ast.walk(ast.parse(code)) if isinstance(node, ast.Constant)
            and isinstance(node.value, str)]


def texts() -> list[tuple[str, str]]:
    """(where, text) of everything both editions say: lessons, READMEs, the course's texts, the catalog."""
    out = []
    for path in sorted(ROOT.glob("notebooks/*.ipynb")) + sorted(ROOT.glob("notebooks/ru/*.ipynb")):
        for cell in json.loads(path.read_text())["cells"]:
            source = "".join(cell["source"])
            parts = [markdown_prose(source)] if cell["cell_type"] == "markdown" else strings(source)
            out += [(f"{path.relative_to(ROOT)} {cell['id']}", part) for part in parts]
    for name in ("README.md", "README.ru.md", "notebooks/README.md", "notebooks/ru/README.md", "grading/README.md",
                 "grading/ru/README.md", "grading/RUBRICS.md", "grading/ru/RUBRICS.md"):
        out.append((name, markdown_prose((ROOT / name).read_text())))
    for path in sorted(ROOT.glob("grading/assignments/*.py")) + sorted(ROOT.glob("grading/assignments/ru/*.py")):
        out += [(str(path.relative_to(ROOT)), s) for s in strings(path.read_text())]
    out += [("labsupport/locale/ru.py", text) for pair in ru.MESSAGES.items() for text in pair]
    return out


def sentences(text: str) -> list[str]:
    """A text cut into sentences (a line break inside a sentence is a space)."""
    flat = re.sub(r"\s+", " ", text)
    return [s for s in re.split(r"(?<=[.!?;])\s+(?=[A-ZА-ЯЁ*`(«\"-])|\n", flat) if s.strip()]


def false_sentences(rule: Claim, text: str) -> list[str]:
    """The sentences of `text` that say the false claim."""
    return [s for s in sentences(text) if rule.pattern.search(s) and not (rule.unless and rule.unless.search(s))]


# --- tests ------------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("rule", CLAIMS, ids=lambda r: "-".join(r.name.split()[:4]))
def test_the_rule_catches_the_false_sentence_and_spares_the_true_one(rule):
    assert all(false_sentences(rule, s) for s in rule.caught), [s for s in rule.caught if not false_sentences(rule, s)]
    assert not [s for s in rule.spared if false_sentences(rule, s)]


@pytest.mark.parametrize("rule", CLAIMS, ids=lambda r: "-".join(r.name.split()[:4]))
def test_no_edition_says_it(rule):
    found = [f"{where}: «{s.strip()[:160]}»" for where, text in texts() for s in false_sentences(rule, text)]
    assert not found, f"{rule.name} — not true: {rule.why}\n" + "\n".join(found)


def lesson(edition: str, stem: str) -> dict:
    folder = ROOT / "notebooks" / ("ru" if edition == "ru" else "")
    return json.loads(next(folder.glob(f"{stem}*.ipynb")).read_text())


def prose(nb: dict) -> str:
    return "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")


@pytest.mark.parametrize("edition, hourly", [("en", "once an hour"), ("ru", "раз в час")])
def test_lesson_04_says_when_kube_proxy_rewrites_everything(edition, hourly):
    text = re.sub(r"\s+", " ", prose(lesson(edition, "04-")))
    assert hourly in text and "KUBE-PROXY-CANARY" in text and ("iptables-save" in text)


#: Number words up to ten, as a lesson's goals say them.
NUMBERS = {"en": ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten"],
           "ru": ["ноль", "один", "два", "три", "четыре", "пять", "шесть", "семь", "восемь", "девять", "десять"]}


@pytest.mark.parametrize("edition", ["en", "ru"])
def test_lesson_08_counts_its_surprises_right(edition):
    nb = lesson(edition, "08-")
    sections = len(re.findall(r"^## \d+\.", prose(nb), re.M))
    goals = "".join(nb["cells"][0]["source"])
    items = len(re.findall(r"^\d+\. ", goals, re.M))
    head = next(line for line in goals.splitlines() if line.startswith("**"))     # **Goals** — recognise six …
    said = [n for n, word in enumerate(NUMBERS[edition]) if re.search(rf"\b{word}\b", head, re.I)]
    assert sections == items == 6 and said == [sections], (sections, items, said)
