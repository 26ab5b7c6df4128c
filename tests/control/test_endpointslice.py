"""The EndpointSlice reconciler, with upstream reconciler cases rebuilt as data."""
from __future__ import annotations

import copy

import pytest

from labsupport.control.endpointslice import (ANNOTATION_TRIGGER_TIME, LABEL_HEADLESS, LABEL_MANAGED_BY,
                                              LABEL_SERVICE_NAME, ReconcilePlan, endpoints_for, reconcile)

NS = "test"
ZONES = {"node-1": "zone-a", "node-2": "zone-b", "node-3": "zone-c"}


def node(name, zone=None):
    labels = {"topology.kubernetes.io/zone": zone} if zone else {}
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels}}


NODES = [node(name, zone) for name, zone in ZONES.items()]


def service(name="foo", *, selector=None, ports=None, cluster_ip="10.96.0.20", families=("IPv4",), labels=None,
            uid="svc-uid", publish_not_ready=False, traffic=None, annotations=None):
    spec = {"selector": {"foo": "bar"} if selector is None else selector,
            "ports": [{"name": "http", "port": 80, "targetPort": 8080, "protocol": "TCP"}] if ports is None else ports,
            "clusterIP": cluster_ip, "ipFamilies": list(families)}
    if publish_not_ready:
        spec["publishNotReadyAddresses"] = True
    if traffic:
        spec["trafficDistribution"] = traffic
    meta = {"name": name, "namespace": NS, "uid": uid, "creationTimestamp": "2026-01-01T00:00:00Z"}
    if labels:
        meta["labels"] = labels
    if annotations:
        meta["annotations"] = annotations
    return {"apiVersion": "v1", "kind": "Service", "metadata": meta, "spec": spec}


def pod(i, *, ready=True, node_name=None, terminating=False, phase="Running", ip=None, labels=None,
        container_ports=None, hostname=None, subdomain=None, namespace=NS, ips=None):
    ip = ip if ip is not None else f"10.1.{i // 250}.{i % 250 + 1}"
    meta = {"name": f"pod{i}", "namespace": namespace, "uid": f"uid-{i}",
            "labels": {"foo": "bar"} if labels is None else labels, "creationTimestamp": "2026-01-01T00:00:01Z"}
    if terminating:
        meta["deletionTimestamp"] = "2026-01-01T00:05:00Z"
    spec = {"nodeName": node_name or f"node-{i % 3 + 1}",
            "containers": [{"name": "app", "ports": container_ports or []}]}
    if hostname:
        spec["hostname"] = hostname
    if subdomain:
        spec["subdomain"] = subdomain
    status = {"phase": phase,
              "conditions": [{"type": "Ready", "status": "True" if ready else "False",
                              "lastTransitionTime": "2026-01-01T00:00:02Z"}]}
    if ips is not None:
        status["podIPs"] = [{"ip": x} for x in ips]
        if ips:
            status["podIP"] = ips[0]
    elif ip:
        status["podIP"] = ip
        status["podIPs"] = [{"ip": ip}]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": status}


def store(plan: ReconcilePlan, existing=(), prefix="foo-s"):
    """What the API server holds after the plan is applied: creates get names, updates replace."""
    by_name = {s["metadata"]["name"]: s for s in existing}
    for s in plan.delete:
        by_name.pop(s["metadata"]["name"])
    for s in plan.update:
        assert s["metadata"]["name"] in by_name
        by_name[s["metadata"]["name"]] = copy.deepcopy(s)
    for n, s in enumerate(plan.create):
        s = copy.deepcopy(s)
        assert "name" not in s["metadata"]
        s["metadata"]["name"] = f"{s['metadata'].pop('generateName')}{len(by_name) + n:05d}"
        by_name[s["metadata"]["name"]] = s
    return sorted(by_name.values(), key=lambda s: s["metadata"]["name"])


def lengths(slices):
    return sorted(len(s["endpoints"]) for s in slices)


