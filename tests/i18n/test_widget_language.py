"""The widgets, the lesson helpers and the Lab's card speak the language chosen when they are made."""
from __future__ import annotations

import pytest

from labsupport import Lab, checks
from labsupport.i18n import VARIABLE
from labsupport.widgets import ClusterGraph, lesson
from labsupport.widgets.rules import ConntrackView, RulesView
from tests.conftest import WEB


@pytest.fixture(scope="module")
def lab():
    with Lab(seed=0) as lab:
        lab.apply(WEB)
        lab.wait(lambda l: len(checks.ready_addresses(l, "web")) == 3)
        yield lab


def buttons(graph: ClusterGraph) -> list[str]:
    return [graph.scale_button.description, graph.delete_button.description, graph.send_button.description,
            graph.advance_button.description]


def test_the_picture_is_english_by_default(lab, monkeypatch):
    monkeypatch.delenv(VARIABLE, raising=False)
    graph = ClusterGraph(lab, live=False)
    assert buttons(graph) == ["scale", "delete pod", "send request", "advance 5 s"]
    assert ">client<" in graph.svg and ">pod ready<" in graph.svg and "zone ru-central1-a" in graph.svg
    assert "<b>Lab</b> — backend <code>sim</code>, kube-proxy mode <code>iptables</code><table><tr><th>node</th>" \
        in lab._repr_html_()


def test_the_picture_is_russian_with_ru(lab, monkeypatch):
    monkeypatch.setenv(VARIABLE, "ru")
    graph = ClusterGraph(lab, live=False)
    assert buttons(graph) == ["масштабировать", "удалить под", "отправить запрос", "+5 с"]
    assert ">клиент<" in graph.svg and ">под ready<" in graph.svg and "зона ru-central1-a" in graph.svg
    assert "slice web-" not in graph.svg and "слайс web-" in graph.svg
    assert "<b>Стенд</b> — бэкенд <code>sim</code>, режим kube-proxy <code>iptables</code><table><tr><th>нода</th>" \
        in lab._repr_html_()
    label, value = next((label, value) for label, value in graph.source.options if value.startswith("pod/"))
    assert label.startswith("под web-")
    graph.source.value = value
    graph.url.value = "http://web"
    graph._act(graph._send_request)
    assert " от web-" in graph.status.value and "он увидел IP клиента" in graph.status.value
    assert graph.steps and graph.steps[-1].end.startswith("pod:default/web-"), "the drawn path stops short of the pod"
    assert "по сети нод" in " ".join(step.text for step in graph.steps)
    assert "бэкенд <code>sim</code>, режим kube-proxy <code>iptables</code>" in lab._repr_html_()


def test_the_rules_and_conntrack_views_are_russian_with_ru(lab, monkeypatch):
    monkeypatch.setenv(VARIABLE, "ru")
    rules = RulesView(lab, live=False)
    assert rules.only.description == "только сработавшие правила" and "режим kube-proxy" in rules.static_html()
    table = ConntrackView(lab, live=False)
    assert table.node.label == "все ноды" and table.node.value == "all nodes"


def test_a_self_check_hint_is_russian_with_ru(monkeypatch):
    monkeypatch.setenv(VARIABLE, "ru")
    with pytest.raises(checks.CheckFailed, match="^пока нет: масштабируйте web до 5$"):
        lesson.self_check(False, "готово", "масштабируйте web до 5")
    monkeypatch.delenv(VARIABLE)
    with pytest.raises(checks.CheckFailed, match="^not yet: scale web to 5$"):
        lesson.self_check(False, "done", "scale web to 5")
