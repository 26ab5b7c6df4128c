"""The Russian catalog and the code agree: every text passed to `tr` has a translation, and nothing else does."""
from __future__ import annotations

import ast
import pathlib
import string

import pytest

import labsupport
from labsupport import i18n
from labsupport.locale import ru

PACKAGE = pathlib.Path(labsupport.__file__).resolve().parent


def looked_up() -> dict[str, list[str]]:
    """Every literal text passed to `tr` in the package → the places it is passed from."""
    found: dict[str, list[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        if "locale" in path.relative_to(PACKAGE).parts:
            continue
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and node.args):
                continue
            name = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", "")
            if name != "tr":
                continue
            first = node.args[0]
            where = f"{path.relative_to(PACKAGE.parent)}:{node.lineno}"
            assert isinstance(first, ast.Constant) and isinstance(first.value, str), (
                f"{where}: {name}() is given a computed text; pass a literal so the catalog can be checked")
            found.setdefault(first.value, []).append(where)
    return found


def fields(text: str) -> list[str]:
    """The placeholders of a format string, with their conversions and specs, sorted."""
    return sorted(f"{name}!{conv or ''}:{spec or ''}" for _, name, spec, conv in string.Formatter().parse(text)
                  if name is not None)


def test_the_package_looks_texts_up():
    assert len(looked_up()) > 50


def test_every_looked_up_text_has_a_russian_translation():
    missing = {text: where for text, where in looked_up().items() if text not in ru.MESSAGES}
    assert not missing, "no Russian for:\n" + "\n".join(f"{where[0]}: {text!r}" for text, where in missing.items())


def test_the_catalog_has_no_text_the_code_does_not_use():
    unused = sorted(set(ru.MESSAGES) - set(looked_up()))
    assert not unused, "the Russian catalog translates texts no code looks up:\n" + "\n".join(map(repr, unused))


@pytest.mark.parametrize("text", sorted(ru.MESSAGES))
def test_a_translation_keeps_the_placeholders(text):
    assert fields(ru.MESSAGES[text]) == fields(text), f"placeholders differ for {text!r}"


@pytest.mark.parametrize("text", sorted(ru.MESSAGES))
def test_a_translation_is_russian(text):
    assert any("а" <= ch <= "я" for ch in ru.MESSAGES[text].lower()), f"not Russian: {ru.MESSAGES[text]!r}"


def test_the_switch_is_read_at_every_call(monkeypatch):
    text = 'the Service "{name}" is of type {got}, expected {expected}: set spec.type in its manifest.'
    monkeypatch.delenv(i18n.VARIABLE, raising=False)
    english = i18n.tr(text, name="web", got="ClusterIP", expected="NodePort")
    assert english == text.format(name="web", got="ClusterIP", expected="NodePort")
    monkeypatch.setenv(i18n.VARIABLE, "ru")
    russian = i18n.tr(text, name="web", got="ClusterIP", expected="NodePort")
    assert russian != english and '"web"' in russian and "NodePort" in russian
    monkeypatch.setenv(i18n.VARIABLE, "ru_RU.UTF-8")
    assert i18n.language() == "ru"
    monkeypatch.setenv(i18n.VARIABLE, "EN")
    assert i18n.tr(text, name="web", got="ClusterIP", expected="NodePort") == english


def test_an_unknown_language_names_the_valid_ones(monkeypatch):
    monkeypatch.setenv(i18n.VARIABLE, "de")
    with pytest.raises(i18n.UnknownLanguage, match=r"LABSUPPORT_LANG='de'.*en, ru"):
        i18n.tr("no labels")
