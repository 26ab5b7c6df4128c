"""The embedded cluster end to end: the lesson's first three exercises and every controller's behaviour."""
from __future__ import annotations

import pytest

from labsupport import AlreadyExists, Conflict, Invalid, Lab, NotFound
from labsupport.control.cluster import Cluster
from labsupport.errors import BadRequest
from tests.conftest import WEB, ready_addresses


def slice_endpoints(lab, service="web", namespace="default"):
    return [e for s in lab.get("endpointslices", namespace=namespace,
                               selector=f"kubernetes.io/service-name={service}") for e in s.get("endpoints") or []]


# --- the default cluster ---------------------------------------------------------------------------------

def test_default_cluster_mirrors_kind(lab):
    nodes = lab.get("nodes")
    assert [n["metadata"]["name"] for n in nodes] == ["lab-control-plane", "lab-worker", "lab-worker2", "lab-worker3"]
    assert [n["status"]["addresses"][0]["address"] for n in nodes] == ["172.18.0.2", "172.18.0.3", "172.18.0.4",
                                                                      "172.18.0.5"]
    assert [n["spec"]["podCIDR"] for n in nodes] == ["10.244.0.0/24", "10.244.1.0/24", "10.244.2.0/24", "10.244.3.0/24"]
    zones = [n["metadata"]["labels"]["topology.kubernetes.io/zone"] for n in nodes[1:]]
    assert zones == ["ru-central1-a", "ru-central1-b", "ru-central1-d"]
    assert nodes[0]["spec"]["taints"] == [{"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}]
    assert lab.get("svc", "kubernetes")["spec"]["clusterIP"] == "10.96.0.1"
    assert lab.get("svc", "kube-dns", namespace="kube-system")["spec"]["clusterIP"] == "10.96.0.10"


def test_kube_system_looks_like_a_real_cluster(lab):
    pods = lab.get("pods", namespace="kube-system")
    names = [p["metadata"]["name"] for p in pods]
    assert sum(n.startswith("coredns-") for n in names) == 2
    assert sum(n.startswith("kube-proxy-") for n in names) == 4
    assert all(p["status"]["phase"] == "Running" for p in pods)
    cm = lab.get("configmap", "kube-proxy", namespace="kube-system")
    assert "kind: KubeProxyConfiguration" in cm["data"]["config.conf"]
    assert "mode: iptables" in cm["data"]["config.conf"]
    ds = lab.get("ds", "kube-proxy", namespace="kube-system")
    assert ds["status"]["numberReady"] == 4


def test_same_seed_replays_the_same_cluster():
    def snapshot(seed):
        with Lab(seed=seed) as lab:
            lab.apply(WEB)
            lab.advance(10)
            return [(p["metadata"]["name"], p["status"].get("podIP"), p["spec"]["nodeName"])
                    for p in lab.get("pods", selector="app=web")] + [lab.get("svc", "web")["spec"]["clusterIP"]]
    assert snapshot(1) == snapshot(1)
    assert snapshot(1) != snapshot(2)


def test_nodes_and_zones_are_configurable():
    with Lab(workers=5, zones=("z1", "z2")) as lab:
        nodes = lab.get("nodes")
        assert len(nodes) == 6
        assert [n["metadata"]["labels"]["topology.kubernetes.io/zone"] for n in nodes[1:]] == ["z1", "z2", "z1", "z2",
                                                                                               "z1"]


# --- exercise 1: three replicas, three addresses ---------------------------------------------------------

def test_exercise_1_three_nginx_replicas_three_ready_addresses(web):
    eps = slice_endpoints(web)
    assert len(eps) == 3
    pod_ips = sorted(p["status"]["podIP"] for p in web.get("pods", selector="app=web"))
    assert sorted(e["addresses"][0] for e in eps) == pod_ips
    assert all(e["conditions"] == {"ready": True, "serving": True, "terminating": False} for e in eps)
    slice_ = web.get("endpointslices", selector="kubernetes.io/service-name=web")[0]
    assert slice_["metadata"]["name"].startswith("web-") and len(slice_["metadata"]["name"]) == len("web-") + 5
    assert slice_["addressType"] == "IPv4"
    assert slice_["ports"] == [{"name": "http", "port": 80, "protocol": "TCP"}]
    assert {e["zone"] for e in eps} == {"ru-central1-a", "ru-central1-b", "ru-central1-d"}
    assert slice_["metadata"]["labels"]["endpointslice.kubernetes.io/managed-by"] == "endpointslice-controller.k8s.io"
    assert slice_["metadata"]["ownerReferences"][0]["kind"] == "Service"


def test_replicas_spread_over_workers_and_zones(web):
    nodes = sorted(p["spec"]["nodeName"] for p in web.get("pods", selector="app=web"))
    assert nodes == ["lab-worker", "lab-worker2", "lab-worker3"]


def test_deployment_names_and_status(web):
    rs = web.get("rs", selector="app=web")
    assert len(rs) == 1
    h = rs[0]["metadata"]["labels"]["pod-template-hash"]
    assert rs[0]["metadata"]["name"] == f"web-{h}"
    assert set(h) <= set("bcdfghjklmnpqrstvwxz2456789")
    for pod in web.get("pods", selector="app=web"):
        assert pod["metadata"]["name"].startswith(f"web-{h}-")
    dep = web.get("deploy", "web")
    assert dep["status"]["readyReplicas"] == 3 and dep["status"]["availableReplicas"] == 3
    assert {c["type"]: c["status"] for c in dep["status"]["conditions"]} == {"Available": "True",
                                                                             "Progressing": "True"}


# --- exercise 2: delete a pod, catch terminating ---------------------------------------------------------

def test_exercise_2_deleted_pod_is_terminating_until_nginx_quits(web):
    victim = web.get("pods", selector="app=web")[0]
    ip = victim["status"]["podIP"]
    web.delete("pod", victim["metadata"]["name"])
    eps = {e["addresses"][0]: e for e in slice_endpoints(web)}
    assert eps[ip]["conditions"] == {"ready": False, "serving": True, "terminating": True}
    pod = web.get("pod", victim["metadata"]["name"])
    assert pod["metadata"]["deletionTimestamp"] and pod["metadata"]["deletionGracePeriodSeconds"] == 30
    # nginx gets SIGQUIT and, idle, quits at once: the 30 s grace period is only the upper bound.
    web.advance(1)
    with pytest.raises(NotFound):
        web.get("pod", victim["metadata"]["name"])
    assert ip not in {e["addresses"][0] for e in slice_endpoints(web)}
    # The replacement was created at the delete and joins when ready.
    web.wait(lambda l: ready_addresses(l, "web") == 3, timeout=10)
    assert len(slice_endpoints(web)) == 3


def test_grace_period_zero_removes_at_once(web):
    victim = web.get("pods", selector="app=web")[0]["metadata"]["name"]
    web.delete("pod", victim, grace_period=0)
    with pytest.raises(NotFound):
        web.get("pod", victim)


def test_new_pod_gets_a_new_ip(web):
    before = {p["status"]["podIP"] for p in web.get("pods", selector="app=web")}
    web.delete("pod", web.get("pods", selector="app=web")[0]["metadata"]["name"], grace_period=0)
    web.wait(lambda l: ready_addresses(l, "web") == 3)
    after = {p["status"]["podIP"] for p in web.get("pods", selector="app=web")}
    assert len(after - before) == 1


def test_rollout_changes_every_pod_ip(web):
    before = {p["status"]["podIP"] for p in web.get("pods", selector="app=web")}
    dep = web.get("deploy", "web")
    dep["spec"]["template"]["metadata"]["annotations"] = {"kubectl.kubernetes.io/restartedAt": "now"}
    web.apply(dep)
    web.wait(lambda l: (d := l.get("deploy", "web")["status"]).get("updatedReplicas") == 3
             and d.get("availableReplicas") == 3 and d.get("replicas") == 3, timeout=300)
    web.advance(31)
    after = {p["status"]["podIP"] for p in web.get("pods", selector="app=web")}
    assert len(after) == 3 and not (after & before)
    assert len(web.get("rs", selector="app=web")) == 2


def test_rolling_update_respects_max_unavailable(web):
    dep = web.get("deploy", "web")
    dep["spec"]["template"]["spec"]["containers"][0]["image"] = "nginx:1.28"
    web.apply(dep)
    lowest, done = 3, False
    for _ in range(100):
        web.advance(0.5)
        status = web.get("deploy", "web")["status"]
        lowest = min(lowest, status.get("availableReplicas", 0))
        if status.get("updatedReplicas") == 3 and status.get("availableReplicas") == 3 and status.get("replicas") == 3:
            done = True
            break
    assert done, "the rollout did not finish within 50 s of cluster time"
    # maxUnavailable 25% of 3 rounds down to 0: the rollout surges (maxSurge rounds up to 1) and never dips.
    assert lowest == 3


def test_scale_up_and_down(web):
    web.scale("web", 5)
    web.wait(lambda l: ready_addresses(l, "web") == 5)
    web.scale("deploy/web", 1)
    web.advance(40)
    assert len(web.get("pods", selector="app=web")) == 1
    assert ready_addresses(web, "web") == 1


# --- exercise 3: headless Service and DNS ----------------------------------------------------------------

DB = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: db}
spec:
  replicas: 3
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec:
      containers: [{name: db, image: nginx:1.27}]
---
apiVersion: v1
kind: Service
metadata: {name: db}
spec:
  clusterIP: None
  selector: {app: db}
  ports: [{port: 5432}]
"""


def test_exercise_3_headless_nslookup_returns_pod_ips(lab):
    lab.apply(DB)
    lab.wait(lambda l: ready_addresses(l, "db") == 3)
    answer = lab.nslookup("db")
    pod_ips = sorted(p["status"]["podIP"] for p in lab.get("pods", selector="app=db"))
    assert sorted(answer.addresses) == pod_ips
    assert answer.text.startswith("Server:\t\t10.96.0.10\nAddress:\t10.96.0.10#53\n\n")
    assert "Name:\tdb.default.svc.cluster.local\nAddress: " in answer.text
    assert lab.get("endpointslices", selector="kubernetes.io/service-name=db")[0]["metadata"]["labels"][
        "service.kubernetes.io/headless"] == ""


def test_clusterip_service_resolves_to_its_clusterip_only(web):
    answer = web.nslookup("web")
    assert answer.addresses == [web.get("svc", "web")["spec"]["clusterIP"]]


def test_unknown_name_is_nxdomain(lab):
    answer = lab.nslookup("nope")
    assert answer.rcode == "NXDOMAIN"
    assert "** server can't find nope: NXDOMAIN" in answer.text


def test_dns_fails_when_coredns_is_gone(lab):
    lab.scale("coredns", 0, namespace="kube-system")
    lab.advance(40)
    answer = lab.nslookup("kubernetes")
    assert answer.addresses == []
    assert "no servers could be reached" in answer.text


def test_statefulset_pod_names_and_dns(lab):
    lab.apply("""
apiVersion: v1
kind: Service
metadata: {name: web}
spec: {clusterIP: None, selector: {app: sts}, ports: [{port: 80, name: http}]}
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: web}
spec:
  serviceName: web
  replicas: 3
  selector: {matchLabels: {app: sts}}
  template:
    metadata: {labels: {app: sts}}
    spec: {containers: [{name: nginx, image: nginx:1.27}]}
