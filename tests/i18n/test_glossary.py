"""The Russian edition keeps to its glossary (`notebooks/ru/GLOSSARY.md`): no variant it forbids appears in what a
student reads — the lessons, the course's translations, the catalog, README.ru.md — while code, YAML and field names
are left alone; the glossary's examples and these patterns agree, and lessons name the picture's buttons by the labels
the picture shows."""
from __future__ import annotations

import ast
import io
import json
import pathlib
import re
import tokenize
from dataclasses import dataclass

import pytest

from labsupport.locale import ru

ROOT = pathlib.Path(__file__).resolve().parents[2]
GLOSSARY = ROOT / "notebooks" / "ru" / "GLOSSARY.md"
CATALOG = ROOT / "labsupport" / "locale" / "ru.py"
CYRILLIC = re.compile(r"[А-Яа-яЁё]")
#: Russian prepositions, determiners and words asking the genitive after which «Service» would have to be declined:
#: prose, not the kind's name.
_BEFORE_DECLINED = (r"(?<![\w.-])(?i:у|к|ко|на|в|во|за|для|от|с|со|о|об|обо|из|при|по|перед|без|через|до|после|"
                    r"между|над|под|(?:одн|эт|кажд|сво|люб)(?:ого|ому|им|ым|ом|ём)|нескольких|[1-9]\d*k?|"
                    r"(?:как|чь)(?:ого|ому|им|ем|ём)-(?:то|либо|нибудь)|нет|а не|ни одного|всех|слайс(?:ы|ов|ах|ам)?)")


@dataclass(frozen=True)
class Rule:
    """One forbidden variant: the pattern that finds it and what the glossary says to write instead."""

    pattern: re.Pattern
    write: str


def rule(pattern: str, write: str) -> Rule:
    return Rule(re.compile(pattern), write)


