"""A failing check speaks the language `LABSUPPORT_LANG` chooses: Russian with `ru`, today's English by default."""
from __future__ import annotations

import pytest

from labsupport import Lab, checks
from labsupport.i18n import VARIABLE
from tests.conftest import WEB

TYPO = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "typo"},
        "spec": {"selector": {"app": "wbe"}, "ports": [{"port": 80}]}}


@pytest.fixture(scope="module")
def lab():
    with Lab(seed=0) as lab:
        lab.apply(WEB)
        lab.apply(TYPO)
        lab.wait(lambda l: len(checks.ready_addresses(l, "web")) == 3)
        yield lab


def failure(call) -> str:
    with pytest.raises(checks.CheckFailed) as caught:
        call()
    return str(caught.value)


def test_a_selector_that_matches_nothing_fails_in_english_by_default(lab, monkeypatch):
    monkeypatch.delenv(VARIABLE, raising=False)
    assert failure(lambda: checks.slice_has_ready_addresses(lab, "typo", 3)) == (
        'the slices of "typo" list 0 ready address(es), expected 3: are all pods Ready? '
        "try lab.get('pods', selector='app=wbe'). The slice is empty: does the selector 'app=wbe' match any "
        "pod's labels? No pod has the labels app=wbe; the pods in namespace \"default\" have: app=web (3 pods).")


def test_a_selector_that_matches_nothing_fails_in_russian(lab, monkeypatch):
    monkeypatch.setenv(VARIABLE, "ru")
    message = failure(lambda: checks.slice_has_ready_addresses(lab, "typo", 3))
    assert message == (
        'в слайсах "typo" готовых адресов 0, а нужно 3. Все ли поды Ready? Посмотри '
        "lab.get('pods', selector='app=wbe'). Слайс пуст: выбирает ли селектор 'app=wbe' хоть один под? "
        'Ни у одного пода нет меток app=wbe; у подов в namespace "default" метки такие: app=web (подов: 3).')


def test_a_missing_object_is_named_in_russian_with_the_call_to_run(lab, monkeypatch):
    monkeypatch.setenv(VARIABLE, "ru")
    message = failure(lambda: checks.service_type(lab, "nope", "NodePort"))
    assert message == ('в namespace "default" нет объекта Service "nope": выполнилась ли без ошибки ячейка, которая его '
                       "создаёт? Посмотри, что есть, через lab.get('service').")


def test_kubernetes_own_messages_stay_as_kubernetes_prints_them(lab, monkeypatch):
    from labsupport.errors import LabError
    monkeypatch.setenv(VARIABLE, "ru")
    with pytest.raises(LabError) as caught:
        lab.get("service", "nope")
    assert str(caught.value) == 'services "nope" not found'


def test_an_unknown_language_fails_the_check_with_the_valid_ones(lab, monkeypatch):
    monkeypatch.setenv(VARIABLE, "fr")
    with pytest.raises(ValueError, match="LABSUPPORT_LANG='fr'.*one of en, ru"):
        checks.slice_has_ready_addresses(lab, "typo", 3)