""")
    # OrderedReady: web-1 only after web-0 is ready.
    lab.advance(0.5)
    assert [p["metadata"]["name"] for p in lab.get("pods", selector="app=sts")] == ["web-0"]
    lab.wait(lambda l: ready_addresses(l, "web") == 3, timeout=120)
    pods = lab.get("pods", selector="app=sts")
    assert [p["metadata"]["name"] for p in pods] == ["web-0", "web-1", "web-2"]
    assert all(p["spec"]["hostname"] == p["metadata"]["name"] and p["spec"]["subdomain"] == "web" for p in pods)
    assert sorted(e.get("hostname") for e in slice_endpoints(lab)) == ["web-0", "web-1", "web-2"]
    answer = lab.nslookup("web-0.web")
    assert answer.addresses == [pods[0]["status"]["podIP"]]
    assert "web-0.web.default.svc.cluster.local" in answer.text


# --- readiness, probes and the zero-endpoints pitfall ----------------------------------------------------

def probe_web(port=80, path="/"):
    return f"""
apiVersion: apps/v1
kind: Deployment
metadata: {{name: web}}
spec:
  replicas: 2
  selector: {{matchLabels: {{app: web}}}}
  template:
    metadata: {{labels: {{app: web}}}}
    spec:
      containers:
      - name: nginx
        image: nginx:1.27
        readinessProbe: {{httpGet: {{path: "{path}", port: {port}}}, periodSeconds: 2}}
