"""Upstream defaulting per kind."""
import copy

from labsupport.model.defaults import apply_defaults, image_pull_policy


def svc(**spec):
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": "default"},
            "spec": spec}


def test_service_defaults_and_input_untouched():
    obj = svc(selector={"app": "web"}, ports=[{"port": 80}])
    before = copy.deepcopy(obj)
    out = apply_defaults(obj)
    assert obj == before
    assert out["spec"] == {"selector": {"app": "web"}, "ports": [{"port": 80, "protocol": "TCP", "targetPort": 80}],
                           "type": "ClusterIP", "sessionAffinity": "None", "internalTrafficPolicy": "Cluster",
                           "ipFamilyPolicy": "SingleStack", "ipFamilies": ["IPv4"]}
    assert out["status"] == {"loadBalancer": {}}


def test_service_named_target_port_kept():
    out = apply_defaults(svc(ports=[{"port": 80, "targetPort": "http", "protocol": "UDP"}]))
    assert out["spec"]["ports"] == [{"port": 80, "targetPort": "http", "protocol": "UDP"}]


def test_service_nodeport_and_lb_defaults():
    out = apply_defaults(svc(type="NodePort", ports=[{"port": 80}]))["spec"]
    assert out["externalTrafficPolicy"] == "Cluster"
    assert "allocateLoadBalancerNodePorts" not in out
    out = apply_defaults(svc(type="LoadBalancer", ports=[{"port": 80}]))["spec"]
    assert out["externalTrafficPolicy"] == "Cluster" and out["allocateLoadBalancerNodePorts"] is True
    out = apply_defaults(svc(type="ClusterIP", ports=[{"port": 80}]))["spec"]
    assert "externalTrafficPolicy" not in out


def test_service_client_ip_affinity_timeout():
    out = apply_defaults(svc(sessionAffinity="ClientIP", ports=[{"port": 80}]))["spec"]
    assert out["sessionAffinityConfig"] == {"clientIP": {"timeoutSeconds": 10800}}
    out = apply_defaults(svc(ports=[{"port": 80}]))["spec"]
    assert "sessionAffinityConfig" not in out


def test_headless_and_external_name():
    out = apply_defaults(svc(clusterIP="None", selector={"app": "db"}, ports=[{"port": 5432}]))["spec"]
    assert out["clusterIPs"] == ["None"] and out["ipFamilyPolicy"] == "SingleStack"
    out = apply_defaults(svc(clusterIP="None"))["spec"]
    assert out["ipFamilyPolicy"] == "RequireDualStack" and out["ipFamilies"] == ["IPv4"]
    out = apply_defaults(svc(type="ExternalName", externalName="example.com"))["spec"]
    assert "ipFamilies" not in out and "internalTrafficPolicy" not in out


def test_user_values_win():
    out = apply_defaults(svc(type="NodePort", externalTrafficPolicy="Local", internalTrafficPolicy="Local",
                             ports=[{"port": 80}]))["spec"]
    assert out["externalTrafficPolicy"] == "Local" and out["internalTrafficPolicy"] == "Local"


TEMPLATE = {"metadata": {"labels": {"app": "web"}},
            "spec": {"containers": [{"name": "nginx", "image": "nginx:1.27", "ports": [{"containerPort": 80}],
                                     "readinessProbe": {"httpGet": {"port": 80}}}]}}


def test_deployment_defaults():
    out = apply_defaults({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
                          "spec": {"selector": {"matchLabels": {"app": "web"}}, "template": copy.deepcopy(TEMPLATE)}})
    spec = out["spec"]
    assert spec["replicas"] == 1
    assert spec["strategy"] == {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}}
    assert spec["revisionHistoryLimit"] == 10 and spec["progressDeadlineSeconds"] == 600
    pod_spec = spec["template"]["spec"]
    assert pod_spec["restartPolicy"] == "Always" and pod_spec["terminationGracePeriodSeconds"] == 30
    assert pod_spec["dnsPolicy"] == "ClusterFirst" and pod_spec["schedulerName"] == "default-scheduler"
    assert pod_spec["securityContext"] == {} and pod_spec["enableServiceLinks"] is True
    assert "tolerations" not in pod_spec
    c = pod_spec["containers"][0]
    assert c["imagePullPolicy"] == "IfNotPresent"
    assert c["terminationMessagePath"] == "/dev/termination-log" and c["terminationMessagePolicy"] == "File"
    assert c["resources"] == {} and c["ports"] == [{"containerPort": 80, "protocol": "TCP"}]
    assert c["readinessProbe"] == {"httpGet": {"port": 80, "path": "/", "scheme": "HTTP"}, "periodSeconds": 10,
                                   "timeoutSeconds": 1, "successThreshold": 1, "failureThreshold": 3}