#: The glossary's «не пишем» column as patterns (the tests below hold the two to each other).
RULES: tuple[Rule, ...] = (
    rule(r"\bService['’-](?:ов|а|у|ом|ы|е|ам|ами|ах)\b", "«сервис», склоняя: сервиса, сервису, сервисом, сервисов"),
    rule(r"(?i:\bпорт\w*)\s+Service\b(?!['’-])", "«порт сервиса»"),
    rule(_BEFORE_DECLINED + r"\s+Service\b(?!['’-])", "«сервис» в нужном падеже: «у сервиса», «к сервису»"),
    rule(r"[Кк]артинк", "«схема»"),
    rule(r"[Лл]аборатори", "«стенд»"),
    rule(r"[Лл]ейбл", "«метки» (`labels`, когда имеется в виду поле)"),
    rule(r"\bselector['’-]\w", "«селектор», «селектора» (`selector`, когда имеется в виду поле)"),
    rule(r"[Аа]лгоритм\w* балансировки", "«планировщик (scheduler)»"),
    rule(r"(?i:verdict map)", "«verdict-карта»"),
    rule(r"(?i:health check)['’-]\w", "«проверка работоспособности (health check)»"),
    rule(r"[Пп]роверк\w* здоровья", "«проверка работоспособности»"),
    rule(r"(?i:readiness probe)|readiness проб|[Пп]роб\w* readiness", "«readiness-проба» (`readinessProbe` для поля)"),
    rule(r"[Рр]антайм", "«среда выполнения»"),
    rule(r"[«\"*]нагрузк\w*[»\"*]", "«рабочая нагрузка» или вид объекта (Deployment)"),
    rule(r"[Оо]ткат\w*ся\b", "«переходит на…», «по умолчанию берёт…»"),
    rule(r"(?<![\w-])[Пп]лоск(?!ост)\w*", "скажи, что имеется в виду: «без NAT между подами», «не растёт»"),
    rule(r"[Сс]овпад\w*(?:\s+\S+){0,3}?\s+правил", "«попадает под правило»"),
    rule(r"\bна ядро\b(?! процессора)", "«на каждое ядро процессора» или перефразируй"),
    rule(r"(?i:deprecated)\s+(?:начиная\s+)?с\b", "«объявлен устаревшим (deprecated) в 1.35»"),
    rule(r"\bGA\s+(?:начиная\s+)?с\b", "«стал GA в 1.33»"),
    rule(r"[Вв]оспроизвести каждую|\b[Гг]рабл(?:ю|я|е)\b", "«грабли» (только множественное число)"),
    rule(r"не переносит пакет", "«kube-proxy не проксирует трафик через себя»"),
    rule(r"[Сс]табильн\w* идентичност", "«постоянные имена», «стабильное DNS-имя»"),
    rule(r"\bcurl-(?:ом|а|у|е)\b", "«curl'ом»"),
    rule(r"(?<![\w=(\[])\"[А-Яа-яЁё][^\"\n]*\"(?!\w)", "«ёлочки»"),
    rule(r"\(\d+ б\.\)", "«(3 балла)», «(1 балл)», «(5 баллов)»"),
    rule(r"[«*](?:[Мм]асштаб|вперёд на 5 с|проектор|отправить)[»*]", "надпись, которую показывает схема"),
    rule(r"[«*](?:scale|delete pod|break readiness|mend readiness|send request|advance 5 s|presenter)[»*]",
         "русская надпись, которую показывает схема"),
    rule(r"\b[Вв]ыборы\b", "«выбранные варианты»"),
    rule(r"[Сс]лучайн\w* вероятност", "«вероятности 1/N»"),
    rule(r"пропуска\w* ноды без", "«обходят ноды без…», «не шлют трафик на ноды без…»"),
    rule(r"[Мм]анифест команды", "«манифест» или «команда»: что именно имеется в виду"),
    rule(r"под, которого держит", "«под, который держит»"),
    rule(r"[Зз]апрос\w* curl\b(?!['’])", "«постучись curl'ом на эту ноду»"),
    rule(r"чьи поды на других нодах", "«на ноду, где нет подов сервиса»"),
    rule(r"[Лл]атентност", "«задержка»: «стоит денег и добавляет задержку»"),
    rule(r"[Сс]оздан\w*\s.{0,80}?из исходных ноутбуков", "«собран из ноутбуков `source/`»"),
    rule(r"выключ\w* ноутбук", "«когда ты остановишь ядро ноутбука (Kernel ▸ Shut Down Kernel)»"),
    rule(r"\b[Уу]зл(?:а|у|ом|е|ы|ов|ам|ами|ах)\b|\b[Уу]зел\b", "«нода»"),
    rule(r"(?:[Сс]писок|[Ии]мя|[Оо]тчёт по)\s+класса|[Цц]ел\w+ класс|[Кк]ласс на одно", "«группа»"),
    rule(r"[Мм]ежзонов", "«межзональный»"),
    rule(r"(?i:keep-alive)\s+соединени", "«keep-alive-соединение»"),
    rule(r"(?<!\()\breal servers?\b", "«реальный сервер (real server)»"),
    rule(r"[Оо]тмасштабир", "«отскейлить»"),
    rule(r"[Рр]ендер", "«генераторы правил kube-proxy», «правила, которые записал бы kube-proxy»"),
    rule(r"управляющ\w* headless|headless-сервис, который ими управляет", "«headless-сервис из `serviceName`»"),
    rule(r"(?<![\w.])\d+k\b", "«5 тыс.», «5000»"),
    rule(r"исходн\w* урок|манифест из урока|что в уроке\b|упражнени\w* урока|в уроке это",
         "«классический манифест», «обычно это делают так»: урок — это этот урок"),
    rule(r"примени\w* поле", "«задай поле кодом»"),
    rule(r"[Кк]оманда подготовил", "«коллеги подготовили»"),
    rule(r"[Мм]атч(?:ит|ат|ится|ятся)|ipset['’]\w", "«сверяются с наборами ipset»"),
    rule(r"\bпод номером\b", "«с порядковым номером»"),
)


# --- what a student reads, line by line ------------------------------------------------------------------------------
@dataclass(frozen=True)
class Line:
    """One line of student-facing text and where it is: `path:line`, or `path cell N:line` in a notebook."""

    where: str
    text: str