---
apiVersion: v1
kind: Service
metadata: {{name: web}}
spec: {{selector: {{app: web}}, ports: [{{port: 80}}]}}
"""


def test_probe_on_a_port_nothing_listens_on_means_zero_endpoints(lab):
    lab.apply(probe_web(port=8080))
    lab.advance(30)
    pods = lab.get("pods", selector="app=web")
    assert all(p["status"]["phase"] == "Running" for p in pods)
    assert ready_addresses(lab, "web") == 0
    eps = slice_endpoints(lab)
    assert len(eps) == 2 and all(e["conditions"]["ready"] is False for e in eps)
    events = [e["message"] for e in lab.get("events") if e["reason"] == "Unhealthy"]
    assert any("connection refused" in m for m in events)


def test_readiness_follows_what_the_app_serves(lab):
    lab.apply(probe_web())
    lab.wait(lambda l: ready_addresses(l, "web") == 2)
    pod = lab.get("pods", selector="app=web")[0]["metadata"]["name"]
    result = lab.exec(pod, ["rm", "/usr/share/nginx/html/index.html"])
    assert result.code == 0
    lab.advance(10)
    assert ready_addresses(lab, "web") == 1
    lab.exec(pod, ["sh", "-c", "echo hello > /usr/share/nginx/html/index.html"])
    lab.advance(5)
    assert ready_addresses(lab, "web") == 2


def test_selector_mismatch_means_zero_endpoints(lab):
    lab.apply(WEB.replace("selector: {app: web}\n  ports", "selector: {app: wbe}\n  ports"))
    lab.advance(10)
    assert slice_endpoints(lab) == []
    placeholder = lab.get("endpointslices", selector="kubernetes.io/service-name=web")
    assert len(placeholder) == 1 and placeholder[0].get("endpoints") in (None, [])


def test_unschedulable_pod_stays_pending_with_the_schedulers_reason(lab):
    lab.apply("""
