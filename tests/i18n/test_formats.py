"""What lessons print writes numbers as the prose beside it does: «1,5 МБ», «20 000», да/нет in Russian; English keeps
what it always printed (245.3 MB, 1,000, True)."""
from __future__ import annotations

import pytest

from labsupport import formats
from labsupport.i18n import VARIABLE
from labsupport.widgets import bar_chart, human_bytes
from tests.widgets import drawn


@pytest.mark.parametrize("value, decimals, en, ru", [
    (5000, 0, "5,000", "5000"), (20000, 0, "20,000", "20 000"), (1234567.891, 2, "1,234,567.89", "1 234 567,89"),
    (1.5, 1, "1.5", "1,5"), (-0.04, 1, "0.0", "0,0"), (-2.5, 1, "-2.5", "-2,5"), (999, 0, "999", "999")])
def test_numbers(value, decimals, en, ru):
    assert formats.number(value, decimals, language="en") == en
    assert formats.number(value, decimals, language="ru") == ru


@pytest.mark.parametrize("n, en, ru", [(171, "171 B", "171 Б"), (30_000, "30.0 kB", "30,0 кБ"),
                                       (1_500_000, "1.5 MB", "1,5 МБ"), (4.5e9, "4.5 GB", "4,5 ГБ"),
                                       (2.2e16, "22,000.0 TB", "22 000,0 ТБ")])
def test_byte_sizes(n, en, ru, monkeypatch):
    monkeypatch.setenv(VARIABLE, "en")
    assert human_bytes(n) == en
    monkeypatch.setenv(VARIABLE, "ru")
    assert human_bytes(n) == ru


def test_yes_and_no(monkeypatch):
    monkeypatch.setenv(VARIABLE, "ru")
    assert (formats.truth(True), formats.truth(False), formats.truth([])) == ("да", "нет", "нет")
    monkeypatch.setenv(VARIABLE, "en")
    assert (formats.truth(True), formats.truth(False)) == ("True", "False")


def test_an_unknown_language_is_named():
    with pytest.raises(ValueError, match="no number style for 'de'"):
        formats.number(1, language="de")


def labels(chart) -> list[str]:
    """The values printed on the bars, as drawn."""
    return [text.text for text in drawn.texts(chart.svg(), "bar-value")]


def test_bar_labels_are_sizes_not_exponents(monkeypatch):
    monkeypatch.setenv(VARIABLE, "ru")
    chart = bar_chart({"Endpoints": 2.6e9, "EndpointSlice": 8.2e7}, title="t", ylabel="байты", logy=True,
                      fmt=human_bytes)
    assert labels(chart) == ["2,6 ГБ", "82,0 МБ"]
    assert labels(bar_chart({"a": 20000, "b": 5000}, title="t", ylabel="y")) == ["20 000", "5000"]
    monkeypatch.setenv(VARIABLE, "en")
    assert labels(bar_chart({"a": 20000, "b": 5000}, title="t", ylabel="y")) == ["20,000", "5,000"]
    assert labels(bar_chart({"a": 0.25}, title="t", ylabel="y", fmt="{:.0%}")) == ["25%"]