def prose(text: str) -> list[str]:
    """Markdown's lines with fenced code, inline code and links' targets blanked (line numbers kept)."""
    out, fenced = [], False
    for line in text.split("\n"):
        if line.lstrip().startswith("```"):
            fenced = not fenced
            out.append("")
            continue
        if fenced:
            out.append("")
            continue
        line = re.sub(r"`[^`]*`", " ", line)
        out.append(re.sub(r"\]\([^)]*\)", "]", line))
    return out


def code_spans(source: str) -> list[tuple[tuple[int, int], tuple[int, int]]]:
    """Where the values of `code={…}` dicts are: the course's translations of code fragments (Python, not prose)."""
    spans = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.keyword) and node.arg == "code" and isinstance(node.value, ast.Dict):
            spans.extend(((v.lineno, v.col_offset), (v.end_lineno, v.end_col_offset)) for v in node.value.values)
    return spans


def python_text(source: str) -> list[tuple[int, str]]:
    """Russian strings and comments of Python source (1-based line, text); code, English keys and YAML keys skipped.

    Strings are read as markdown (a translated text may hold fenced or inline code), a translated code fragment
    (`code={…}` in `grading/assignments/ru`) as Python again; notebook magics are skipped.
    """
    lines = ["" if line.lstrip().startswith(("%", "!")) else line for line in source.split("\n")]
    source = "\n".join(lines) + "\n"
    fragments = code_spans(source)
    out = []
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if not CYRILLIC.search(tok.string):
            continue
        if tok.type == tokenize.COMMENT:
            out.append((tok.start[0], tok.string.lstrip("#")))
        elif tok.type == tokenize.STRING:
            literal = re.sub(r"^[fFrRuU]{1,2}(?=['\"])", lambda m: m.group().replace("f", "").replace("F", ""),
                             tok.string)
            value = ast.literal_eval(literal)
            if any(start <= tok.start and tok.end <= end for start, end in fragments):
                try:
                    found = python_text(value)
                except (SyntaxError, tokenize.TokenError):   # one piece of a fragment split over string literals
                    found = [(i + 1, text) for i, text in enumerate(prose(value))]
                out.extend((tok.start[0] + i - 1, text) for i, text in found)
            else:
                out.extend((tok.start[0] + i, text) for i, text in enumerate(prose(value)))
    return out


def student_lines(path: pathlib.Path) -> list[Line]:
    """Every line of student-facing text in one scanned file."""
    name = path.relative_to(ROOT).as_posix()
    if path.suffix == ".md":
        return [Line(f"{name}:{i}", text) for i, text in enumerate(prose(path.read_text()), 1)]
    if path.suffix == ".py":
        return [Line(f"{name}:{i}", text) for i, text in python_text(path.read_text())]
    out = []
    for n, cell in enumerate(json.loads(path.read_text())["cells"]):
        source = "".join(cell["source"])
        numbered = (enumerate(prose(source), 1) if cell["cell_type"] == "markdown" else python_text(source))
        out.extend(Line(f"{name} cell {n}:{i}", text) for i, text in numbered)
    return out


def scanned_files() -> list[pathlib.Path]:
    """What the forbidden list is checked in: the Russian lessons and their READMEs (not the glossary itself), the
    course's translations, the catalog and README.ru.md."""
    lessons = [p for p in sorted((ROOT / "notebooks" / "ru").glob("*")) if p.suffix in (".ipynb", ".md")
               and p != GLOSSARY]
    return [*lessons, *sorted((ROOT / "grading" / "assignments" / "ru").glob("*.py")), CATALOG,
            ROOT / "README.ru.md"]


def hits(lines: list[Line]) -> list[str]:
    """`where: «found» → write …` for every forbidden variant in the lines."""
    return [f"{line.where}: «{m.group().strip()}» → {r.write}"
            for line in lines for r in RULES for m in r.pattern.finditer(line.text)]


