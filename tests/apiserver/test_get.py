"""Reading with the real kubectl: tables, output formats, selectors, discovery and the server's exact errors."""
from __future__ import annotations

import json

import pytest
import yaml


def header(text: str) -> list[str]:
    return text.splitlines()[0].split()


def test_get_pods_table(kubectl, lab):
    out = kubectl("get pods").stdout
    assert header(out) == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
    rows = [line.split() for line in out.splitlines()[1:]]
    assert len(rows) == 6
    assert all(r[1] == "1/1" and r[2] == "Running" and r[3] == "0" for r in rows)


def test_get_pods_wide(kubectl, lab):
    out = kubectl("get pods -o wide").stdout
    assert out.splitlines()[0].split() == ["NAME", "READY", "STATUS", "RESTARTS", "AGE", "IP", "NODE",
                                           "NOMINATED", "NODE", "READINESS", "GATES"]
    ips = {p["status"]["podIP"] for p in lab.get("pods")}
    assert ips <= set(out.split())


def test_get_services(kubectl):
    out = kubectl("get svc -o wide").stdout
    assert header(out) == ["NAME", "TYPE", "CLUSTER-IP", "EXTERNAL-IP", "PORT(S)", "AGE", "SELECTOR"]
    db = next(line.split() for line in out.splitlines() if line.startswith("db "))
    assert db[1:5] == ["ClusterIP", "None", "<none>", "80/TCP"]
    assert db[6] == "app=db"


def test_lesson_endpointslices(kubectl, lab):
    out = kubectl("get endpointslices -l kubernetes.io/service-name=web").stdout
    assert header(out) == ["NAME", "ADDRESSTYPE", "PORTS", "ENDPOINTS", "AGE"]
    row = out.splitlines()[1].split()
    assert row[0].startswith("web-") and row[1] == "IPv4" and row[2] == "80"
    pod_ips = {p["status"]["podIP"] for p in lab.get("pods", selector="app=web")}
    assert set(row[3].split(",")) == pod_ips
    name = row[0]
    obj = yaml.safe_load(kubectl(f"get endpointslice {name} -o yaml").stdout)
    assert obj["kind"] == "EndpointSlice" and obj["apiVersion"] == "discovery.k8s.io/v1"
    assert obj["metadata"]["labels"]["kubernetes.io/service-name"] == "web"
    assert {e["addresses"][0] for e in obj["endpoints"]} == pod_ips
    assert all(e["conditions"]["ready"] for e in obj["endpoints"])


def test_endpoints_more_format(kubectl, lab):
    lab.scale("web", 5)
    lab.wait(lambda l: len([e for s in l.get("endpointslices", selector="kubernetes.io/service-name=web")
                            for e in s.get("endpoints") or [] if e["conditions"].get("ready")]) == 5)
    out = kubectl("get endpointslices -l kubernetes.io/service-name=web").stdout
    assert "+ 2 more..." in out
    lab.scale("web", 3)
    lab.wait(lambda l: len(l.get("pods", selector="app=web")) == 3, timeout=120)


@pytest.mark.parametrize("resource", ["pods", "services", "endpointslices", "endpoints", "deployments",
                                      "replicasets", "statefulsets", "daemonsets", "nodes", "namespaces",
                                      "configmaps", "events"])
def test_every_resource_lists(kubectl, resource):
    out = kubectl(f"get {resource} -A").stdout
    assert out.splitlines()[0].split()[0] in ("NAMESPACE", "NAME")


def test_columns_of_workloads_and_nodes(kubectl):
    assert header(kubectl("get deploy").stdout) == ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"]
    assert header(kubectl("get deploy -o wide").stdout)[-3:] == ["CONTAINERS", "IMAGES", "SELECTOR"]
    assert header(kubectl("get sts").stdout) == ["NAME", "READY", "AGE"]
    assert header(kubectl("get nodes").stdout) == ["NAME", "STATUS", "ROLES", "AGE", "VERSION"]
    wide = kubectl("get nodes -o wide").stdout
    assert header(wide)[5:] == ["INTERNAL-IP", "EXTERNAL-IP", "OS-IMAGE", "KERNEL-VERSION", "CONTAINER-RUNTIME"]
    assert "control-plane" in wide and "172.18.0.2" in wide


def test_output_formats(kubectl):
    data = json.loads(kubectl("get svc web -o json").stdout)
    assert data["spec"]["ports"][0]["port"] == 80
    assert kubectl("get svc -o name").stdout.split() == ["service/db", "service/kubernetes", "service/web"]
    ip = kubectl("get svc web -o jsonpath={.spec.clusterIP}").stdout
    assert ip.startswith("10.")
    items = yaml.safe_load(kubectl("get pods -l app=db -o yaml").stdout)["items"]
    assert sorted(p["metadata"]["name"] for p in items) == ["db-0", "db-1", "db-2"]


def test_label_selector_and_all_namespaces(kubectl):
    out = kubectl("get pods -l app=db").stdout
    assert [line.split()[0] for line in out.splitlines()[1:]] == ["db-0", "db-1", "db-2"]
    out = kubectl("get pods -A").stdout
    assert header(out)[0] == "NAMESPACE" and "kube-system" in out and "coredns" in out
    assert "No resources found" in kubectl("get pods -l app=nothing").stderr


def test_endpoints_deprecation_warning(kubectl, api):
    result = kubectl("get endpoints web")
    assert "Warning: v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1 EndpointSlice" in result.stderr
    status, headers, _ = api.request("GET", "/api/v1/namespaces/default/endpoints")
    assert status == 200
    assert headers["warning"] == '299 - "v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1 EndpointSlice"'


def test_api_resources(kubectl):
    out = kubectl("api-resources").stdout
    for line in ("endpointslices", "deployments", "svc", "po"):
        assert line in out


def test_not_found_and_already_exists(kubectl, lab):
    result = kubectl("get svc nope", ok=False)
    assert result.returncode == 1
    assert result.stderr.strip() == 'Error from server (NotFound): services "nope" not found'
    result = kubectl("create -f -", input="apiVersion: v1\nkind: Service\nmetadata: {name: web}\n"
                                          "spec: {ports: [{port: 80}]}\n", ok=False)
    assert 'Error from server (AlreadyExists): error when creating "STDIN": services "web" already exists' \
        in result.stderr


def test_invalid_has_field_messages(kubectl, lab):
    manifest = ("apiVersion: v1\nkind: Service\nmetadata: {name: bad}\n"
                "spec: {type: NodePort, ports: [{port: 80, nodePort: 29999}]}\n")
    result = kubectl("apply -f -", input=manifest, ok=False)
    assert 'The Service "bad" is invalid: spec.ports[0].nodePort: Invalid value: 29999: provided port is not in ' \
           'the valid range. The range of valid ports is 30000-32767' in result.stderr
    assert kubectl("get svc bad", ok=False).returncode == 1


def test_describe(kubectl, lab):
    pod = kubectl("describe pod db-0").stdout
    assert "Name:" in pod and "db-0" in pod and "Status:" in pod and "Running" in pod
    assert "Events:" in pod and "Scheduled" in pod
    svc = kubectl("describe service web").stdout
    assert "Selector:" in svc and "app=web" in svc and "Endpoints:" in svc
    eps = kubectl("describe endpointslice -l kubernetes.io/service-name=db").stdout
    assert "AddressType:" in eps and "IPv4" in eps
    assert "Endpoints:" in eps
