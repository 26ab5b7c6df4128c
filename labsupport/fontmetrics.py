"""How wide a text is in the picture's font, DejaVu Sans, from a shipped table: no matplotlib, numpy or font file.

The cluster picture (`labsupport.widgets.scene`) sizes its boxes by the width of their labels. matplotlib measures
that width with FreeType and HarfBuzz (`TextToPath().get_text_width_height_descent`); a browser kernel has neither,
so `fontmetrics.json` (package data) carries what the measurement needs, for DejaVu Sans and DejaVu Sans Bold:

- the advance of every character the picture can draw (ASCII, Latin-1, Cyrillic, punctuation, arrows, check marks,
  a few mathematical signs and shapes, and every character of the Russian catalog and of the widgets' strings);
- the ligatures the font forms (ff, fi, fl, ffi, ffl) and their advances;
- the kerning pairs among those characters and ligatures that are not zero;
- each character's script: Latin, Cyrillic, or common to all (digits, spaces, punctuation, signs).

Advances and kerning are in font units (`units_per_em` to the em). `text_width` lays a text out as matplotlib does:
it cuts the text into runs of one script (a common character takes the script of the one before it, a closing
bracket that of its opening bracket), forms ligatures and kerns pairs inside Latin runs only (the only runs DejaVu
Sans kerns), and adds up the advances, each rounded as matplotlib rounds it: to 1/64 pixel at 100 pixels to the em.
Like matplotlib, which lays out one paragraph, it stops after the first newline (or other paragraph separator).

A character outside the table counts as wide as the glyph matplotlib draws for a character DejaVu Sans lacks (a CJK
ideograph, say): its Last Resort font's box, 2350 units (1.15 em). For such a character that is exactly what
matplotlib gives; for one DejaVu Sans has but the table leaves out (a Greek letter, a combining accent) it is more
than matplotlib gives: a box sized by it errs on the wide side.

The table is generated, never edited: ``python -m labsupport.fontmetrics`` reads the fonts matplotlib ships,
``matplotlib/mpl-data/fonts/ttf/DejaVuSans.ttf`` and ``DejaVuSans-Bold.ttf`` (with ``LastResortHE-Regular.ttf``
behind them, as matplotlib uses them), and measures every advance, ligature and pair with matplotlib's own layout
(`matplotlib.ft2font.FT2Font.set_text`); the scripts come from fontTools' Unicode data. That command is the only
code here that imports matplotlib (or fontTools); `text_width` reads the table alone.

>>> text_width("AV", 10)            # 2 × 1401 font units, kerned by −131, at 10 user units to the em
13.0421875
>>> text_width("под", 12, bold=True) > text_width("под", 12)
True
"""
from __future__ import annotations

import ast
import functools
import json
import pathlib
import unicodedata
import warnings
from dataclasses import dataclass
from typing import Iterator

#: The table `text_width` reads (written by `write_table`).
TABLE_PATH = pathlib.Path(__file__).with_name("fontmetrics.json")
#: The faces of the table: its key for each, and the file of matplotlib's fonts it is measured from.
FACES = {"normal": "DejaVuSans.ttf", "bold": "DejaVuSans-Bold.ttf"}
#: The script of a character common to all scripts; one outside the table is taken for a script of its own.
COMMON, LATIN, UNKNOWN = "Zyyy", "Latn", "Zzzz"
#: The brackets whose closing one takes the script of its opening one (in pairs: opening, closing).
BRACKETS = "()<>[]{}«»‘’“”‹›〈〉《》「」『』【】〔〕〖〗〘〙〚〛"
#: The paragraph separators (Unicode bidirectional class B): matplotlib measures a text up to the first of them.
PARAGRAPH_SEPARATORS = "\n\r\x1c\x1d\x1e\x85\u2029"
#: Where matplotlib measures a text: at 100 pixels to the em, in 1/64 pixel (it scales the sum to the asked size).
MEASURE_PPEM, SUBPIXELS = 100, 64
#: The characters the table covers, (first, last) code points, beside those of the catalog and the widgets' strings:
#: the ones of these the font draws (see `LEFT_OUT`).
RANGES = ((0x20, 0x7E), (0xA0, 0xFF), (0x400, 0x4FF), (0x2010, 0x2027), (0x2030, 0x203A), (0x20AC, 0x20AC),
          (0x20BD, 0x20BD), (0x2116, 0x2116), (0x2122, 0x2122), (0x2190, 0x2195), (0x21BA, 0x21BB),
          (0x21D0, 0x21D4), (0x2212, 0x2212), (0x2219, 0x221A), (0x221E, 0x221E), (0x2248, 0x2248),
          (0x2260, 0x2260), (0x2264, 0x2265), (0x22C5, 0x22C5), (0x25A0, 0x25A1), (0x25AA, 0x25AB),
          (0x25B2, 0x25B3), (0x25B6, 0x25B7), (0x25BC, 0x25BD), (0x25C0, 0x25C1), (0x25C6, 0x25C7),
          (0x25CB, 0x25CB), (0x25CF, 0x25CF), (0x2713, 0x2718))
