"""What client-go informers of kube-proxy and CoreDNS ask the API server for, beyond what kubectl does."""
from __future__ import annotations

from labsupport.apiserver.events import from_core, to_core
from labsupport.upstream.kube_proxy import ensure_service_cidr


def test_services_filter_on_cluster_ip(api):
    status, body = api.json("GET", "/api/v1/services?fieldSelector=spec.clusterIP!%3DNone")
    assert status == 200
    assert body["items"] and all(s["spec"].get("clusterIP") != "None" for s in body["items"])
    status, body = api.json("GET", "/api/v1/services?fieldSelector=spec.clusterIP%3D10.96.0.1")
    assert [s["metadata"]["name"] for s in body["items"]] == ["kubernetes"]
    status, body = api.json("GET", "/api/v1/services?fieldSelector=spec.type%3DNodePort")
    assert status == 200 and all(s["spec"]["type"] == "NodePort" for s in body["items"])


def test_service_cidrs_are_served(lab, api):
    ensure_service_cidr(lab.cluster)
    status, body = api.json("GET", "/apis/networking.k8s.io/v1/servicecidrs")
    assert status == 200 and body["kind"] == "ServiceCIDRList"
    (cidr,) = body["items"]
    assert cidr["metadata"]["name"] == "kubernetes" and cidr["spec"]["cidrs"] == ["10.96.0.0/12"]
    assert cidr["status"]["conditions"][0]["type"] == "Ready"


def test_events_v1_are_core_events(api):
    event = {"apiVersion": "events.k8s.io/v1", "kind": "Event",
             "metadata": {"name": "lab-worker.1", "namespace": "default"},
             "eventTime": "2026-01-01T00:00:00.000000Z", "reportingController": "kube-proxy",
             "reportingInstance": "kube-proxy-lab-worker", "action": "StartKubeProxy", "reason": "Starting",
             "regarding": {"kind": "Node", "name": "lab-worker", "uid": "lab-worker"}, "note": "", "type": "Normal"}
    status, created = api.json("POST", "/apis/events.k8s.io/v1/namespaces/default/events", event)
    assert status == 201, created
    assert created["apiVersion"] == "events.k8s.io/v1" and created["regarding"]["name"] == "lab-worker"
    status, core = api.json("GET", "/api/v1/namespaces/default/events/lab-worker.1")
    assert status == 200
    assert core["involvedObject"]["name"] == "lab-worker" and core["reportingComponent"] == "kube-proxy"
    status, patched = api.json("PATCH", "/apis/events.k8s.io/v1/namespaces/default/events/lab-worker.1",
                               {"series": {"count": 2, "lastObservedTime": "2026-01-01T00:01:00.000000Z"}},
                               headers={"Content-Type": "application/merge-patch+json"})
    assert status == 200 and patched["series"]["count"] == 2
    status, missing = api.json("GET", "/apis/events.k8s.io/v1/namespaces/default/widgets")
    assert status == 404


def test_event_conversion_round_trips():
    event = {"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "e"},
             "regarding": {"kind": "Pod", "name": "p"}, "note": "n", "reportingController": "c",
             "deprecatedCount": 3, "type": "Warning", "reason": "R"}
    core = to_core(event)
    assert core["involvedObject"] == {"kind": "Pod", "name": "p"} and core["message"] == "n" and core["count"] == 3
    assert from_core(core) == event
