"""PATCH bodies: JSON Patch through `jsonpatch`, RFC 7386 merge patch, and the API server's words when they fail."""
from __future__ import annotations

import json

import pytest

from labsupport.apiserver.patch import PATCH_REFUSED, UnprocessableEntity, json_merge_patch, json_patch
from labsupport.errors import BadRequest

DOC = {"metadata": {"name": "web", "labels": {"app": "web"}}, "spec": {"ports": [{"port": 80}], "type": "ClusterIP"}}


def test_json_patch_operations():
    ops = [
        {"op": "add", "path": "/metadata/labels/tier", "value": "front"},
        {"op": "replace", "path": "/spec/type", "value": "NodePort"},
        {"op": "add", "path": "/spec/ports/-", "value": {"port": 443}},
        {"op": "copy", "from": "/spec/ports/0", "path": "/spec/ports/0"},
        {"op": "move", "from": "/metadata/labels/app", "path": "/metadata/labels/a~1b"},
        {"op": "remove", "path": "/spec/ports/1"},
        {"op": "test", "path": "/spec/type", "value": "NodePort"},
    ]
    out = json_patch(DOC, ops)
    assert out == {"metadata": {"name": "web", "labels": {"tier": "front", "a/b": "web"}},
                   "spec": {"ports": [{"port": 80}, {"port": 443}], "type": "NodePort"}}
    assert DOC["spec"]["type"] == "ClusterIP" and DOC["metadata"]["labels"] == {"app": "web"}
    out["spec"]["ports"][1]["port"] = 1
    assert ops[2]["value"] == {"port": 443}      # the result shares nothing with the patch
    assert json_patch(DOC, None) == DOC and json_patch(DOC, []) == DOC
    assert json_patch(DOC, [{"op": "add", "path": "/spec/x"}])["spec"]["x"] is None     # no value reads as null


@pytest.mark.parametrize("ops", [
    [{"op": "test", "path": "/spec/type", "value": "NodePort"}],
    [{"op": "remove", "path": "/spec/nope"}],
    [{"op": "replace", "path": "/status/x", "value": 1}],
    [{"op": "add", "path": "/spec/ports/7", "value": {}}],
    [{"op": "add", "path": "spec", "value": {}}],
    [{"op": "move", "from": "/nowhere", "path": "/spec/x"}],
    [{"op": "jump", "path": "/spec"}],
    [{"path": "/spec"}],
])
def test_a_patch_that_does_not_apply_is_refused_as_the_server_refuses_it(ops):
    with pytest.raises(UnprocessableEntity) as err:
        json_patch(DOC, ops)
    assert err.value.message == PATCH_REFUSED
    assert err.value.status()["code"] == 422 and err.value.status()["reason"] == "Invalid"


@pytest.mark.parametrize("body,message", [
    ({"op": "add"}, "json: cannot unmarshal object into Go value of type jsonpatch.Patch"),
    ("add", "json: cannot unmarshal string into Go value of type jsonpatch.Patch"),
    (3, "json: cannot unmarshal number into Go value of type jsonpatch.Patch"),
    ([1], "json: cannot unmarshal number into Go value of type jsonpatch.Operation"),
    ([[]], "json: cannot unmarshal array into Go value of type jsonpatch.Operation"),
    ([True], "json: cannot unmarshal bool into Go value of type jsonpatch.Operation"),
])
def test_a_body_that_is_no_patch_is_a_bad_request(body, message):
    with pytest.raises(BadRequest) as err:
        json_patch(DOC, body)
    assert str(err.value) == message


# RFC 7386, Appendix A: (target, patch, result).
RFC7386 = [
    ({"a": "b"}, {"a": "c"}, {"a": "c"}),
    ({"a": "b"}, {"b": "c"}, {"a": "b", "b": "c"}),
    ({"a": "b"}, {"a": None}, {}),
    ({"a": "b", "b": "c"}, {"a": None}, {"b": "c"}),
    ({"a": ["b"]}, {"a": "c"}, {"a": "c"}),
    ({"a": "c"}, {"a": ["b"]}, {"a": ["b"]}),
    ({"a": {"b": "c"}}, {"a": {"b": "d", "c": None}}, {"a": {"b": "d"}}),
    ({"a": [{"b": "c"}]}, {"a": [1]}, {"a": [1]}),
    (["a", "b"], ["c", "d"], ["c", "d"]),
    ({"a": "b"}, ["c"], ["c"]),
    ({"a": "foo"}, None, None),
    ({"a": "foo"}, "bar", "bar"),
    ({"e": None}, {"a": 1}, {"e": None, "a": 1}),
    ([1, 2], {"a": "b", "c": None}, {"a": "b"}),
    ({}, {"a": {"bb": {"ccc": None}}}, {"a": {"bb": {}}}),
]


@pytest.mark.parametrize("target,patch,result", RFC7386)
def test_merge_patch_follows_rfc_7386(target, patch, result):
    before = json.dumps(target)
    assert json_merge_patch(target, patch) == result
    assert json.dumps(target) == before


def test_refused_json_patch_over_the_api_changes_nothing(lab, api, kubectl):
    before = lab.get("services", name="web")
    body = json.dumps([{"op": "replace", "path": "/spec/type", "value": "NodePort"},
                       {"op": "test", "path": "/spec/type", "value": "ClusterIP"}])
    status, _, data = api.request("PATCH", "/api/v1/namespaces/default/services/web", body,
                                  headers={"Content-Type": "application/json-patch+json"})
    answer = json.loads(data)
    assert (status, answer["reason"], answer["message"]) == (422, "Invalid", PATCH_REFUSED)
    result = kubectl("patch svc web --type=json -p '[{\"op\":\"remove\",\"path\":\"/spec/nope\"}]'", ok=False)
    assert result.returncode == 1
    assert f"The request is invalid: {PATCH_REFUSED}" in result.stderr
    result = kubectl("patch svc web --type=json -p '{\"op\":\"remove\"}'", ok=False)
    assert "json: cannot unmarshal object into Go value of type jsonpatch.Patch" in result.stderr
    assert lab.get("services", name="web")["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]


def test_json_patch_through_kubectl(lab, kubectl):
    kubectl("patch svc web --type=json -p '[{\"op\":\"add\",\"path\":\"/metadata/labels\",\"value\":{\"x\":\"1\"}},"
            "{\"op\":\"copy\",\"from\":\"/metadata/labels/x\",\"path\":\"/metadata/labels/y\"}]'")
    assert lab.get("services", name="web")["metadata"]["labels"] == {"x": "1", "y": "1"}
    kubectl("patch svc web --type=json -p '[{\"op\":\"remove\",\"path\":\"/metadata/labels\"}]'")
    assert not lab.get("services", name="web")["metadata"].get("labels")