#: The categories of character left out of `RANGES`: marks, which sit on the letter before them, and invisible
#: format characters, line and paragraph separators, which HarfBuzz and matplotlib treat each in its own way.
LEFT_OUT = frozenset({"Mn", "Mc", "Me", "Cf", "Cc", "Zl", "Zp"})
#: A character DejaVu Sans lacks, which matplotlib draws from its Last Resort font: the table's fallback advance.
LACKED = "\u4e00"


@dataclass(frozen=True)
class FaceMetrics:
    """One face of the table: advances, ligatures and Latin-run kerning in font units, and the fallback advance."""

    units_per_em: int
    fallback: int
    advances: dict[str, int]
    ligatures: tuple[str, ...]
    kerning: dict[tuple[str, str], int]

    def subpixels(self, text: str) -> int:
        """The width of `text` at 100 pixels to the em, in 1/64 pixel, laid out and rounded as matplotlib does."""
        total = 0
        for script, run in script_runs(first_paragraph(text)):
            tokens = ligated(run, self.ligatures) if script == LATIN else list(run)
            for i, token in enumerate(tokens):
                total += self.scaled(self.advances.get(token, self.fallback))
                if i and script == LATIN:
                    total += self.scaled(self.kerning.get((tokens[i - 1], token), 0))
        return total

    def scaled(self, units: int) -> int:
        """Font units in 1/64 pixel at 100 pixels to the em, rounded half up (as HarfBuzz scales them)."""
        return (2 * units * MEASURE_PPEM * SUBPIXELS + self.units_per_em) // (2 * self.units_per_em)


@functools.lru_cache(maxsize=1)
def _table() -> tuple[dict[str, str], dict[str, FaceMetrics]]:
    """The shipped table, read once: each character's script, and each face's metrics."""
    data = json.loads(TABLE_PATH.read_text(encoding="utf-8"))
    characters = [chr(code) for first, last in data["characters"] for code in range(first, last + 1)]
    scripts = dict.fromkeys(characters, COMMON)
    for script, ranges in data["scripts"].items():
        scripts.update((chr(code), script) for first, last in ranges for code in range(first, last + 1))
    faces = {}
    for name, face in data["faces"].items():
        advances = dict(zip(characters, face["advances"])) | face["ligatures"]
        kerning = {(left, right): value for left, rows in face["kerning"].items()
                   for value, chars, *ligatures in rows for right in [*chars, *ligatures]}
        faces[name] = FaceMetrics(face["units_per_em"], face["fallback"], advances,
                                  _longest_first(face["ligatures"]), kerning)
    return scripts, faces


def face(bold: bool = False) -> FaceMetrics:
    """The metrics of DejaVu Sans, or of DejaVu Sans Bold."""
    return _table()[1]["bold" if bold else "normal"]


def text_width(text: str, size: float, bold: bool = False) -> float:
    """How wide `text` is drawn in DejaVu Sans (Bold) at `size` user units to the em: what matplotlib's
    `TextToPath().get_text_width_height_descent(text, FontProperties(family="DejaVu Sans", size=size))[0]` gives."""
    return face(bold).subpixels(text) / SUBPIXELS * (size / MEASURE_PPEM)