apiVersion: v1
kind: Pod
metadata: {name: picky}
spec:
  nodeSelector: {disk: ssd}
  containers: [{name: c, image: nginx}]
""")
    pod = lab.get("pod", "picky")
    assert pod["status"]["phase"] == "Pending"
    cond = pod["status"]["conditions"][0]
    assert cond["reason"] == "Unschedulable"
    assert cond["message"].startswith("0/4 nodes are available: 1 node(s) had untolerated taint "
                                      "{node-role.kubernetes.io/control-plane: }, 3 node(s) didn't match Pod's node "
                                      "affinity/selector.")


def test_110_pods_per_node_limit():
    with Lab(workers=1, control_plane=False) as lab:
        lab.apply(WEB.replace("replicas: 3", "replicas: 120"))
        lab.advance(5)
        pods = lab.get("pods", selector="app=web")
        pending = [p for p in pods if not p["spec"].get("nodeName")]
        # kube-proxy and the two CoreDNS pods take three of the node's 110 slots.
        assert len(pods) - len(pending) == 107
        assert "Too many pods" in pending[0]["status"]["conditions"][0]["message"]


def test_completed_command_pod(lab):
    lab.apply(DB)
    lab.wait(lambda l: ready_addresses(l, "db") == 3)
    lab.apply("""
apiVersion: v1
kind: Pod
metadata: {name: dnsutils}
spec:
  restartPolicy: Never
  containers: [{name: dnsutils, image: registry.k8s.io/e2e-test-images/jessie-dnsutils:1.7, command: [nslookup, db]}]
