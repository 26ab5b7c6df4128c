"""Label and field selectors."""
import pytest

from labsupport.errors import BadRequest
from labsupport.model.selectors import (from_label_selector, from_service_selector, matches, parse_field_selector,
                                        parse_selector, service_selects)

POD = {"app": "web", "tier": "frontend", "env": "prod"}


@pytest.mark.parametrize("text,expected", [
    ("app=web", True), ("app==web", True), ("app!=web", False), ("tier!=db", True), ("missing!=x", True),
    ("env in (prod,staging)", True), ("env in (dev)", False), ("env notin (dev)", True), ("env notin (prod)", False),
    ("app", True), ("!app", False), ("!canary", True), ("app=web,tier=frontend", True), ("app=web,tier=db", False),
    ("", True), ("  app = web ,  env in ( prod )", True), ("app in (in, notin)", False),
])
def test_parse_and_match(text, expected):
    assert parse_selector(text).matches(POD) is expected


def test_str_is_sorted_and_normalised():
    assert str(parse_selector("tier!=db, app=web")) == "app=web,tier!=db"
    assert str(parse_selector("env in (b,a),!x")) == "env in (a,b),!x"
    assert str(parse_selector("env notin (a)")) == "env notin (a)"


@pytest.mark.parametrize("text,message", [
    ("app=web=x", "found '=', expected: ',' or 'end of string'"),
    ("env in a", "unable to parse requirement: found 'a' expected: '('"),
    ("=x", "found '=', expected: !, identifier, or 'end of string'"),
    ("a,", "found '', expected: identifier after ','"),
    ("a b", "unable to parse requirement: found 'b', expected: '=', '!=', '==', 'in', notin'"),
    ("x in (a b)", "unable to parse requirement: found 'b', expected: ',' or ')'"),
    ("!", "unable to parse requirement: found '', expected: identifier"),
])
def test_syntax_errors(text, message):
    with pytest.raises(BadRequest) as err:
        parse_selector(text)
    assert err.value.message == message


def test_bad_key_is_reported_without_a_path():
    with pytest.raises(BadRequest) as err:
        parse_selector("app:monolith")
    assert err.value.message == (
        'unable to parse requirement: <nil>: Invalid value: "app:monolith": name part must consist of alphanumeric '
        "characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or "
        "'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')")


def test_bad_value_is_reported():
    with pytest.raises(BadRequest) as err:
        parse_selector("a=-x")
    assert err.value.message.startswith('unable to parse requirement: values[0][a]: Invalid value: "-x": ')


def test_label_selector_dict():
    sel = {"matchLabels": {"app": "web"},
           "matchExpressions": [{"key": "env", "operator": "In", "values": ["prod"]},
                                {"key": "canary", "operator": "DoesNotExist"},
                                {"key": "tier", "operator": "Exists"},
                                {"key": "zone", "operator": "NotIn", "values": ["a"]}]}
    assert from_label_selector(sel).matches(POD)
    assert not from_label_selector(sel).matches({"app": "web"})
    assert from_label_selector({}).matches(POD)
    assert not from_label_selector(None).matches(POD)


def test_matches_accepts_every_form():
    assert matches("app=web", POD)
    assert matches({"matchLabels": {"app": "web"}}, POD)
    assert matches({"app": "web"}, POD)
    assert not matches({"app": "db"}, POD)
    assert matches(None, POD)
    assert matches({}, POD)


def test_service_without_selector_selects_nothing():
    assert not from_service_selector(None).matches(POD)
    assert not from_service_selector({}).matches(POD)
    assert service_selects({"spec": {"selector": {"app": "web"}}}, POD)
    assert not service_selects({"spec": {}}, POD)


def test_field_selector():
    pod = {"metadata": {"name": "web-1", "namespace": "default"}, "spec": {"nodeName": "worker"},
           "status": {"phase": "Running"}}
    assert parse_field_selector("metadata.name=web-1,metadata.namespace=default").matches_fields(pod)
    assert parse_field_selector("spec.nodeName=worker,status.phase=Running").matches_fields(pod)
    assert not parse_field_selector("status.phase!=Running").matches_fields(pod)
    assert parse_field_selector("spec.nodeName==worker").matches_fields(pod)
    assert parse_field_selector("").matches_fields(pod)
    with pytest.raises(BadRequest) as err:
        parse_field_selector("nonsense")
    assert err.value.message == "invalid selector: 'nonsense'; can't understand 'nonsense'"
    with pytest.raises(BadRequest) as err:
        parse_field_selector("spec.foo=1").check_supported("Pod")
    assert err.value.message == "field label not supported: spec.foo"


def test_label_selector_string_sorted():
    sel = {"matchLabels": {"tier": "web"}, "matchExpressions": [{"key": "app", "operator": "Exists"}]}
    assert str(from_label_selector(sel)) == "app,tier=web"


def test_label_selector_dict_errors():
    with pytest.raises(BadRequest) as err:
        from_label_selector({"matchExpressions": [{"key": "env", "operator": "In", "values": []}]})
    assert err.value.message == ("values: Invalid value: []string{}: for 'in', 'notin' operators, values set can't "
                                 "be empty")
    with pytest.raises(BadRequest) as err:
        from_label_selector({"matchExpressions": [{"key": "env", "operator": "Exists", "values": ["a"]}]})
    assert err.value.message == "values: Forbidden: values set must be empty for exists and does not exist"