def first_paragraph(text: str) -> str:
    """`text` up to and with its first paragraph separator (a newline), the part matplotlib lays out."""
    for i, char in enumerate(text):
        if char in PARAGRAPH_SEPARATORS:
            return text[:i + 1]
    return text


def scripts_of(text: str) -> list[str]:
    """Each character's script as the layout resolves it (libraqm's rules): a common character takes the script of
    the character before it (or, at the start, after it), a closing bracket that of its opening bracket."""
    table = _table()[0]
    resolved = [table.get(char, UNKNOWN) for char in text]
    last_script, started, last_set = COMMON, False, -1
    stack: list[tuple[str, int]] = []     # (script, index in BRACKETS) of each open bracket
    for i, char in enumerate(text):
        if resolved[i] == COMMON and started:
            pair = BRACKETS.find(char)
            if pair >= 0 and pair % 2 == 0:
                stack.append((last_script, pair))
                resolved[i] = last_script
            elif pair >= 0:
                while stack and stack[-1][1] != pair - 1:
                    stack.pop()
                resolved[i] = stack[-1][0] if stack else last_script
                last_script = resolved[i]
            else:
                resolved[i] = last_script
            last_set = i
        else:
            resolved[last_set + 1:i] = [resolved[i]] * (i - last_set - 1)
            last_script, started, last_set = resolved[i], True, i
    for i in range(len(text) - 2, -1, -1):
        if resolved[i] == COMMON:
            resolved[i] = resolved[i + 1]
    return resolved


def script_runs(text: str) -> Iterator[tuple[str, str]]:
    """`text` cut into runs of one resolved script: (script, run), in order."""
    start = 0
    scripts = scripts_of(text)
    for i in range(1, len(text) + 1):
        if i == len(text) or scripts[i] != scripts[start]:
            yield scripts[start], text[start:i]
            start = i


def ligated(run: str, ligatures: tuple[str, ...]) -> list[str]:
    """A run of text as glyphs: characters, and ligatures (`ligatures`, longest first) where their letters are."""
    tokens, i = [], 0
    while i < len(run):
        token = next((lig for lig in ligatures if run.startswith(lig, i)), run[i])
        tokens.append(token)
        i += len(token)
    return tokens


def _longest_first(ligatures: dict[str, int]) -> tuple[str, ...]:
    return tuple(sorted(ligatures, key=len, reverse=True))


# --- the generator: everything below runs only under `python -m labsupport.fontmetrics`, with matplotlib