def test_recreate_strategy_has_no_rolling_update():
    out = apply_defaults({"kind": "Deployment", "spec": {"strategy": {"type": "Recreate"}}})
    assert out["spec"]["strategy"] == {"type": "Recreate"}


def test_statefulset_daemonset_replicaset_defaults():
    sts = apply_defaults({"kind": "StatefulSet", "spec": {"template": copy.deepcopy(TEMPLATE)}})["spec"]
    assert sts["podManagementPolicy"] == "OrderedReady"
    assert sts["updateStrategy"] == {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}}
    assert sts["replicas"] == 1 and sts["revisionHistoryLimit"] == 10
    assert sts["persistentVolumeClaimRetentionPolicy"] == {"whenDeleted": "Retain", "whenScaled": "Retain"}
    ds = apply_defaults({"kind": "DaemonSet", "spec": {"template": copy.deepcopy(TEMPLATE)}})["spec"]
    assert ds["updateStrategy"] == {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}}
    assert ds["revisionHistoryLimit"] == 10
    rs = apply_defaults({"kind": "ReplicaSet", "spec": {"template": copy.deepcopy(TEMPLATE)}})["spec"]
    assert rs["replicas"] == 1 and rs["template"]["spec"]["dnsPolicy"] == "ClusterFirst"


def test_pod_defaults_include_admission():
    pod = apply_defaults({"kind": "Pod", "metadata": {"name": "p"},
                          "spec": {"containers": [{"name": "c", "image": "busybox"}]}})
    spec = pod["spec"]
    assert spec["containers"][0]["imagePullPolicy"] == "Always"
    assert spec["serviceAccountName"] == "default" and spec["priority"] == 0
    assert spec["tolerations"] == [
        {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
        {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute",
         "tolerationSeconds": 300}]


def test_image_pull_policy():
    assert image_pull_policy("nginx") == "Always"
    assert image_pull_policy("nginx:latest") == "Always"
    assert image_pull_policy("nginx:1.27") == "IfNotPresent"
    assert image_pull_policy("localhost:5000/app") == "Always"
    assert image_pull_policy("registry.k8s.io/e2e-test-images/agnhost:2.53") == "IfNotPresent"
    assert image_pull_policy("nginx@sha256:abc") == "IfNotPresent"


def test_namespace_endpointslice_node():
    ns = apply_defaults({"kind": "Namespace", "metadata": {"name": "shop"}})
    assert ns["metadata"]["labels"] == {"kubernetes.io/metadata.name": "shop"}
    assert ns["spec"] == {"finalizers": ["kubernetes"]} and ns["status"] == {"phase": "Active"}
    es = apply_defaults({"kind": "EndpointSlice", "addressType": "IPv4", "ports": [{"port": 80}]})
    assert es["ports"] == [{"port": 80, "name": "", "protocol": "TCP"}]
    node = apply_defaults({"kind": "Node", "status": {"capacity": {"cpu": "4"}}})
    assert node["status"]["allocatable"] == {"cpu": "4"}
    cm = {"kind": "ConfigMap", "data": {"a": "b"}}
    assert apply_defaults(cm) == cm


def test_external_ips_make_a_service_externally_accessible():
    from labsupport.model.defaults import apply_defaults
    svc = apply_defaults({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "x"},
                          "spec": {"selector": {"a": "b"}, "externalIPs": ["172.18.0.3"], "ports": [{"port": 80}]}})
    assert svc["spec"]["externalTrafficPolicy"] == "Cluster"