# --- the glossary's tables --------------------------------------------------------------------------------------------
def glossary_tables() -> list[list[dict[str, str]]]:
    """The glossary's markdown tables, each a list of rows keyed by the header's cells."""
    tables, rows = [], []
    for line in GLOSSARY.read_text().split("\n") + [""]:
        if line.startswith("|"):
            rows.append([cell.strip() for cell in line.strip().strip("|").split("|")])
        elif rows:
            header, *body = rows
            tables.append([dict(zip(header, cells)) for cells in body if not set("".join(cells)) <= set("-: ")])
            rows = []
    return tables


def column(name: str, code: bool = False) -> list[str]:
    """Every «example» (and, with `code`, every `code` example) in the glossary's columns headed `name`."""
    cells = [row[name] for table in glossary_tables() for row in table if name in row]
    found = [m for cell in cells for m in re.findall(r"«([^«»]+)»", cell)]
    return found + ([m for cell in cells for m in re.findall(r"`([^`]+)`", cell)] if code else [])


def button_labels() -> dict[str, str]:
    """The picture's controls: English label → the Russian label the glossary gives."""
    return {row["кнопка (English)"]: re.fullmatch(r"«(.+)»", row["надпись на русской схеме"]).group(1)
            for table in glossary_tables() for row in table if "кнопка (English)" in row}


# --- tests ------------------------------------------------------------------------------------------------------------
def test_every_forbidden_example_of_the_glossary_is_caught():
    missed = [example for example in column("не пишем") if not any(r.pattern.search(f"«{example}»") for r in RULES)]
    assert column("не пишем") and not missed, f"GLOSSARY.md forbids these, but no pattern catches them: {missed}"


def test_no_pattern_catches_what_the_glossary_says_to_write():
    allowed = column("пишем", code=True) + list(button_labels().values())
    caught = [f"«{example}» ← {r.pattern.pattern}" for example in allowed for r in RULES
              if r.pattern.search(f"«{example}»")]
    assert allowed and not caught, f"patterns catch what GLOSSARY.md says to write: {caught}"


def test_every_pattern_stands_for_a_row_of_the_glossary():
    forbidden = column("не пишем")
    orphans = [r.pattern.pattern for r in RULES if not any(r.pattern.search(f"«{e}»") for e in forbidden)]
    assert not orphans, f"patterns with no example in GLOSSARY.md's «не пишем» columns: {orphans}"


def test_code_yaml_and_field_names_are_not_scanned():
    cell = ('lab.apply("""\nkind: Service\nspec:\n  readinessProbe: {}\n""")  # поды у Service\n'
            'print("у пода нет readiness probe", "readiness probe")')
    assert [text for _, text in python_text(cell)] == [" поды у Service", "у пода нет readiness probe"]
    markdown = "Поле `readinessProbe`, `у Service` и\n```yaml\nkind: Service  # у Service\n```\nу Service"
    assert hits([Line(f"md:{i}", t) for i, t in enumerate(prose(markdown), 1)]) == [
        "md:5: «у Service» → «сервис» в нужном падеже: «у сервиса», «к сервису»"]


@pytest.mark.parametrize("path", scanned_files(), ids=lambda p: p.relative_to(ROOT).as_posix())
def test_no_forbidden_variant(path):
    found = hits(student_lines(path))
    assert not found, f"{len(found)} variant(s) GLOSSARY.md forbids:\n" + "\n".join(found)


@pytest.mark.parametrize("path", sorted((ROOT / "notebooks" / "ru").glob("[0-9][0-9]-*.ipynb")), ids=lambda p: p.stem)
def test_lessons_name_buttons_by_the_labels_the_picture_shows(path):
    labels = set(button_labels().values())
    cited = [(line.where, m.group(1)) for line in student_lines(path)
             for m in re.finditer(r"(?i:кнопк\w*|нажм\w*|нажав)\s+«([^»]+)»", line.text)]
    wrong = [f"{where}: «{label}»" for where, label in cited if label not in labels]
    assert not wrong, f"buttons named by labels the picture does not show (it shows {sorted(labels)}): {wrong}"


def test_the_picture_shows_the_glossary_labels():
    differ = {en: (ru.MESSAGES.get(en), label) for en, label in button_labels().items()
              if ru.MESSAGES.get(en) != label}
    assert button_labels() and not differ, f"labsupport/locale/ru.py (catalog, glossary) differ: {differ}"
