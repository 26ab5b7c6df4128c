"""Writing with the real kubectl: apply (client- and server-side), create, delete, scale, expose, run, patch,
label, rollout and wait."""
from __future__ import annotations

import json

import pytest
import yaml

from labsupport import NotFound

APP = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: shop, labels: {team: a}}
spec:
  replicas: 2
  selector: {matchLabels: {app: shop}}
  template:
    metadata: {labels: {app: shop}}
    spec:
      containers:
      - name: nginx
        image: nginx:1.27
        ports: [{containerPort: 80}]
"""


def test_apply_stdin_then_changed_manifest(kubectl, lab):
    assert kubectl("apply -f -", input=APP).stdout.strip() == "deployment.apps/shop created"
    assert kubectl("apply -f -", input=APP).stdout.strip() == "deployment.apps/shop unchanged"
    changed = APP.replace("replicas: 2", "replicas: 4").replace("team: a", "team: b")
    assert kubectl("apply -f -", input=changed).stdout.strip() == "deployment.apps/shop configured"
    kubectl("rollout status deployment/shop --timeout=60s")
    dep = lab.get("deployments", name="shop")
    assert dep["spec"]["replicas"] == 4 and dep["metadata"]["labels"] == {"team": "b"}
    assert dep["status"]["readyReplicas"] == 4
    kubectl("delete deployment shop")


def test_apply_file_and_server_side(kubectl, lab, tmp_path):
    path = tmp_path / "app.yaml"
    path.write_text(APP.replace("shop", "ssa"))
    assert "serverside-applied" in kubectl(f"apply --server-side -f {path}").stdout
    path.write_text(APP.replace("shop", "ssa").replace("replicas: 2", "replicas: 1")
                    .replace("    metadata: {labels: {app: ssa}}", "    metadata: {labels: {app: ssa, v: '2'}}"))
    assert "serverside-applied" in kubectl(f"apply --server-side -f {path}").stdout
    dep = lab.get("deployments", name="ssa")
    assert dep["spec"]["replicas"] == 1
    assert dep["spec"]["template"]["metadata"]["labels"] == {"app": "ssa", "v": "2"}
    shown = yaml.safe_load(kubectl("get deploy ssa -o yaml --show-managed-fields").stdout)
    assert any(m["manager"] == "kubectl" and m["operation"] == "Apply" for m in shown["metadata"]["managedFields"])
    kubectl(f"apply -f {path}")
    kubectl(f"delete -f {path}")
    assert kubectl("get deploy ssa", ok=False).returncode == 1


def test_create_scale_expose(kubectl, lab):
    kubectl("create -f -", input=APP.replace("shop", "api"))
    assert kubectl("scale deployment api --replicas=3").stdout.strip() == "deployment.apps/api scaled"
    kubectl("wait --for=condition=Available deployment/api --timeout=60s")
    assert lab.get("deployments", name="api")["status"]["availableReplicas"] == 3
    assert kubectl("expose deployment api --port=8080 --target-port=80").stdout.strip() == "service/api exposed"
    svc = json.loads(kubectl("get svc api -o json").stdout)
    assert svc["spec"]["selector"] == {"app": "api"} and svc["spec"]["ports"][0]["port"] == 8080
    kubectl("delete svc api")
    kubectl("delete deployment api")


def test_run_wait_logs_exec_delete(kubectl, lab):
    assert kubectl("run box --image=busybox -- sleep 3600").stdout.strip() == "pod/box created"
    assert "condition met" in kubectl("wait --for=condition=Ready pod/box --timeout=60s").stdout
    assert kubectl("exec box -- hostname").stdout.strip() == "box"
    assert kubectl("logs box").returncode == 0
    result = kubectl("exec box -- cat /nonexistent", ok=False)
    assert result.returncode != 0
    kubectl("delete pod box --grace-period=1")
    assert kubectl("get pod box", ok=False).returncode == 1


def test_patch_and_label(kubectl, lab):
    kubectl("patch svc web -p '{\"metadata\":{\"labels\":{\"tier\":\"front\"}}}'")
    assert lab.get("services", name="web")["metadata"]["labels"] == {"tier": "front"}
    kubectl("patch svc web --type=merge -p '{\"metadata\":{\"labels\":{\"tier\":null}}}'")
    assert not lab.get("services", name="web")["metadata"].get("labels")
    kubectl("patch svc web --type=json -p '[{\"op\":\"add\",\"path\":\"/metadata/annotations\","
            "\"value\":{\"a\":\"b\"}}]'")
    assert lab.get("services", name="web")["metadata"]["annotations"]["a"] == "b"
    out = kubectl("label pods -l app=db role=store").stdout
    assert out.count("labeled") == 3
    assert len(lab.get("pods", selector="role=store")) == 3
    kubectl("label pods -l app=db role-")
    result = kubectl("patch svc web --type=json -p '[{\"op\":\"remove\",\"path\":\"/nope\"}]'", ok=False)
    assert result.returncode == 1


def test_rollout_restart_and_status(kubectl, lab):
    before = {p["metadata"]["name"] for p in lab.get("pods", selector="app=web")}
    assert "restarted" in kubectl("rollout restart deployment/web").stdout
    assert "successfully rolled out" in kubectl("rollout status deployment/web --timeout=120s").stdout
    after = {p["metadata"]["name"] for p in lab.get("pods", selector="app=web")
             if not p["metadata"].get("deletionTimestamp")}
    assert len(after) == 3 and not (after & before)


def test_delete_by_label_and_grace_period(kubectl, lab):
    kubectl("run t1 --image=busybox --labels=tmp=yes -- sleep 3600")
    kubectl("run t2 --image=busybox --labels=tmp=yes -- sleep 3600")
    kubectl("wait --for=condition=Ready pod -l tmp=yes --timeout=60s")
    out = kubectl("delete pod -l tmp=yes --grace-period=5").stdout
    assert 'pod "t1" deleted' in out and 'pod "t2" deleted' in out
    assert lab.get("pods", selector="tmp=yes") == []


def test_create_subcommands_sent_as_protobuf(kubectl, lab):
    kubectl("create deployment hello --image=nginx:1.27 --replicas=2 --port=80")
    kubectl("create service nodeport hello --tcp=8080:80 --node-port=30090")
    kubectl("create configmap cfg --from-literal=a=b")
    kubectl("create namespace team-a")
    kubectl("rollout status deployment/hello --timeout=60s")
    dep = lab.get("deployments", name="hello")
    assert dep["spec"]["replicas"] == 2 and dep["status"]["readyReplicas"] == 2
    container = dep["spec"]["template"]["spec"]["containers"][0]
    assert container["image"] == "nginx:1.27" and container["ports"] == [{"containerPort": 80, "protocol": "TCP"}]
    assert "creationTimestamp" not in dep["spec"]["template"]["metadata"]
    svc = lab.get("services", name="hello")
    assert svc["spec"]["ports"][0]["nodePort"] == 30090 and svc["spec"]["ports"][0]["targetPort"] == 80
    assert lab.get("configmaps", name="cfg")["data"] == {"a": "b"}
    assert lab.get("namespaces", name="team-a", namespace=None)["metadata"]["name"] == "team-a"
    for what in ("deployment hello", "service hello", "configmap cfg", "namespace team-a"):
        kubectl(f"delete {what}")


def test_server_side_apply_conflicts(kubectl, lab):
    manifest = APP.replace("shop", "owned")
    kubectl("apply --server-side -f -", input=manifest)
    kubectl("scale deployment owned --replicas=5")
    result = kubectl("apply --server-side -f -", input=manifest, ok=False)
    assert result.returncode == 1
    assert 'Apply failed with 1 conflict: conflict with "kubectl" with subresource "scale" using apps/v1: ' \
           '.spec.replicas' in result.stderr
    assert lab.get("deployments", name="owned")["spec"]["replicas"] == 5
    kubectl("apply --server-side --force-conflicts -f -", input=manifest)
    assert lab.get("deployments", name="owned")["spec"]["replicas"] == 2
    managers = {m["manager"]: m for m in lab_managed_fields(kubectl, "owned")}
    assert managers["kubectl"]["operation"] == "Apply"
    assert "f:replicas" in managers["kubectl"]["fieldsV1"]["f:spec"]
    containers = managers["kubectl"]["fieldsV1"]["f:spec"]["f:template"]["f:spec"]["f:containers"]
    assert 'k:{"name":"nginx"}' in containers
    kubectl("delete deployment owned")


def lab_managed_fields(kubectl, name: str) -> list[dict]:
    return json.loads(kubectl(f"get deployment {name} -o json --show-managed-fields").stdout)["metadata"][
        "managedFields"]


TYPO = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: typo}
spec:
  replica: 2
  selector: {matchLabels: {app: typo}}
  template:
    metadata: {labels: {app: typo}}
    spec:
      containers: [{name: c, image: nginx, imagePullPolicyy: Always}]
"""


def test_field_validation(kubectl, lab):
    strict = kubectl("apply -f -", input=TYPO, ok=False)
    assert strict.stderr.strip() == (
        'Error from server (BadRequest): error when creating "STDIN": Deployment in version "v1" cannot be handled '
        'as a Deployment: strict decoding error: unknown field "spec.replica", unknown field '
        '"spec.template.spec.containers[0].imagePullPolicyy"')
    ssa = kubectl("apply --server-side -f -", input=TYPO, ok=False)
    assert "failed to create typed patch object (default/typo; apps/v1, Kind=Deployment): .spec.replica: " \
           "field not declared in schema" in ssa.stderr
    with pytest.raises(NotFound):
        lab.get("deployments", name="typo")
    warned = kubectl("apply --validate=warn -f -", input=TYPO)
    assert 'Warning: unknown field "spec.replica"' in warned.stderr
    dep = lab.get("deployments", name="typo")
    assert "replica" not in dep["spec"] and dep["spec"]["replicas"] == 1
    kubectl("delete deployment typo")
