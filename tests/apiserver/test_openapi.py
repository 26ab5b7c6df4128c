"""OpenAPI v2 and v3 from the kinds the server knows: kubectl explain, validation, and unknown kinds."""
from __future__ import annotations

import json

from labsupport.apiserver import openapi
from labsupport.apiserver.openapi_pb import V2_PROTOBUF


def test_explain_a_field_path(kubectl):
    out = kubectl("explain service.spec").stdout
    assert out.startswith("KIND:       Service\nVERSION:    v1\n\nFIELD: spec <ServiceSpec>\n")
    assert "  clusterIP\t<string>\n" in out and "  ports\t<[]ServicePort>\n" in out
    assert "  selector\t<map[string]string>\n" in out


def test_explain_required_fields_and_int_or_string(kubectl):
    ports = kubectl("explain svc.spec.ports").stdout
    assert "  port\t<integer> -required-\n" in ports
    assert "  targetPort\t<IntOrString>\n" in ports
    slices = kubectl("explain endpointslices.endpoints").stdout
    assert slices.startswith("GROUP:      discovery.k8s.io\nKIND:       EndpointSlice\n")
    assert "  addresses\t<[]string> -required-\n" in slices


def test_explain_an_unknown_field(kubectl):
    result = kubectl("explain service.spec.clusterip", ok=False)
    assert result.returncode == 1
    assert 'field "clusterip" does not exist' in result.stderr


def test_explain_from_openapi_v2(kubectl):
    out = kubectl("explain deployment.spec.replicas --output=plaintext-openapiv2").stdout
    assert "FIELD:    replicas <integer>" in out and "DESCRIPTION:" in out


def test_an_unknown_kind_is_kubectls_no_matches(kubectl):
    result = kubectl("apply -f -", input="apiVersion: v1\nkind: Servcie\nmetadata: {name: typo}\n", ok=False)
    assert result.returncode == 1
    assert 'no matches for kind "Servcie" in version "v1"' in result.stderr
    assert "openapi" not in result.stderr


def test_an_unknown_field_is_refused_by_validation(kubectl):
    manifest = "apiVersion: v1\nkind: Service\nmetadata: {name: typo}\nspec: {ports: [{port: 80, targtPort: 80}]}\n"
    result = kubectl("apply -f -", input=manifest, ok=False)
    assert 'unknown field "spec.ports[0].targtPort"' in result.stderr


def test_documents_name_every_kind(api):
    status, root = api.json("GET", "/openapi/v3")
    assert status == 200 and {"api/v1", "apis/apps/v1", "apis/discovery.k8s.io/v1"} <= set(root["paths"])
    status, doc = api.json("GET", root["paths"]["apis/apps/v1"]["serverRelativeURL"])
    schema = doc["components"]["schemas"]["io.k8s.api.apps.v1.Deployment"]
    assert schema["x-kubernetes-group-version-kind"] == [{"group": "apps", "kind": "Deployment", "version": "v1"}]
    assert schema["properties"]["metadata"]["allOf"][0]["$ref"] == \
        "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
    containers = doc["components"]["schemas"]["io.k8s.api.core.v1.PodSpec"]["properties"]["containers"]
    assert containers["x-kubernetes-patch-merge-key"] == "name"
    status, headers, body = api.request("GET", "/openapi/v2", headers={"Accept": "application/json"})
    v2 = json.loads(body)
    assert status == 200 and "io.k8s.api.core.v1.Service" in v2["definitions"]
    status, headers, body = api.request("GET", "/openapi/v2", headers={"Accept": V2_PROTOBUF})
    assert status == 200 and headers["content-type"] == V2_PROTOBUF and body == openapi.v2_document_protobuf()


def test_client_side_apply_merges_lists_by_their_keys(kubectl, lab):
    svc = ("apiVersion: v1\nkind: Service\nmetadata: {name: merged}\nspec:\n  selector: {app: merged}\n"
           "  ports: [{name: a, port: 80}, {name: b, port: 81}]\n")
    kubectl("apply -f -", input=svc)
    kubectl("apply -f -", input=svc.replace("81", "82"))
    assert [p["port"] for p in lab.get("svc", "merged")["spec"]["ports"]] == [80, 82]
    dep = ("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: merged}\nspec:\n"
           "  selector: {matchLabels: {app: merged}}\n  template:\n    metadata: {labels: {app: merged}}\n"
           "    spec:\n      containers: [{name: web, image: nginx, env: [{name: A, value: '1'}]}]\n")
    kubectl("apply -f -", input=dep)
    kubectl("apply -f -", input=dep.replace("'1'", "'2'"))
    container = lab.get("deploy", "merged")["spec"]["template"]["spec"]["containers"][0]
    assert container["env"] == [{"name": "A", "value": "2"}]


def test_merge_keys_follow_the_type():
    import json as j
    schemas = j.loads(openapi.v3_document_text("api/v1"))["components"]["schemas"]
    assert schemas["io.k8s.api.core.v1.ServiceSpec"]["properties"]["ports"]["x-kubernetes-patch-merge-key"] == "port"
    assert schemas["io.k8s.api.core.v1.Container"]["properties"]["ports"]["x-kubernetes-patch-merge-key"] == \
        "containerPort"


def test_the_shipped_v3_documents_are_what_the_client_gives():
    """openapi_v3.json (served everywhere, a browser tab too) matches the installed client; if this fails, run
    `python -m labsupport.apiserver.openapi` and commit the file."""
    shipped = json.loads(openapi.V3_PATH.read_text(encoding="utf-8"))
    assert shipped == openapi.v3_documents_from_client()
    for key in shipped["documents"]:
        assert openapi.v3_document_text(key) == openapi.v3_document_from_client(key)
