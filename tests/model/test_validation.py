"""Validation messages, character for character."""
import copy

import pytest

from labsupport.errors import BadRequest, Invalid
from labsupport.model.defaults import apply_defaults
from labsupport.model.validation import field_errors, go_string_map, validate

DNS1035 = ("a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic "
           "character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for "
           "validation is '[a-z]([-a-z0-9]*[a-z0-9])?')")
DNS1123_LABEL = ("a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must "
                 "start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for "
                 "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')")


def service(name="web", **spec):
    spec.setdefault("ports", [{"port": 80}])
    spec.setdefault("selector", {"app": "web"})
    return apply_defaults({"apiVersion": "v1", "kind": "Service",
                           "metadata": {"name": name, "namespace": "default"}, "spec": spec})


def messages(obj, old=None):
    return [str(e) for e in field_errors(obj, old)]


def refused(obj, old=None) -> str:
    with pytest.raises(Invalid) as err:
        validate(obj, old)
    return str(err.value)


def test_valid_service_passes():
    validate(service())
    validate(service(type="NodePort", ports=[{"name": "http", "port": 80}, {"name": "https", "port": 443}]))
    validate(service("db", clusterIP="None", ports=[]))
    validate(service("ext", type="ExternalName", externalName="db.example.com.", ports=[], selector=None))


def test_service_name_is_dns1035():
    assert refused(service("1web")) == f'The Service "1web" is invalid: metadata.name: Invalid value: "1web": {DNS1035}'
    assert messages(service("a" * 64))[0].endswith("must be no more than 63 characters")


def test_name_required():
    obj = service()
    del obj["metadata"]["name"]
    assert messages(obj) == ["metadata.name: Required value: name or generateName is required"]


def test_namespace_required_and_format():
    obj = service()
    del obj["metadata"]["namespace"]
    assert messages(obj) == ["metadata.namespace: Required value"]
    obj["metadata"]["namespace"] = "Bad_NS"
    assert messages(obj) == [f'metadata.namespace: Invalid value: "Bad_NS": {DNS1123_LABEL}']


def test_labels_validated():
    obj = service()
    obj["metadata"]["labels"] = {"app": "-web"}
    assert messages(obj)[0].startswith('metadata.labels: Invalid value: "-web": a valid label must be an empty string')


def test_ports_required():
    assert refused(service(ports=[])) == 'The Service "web" is invalid: spec.ports: Required value'


def test_port_range_and_target_port():
    errs = messages(service(ports=[{"port": 70000, "targetPort": "Http_Port"}]))
    assert errs == [
        "spec.ports[0].port: Invalid value: 70000: must be between 1 and 65535, inclusive",
        'spec.ports[0].targetPort: Invalid value: "Http_Port": must contain only alpha-numeric characters (a-z, 0-9), '
        "and hyphens (-)",
    ]
    assert messages(service(ports=[{"port": 80, "targetPort": "metrics-endpoint-http"}])) == [
        'spec.ports[0].targetPort: Invalid value: "metrics-endpoint-http": must be no more than 15 characters']
    # A quoted number is a name to the API server, not a port number.
    assert messages(service(ports=[{"port": 80, "targetPort": "8080"}])) == [
        'spec.ports[0].targetPort: Invalid value: "8080": must contain at least one letter (a-z)']
    assert messages(service(ports=[{"port": 80, "targetPort": 65536}])) == [
        "spec.ports[0].targetPort: Invalid value: 65536: must be between 1 and 65535, inclusive"]
    assert messages(service(ports=[{"port": 80, "targetPort": "a--b"}])) == [
        'spec.ports[0].targetPort: Invalid value: "a--b": must not contain consecutive hyphens']


def test_port_names():
    errs = messages(service(ports=[{"port": 80}, {"port": 81}]))
    assert errs == ["spec.ports[0].name: Required value", "spec.ports[1].name: Required value"]
    errs = messages(service(ports=[{"name": "http", "port": 80}, {"name": "http", "port": 81}]))
    assert errs == ['spec.ports[1].name: Duplicate value: "http"']
    errs = messages(service(ports=[{"name": "HTTP", "port": 80}]))
    assert errs == [f'spec.ports[0].name: Invalid value: "HTTP": {DNS1123_LABEL}']


