"""Numbers, byte sizes and yes/no as a language writes them: what a lesson prints stands next to prose that says
«1,5 МБ» and «20 000», so its output says the same (`LABSUPPORT_LANG`, or the language a caller names).

English keeps what the lessons always printed: a decimal point, commas between thousands, kB/MB/GB, True/False.
Russian writes a decimal comma, a space between thousands from five digits on («5000», «20 000»), Б/кБ/МБ/ГБ and
да/нет.

>>> number(20000, language="ru"), number(5000, language="ru"), number(1.5, 1, language="ru")
('20 000', '5000', '1,5')
>>> size(245_300_000, language="en"), size(245_300_000, language="ru"), size(171, language="ru")
('245.3 MB', '245,3 МБ', '171 Б')
>>> truth(True, language="ru"), truth(False, language="en")
('да', 'False')
"""
from __future__ import annotations

from dataclasses import dataclass

from labsupport import i18n


@dataclass(frozen=True)
class Style:
    """How one language writes numbers, byte units and yes/no."""

    decimal: str
    thousands: str
    group_from: int              # the fewest integer digits that get separators
    units: tuple[str, ...]       # bytes, kilo-, mega-, giga-, terabytes (decimal, as the published figures are)
    no: str
    yes: str


STYLES = {"en": Style(".", ",", 4, ("B", "kB", "MB", "GB", "TB"), "False", "True"),
          "ru": Style(",", " ", 5, ("Б", "кБ", "МБ", "ГБ", "ТБ"), "нет", "да")}


def style(language: str | None = None) -> Style:
    """The style of `language`, or of the language chosen now (`LABSUPPORT_LANG`)."""
    chosen = language or i18n.language()
    if chosen not in STYLES:
        raise i18n.UnknownLanguage(f"no number style for {chosen!r}: the languages are {', '.join(STYLES)}.")
    return STYLES[chosen]


def number(value: float, decimals: int = 0, language: str | None = None) -> str:
    """`value` with `decimals` digits after the separator, thousands grouped as the language groups them."""
    s = style(language)
    text = f"{abs(value):.{decimals}f}"
    whole, _, fraction = text.partition(".")
    if len(whole) >= s.group_from:
        whole = f"{int(whole):,}".replace(",", s.thousands)
    sign = "-" if value < 0 and float(text) != 0 else ""
    return sign + whole + (s.decimal + fraction if fraction else "")


def size(n: float, language: str | None = None) -> str:
    """A number of bytes in B, kB, MB, GB or TB (powers of 1000): one decimal, none for plain bytes."""
    s = style(language)
    for unit in s.units:
        if abs(n) < 1000 or unit == s.units[-1]:
            return f"{number(n, 0 if unit == s.units[0] else 1, language)} {unit}"
        n /= 1000
    raise AssertionError("unreachable: the last unit takes any size")


def truth(value: object, language: str | None = None) -> str:
    """A yes/no value as a word: Python's True/False in English, да/нет in Russian."""
    s = style(language)
    return s.yes if value else s.no


__all__ = ["Style", "STYLES", "style", "number", "size", "truth"]