""")
    lab.advance(5)
    pod = lab.get("pod", "dnsutils")
    assert pod["status"]["phase"] == "Succeeded"
    logs = lab.logs("dnsutils")
    for ip in (p["status"]["podIP"] for p in lab.get("pods", selector="app=db")):
        assert f"Address: {ip}" in logs


# --- the API's refusals ----------------------------------------------------------------------------------

def test_invalid_objects_change_nothing(lab):
    before = lab.cluster.store.rv
    with pytest.raises(Invalid) as err:
        lab.apply({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
                   "spec": {"type": "NodePort", "selector": {"app": "web"},
                            "ports": [{"port": 80, "nodePort": 29999}]}})
    assert str(err.value) == ('The Service "web" is invalid: spec.ports[0].nodePort: Invalid value: 29999: provided '
                              'port is not in the valid range. The range of valid ports is 30000-32767')
    assert lab.cluster.store.rv == before


def test_node_port_taken(lab):
    svc = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "a"},
           "spec": {"type": "NodePort", "selector": {"app": "web"}, "ports": [{"port": 80, "nodePort": 30080}]}}
    lab.apply(svc)
    svc["metadata"]["name"] = "b"
    with pytest.raises(Invalid) as err:
        lab.apply(svc)
    assert str(err.value) == ('The Service "b" is invalid: spec.ports[0].nodePort: Invalid value: 30080: provided '
                              'port is already allocated')


def test_duplicate_create_and_missing_object(lab):
    lab.create(WEB)
    with pytest.raises(AlreadyExists) as err:
        lab.create(WEB)
    assert str(err.value) == 'deployments.apps "web" already exists'
    with pytest.raises(NotFound) as err:
        lab.get("svc", "nope")
    assert err.value.kubectl_text() == 'Error from server (NotFound): services "nope" not found'


def test_stale_resource_version_is_a_conflict(web):
    svc = web.get("svc", "web")
    web.cluster.replace(dict(svc, metadata=dict(svc["metadata"], labels={"a": "b"})))
    with pytest.raises(Conflict):
        web.cluster.replace(svc)


def test_unknown_kind_and_bad_yaml_are_clear(lab):
    with pytest.raises(BadRequest, match='no matches for kind "Servise" in version "v1"'):
        lab.apply({"apiVersion": "v1", "kind": "Servise", "metadata": {"name": "x"}})
    with pytest.raises(BadRequest, match="line 4"):
        lab.apply("apiVersion: v1\nkind: Service\nmetadata: {name: x\n")
    with pytest.raises(BadRequest, match="the server doesn't have a resource type"):
        lab.get("widgets")


def test_namespace_must_exist(lab):
    with pytest.raises(NotFound, match='namespaces "shop" not found'):
        lab.apply(WEB.replace("metadata: {name: web}", "metadata: {name: web, namespace: shop}"))
    lab.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop"}})
    lab.apply(WEB.replace("metadata: {name: web}", "metadata: {name: web, namespace: shop}"))
    lab.wait(lambda l: ready_addresses(l, "web", "shop") == 3)
    lab.delete("ns", "shop", namespace=None)
    assert lab.get("pods", namespace="shop") == []


def test_apply_keeps_allocations_and_reapplies(lab):
    lab.apply(WEB.replace("ports: [{port: 80, targetPort: 80, name: http}]",
                          "type: NodePort\n  ports: [{port: 80, targetPort: 80, name: http}]"))
    svc = lab.get("svc", "web")
    lab.apply(WEB.replace("ports: [{port: 80, targetPort: 80, name: http}]",
                          "type: NodePort\n  ports: [{port: 80, targetPort: 8080, name: http}]"))
    again = lab.get("svc", "web")
    assert again["spec"]["clusterIP"] == svc["spec"]["clusterIP"]
    assert again["spec"]["ports"][0]["nodePort"] == svc["spec"]["ports"][0]["nodePort"]
    assert again["spec"]["ports"][0]["targetPort"] == 8080


def test_making_a_service_headless_needs_a_recreate(web):
    svc = web.get("svc", "web")
    with pytest.raises(Invalid, match="may not change once set"):
        web.apply({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
                   "spec": {"clusterIP": "None", "selector": {"app": "web"}, "ports": [{"port": 80}]}})
    web.delete("svc", "web")
    web.apply({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
               "spec": {"clusterIP": "None", "selector": {"app": "web"}, "ports": [{"port": 80}]}})
    assert web.get("svc", "web")["spec"]["clusterIP"] == "None" != svc["spec"]["clusterIP"]


def test_deleting_a_deployment_cascades(web):
    web.delete("deploy", "web")
    web.advance(35)
    assert web.get("rs", selector="app=web") == []
    assert web.get("pods", selector="app=web") == []


def test_kubectl_spellings(lab):
    for spelling in ("po", "pods", "pod", "Pod"):
        assert lab.get(spelling, namespace="kube-system")
    for spelling in ("svc", "deploy", "sts", "endpointslices", "ep", "no", "ns", "ds", "rs", "cm"):
        lab.get(spelling, namespace=None)


# --- watch and fan-out accounting ------------------------------------------------------------------------

def test_watch_replays_from_a_resource_version(lab):
    rv = lab.cluster.store.rv
    lab.apply(WEB)
    events = lab.cluster.store.events_since(rv, kinds=["Service"])
    assert [(e.type, e.object["metadata"]["name"]) for e in events] == [("ADDED", "web")]
    assert all(e.rv > rv for e in events)


def test_meter_counts_bytes_for_every_watcher(web):
    with web.meter(("Endpoints", "EndpointSlice"), watchers=100) as meter:
        web.delete("pod", web.get("pods", selector="app=web")[0]["metadata"]["name"])
    counted = meter.events
    web.advance(60)  # the replacement pod becomes ready: more slice writes, no longer counted
    assert meter.events == counted
    assert meter.by_kind["EndpointSlice"]["events"] >= 1
    assert meter.bytes == sum(k["bytes"] for k in meter.by_kind.values())
    assert meter.objects == meter.events * 100


def test_cluster_without_system_pods_is_fast_and_quiet():
    from labsupport.shape import ClusterConfig
    c = Cluster(ClusterConfig(system_pods=False))
    assert c.list("pods", None) == []


def test_pre_stop_hook_runs_and_a_failure_is_reported(lab):
    lab.apply("""