def test_duplicate_port_and_protocol():
    errs = messages(service(ports=[{"name": "a", "port": 80}, {"name": "b", "port": 80}]))
    assert errs == ['spec.ports[1]: Duplicate value: core.ServicePort{Name:"", Protocol:"TCP", '
                    'AppProtocol:(*string)(nil), Port:80, TargetPort:intstr.IntOrString{Type:0, IntVal:0, StrVal:""}, '
                    'NodePort:0}']
    assert messages(service(ports=[{"name": "a", "port": 53, "protocol": "UDP"},
                                   {"name": "b", "port": 53, "protocol": "TCP"}])) == []


def test_protocol_and_type_supported_values():
    assert messages(service(ports=[{"port": 80, "protocol": "HTTP"}])) == [
        'spec.ports[0].protocol: Unsupported value: "HTTP": supported values: "SCTP", "TCP", "UDP"']
    assert messages(service(type="Ingress")) == [
        'spec.type: Unsupported value: "Ingress": supported values: "ClusterIP", "ExternalName", "LoadBalancer", '
        '"NodePort"']


def test_node_port_forbidden_for_cluster_ip():
    assert refused(service(ports=[{"port": 80, "nodePort": 30080}])) == (
        'The Service "web" is invalid: spec.ports[0].nodePort: Forbidden: may not be used when `type` is '
        "'ClusterIP'")


def test_duplicate_node_port():
    errs = messages(service(type="NodePort", ports=[{"name": "a", "port": 80, "nodePort": 30080},
                                                    {"name": "b", "port": 81, "nodePort": 30080}]))
    assert errs == ["spec.ports[1].nodePort: Duplicate value: 30080"]


@pytest.mark.parametrize("svc_type", ["NodePort", "LoadBalancer"])
def test_headless_not_allowed_for_external_types(svc_type):
    assert refused(service(type=svc_type, clusterIP="None")) == (
        f'The Service "web" is invalid: spec.clusterIPs[0]: Invalid value: "None": may not be set to \'None\' for '
        f"{svc_type} services")


def test_health_check_node_port_rules():
    assert messages(service(type="NodePort", healthCheckNodePort=30081)) == [
        "spec.healthCheckNodePort: Invalid value: 30081: may only be set when `type` is 'LoadBalancer' and "
        "`externalTrafficPolicy` is 'Local'"]
    assert messages(service(type="LoadBalancer", externalTrafficPolicy="Local", healthCheckNodePort=30081)) == []


def test_session_affinity():
    assert messages(service(sessionAffinity="Sticky")) == [
        'spec.sessionAffinity: Unsupported value: "Sticky": supported values: "ClientIP", "None"']
    assert refused(service(sessionAffinity="ClientIP", sessionAffinityConfig={"clientIP": {"timeoutSeconds": 0}})) == (
        'The Service "web" is invalid: spec.sessionAffinityConfig.clientIP.timeoutSeconds: Invalid value: 0: must be '
        "greater than 0 and less than 86400")
    longest = {"clientIP": {"timeoutSeconds": 86400}}
    assert messages(service(sessionAffinity="ClientIP", sessionAffinityConfig=longest)) == []
    assert messages(service(sessionAffinity="ClientIP",
                            sessionAffinityConfig={"clientIP": {"timeoutSeconds": 86401}}))[0].endswith("86400")
    assert messages(service(sessionAffinityConfig={"clientIP": {"timeoutSeconds": 10}})) == [
        "spec.sessionAffinityConfig: Forbidden: must not be set when session affinity is None"]


def test_external_traffic_policy_only_for_external_types():
    assert messages(service(externalTrafficPolicy="Local")) == [
        'spec.externalTrafficPolicy: Invalid value: "Local": may only be set for externally-accessible services']
    assert messages(service(type="NodePort", externalTrafficPolicy="Nearest")) == [
        'spec.externalTrafficPolicy: Unsupported value: "Nearest": supported values: "Cluster", "Local"']


def test_traffic_distribution():
    assert messages(service(trafficDistribution="PreferClose")) == []
    assert messages(service(trafficDistribution="PreferSameNode")) == []
    assert messages(service(trafficDistribution="Nearest")) == [
        'spec.trafficDistribution: Unsupported value: "Nearest": supported values: "PreferClose", '
        '"PreferSameZone", "PreferSameNode"']


def test_internal_traffic_policy():
    assert messages(service(internalTrafficPolicy="Node")) == [
        'spec.internalTrafficPolicy: Unsupported value: "Node": supported values: "Cluster", "Local"']