def endpoint_for(p, svc):
    """An endpoint built independently from the pod, as the slice should carry it."""
    ready_cond = p["status"]["conditions"][0]["status"] == "True"
    terminating = "deletionTimestamp" in p["metadata"]
    publish = svc["spec"].get("publishNotReadyAddresses", False)
    ep = {"addresses": [p["status"]["podIP"]],
          "conditions": {"ready": publish or (ready_cond and not terminating), "serving": ready_cond,
                         "terminating": terminating},
          "targetRef": {"kind": "Pod", "namespace": p["metadata"]["namespace"], "name": p["metadata"]["name"],
                        "uid": p["metadata"]["uid"]},
          "nodeName": p["spec"]["nodeName"]}
    zone = ZONES.get(p["spec"]["nodeName"])
    if zone:
        ep["zone"] = zone
    return ep


def slice_with(svc, name, pods, *, ports=None, address_type="IPv4", owner_uid=None, labels=None):
    svc_name = svc["metadata"]["name"]
    lab = {LABEL_SERVICE_NAME: svc_name, LABEL_MANAGED_BY: "endpointslice-controller.k8s.io"}
    if labels is not None:
        lab = labels
    return {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
            "metadata": {"name": name, "namespace": NS, "generateName": svc_name + "-", "labels": lab,
                         "ownerReferences": [{"apiVersion": "v1", "kind": "Service", "name": svc_name,
                                              "uid": owner_uid or svc["metadata"]["uid"], "controller": True,
                                              "blockOwnerDeletion": True}]},
            "addressType": address_type,
            "endpoints": [endpoint_for(p, svc) for p in pods],
            "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}] if ports is None else ports}


# ------------------------------------------------------------------------------------------------ basics

def test_no_pods_creates_one_placeholder():
    plan = reconcile(service(), [], [], NODES)
    assert len(plan.create) == 1 and not plan.update and not plan.delete
    placeholder = plan.create[0]
    assert placeholder["endpoints"] == [] and placeholder["ports"] == []
    assert placeholder["addressType"] == "IPv4"
    assert placeholder["metadata"]["generateName"] == "foo-"
    assert "name" not in placeholder["metadata"]


def test_identical_placeholder_is_left_alone():
    svc = service()
    first = store(reconcile(svc, [], [], NODES))
    assert reconcile(svc, [], first, NODES).is_empty()


def test_service_without_selector_is_not_managed():
    assert reconcile(service(selector={}), [pod(1)], [], NODES).is_empty()
    external = service()
    external["spec"]["type"] = "ExternalName"
    assert reconcile(external, [pod(1)], [], NODES).is_empty()
    assert endpoints_for(external, [pod(1)]) is None
    svc = service()
    del svc["spec"]["selector"]
    assert reconcile(svc, [pod(1)], [], NODES).is_empty()


def test_one_pod_full_slice_shape():
    svc = service(labels={"team": "a", LABEL_SERVICE_NAME: "spoof"})
    p = pod(1, node_name="node-2")
    plan = reconcile(svc, [p], [], NODES)
    [s] = plan.create
    assert s["apiVersion"] == "discovery.k8s.io/v1" and s["kind"] == "EndpointSlice"
    assert s["metadata"]["namespace"] == NS
    assert s["metadata"]["labels"] == {"team": "a", LABEL_SERVICE_NAME: "foo",
                                       LABEL_MANAGED_BY: "endpointslice-controller.k8s.io"}
    assert s["metadata"]["ownerReferences"] == [{"apiVersion": "v1", "kind": "Service", "name": "foo",
                                                 "uid": "svc-uid", "controller": True,
                                                 "blockOwnerDeletion": True}]
    assert s["metadata"]["annotations"][ANNOTATION_TRIGGER_TIME] == "2026-01-01T00:00:02Z"
    assert s["ports"] == [{"name": "http", "port": 8080, "protocol": "TCP"}]
    assert s["endpoints"] == [{"addresses": ["10.1.0.2"],
                               "conditions": {"ready": True, "serving": True, "terminating": False},
                               "targetRef": {"kind": "Pod", "namespace": NS, "name": "pod1", "uid": "uid-1"},
                               "nodeName": "node-2", "zone": "zone-b"}]


def test_inputs_are_not_mutated():
    svc = service(traffic="PreferClose")
    pods = [pod(i) for i in range(120)]
    existing = [slice_with(svc, "foo-a", pods[:60]), slice_with(svc, "foo-b", pods[60:100])]
    pods[5] = pod(5, ready=False)
    before = copy.deepcopy((svc, pods, existing, NODES))
    reconcile(svc, pods, existing, NODES)
    assert (svc, pods, existing, NODES) == before


def test_headless_label_and_app_protocol():
    svc = service(cluster_ip="None", ports=[{"name": "grpc", "port": 9000, "targetPort": 9000,
                                             "protocol": "TCP", "appProtocol": "kubernetes.io/h2c"}])
    [s] = reconcile(svc, [pod(1)], [], NODES).create
    assert s["metadata"]["labels"][LABEL_HEADLESS] == ""
    assert s["ports"] == [{"name": "grpc", "port": 9000, "protocol": "TCP", "appProtocol": "kubernetes.io/h2c"}]


def test_headless_without_ports_gets_portless_slice():
    svc = service(cluster_ip="None", ports=[])
    [s] = reconcile(svc, [pod(1)], [], NODES).create
    assert s["ports"] == [] and len(s["endpoints"]) == 1


# --------------------------------------------------------------------------------------------- which pods

def test_pod_selection_rules():
    svc = service()
    pods = [pod(1), pod(2, phase="Succeeded"), pod(3, phase="Failed"), pod(4, ip=""),
            pod(5, labels={"foo": "other"}), pod(6, namespace="elsewhere"), pod(7, terminating=True),
            pod(8, ready=False)]
    [s] = reconcile(svc, pods, [], NODES).create
    assert sorted(e["targetRef"]["name"] for e in s["endpoints"]) == ["pod1", "pod7", "pod8"]


def test_terminating_conditions():
    svc = service()
    serving = pod(1, terminating=True, ready=True)
    gone = pod(2, terminating=True, ready=False)
    [s] = reconcile(svc, [serving, gone], [], NODES).create
    conds = {e["targetRef"]["name"]: e["conditions"] for e in s["endpoints"]}
    assert conds["pod1"] == {"ready": False, "serving": True, "terminating": True}
    assert conds["pod2"] == {"ready": False, "serving": False, "terminating": True}


def test_publish_not_ready_addresses_makes_everything_ready():
    svc = service(publish_not_ready=True)
    [s] = reconcile(svc, [pod(1, ready=False), pod(2, terminating=True)], [], NODES).create
    assert all(e["conditions"]["ready"] for e in s["endpoints"])
    assert [e["conditions"]["serving"] for e in s["endpoints"]] == [False, True]


def test_pod_on_unknown_node_is_skipped_unless_publishing_not_ready():
    p = pod(1, node_name="node-9")
    plan = reconcile(service(), [p], [], NODES)
    assert plan.create[0]["endpoints"] == []
    [s] = reconcile(service(publish_not_ready=True), [p], [], NODES).create
    assert s["endpoints"][0]["nodeName"] == "node-9" and "zone" not in s["endpoints"][0]


def test_node_without_zone_label_gives_no_zone():
    [s] = reconcile(service(), [pod(1, node_name="bare")], [], NODES + [node("bare")]).create
    assert "zone" not in s["endpoints"][0]


def test_hostname_only_when_subdomain_matches_service():
    svc = service(name="web", cluster_ip="None")
    pods = [pod(0, hostname="web-0", subdomain="web"), pod(1, hostname="web-1", subdomain="other"),
            pod(2, hostname="web-2")]
    [s] = reconcile(svc, pods, [], NODES).create
    names = {e["targetRef"]["name"]: e.get("hostname") for e in s["endpoints"]}
    assert names == {"pod0": "web-0", "pod1": None, "pod2": None}


# ------------------------------------------------------------------------------------------------- ports

def test_named_target_port_resolved_per_pod_splits_slices():
    svc = service(ports=[{"name": "http", "port": 80, "targetPort": "web", "protocol": "TCP"}])
    old = [pod(i, container_ports=[{"name": "web", "containerPort": 8080, "protocol": "TCP"}]) for i in range(3)]
    new = [pod(i, container_ports=[{"name": "web", "containerPort": 9090, "protocol": "TCP"}])
           for i in range(3, 5)]
    plan = reconcile(svc, old + new, [], NODES)
    by_port = {s["ports"][0]["port"]: len(s["endpoints"]) for s in plan.create}
    assert by_port == {8080: 3, 9090: 2}


def test_named_port_missing_drops_that_port_like_upstream():
    # Upstream logs and skips the port it cannot find; the pod lands in a slice with the ports it does have.
    svc = service(ports=[{"name": "http", "port": 80, "targetPort": "web", "protocol": "TCP"}])
    plan = reconcile(svc, [pod(1, container_ports=[{"name": "web", "containerPort": 8080}]), pod(2)], [], NODES)
    shapes = sorted((len(s["ports"]), len(s["endpoints"])) for s in plan.create)
    assert shapes == [(0, 1), (1, 1)]


def test_named_port_protocol_must_match():
    svc = service(ports=[{"name": "dns", "port": 53, "targetPort": "dns", "protocol": "UDP"}])
    p = pod(1, container_ports=[{"name": "dns", "containerPort": 5353, "protocol": "TCP"}])
    [s] = reconcile(svc, [p], [], NODES).create
    assert s["ports"] == []


def test_ports_are_sorted_deterministically():
    ports = [{"name": "b", "port": 81, "targetPort": 81, "protocol": "TCP"},
             {"name": "a", "port": 80, "targetPort": 80, "protocol": "TCP"}]
    [s] = reconcile(service(ports=ports), [pod(1)], [], NODES).create
    assert [p["name"] for p in s["ports"]] == ["a", "b"]


# ------------------------------------------------------------------------------------- packing (upstream)

def test_250_pods_make_slices_of_100_100_50():
    plan = reconcile(service(), [pod(i) for i in range(250)], [], NODES)
    assert len(plan.create) == 3 and not plan.update and not plan.delete
    assert lengths(plan.create) == [50, 100, 100]


def test_max_endpoints_per_slice_is_respected():
    plan = reconcile(service(), [pod(i) for i in range(25)], [], NODES, max_endpoints_per_slice=10)
    assert lengths(plan.create) == [5, 10, 10]


def test_some_preexisting_fills_closest_to_full():
    # Upstream: 250 pods; slice 1 holds 62 (every 4th from 1), slice 2 holds 61 (every 4th from 3).
    # 127 remain: one new slice of 100, and 27 into the slice that ends closest to full (the first).
    svc = service()
    pods = [pod(i, ready=i % 3 != 0, node_name="node-1") for i in range(250)]
    s1 = slice_with(svc, "foo-1", [pods[i] for i in range(1, 246, 4)])
    s2 = slice_with(svc, "foo-2", [pods[i] for i in range(3, 246, 4)])
    assert (len(s1["endpoints"]), len(s2["endpoints"])) == (62, 61)
    plan = reconcile(svc, pods, [s1, s2], NODES)
    assert len(plan.create) == 1 and len(plan.update) == 1 and not plan.delete
    assert plan.update[0]["metadata"]["name"] == "foo-1"
    assert lengths(store(plan, [s1, s2])) == [61, 89, 100]


def test_replaced_pods_refill_the_slices_being_updated():
    # Two full slices; 12 pods go away and 12 new ones come: the new ones fill the slices already being
    # updated (fullest first), so nothing is created.
    svc = service()
    pods = [pod(i) for i in range(200)]
    s1 = slice_with(svc, "foo-1", pods[:100])
    s2 = slice_with(svc, "foo-2", pods[100:])
    current = pods[6:194] + [pod(i) for i in range(300, 312)]
    plan = reconcile(svc, current, [s1, s2], NODES)
    assert not plan.create and not plan.delete and len(plan.update) == 2
    assert lengths(store(plan, [s1, s2])) == [100, 100]


def test_recycling_turns_creates_into_updates():
    # Upstream: every pod replaced by a new one; instead of 3 creates + 3 deletes, 3 updates.
    svc = service()
    old = [pod(i) for i in range(300)]
    existing = [slice_with(svc, f"foo-{n}", old[n * 100:(n + 1) * 100]) for n in range(3)]
    new = [pod(i) for i in range(1000, 1300)]
    plan = reconcile(svc, new, existing, NODES)
    assert not plan.create and not plan.delete
    assert sorted(s["metadata"]["name"] for s in plan.update) == ["foo-0", "foo-1", "foo-2"]
    assert lengths(store(plan, existing)) == [100, 100, 100]


def test_removed_pods_shrink_their_slice_and_empty_slice_is_deleted():
    svc = service()
    pods = [pod(i) for i in range(150)]
    s1 = slice_with(svc, "foo-1", pods[:100])
    s2 = slice_with(svc, "foo-2", pods[100:])
    plan = reconcile(svc, pods[:90], [s1, s2], NODES)
    assert [s["metadata"]["name"] for s in plan.update] == ["foo-1"]
    assert [s["metadata"]["name"] for s in plan.delete] == ["foo-2"]
    assert len(plan.update[0]["endpoints"]) == 90


def test_all_pods_gone_rewrites_last_slice_as_placeholder():
    svc = service()
    s1 = slice_with(svc, "foo-1", [pod(1), pod(2)])
    plan = reconcile(svc, [], [s1], NODES)
    assert not plan.create and not plan.delete
    [placeholder] = plan.update
    assert placeholder["metadata"]["name"] == "foo-1"
    assert placeholder["endpoints"] == [] and placeholder["ports"] == []


def test_unchanged_slices_are_untouched():
    svc = service()
    pods = [pod(i) for i in range(150)]
    existing = store(reconcile(svc, pods, [], NODES))
    assert reconcile(svc, pods, existing, NODES).is_empty()


def test_unowned_slice_is_deleted_and_replaced():
    svc = service()
    foreign = slice_with(svc, "foo-old", [pod(1)], owner_uid="someone-else")
    plan = reconcile(svc, [pod(1)], [foreign], NODES)
    assert [s["metadata"]["name"] for s in plan.delete] == ["foo-old"]
    assert len(plan.create) == 1 and not plan.update


def test_stale_address_types_are_deleted_last():
    svc = service()
    deprecated = slice_with(svc, "foo-ip", [pod(1)], address_type="IP")
    v6 = slice_with(svc, "foo-v6", [], address_type="IPv6")
    foreign = slice_with(svc, "foo-foreign", [pod(2)], owner_uid="other")
    plan = reconcile(svc, [pod(1)], [deprecated, foreign, v6], NODES)
    assert [s["metadata"]["name"] for s in plan.delete] == ["foo-foreign", "foo-ip", "foo-v6"]
    assert len(plan.create) == 1


def test_dual_stack_reconciles_each_family():
    svc = service(families=("IPv4", "IPv6"))
    p = pod(1, ips=["10.1.0.2", "fd00::2"])
    plan = reconcile(svc, [p], [], NODES)
    assert sorted((s["addressType"], s["endpoints"][0]["addresses"][0]) for s in plan.create) == [
        ("IPv4", "10.1.0.2"), ("IPv6", "fd00::2")]


def test_service_label_change_updates_slices():
    svc = service()
    existing = store(reconcile(svc, [pod(1)], [], NODES))
    relabelled = service(labels={"tier": "web"})
    plan = reconcile(relabelled, [pod(1)], existing, NODES)
    [s] = plan.update
    assert s["metadata"]["labels"]["tier"] == "web"


def test_service_being_deleted_creates_nothing():
    svc = service()
    svc["metadata"]["deletionTimestamp"] = "2026-01-01T01:00:00Z"
    assert not reconcile(svc, [pod(1)], [], NODES).create


# ------------------------------------------------------------------------------------------ churn at scale

def _big():
    svc = service()
    pods = [pod(i) for i in range(5000)]
    existing = store(reconcile(svc, pods, [], NODES))
    assert len(existing) == 50
    return svc, pods, existing


@pytest.mark.parametrize("change", ["flip", "delete", "terminate"])
def test_one_pod_change_among_5000_rewrites_exactly_one_slice(change):
    svc, pods, existing = _big()
    pods = list(pods)
    if change == "flip":
        pods[1234] = pod(1234, ready=False)
    elif change == "delete":
        del pods[4321]
    else:
        pods[77] = pod(77, terminating=True)
    plan = reconcile(svc, pods, existing, NODES)
    assert not plan.create and not plan.delete and len(plan.update) == 1
    after = store(plan, existing)
    assert sum(len(s["endpoints"]) for s in after) == len(pods)
    # Its speed is measured by bench/bench_cluster.py, not asserted here.


def test_one_new_pod_when_every_slice_is_full_creates_one_slice():
    svc, pods, existing = _big()
    plan = reconcile(svc, pods + [pod(9999)], existing, NODES)
    assert len(plan.create) == 1 and not plan.update and not plan.delete
    assert len(plan.create[0]["endpoints"]) == 1


def test_new_pod_goes_into_slice_with_room():
    svc, pods, existing = _big()
    pods = [p for p in pods if p["metadata"]["name"] != "pod10"]
    shrunk = store(reconcile(svc, pods, existing, NODES), existing)
    plan = reconcile(svc, pods + [pod(9999)], shrunk, NODES)
    assert not plan.create and not plan.delete and len(plan.update) == 1


def test_endpoint_order_is_deterministic():
    svc = service()
    pods = [pod(i) for i in range(30)]
    a = reconcile(svc, pods, [], NODES).create[0]["endpoints"]
    b = reconcile(svc, list(reversed(pods)), [], NODES).create[0]["endpoints"]
    assert a == b
    assert [e["addresses"][0] for e in a][:3] == ["10.1.0.1", "10.1.0.2", "10.1.0.3"]


# ------------------------------------------------------------------------------------------------- hints

@pytest.mark.parametrize("mode", ["PreferClose", "PreferSameZone"])
def test_zone_hints_on_ready_endpoints(mode):
    [s] = reconcile(service(traffic=mode), [pod(0), pod(1, ready=False)], [], NODES).create
    by_name = {e["targetRef"]["name"]: e for e in s["endpoints"]}
    assert by_name["pod0"]["hints"] == {"forZones": [{"name": "zone-a"}]}
    assert "hints" not in by_name["pod1"]


def test_same_node_hints():
    [s] = reconcile(service(traffic="PreferSameNode"), [pod(0)], [], NODES).create
    assert s["endpoints"][0]["hints"] == {"forZones": [{"name": "zone-a"}], "forNodes": [{"name": "node-1"}]}


def test_endpoint_without_zone_gets_no_zone_hint():
    [s] = reconcile(service(traffic="PreferClose"), [pod(0, node_name="bare")], [], NODES + [node("bare")]).create
    assert "hints" not in s["endpoints"][0]


def test_turning_hints_on_and_off_updates_existing_slices():
    plain = service()
    existing = store(reconcile(plain, [pod(0), pod(1)], [], NODES))
    plan = reconcile(service(traffic="PreferClose"), [pod(0), pod(1)], existing, NODES)
    assert len(plan.update) == 1 and all("hints" in e for e in plan.update[0]["endpoints"])
    hinted = store(plan, existing)
    assert reconcile(service(traffic="PreferClose"), [pod(0), pod(1)], hinted, NODES).is_empty()
    plan = reconcile(plain, [pod(0), pod(1)], hinted, NODES)
    assert len(plan.update) == 1 and all("hints" not in e for e in plan.update[0]["endpoints"])


def test_no_hints_without_traffic_distribution():
    [s] = reconcile(service(), [pod(0)], [], NODES).create
    assert "hints" not in s["endpoints"][0]


# ----------------------------------------------------------------------------------------- trigger time

def test_trigger_time_is_newest_visible_pod_change():
    p = pod(1, terminating=True)
    [s] = reconcile(service(), [pod(0), p], [], NODES).create
    assert s["metadata"]["annotations"][ANNOTATION_TRIGGER_TIME] == "2026-01-01T00:05:00Z"


# --------------------------------------------------------------------------------------- legacy Endpoints

def test_legacy_endpoints_object():
    svc = service(name="web", cluster_ip="None")
    pods = [pod(1, hostname="web-1", subdomain="web"), pod(2, ready=False), pod(3, terminating=True)]
    ep = endpoints_for(svc, pods)
    assert ep["apiVersion"] == "v1" and ep["kind"] == "Endpoints"
    assert ep["metadata"]["name"] == "web" and ep["metadata"]["namespace"] == NS
    assert ep["metadata"]["labels"][LABEL_HEADLESS] == ""
    [subset] = ep["subsets"]
    assert subset["addresses"] == [{"ip": "10.1.0.2", "hostname": "web-1", "nodeName": "node-2",
                                    "targetRef": {"kind": "Pod", "namespace": NS, "name": "pod1", "uid": "uid-1"}}]
    assert [a["ip"] for a in subset["notReadyAddresses"]] == ["10.1.0.3"]
    assert subset["ports"] == [{"name": "http", "port": 8080, "protocol": "TCP"}]


def test_legacy_endpoints_none_without_selector():
    assert endpoints_for(service(selector={}), [pod(1)]) is None


def test_legacy_endpoints_capped_at_1000():
    ep = endpoints_for(service(), [pod(i) for i in range(1200)])
    assert ep["metadata"]["annotations"]["endpoints.kubernetes.io/over-capacity"] == "truncated"
    assert sum(len(s.get("addresses", ())) for s in ep["subsets"]) == 1000
    small = endpoints_for(service(), [pod(i) for i in range(10)])
    assert "endpoints.kubernetes.io/over-capacity" not in small["metadata"].get("annotations", {})


def test_legacy_endpoints_repacks_by_port_set():
    ports = [{"name": "http", "port": 80, "targetPort": "web", "protocol": "TCP"},
             {"name": "metrics", "port": 9100, "targetPort": 9100, "protocol": "TCP"}]
    both = pod(1, container_ports=[{"name": "web", "containerPort": 8080, "protocol": "TCP"}])
    one = pod(2)
    ep = endpoints_for(service(ports=ports), [both, one])
    shapes = sorted(([a["ip"] for a in s["addresses"]], [p["port"] for p in s["ports"]]) for s in ep["subsets"])
    assert shapes == [(["10.1.0.2"], [8080, 9100]), (["10.1.0.3"], [9100])]


def test_quoted_number_target_port_is_a_port_name():
    svc = service(ports=[{"name": "http", "port": 80, "targetPort": "8080", "protocol": "TCP"}])
    named = pod(1, container_ports=[{"name": "8080", "containerPort": 9999, "protocol": "TCP"}])
    plan = reconcile(svc, [named, pod(2)], [], NODES)
    shapes = sorted(([p["port"] for p in s["ports"]], len(s["endpoints"])) for s in plan.create)
    assert shapes == [([], 1), ([9999], 1)]