apiVersion: v1
kind: Pod
metadata: {name: hooked}
spec:
  terminationGracePeriodSeconds: 120
  containers:
  - name: nginx
    image: nginx:1.27
    lifecycle: {preStop: {exec: {command: [cat, /no/such/file]}}}
""")
    lab.wait(lambda l: l.get("pod", "hooked")["status"]["phase"] == "Running")
    lab.delete("pod", "hooked")
    assert lab.get("pod", "hooked")["metadata"]["deletionGracePeriodSeconds"] == 120
    events = [e["message"] for e in lab.get("events") if e["reason"] == "FailedPreStopHook"]
    assert events and "No such file or directory" in events[0]
    # A failed hook ends at once; nginx then gets its stop signal and quits long before the 120 s are up.
    lab.advance(1)
    with pytest.raises(NotFound):
        lab.get("pod", "hooked")


def test_a_seeded_labs_generated_names_do_not_depend_on_what_was_created_between_them():
    # In real time (netns) the kubelet's events come when they come: the names a ReplicaSet's pods get must not
    # depend on how many events (or other objects) were stored before them.
    def pod_names(objects_between: int) -> list[str]:
        cluster = Cluster(seed=0)
        made = []
        for n in range(3):
            for m in range(objects_between):
                cluster.store.create({"apiVersion": "v1", "kind": "ConfigMap",
                                      "metadata": {"name": f"between-{n}-{m}", "namespace": "default"}})
            made.append(cluster.store.create({"apiVersion": "v1", "kind": "Pod",
                                              "metadata": {"generateName": "web-5b9d5f6545-", "namespace": "default"},
                                              "spec": {"containers": [{"name": "c", "image": "nginx"}]}}))
        return [p["metadata"]["name"] for p in made]

    names = pod_names(0)
    assert len(set(names)) == 3 and all(n.startswith("web-5b9d5f6545-") and len(n) == 20 for n in names)
    assert pod_names(4) == names
    other = Cluster(seed=1).store.create({"apiVersion": "v1", "kind": "Pod",
                                          "metadata": {"generateName": "web-5b9d5f6545-", "namespace": "default"},
                                          "spec": {"containers": [{"name": "c", "image": "nginx"}]}})
    assert other["metadata"]["name"] != names[0], "another seed, other names"