def test_external_name():
    assert messages(service("ext", type="ExternalName", ports=[], selector=None)) == [
        "spec.externalName: Required value"]
    bad = messages(service("ext", type="ExternalName", externalName="Bad_Name", ports=[], selector=None))
    assert bad[0].startswith('spec.externalName: Invalid value: "Bad_Name": a lowercase RFC 1123 subdomain')
    assert messages(service("ext", type="ExternalName", externalName="x.example.com", clusterIP="10.96.0.5",
                            ports=[], selector=None)) == [
        "spec.clusterIPs: Forbidden: may not be set for ExternalName services"]


def test_bad_cluster_ip():
    assert messages(service(clusterIP="10.96.0.300")) == [
        'spec.clusterIPs[0]: Invalid value: "10.96.0.300": must be a valid IP address, (e.g. 10.9.8.7 or '
        "2001:db8::ffff)"]


def test_cluster_ip_immutable_on_update():
    old = service(clusterIP="10.96.12.7")
    new = copy.deepcopy(old)
    new["spec"]["clusterIP"] = "10.96.12.8"
    assert refused(new, old) == ('The Service "web" is invalid: spec.clusterIPs[0]: Invalid value: '
                                 '[]string{"10.96.12.8"}: may not change once set')
    same = copy.deepcopy(old)
    validate(same, old)


def test_all_errors_reported_together():
    obj = service("Web", ports=[{"port": 0}], sessionAffinity="Sticky")
    errs = messages(obj)
    assert errs == [
        f'metadata.name: Invalid value: "Web": {DNS1035}',
        "spec.ports[0].port: Invalid value: 0: must be between 1 and 65535, inclusive",
        "spec.ports[0].targetPort: Invalid value: 0: must be between 1 and 65535, inclusive",
        'spec.sessionAffinity: Unsupported value: "Sticky": supported values: "ClientIP", "None"',
    ]
    with pytest.raises(Invalid) as err:
        validate(obj)
    assert err.value.code == 422 and len(err.value.errors) == 4
    assert err.value.status()["details"]["causes"][0]["field"] == "metadata.name"


def test_unknown_kind_is_bad_request():
    with pytest.raises(BadRequest) as err:
        validate({"apiVersion": "v1", "kind": "Widget", "metadata": {"name": "x"}})
    assert err.value.message == 'no matches for kind "Widget" in version "v1"'
    with pytest.raises(BadRequest):
        validate({"apiVersion": "apps/v1", "kind": "Service", "metadata": {"name": "x"}})


# --- workloads ---------------------------------------------------------------------------------------------------

def deployment(selector=None, labels=None, **spec):
    obj = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "default"},
           "spec": {"template": {"metadata": {"labels": labels if labels is not None else {"app": "web"}},
                                 "spec": {"containers": [{"name": "nginx", "image": "nginx"}]}}, **spec}}
    if selector is not None:
        obj["spec"]["selector"] = selector
    return apply_defaults(obj)


def test_valid_deployment():
    validate(deployment({"matchLabels": {"app": "web"}}))


def test_deployment_selector_required_and_mismatch():
    # Several errors: kubectl prints them as a bulleted list; the Status message brackets them.
    assert refused(deployment(labels={"app": "x"})) == (
        'The Deployment "web" is invalid: \n* spec.selector: Required value\n* spec.template.metadata.labels: '
        'Invalid value: map[string]string{"app":"x"}: `selector` does not match template `labels`')
    assert messages(deployment({"matchLabels": {"app": "web"}}, labels={"app": "x"})) == [
        'spec.template.metadata.labels: Invalid value: map[string]string{"app":"x"}: `selector` does not match '
        "template `labels`"]


def test_go_map_rendering():
    assert str(go_string_map({"b": "2", "a": "1"})) == 'map[string]string{"a":"1", "b":"2"}'
    assert str(go_string_map(None)) == "map[string]string(nil)"


def test_empty_selector_invalid():
    assert messages(deployment({})) == [
        "spec.selector: Invalid value: v1.LabelSelector{MatchLabels:map[string]string(nil), "
        "MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: empty selector is invalid for deployment"]


