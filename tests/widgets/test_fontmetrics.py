"""The picture's text widths without matplotlib: the shipped table is what the fonts give, and every label measures
as matplotlib measures it."""
from __future__ import annotations

import ast
import json
import pathlib
import subprocess
import sys
import textwrap

import pytest

from labsupport import fontmetrics
from labsupport.locale import ru

#: matplotlib warns of each character DejaVu Sans lacks (a newline in a message, a CJK ideograph) it measures.
pytestmark = pytest.mark.filterwarnings(r"ignore:(?s)Glyph \d+ .* missing from font:UserWarning")

#: The sizes the picture draws its labels at (12 user units, and 0.78 to 0.9 of it, in presenter mode more).
SIZES = (9, 9.36, 10, 10.2, 10.8, 11, 12, 13, 14, 15, 16)
#: Texts that exercise the layout's rules: ligatures, kerning at a change of script, brackets that keep the script
#: of their opening one, kerning across a tab, a text cut at its newline.
TRICKY = ["office traffic fff ffi ffl fluff", "Т.T AV. To Yo", "Д (x) y", "«Deployment» “web” ‘a’ „Ta“",
          "x“Д”T", "«(Ta)»Д", "(T.)", "A\tV", "AV\nVA", "\nAV", "10.244.1.2:80 → 10.96.0.10:53",
          "kube-proxy ● iptables · 12 rules", "✓ ✗ × · ≤ ≥ ≈ ↻ ⇒ ← ↔ – — … • « »", "ПОД ГОТОВ"]


def corpus() -> list[str]:
    """Every message the pictures and checks can show: the catalog's English keys and Russian values, and the
    widgets' own string literals."""
    texts = {text for pair in ru.MESSAGES.items() for text in pair}
    for path in sorted(pathlib.Path(fontmetrics.__file__).with_name("widgets").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.strip():
                texts.add(node.value)
    return sorted(texts)


def matplotlib_width(text: str, size: float, bold: bool) -> float:
    from matplotlib.font_manager import FontProperties
    from matplotlib.textpath import TextToPath
    font = FontProperties(family="DejaVu Sans", weight="bold" if bold else "normal", size=size)
    return TextToPath().get_text_width_height_descent(text, font, ismath=False)[0]


@pytest.mark.slow
def test_the_shipped_table_is_what_the_fonts_give():
    """fontmetrics.json matches matplotlib's fonts; if this fails, run `python -m labsupport.fontmetrics` and commit
    the file."""
    assert json.loads(fontmetrics.TABLE_PATH.read_text(encoding="utf-8")) == fontmetrics.build_table()


def test_every_character_of_the_messages_is_in_the_table():
    table = fontmetrics._table()[0]
    missing = sorted({char for text in corpus() for char in text} - set(table))
    assert not missing, f"not in fontmetrics.json: {missing!r}; run `python -m labsupport.fontmetrics`"


@pytest.mark.slow
def test_every_message_measures_as_matplotlib_measures_it():
    """Both faces, every size the picture uses: matplotlib lays a text out once at 100 pixels to the em and scales
    the width, so each text is measured at one of the sizes in turn and every size is met many times."""
    texts = corpus() + TRICKY
    worst, off = 0.0, []
    for i, text in enumerate(texts):
        for bold in (False, True):
            size = SIZES[i % len(SIZES)]
            difference = abs(fontmetrics.text_width(text, size, bold) - matplotlib_width(text, size, bold))
            worst = max(worst, difference)
            if difference > 0.01:
                off.append((text[:60], size, bold, difference))
    assert not off, off[:10]
    assert worst < 1e-9         # the same arithmetic: not just close, the same number


@pytest.mark.slow
def test_every_advance_and_pair_rounds_as_matplotlib_rounds_it():
    """Each character, ligature and kerning pair of the table, after an "x" that makes a Latin run, at 100 user
    units to the em, where every rounding of matplotlib's shows."""
    faces = fontmetrics._table()[1]
    for bold, face in ((False, faces["normal"]), (True, faces["bold"])):
        texts = [char for char in face.advances if char not in fontmetrics.PARAGRAPH_SEPARATORS]
        texts += ["x" + left + right for left, right in face.kerning]
        off = [text for text in texts
               if fontmetrics.text_width(text, 100, bold) != matplotlib_width(text, 100, bold)]
        assert not off, (bold, off[:10])


@pytest.mark.slow
def test_only_latin_runs_are_kerned_or_ligated():
    """What the table leaves out is zero: matplotlib kerns no pair (and joins none) in a Cyrillic run or a run of
    common characters, each glyph starting where the one before it ends."""
    scripts = fontmetrics._table()[0]
    common = [char for char, script in scripts.items()
              if script == fontmetrics.COMMON and char not in fontmetrics.PARAGRAPH_SEPARATORS]
    cyrillic = [char for char, script in scripts.items() if script == "Cyrl"]
    for name, file in fontmetrics.FACES.items():
        ruler = fontmetrics.Ruler(file)
        advances = {char: ruler.width(char) for char in scripts}
        for start, chars in (("Д", cyrillic + common), ("", common)):
            for i, left in enumerate(chars):
                glyphs = list(start) + [char for right in chars[i:] for char in (left, right)]
                ends = ruler.positions("".join(glyphs))
                steps = [b - a for a, b in zip(ends, ends[1:])]
                assert steps == [advances[char] for char in glyphs], (name, start, left)


def test_a_character_outside_the_table_counts_as_a_last_resort_box():
    """No exception, ever: a character outside the table, DejaVu Sans has it or not, is as wide as the box
    matplotlib draws for one it lacks (2350 units: 11.475 at 10 to the em), and ends the run it is in."""
    box = pytest.approx(11.475)
    assert fontmetrics.text_width("一", 10) == box
    assert fontmetrics.text_width("αβ", 10) / 2 == box
    assert fontmetrics.text_width("", 12) == 0
    assert fontmetrics.text_width("Aα", 10) - fontmetrics.text_width("A", 10) == box
    assert (fontmetrics.text_width("a\u0301\u00ad\u200b", 10) - fontmetrics.text_width("a", 10)) / 3 == box


def test_outside_the_table_matplotlib_gives_the_same_or_less():
    assert fontmetrics.text_width("一", 10) == matplotlib_width("一", 10, False)
    assert fontmetrics.text_width("αβ", 10) > matplotlib_width("αβ", 10, False)


def test_the_picture_measures_text_without_matplotlib_or_numpy():
    """Where a kernel has neither (a browser tab), the picture still lays itself out, with the same widths."""
    from labsupport.widgets.scene import text_width
    texts = ["kube-proxy ● iptables", "под ready", "Т.T AV"]
    script = textwrap.dedent(f"""
        import sys
        for name in ("matplotlib", "numpy"):
            sys.modules[name] = None
        from labsupport.widgets.scene import text_width
        print([text_width(text, 12.0, bold) for text in {texts!r} for bold in (False, True)])
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str([text_width(text, 12.0, bold) for text in texts for bold in (False, True)])