def project_characters() -> set[str]:
    """Every character of the Russian catalog (English keys and Russian values) and of the widgets' string literals."""
    from labsupport.locale import ru
    found = {char for pair in ru.MESSAGES.items() for text in pair for char in text}
    for path in sorted(pathlib.Path(__file__).with_name("widgets").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                found.update(node.value)
    return found


class Ruler:
    """One face as matplotlib measures with it (Last Resort behind it), set to one pixel per font unit: widths and
    glyph positions in font units."""

    def __init__(self, file: str):
        import matplotlib
        from matplotlib.font_manager import get_font
        from matplotlib.ft2font import LoadFlags
        self.path = pathlib.Path(matplotlib.get_data_path(), "fonts", "ttf", file)
        self.font = get_font(self.path)
        self.charmap = self.font.get_charmap()
        self.units_per_em = self.font.units_per_EM
        self.flags = LoadFlags.NO_HINTING     # as TextToPath lays text out

    def has(self, token: str) -> bool:
        """Whether the face itself draws every character of `token`."""
        return all(ord(char) in self.charmap for char in token)

    def positions(self, text: str) -> list[int]:
        """Where each glyph of `text` starts, then where the text ends."""
        self.font.set_size(self.units_per_em, 72)     # the font is matplotlib's: TextToPath sets its own size
        xy = self.font.set_text(text, 0.0, flags=self.flags)
        return [self._units(x) for x, _ in xy] + [self._units(self.font.get_width_height()[0])]

    def glyphs(self, text: str) -> int:
        """How many glyphs matplotlib lays `text` out as."""
        return len(self.positions(text)) - 1

    def width(self, text: str) -> int:
        """How wide matplotlib lays `text` out."""
        return self.positions(text)[-1]

    def name(self) -> str:
        """The face's full name and version: "DejaVu Sans Book, Version 2.35"."""
        version = self.font.get_sfnt().get((1, 0, 0, 5), b"").decode("latin-1")
        return f"{self.font.family_name} {self.font.style_name}, {version}"

    @staticmethod
    def _units(subpixels: float) -> int:
        if subpixels % SUBPIXELS:
            raise ValueError(f"a position of {subpixels}/64 pixel at one pixel per font unit is no whole number of "
                             "units: the table cannot hold it")
        return int(subpixels) // SUBPIXELS


def covered_characters(rulers: list[Ruler]) -> list[str]:
    """The table's characters: those of `RANGES` every face draws (less those of a `LEFT_OUT` category), and every
    character of the catalog and the widgets (a tab or a newline included: matplotlib gives it a Last Resort box)."""
    chars = {chr(code) for first, last in RANGES for code in range(first, last + 1)}
    chars = {char for char in chars if unicodedata.category(char) not in LEFT_OUT
             and all(ruler.has(char) for ruler in rulers)}
    return sorted(chars | project_characters())


def character_scripts(chars: list[str]) -> dict[str, str]:
    """Each character's Unicode script (ISO 15924 code), as fontTools' Unicode data gives it; an inherited one (a
    combining mark) is resolved as a common one is, and is stored as common."""
    from fontTools import unicodedata as ucd
    return {char: COMMON if ucd.script(char) == "Zinh" else ucd.script(char) for char in chars}


def _chunks(items: list[str], size: int = 100) -> Iterator[list[str]]:
    for i in range(0, len(items), size):
        yield items[i:i + size]


def latin_runs(ruler: Ruler, chars: list[str], advances: dict[str, int]) -> tuple[dict[str, int], dict]:
    """The ligatures a Latin run of `chars` forms, with their advances, and every pair of its glyphs (characters
    and ligatures) the face kerns, with the amount: {(left, right): font units}."""
    inner = [char for char in chars if char not in PARAGRAPH_SEPARATORS]
    ligatures: dict[str, int] = {}
    kerning = _kerning(ruler, inner, inner, advances, ligatures)        # finds the ligatures of two letters too
    for pair in list(ligatures):
        for char in inner:
            if ruler.glyphs("x" + pair + char) == 2:
                ligatures[pair + char] = ruler.width(pair + char)
    tokens = inner + sorted(ligatures)
    kerning |= _kerning(ruler, sorted(ligatures), tokens, advances | ligatures, ligatures)
    ends = [char for char in chars if char in PARAGRAPH_SEPARATORS]     # nothing stands after them
    kerning |= _kerning_one_by_one(ruler, [(left, end) for end in ends for left in tokens], ligatures)
    return dict(sorted(ligatures.items())), dict(sorted(kerning.items()))


def _kerning(ruler: Ruler, lefts: list[str], rights: list[str], advances: dict[str, int],
             ligatures: dict[str, int]) -> dict[tuple[str, str], int]:
    """The kerning of each left glyph with each right one, both ways round. Many pairs are laid out at a time, after
    an "x" that makes the run Latin (left, right, left, right, ...: a pair already laid out is not laid out again);
    where the text does not stay the glyphs it is made of (a ligature), its pairs are measured one at a time."""
    kerning: dict[tuple[str, str], int] = {}
    done: set[frozenset[str]] = set()
    for left in lefts:
        todo = [right for right in rights if frozenset((left, right)) not in done]
        done.update(frozenset((left, right)) for right in todo)
        for chunk in _chunks(todo):
            glyphs = ["x"] + [token for right in chunk for token in (left, right)] + [left]
            text = "".join(glyphs)
            ends = ruler.positions(text)
            if ligated(text, _longest_first(ligatures)) != glyphs or len(ends) != len(glyphs) + 1:
                pairs = [pair for right in chunk for pair in ((left, right), (right, left))]
                kerning |= _kerning_one_by_one(ruler, pairs, ligatures)
                continue
            for k in range(1, len(glyphs) - 1):
                kern = ends[k + 1] - ends[k] - advances[glyphs[k]]
                if kern:
                    kerning[glyphs[k], glyphs[k + 1]] = kern
    return kerning


def _kerning_one_by_one(ruler: Ruler, pairs: list[tuple[str, str]],
                        ligatures: dict[str, int]) -> dict[tuple[str, str], int]:
    """The non-zero kerning of each pair, measured alone after an "x"; two letters that make one glyph are a
    ligature, added to `ligatures`, and a pair that never stands side by side (it makes a known ligature) is left."""
    found = {}
    for left, right in pairs:
        if ligated(left + right, _longest_first(ligatures)) != [left, right]:
            continue
        if ruler.glyphs("x" + left + right) < 3:
            if len(left + right) > 2:
                raise ValueError(f"{left + right!r} makes fewer glyphs than the ligatures {list(ligatures)} say: "
                                 "the table cannot describe that font")
            ligatures[left + right] = ruler.width(left + right)
            continue
        kern = ruler.width("x" + left + right) - ruler.width("x" + left) - ruler.width(right)
        if kern:
            found[left, right] = kern
    return found


def measure_face(ruler: Ruler, chars: list[str], scripts: dict[str, str]) -> dict:
    """One face of the table: the advances of `chars` (in order), the ligatures, and the Latin runs' kerning, each
    left glyph's pairs grouped by amount, the right characters in one string and the right ligatures after it:
    {left: [[amount, "characters", ligature, ...], ...]}."""
    if ruler.has(LACKED):
        raise ValueError(f"{ruler.path.name} draws {LACKED!r}: pick another character it lacks for the fallback")
    advances = {char: ruler.width(char) for char in chars}
    ligatures, kerning = latin_runs(ruler, [char for char in chars if scripts[char] in (LATIN, COMMON)], advances)
    rows: dict[str, dict[int, list[str]]] = {}
    for (left, right), value in kerning.items():
        rows.setdefault(left, {}).setdefault(value, []).append(right)
    return {"font": ruler.name(), "file": ruler.path.name, "units_per_em": ruler.units_per_em,
            "fallback": ruler.width(LACKED), "advances": [advances[char] for char in chars], "ligatures": ligatures,
            "kerning": {left: [[value, "".join(right for right in rights if len(right) == 1),
                                *(right for right in rights if len(right) > 1)]
                               for value, rights in sorted(values.items())]
                        for left, values in rows.items()}}


def _ranges(codes: list[int]) -> list[list[int]]:
    """Sorted code points as [first, last] ranges of consecutive ones."""
    out: list[list[int]] = []
    for code in codes:
        if out and out[-1][1] == code - 1:
            out[-1][1] = code
        else:
            out.append([code, code])
    return out


def build_table() -> dict:
    """What `fontmetrics.json` holds, measured from matplotlib's DejaVu Sans and DejaVu Sans Bold."""
    rulers = {name: Ruler(file) for name, file in FACES.items()}
    chars = covered_characters(list(rulers.values()))
    scripts = character_scripts(chars)
    named = sorted({script for script in scripts.values() if script != COMMON})
    with warnings.catch_warnings():       # a tab, a newline and `LACKED` are measured on purpose
        warnings.filterwarnings("ignore", r"(?s)Glyph \d+ .* missing from font", UserWarning)
        faces = {name: measure_face(ruler, chars, scripts) for name, ruler in rulers.items()}
    return {"characters": _ranges([ord(char) for char in chars]),
            "scripts": {script: _ranges([ord(char) for char in chars if scripts[char] == script])
                        for script in named},
            "faces": faces}


def write_table(path: pathlib.Path = TABLE_PATH) -> None:
    """Write `fontmetrics.json` from matplotlib's fonts, compact: one line for each entry of each face."""
    table = build_table()

    def compact(value: object) -> str:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    lines = [f'"{key}":{compact(table[key])}' for key in ("characters", "scripts")]
    faces = [f'"{name}":{{' + ",\n".join(f'"{key}":{compact(value)}' for key, value in face.items()) + "}"
             for name, face in table["faces"].items()]
    path.write_text("{" + ",\n".join(lines) + ',\n"faces":{\n' + ",\n".join(faces) + "}}\n", encoding="utf-8")


if __name__ == "__main__":
    write_table()