def test_selector_expressions():
    sel = {"matchExpressions": [{"key": "app", "operator": "In"}, {"key": "x", "operator": "Near", "values": ["a"]}]}
    assert messages(deployment(sel)) == [
        "spec.selector.matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or "
        "'NotIn'",
        'spec.selector.matchExpressions[1].operator: Invalid value: "Near": not a valid selector operator',
        "spec.selector: Invalid value: v1.LabelSelector{MatchLabels:map[string]string(nil), MatchExpressions:"
        '[]v1.LabelSelectorRequirement{v1.LabelSelectorRequirement{Key:"app", Operator:"In", Values:[]string(nil)}, '
        'v1.LabelSelectorRequirement{Key:"x", Operator:"Near", Values:[]string{"a"}}}}: invalid label selector']


def test_replicas_non_negative():
    assert messages(deployment({"matchLabels": {"app": "web"}}, replicas=-1)) == [
        "spec.replicas: Invalid value: -1: must be greater than or equal to 0"]


def test_template_containers():
    obj = deployment({"matchLabels": {"app": "web"}})
    obj["spec"]["template"]["spec"]["containers"] = []
    assert messages(obj) == ["spec.template.spec.containers: Required value"]
    obj["spec"]["template"]["spec"]["containers"] = [
        {"name": "", "image": "", "ports": [{"containerPort": 70000, "protocol": "TCP"}]},
        {"name": "Web", "image": "nginx"}]
    assert messages(obj) == [
        "spec.template.spec.containers[0].name: Required value",
        "spec.template.spec.containers[0].image: Required value",
        "spec.template.spec.containers[0].ports[0].containerPort: Invalid value: 70000: must be between 1 and 65535, "
        "inclusive",
        f'spec.template.spec.containers[1].name: Invalid value: "Web": {DNS1123_LABEL}',
    ]


def test_probe_validation():
    obj = deployment({"matchLabels": {"app": "web"}})
    obj["spec"]["template"]["spec"]["containers"][0]["readinessProbe"] = {"httpGet": {"port": 0}, "periodSeconds": -1}
    obj["spec"]["template"]["spec"]["containers"][0]["livenessProbe"] = {"successThreshold": 2,
                                                                         "tcpSocket": {"port": "http"}}
    assert messages(apply_defaults(obj)) == [
        "spec.template.spec.containers[0].livenessProbe.successThreshold: Invalid value: 2: must be 1",
        "spec.template.spec.containers[0].readinessProbe.httpGet.port: Invalid value: 0: must be between 1 and "
        "65535, inclusive",
        "spec.template.spec.containers[0].readinessProbe.periodSeconds: Invalid value: -1: must be greater than or "
        "equal to 0",
    ]


def test_selector_immutable():
    old = deployment({"matchLabels": {"app": "web"}})
    new = deployment({"matchLabels": {"app": "web", "v": "2"}}, labels={"app": "web", "v": "2"})
    assert messages(new, old) == [
        'spec.selector: Invalid value: v1.LabelSelector{MatchLabels:map[string]string{"app":"web", "v":"2"}, '
        "MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: field is immutable"]


def test_replicaset_daemonset_statefulset():
    tmpl = {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}
    rs = apply_defaults({"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "web", "namespace": "d"},
                         "spec": {"selector": {"matchLabels": {"app": "web"}}, "template": copy.deepcopy(tmpl)}})
    validate(rs)
    ds = apply_defaults({"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "web", "namespace": "d"},
                         "spec": {"selector": {"matchLabels": {"app": "other"}}, "template": copy.deepcopy(tmpl)}})
    assert messages(ds) == ['spec.template.metadata.labels: Invalid value: map[string]string{"app":"web"}: '
                            "`selector` does not match template `labels`"]
    sts = apply_defaults({"apiVersion": "apps/v1", "kind": "StatefulSet",
                          "metadata": {"name": "db", "namespace": "d"},
                          "spec": {"serviceName": "db", "selector": {"matchLabels": {"app": "web"}},
                                   "template": copy.deepcopy(tmpl)}})
    validate(sts)
    changed = copy.deepcopy(sts)
    changed["spec"]["serviceName"] = "other"
    changed["spec"]["replicas"] = 3
    assert messages(changed, sts) == [
        "spec: Forbidden: updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', "
        "'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden"]
    scaled = copy.deepcopy(sts)
    scaled["spec"]["replicas"] = 3
    validate(scaled, sts)
    sts["metadata"]["name"] = "db.v1"
    assert messages(sts) == ['metadata.name: Invalid value: "db.v1": must not contain dots']


# --- pods, slices, namespaces, configmaps ---------------------------------------------------------------------------

