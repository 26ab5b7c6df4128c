"""The language of the messages a student reads: one switch, `LABSUPPORT_LANG`, and gettext-style look-ups.

The English text is the key. `tr(text, **values)` looks the text up in the catalog of the language chosen now
(`LABSUPPORT_LANG`, read at every call, so `%env LABSUPPORT_LANG=ru` in a notebook's first cell takes effect),
then fills its `{placeholders}` with `str.format`. English, the default, is the key itself, so English output is
the text as written.

>>> import os
>>> os.environ.pop("LABSUPPORT_LANG", None) and None
>>> tr('the Service "{name}" has no nodePort', name="web")
'the Service "web" has no nodePort'
"""
from __future__ import annotations

import os
from typing import Any

from labsupport.errors import LabError
from labsupport.locale import ru

#: The environment variable that chooses the language.
VARIABLE = "LABSUPPORT_LANG"
#: Each language's catalog, English text → its own (English, the default and first, needs none).
CATALOGS: dict[str, dict[str, str]] = {"en": {}, "ru": ru.MESSAGES}
#: The languages there is a catalog for; the first is the default.
LANGUAGES = tuple(CATALOGS)


class UnknownLanguage(LabError, ValueError):
    """`LABSUPPORT_LANG` names a language there is no catalog for; the message names the valid ones."""


def language() -> str:
    """The language chosen now: `LABSUPPORT_LANG` (any case, e.g. `ru` or `ru_RU.UTF-8`), `en` when unset."""
    raw = os.environ.get(VARIABLE, "").strip()
    if not raw:
        return LANGUAGES[0]
    code = raw.split(".")[0].split("_")[0].split("-")[0].lower()
    if code not in LANGUAGES:
        raise UnknownLanguage(f"{VARIABLE}={raw!r} is not a language of labsupport: set it to one of "
                              f"{', '.join(LANGUAGES)} (or leave it unset for {LANGUAGES[0]}).")
    return code


def catalog(lang: str) -> dict[str, str]:
    """The catalog of `lang`: English text → translated text (empty for English)."""
    if lang not in CATALOGS:
        raise UnknownLanguage(f"no catalog for {lang!r}: the languages are {', '.join(LANGUAGES)}.")
    return CATALOGS[lang]


def translate(text: str) -> str:
    """`text` in the language chosen now, placeholders left as they are (the English text when none is known)."""
    return catalog(language()).get(text, text)


def tr(text: str, /, **values: Any) -> str:
    """`text` in the language chosen now, `{placeholders}` filled from `values` (str.format: a brace is doubled)."""
    return translate(text).format(**values)


__all__ = ["VARIABLE", "CATALOGS", "LANGUAGES", "UnknownLanguage", "language", "catalog", "translate", "tr"]