def test_pod():
    pod = apply_defaults({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
                          "spec": {"containers": [{"name": "c", "image": "nginx",
                                                   "ports": [{"containerPort": 80, "name": "http"},
                                                             {"containerPort": 81, "name": "http"}]}]}})
    assert messages(pod) == ['spec.containers[0].ports[1].name: Duplicate value: "http"']
    pod["spec"]["containers"] = []
    assert messages(pod) == ["spec.containers: Required value"]
    pod["spec"]["containers"] = [{"name": "c", "image": "nginx"}, {"name": "c", "image": "nginx"}]
    assert messages(pod) == ['spec.containers[1].name: Duplicate value: "c"']


def test_endpointslice():
    es = apply_defaults({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
                         "metadata": {"name": "web-abcde", "namespace": "default"}, "addressType": "IPv4",
                         "endpoints": [{"addresses": ["10.244.1.5"]}], "ports": [{"name": "http", "port": 80}]})
    validate(es)
    es["addressType"] = "IP"
    es["endpoints"].append({"addresses": []})
    es["endpoints"].append({"addresses": ["fe80::1"]})
    assert messages(es) == [
        'addressType: Unsupported value: "IP": supported values: "FQDN", "IPv4", "IPv6"',
        "endpoints[1].addresses: Required value: must contain at least 1 address",
    ]
    es["addressType"] = "IPv4"
    assert messages(es)[-1] == 'endpoints[2].addresses[0]: Invalid value: "fe80::1": must be a valid IPv4 address'
    es = apply_defaults({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
                         "metadata": {"name": "big", "namespace": "default"}, "addressType": "IPv4",
                         "endpoints": [{"addresses": ["10.0.0.1"]}] * 1001,
                         "ports": [{"name": f"p{i}", "port": 1000 + i} for i in range(101)]})
    errs = field_errors(es)
    assert [(e.type, e.field, e.value) for e in errs] == [("Too many", "endpoints", 1001), ("Too many", "ports", 101)]
    assert errs[0].detail == "must have at most 1000 items"


def test_namespace_and_cluster_scoped():
    ns = apply_defaults({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop.v1"}})
    assert messages(ns) == ['metadata.name: Invalid value: "shop.v1": must not contain dots']
    ns = apply_defaults({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop", "namespace": "x"}})
    assert messages(ns) == ["metadata.namespace: Forbidden: not allowed on this type"]


def test_configmap_keys():
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg", "namespace": "default"},
          "data": {"good.key": "1", "bad key": "2"}}
    assert messages(cm) == [
        "data[bad key]: Invalid value: \"bad key\": a valid config key must consist of alphanumeric characters, '-', "
        "'_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is "
        "'[-._a-zA-Z0-9]+')"]


def test_update_prepared_like_the_registry():
    from labsupport.model.defaults import prepare_service_update
    old = service(type="NodePort", clusterIP="10.96.12.7", ports=[{"name": "http", "port": 80, "nodePort": 30080}])
    # kubectl replace without the allocated fields: they are carried over, nothing to complain about.
    validate(service(type="NodePort", ports=[{"name": "http", "port": 80}]), old)
    prepared = prepare_service_update(service(type="NodePort", ports=[{"name": "http", "port": 80}]), old)
    assert prepared["spec"]["clusterIPs"] == ["10.96.12.7"] and prepared["spec"]["ports"][0]["nodePort"] == 30080
    # kubectl apply switching back to ClusterIP keeps the server's nodePort and policy: the registry drops them.
    merged = copy.deepcopy(old)
    merged["spec"]["type"] = "ClusterIP"
    validate(merged, old)
    prepared = prepare_service_update(merged, old)
    assert "nodePort" not in prepared["spec"]["ports"][0] and "externalTrafficPolicy" not in prepared["spec"]
    # A nodePort the client sets while switching to ClusterIP is still refused.
    merged["spec"]["ports"][0]["nodePort"] = 30099
    assert messages(merged, old) == [
        "spec.ports[0].nodePort: Forbidden: may not be used when `type` is 'ClusterIP'"]


def test_daemonset_empty_selector_reported_after_labels():
    ds = apply_defaults({"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "agent", "namespace": "d"},
                         "spec": {"selector": {}, "template": {"metadata": {"labels": {"app": "a"}},
                                                               "spec": {"containers": [{"name": "c", "image": "x"}]}}}})
    assert messages(ds) == [
        "spec.selector: Invalid value: v1.LabelSelector{MatchLabels:map[string]string(nil), "
        "MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: empty selector is invalid for daemonset"]
