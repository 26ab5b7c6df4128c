"""`labsupport class cluster` without a cluster: the roster file, the objects made per student, the Role against
the graded cluster's policy, the student's kubeconfig, and the command's errors."""
from __future__ import annotations

import base64
import itertools
import stat

import pytest
import yaml

from labsupport import cli
from labsupport.apiserver.authz import Attributes
from labsupport.hub import cluster
from labsupport.hub.roster import RosterError, read_roster
from labsupport.model.kinds import KINDS
from labsupport.remote.role import POLICY, role_rules


def write(tmp_path, text: str, name: str = "roster.csv"):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_the_roster_is_nbgraders_student_csv(tmp_path):
    path = write(tmp_path, "\ufeffid,first_name,last_name,email\nalice,Alice,A,a@x\n\n  bob ,Bob,,\ns-03\n")
    students = read_roster(path)
    assert [s.id for s in students] == ["alice", "bob", "s-03"]
    assert [s.where for s in students] == [f"{path}:2", f"{path}:4", f"{path}:5"]


def test_the_id_column_may_be_anywhere(tmp_path):
    assert [s.id for s in read_roster(write(tmp_path, "email,ID\nc@x,carol\n"))] == ["carol"]


@pytest.mark.parametrize("text, line, message", [
    ("alice\nbob\n", 1, "the roster's first line must name its columns, one of them `id`"),
    ("id,email\nalice,a@x\nBob,b@x\n", 3, "the student id 'Bob' cannot name a namespace"),
    ("id,email\nalice,a@x\nbo_b,b@x\n", 3, "the student id 'bo_b' cannot name a namespace"),
    ("id,email\n" + "a" * 60 + ",x\n", 2, "at most 59 characters"),
    ("id,email\nalice,a@x\nbob,b@x\nalice,c@x\n", 4, "the student id 'alice' is already on {path}:2"),
    ("id,email\n,a@x\n", 2, "no student id in the `id` column"),
    ("id,email\nalice,a@x,extra\n", 2, "3 fields, but the header names 2 columns"),
])
def test_a_bad_line_is_refused_with_file_and_line(tmp_path, text, line, message):
    path = write(tmp_path, text)
    with pytest.raises(RosterError) as err:
        read_roster(path)
    assert str(err.value).startswith(f"{path}:{line}: ")
    assert message.format(path=path) in str(err.value)


def test_an_empty_or_missing_roster_is_refused(tmp_path):
    with pytest.raises(RosterError, match="the roster names no student"):
        read_roster(write(tmp_path, "id,email\n\n"))
    with pytest.raises(RosterError, match="cannot read the roster .*nothing.csv"):
        read_roster(tmp_path / "nothing.csv")


def test_each_student_gets_a_labelled_namespace_an_account_the_role_and_limits():
    objects = cluster.student_objects("alice", "autumn")
    assert [o["kind"] for o in objects] == ["Namespace", "ServiceAccount", "Role", "RoleBinding", "ResourceQuota",
                                            "LimitRange"] + ["NetworkPolicy"] * 5 + ["ClusterRoleBinding"]
    assert objects[0]["metadata"]["name"] == "lab-alice" and "namespace" not in objects[0]["metadata"]
    owner = {"app.kubernetes.io/managed-by": "labsupport", "labsupport.dev/class": "autumn",
             "labsupport.dev/student": "alice"}
    assert objects[0]["metadata"]["labels"] == {**owner, "pod-security.kubernetes.io/enforce": "restricted",
                                                "pod-security.kubernetes.io/enforce-version": "latest"}
    for obj in objects:
        assert obj["metadata"]["labels"].items() >= owner.items()
        assert cluster.RESOURCES[obj["kind"]].namespaced == ("namespace" in obj["metadata"])
        if cluster.RESOURCES[obj["kind"]].namespaced:
            assert obj["metadata"]["namespace"] == "lab-alice"
    role, binding = objects[2], objects[3]
    assert role["rules"] == role_rules()
    assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "lab-student"}
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "student", "namespace": "lab-alice"}]
    quota, limits = objects[4]["spec"]["hard"], objects[5]["spec"]["limits"][0]
    assert quota["pods"] == "30" and quota["requests.memory"] == "512Mi"
    assert limits["defaultRequest"] == {"cpu": "5m", "memory": "8Mi"}
    bigger = cluster.student_objects("alice", "autumn", cluster.Sizing(pods=50))
    assert bigger[4]["spec"]["hard"]["pods"] == "50"


def _quantity(text: str) -> float:
    """A Kubernetes quantity of the kinds the sizing uses (`250m`, `24Mi`, `4Gi`, `8`) as a number."""
    for suffix, factor in (("Mi", 2 ** 20), ("Gi", 2 ** 30), ("m", 1e-3)):
        if text.endswith(suffix):
            return float(text[:-len(suffix)]) * factor
    return float(text)


@pytest.mark.parametrize("sizing", [cluster.SIZING, cluster.Sizing(pods=50, limits_cpu="13", limits_memory="7Gi",
                                                                   requests_memory="2Gi")])
def test_the_quota_holds_its_pods_at_the_default_requests_and_limits(sizing):
    spec = {o["kind"]: o.get("spec") for o in cluster.student_objects("alice", "autumn", sizing)}
    hard, [limits] = spec["ResourceQuota"]["hard"], spec["LimitRange"]["limits"]
    pods = int(hard["pods"])
    for total, default in (("requests.cpu", limits["defaultRequest"]["cpu"]),
                           ("requests.memory", limits["defaultRequest"]["memory"]),
                           ("limits.cpu", limits["default"]["cpu"]), ("limits.memory", limits["default"]["memory"])):
        assert pods * _quantity(default) <= _quantity(hard[total]), (total, pods, default, hard[total])
    for resource in ("cpu", "memory"):
        assert _quantity(limits["defaultRequest"][resource]) <= _quantity(limits["default"][resource]) \
            <= _quantity(limits["max"][resource])


def _rbac_allows(rules: list[dict], attrs: Attributes) -> bool:
    """RBAC's rule matching, written from the PolicyRule's definition (no wildcards are ever generated)."""
    resource = attrs.resource + (f"/{attrs.subresource}" if attrs.subresource else "")
    return any(attrs.group in r["apiGroups"] and resource in r["resources"] and attrs.verb in r["verbs"]
               for r in rules)


VERBS = ("get", "list", "watch", "create", "update", "patch", "delete", "deletecollection", "escalate", "bind")


def test_the_role_allows_in_a_namespace_exactly_what_the_graded_policy_allows():
    rules = role_rules()
    assert all("*" not in r["apiGroups"] + r["resources"] + r["verbs"] for r in rules)
    checked = 0
    for info, verb in itertools.product(KINDS, VERBS):
        if not info.namespaced:
            continue
        for sub in ("", *info.subresources):
            attrs = Attributes(verb, info.plural, info.group, sub, "lab-alice", "x")
            assert _rbac_allows(rules, attrs) == (POLICY.refusal(attrs) is None), attrs
            checked += 1
    assert checked > 200


@pytest.mark.parametrize("verb, resource, group, sub, allowed", [
    ("create", "deployments", "apps", "", True),
    ("update", "deployments", "apps", "scale", True),
    ("patch", "deployments", "apps", "status", False),
    ("create", "pods", "", "exec", True),
    ("get", "pods", "", "log", True),
    ("list", "endpointslices", "discovery.k8s.io", "", True),
    ("create", "endpointslices", "discovery.k8s.io", "", False),
    ("delete", "endpoints", "", "", False),
    ("create", "events", "", "", False),
    ("list", "secrets", "", "", False),
    ("create", "roles", "rbac.authorization.k8s.io", "", False),
    ("list", "nodes", "", "", False),
    ("list", "namespaces", "", "", False),
])
def test_what_the_role_grants(verb, resource, group, sub, allowed):
    assert _rbac_allows(role_rules(), Attributes(verb, resource, group, sub, "lab-alice")) == allowed


def test_the_role_names_no_cluster_scoped_resource():
    cluster_scoped = {(k.group, k.plural) for k in KINDS if not k.namespaced}
    for rule in role_rules():
        for resource in rule["resources"]:
            assert (rule["apiGroups"][0], resource.split("/")[0]) not in cluster_scoped, resource


def test_the_students_kubeconfig_names_their_namespace_and_is_private(tmp_path):
    entry = {"server": "https://10.0.0.1:6443", "certificate-authority-data": "Q0E="}
    doc = cluster.student_kubeconfig("alice", entry, "tok")
    [context] = doc["contexts"]
    assert doc["current-context"] == context["name"]
    assert context["context"]["namespace"] == "lab-alice"
    assert doc["users"] == [{"name": "student@lab-alice", "user": {"token": "tok"}}]
    assert doc["clusters"][0]["cluster"] == entry
    path = tmp_path / "alice.kubeconfig"
    path.write_text("old")
    path.chmod(0o644)
    cluster.write_private(path, yaml.safe_dump(doc))
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert yaml.safe_load(path.read_text()) == doc


def test_the_admins_cluster_entry_inlines_a_ca_file(tmp_path):
    (tmp_path / "ca.crt").write_bytes(b"-----BEGIN CERTIFICATE-----\n")
    config = write(tmp_path, yaml.safe_dump({
        "clusters": [{"name": "c", "cluster": {"server": "https://h:6443", "certificate-authority": "ca.crt"}}],
        "contexts": [{"name": "admin", "context": {"cluster": "c", "user": "u"}}],
        "users": [{"name": "u", "user": {}}], "current-context": "admin"}), "admin.kubeconfig")
    name, entry = cluster.admin_cluster_entry(str(config))
    assert name == "admin"
    assert entry == {"server": "https://h:6443",
                     "certificate-authority-data": base64.b64encode(b"-----BEGIN CERTIFICATE-----\n").decode()}
    with pytest.raises(cluster.ClassClusterError, match="has no context 'other' \\(its contexts: admin\\)"):
        cluster.admin_cluster_entry(str(config), "other")


@pytest.mark.parametrize("text, seconds", [("90m", 5400), ("12h", 43200), ("7d", 604800), ("10m", 600)])
def test_token_expiry(text, seconds):
    assert cluster.parse_duration(text) == seconds


@pytest.mark.parametrize("text, message", [("9m", "10 minutes"), ("12", "a number and a unit"),
                                           ("1w", "a number and a unit")])
def test_a_bad_token_expiry_is_refused(text, message):
    with pytest.raises(cluster.ClassClusterError, match=message):
        cluster.parse_duration(text)


def test_a_bad_class_name_is_refused():
    with pytest.raises(cluster.ClassClusterError, match="--class 'Autumn 2026': a class name must be a label value"):
        cluster.check_class_name("Autumn 2026")


def test_the_command_refuses_a_bad_roster_line_with_exit_1(tmp_path, capsys):
    roster = write(tmp_path, "id\nalice\nAlice\n")
    code = cli.main(["class", "cluster", "--roster", str(roster), "--kubeconfig", str(tmp_path / "k"),
                     "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 1 and err.startswith(f"error: {roster}:3: the student id 'Alice'") and "Traceback" not in err
    assert not (tmp_path / "out").exists()


def test_the_command_says_when_the_cluster_cannot_be_reached(tmp_path, capsys):
    config = write(tmp_path, yaml.safe_dump({
        "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:9", "insecure-skip-tls-verify": True}}],
        "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
        "users": [{"name": "u", "user": {"token": "t"}}], "current-context": "x"}), "admin.kubeconfig")
    roster = write(tmp_path, "id\nalice\n")
    code = cli.main(["class", "cluster", "--roster", str(roster), "--kubeconfig", str(config),
                     "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 1 and "cannot reach the Kubernetes API server at https://127.0.0.1:9" in err, err
    assert not (tmp_path / "out").exists()
    assert cli.main(["class", "cluster", "--delete", "--kubeconfig", str(config)]) == 1
    assert "cannot reach the Kubernetes API server" in capsys.readouterr().err


def test_the_command_needs_students_and_a_folder(tmp_path, capsys):
    assert cli.main(["class", "cluster", "--kubeconfig", "k", "--out", str(tmp_path)]) == 1
    assert "name the students: --roster FILE.csv or --students N" in capsys.readouterr().err
    assert cli.main(["class", "cluster", "--kubeconfig", "k", "--students", "2"]) == 1
    assert "--out DIR is needed" in capsys.readouterr().err


def test_a_folder_of_another_class_is_refused_before_the_cluster_is_asked(tmp_path):
    out = tmp_path / "class"
    out.mkdir()
    (out / cluster.INDEX).write_text('{"class": "spring", "students": ["alice"]}')
    for call in (lambda: cluster.make_class(["alice"], str(tmp_path / "none"), out, class_name="autumn"),
                 lambda: cluster.delete_class(str(tmp_path / "none"), class_name="autumn", out=out)):
        with pytest.raises(cluster.ClassClusterError, match="holds the kubeconfigs of the class spring, not autumn"):
            call()
    (out / cluster.INDEX).write_text("[1]")
    with pytest.raises(cluster.ClassClusterError, match="is not a class index"):
        cluster.make_class(["alice"], str(tmp_path / "none"), out, class_name="autumn")


@pytest.mark.parametrize("attrs, refusal", [
    (Attributes("list", "nodes", namespace="default"), None),   # kubectl auth can-i sends the context's namespace
    (Attributes("list", "pods"), None),                          # every namespace at once
    (Attributes("get", "configmaps", "", "", "kube-system", "kube-proxy"), None),
    (Attributes("create", "configmaps", "", "", "kube-system"), "kube-system belongs to the cluster"),
    (Attributes("create", "pods", "", "exec", "kube-system"), "kube-system belongs to the cluster"),
    (Attributes("delete", "nodes", name="lab-worker"), "only objects in the student's namespaces can be written"),
    (Attributes("create", "endpointslices", "discovery.k8s.io", "", "default"),
     "endpointslices are written by the cluster's controllers"),
    (Attributes("patch", "deployments", "apps", "status", "default"), "status is written by the cluster"),
])
def test_the_graded_cluster_is_read_whole_and_written_in_the_students_namespaces(attrs, refusal):
    assert POLICY.refusal(attrs) == refusal


# --- the guards: Pod Security, the admission policies, NetworkPolicies, the nodes, the checks ------------------------
from labsupport.hub import guards  # noqa: E402


def _policies(objects: list[dict]) -> dict[str, dict]:
    return {o["metadata"]["name"]: o["spec"] for o in objects if o["kind"] == "NetworkPolicy"}


def test_a_student_namespace_denies_everything_but_what_the_lessons_need():
    objects = cluster.student_objects("alice", "autumn", pod_cidrs=["10.244.0.0/16", "10.250.0.0/16"])
    policies = _policies(objects)
    assert policies["lab-default-deny"] == {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]}
    same = policies["lab-allow-same-namespace"]
    assert same["ingress"] == [{"from": [{"podSelector": {}}]}] and same["egress"] == [{"to": [{"podSelector": {}}]}]
    dns = policies["lab-allow-dns"]
    assert dns["policyTypes"] == ["Egress"] and "ingress" not in dns
    assert dns["egress"] == [{"ports": [{"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53}]}]
    outside = policies["lab-allow-from-outside"]
    assert outside["policyTypes"] == ["Ingress"], "NodePort and LoadBalancer traffic in; nothing more out"
    assert outside["ingress"] == [{"from": [{"ipBlock": {"cidr": "0.0.0.0/0",
                                                         "except": ["10.244.0.0/16", "10.250.0.0/16"]}}]}]
    server = policies["lab-allow-student-server"]
    assert server["podSelector"] == {"matchLabels": {"component": "singleuser-server"}}
    others = {"namespaceSelector": {"matchExpressions": [{"key": "labsupport.dev/student",
                                                          "operator": "DoesNotExist"}]}}
    assert server["ingress"] == [{"from": [others]}]
    assert server["egress"] == [{"to": [{"ipBlock": {"cidr": "0.0.0.0/0", "except": [
        "10.244.0.0/16", "10.250.0.0/16", "169.254.0.0/16"]}}, others]}]
    # no policy lets another student's pods in: only the namespace's own pods, and addresses outside the pod network
    for spec in policies.values():
        for rule in spec.get("ingress") or []:
            for peer in rule["from"]:
                assert peer in ({"podSelector": {}}, others) or "10.244.0.0/16" in peer["ipBlock"]["except"], peer


def test_a_student_may_read_the_nodes_and_nothing_else_cluster_wide():
    objects = cluster.student_objects("alice", "autumn")
    [binding] = [o for o in objects if o["kind"] == "ClusterRoleBinding"]
    assert binding["metadata"]["name"] == "lab-alice-nodes"
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "student", "namespace": "lab-alice"}]
    assert binding["roleRef"]["name"] == guards.NODE_READER
    [reader] = [o for o in guards.cluster_objects({}) if o["kind"] == "ClusterRole"]
    assert reader["rules"] == [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list", "watch"]}]


def test_a_namespace_carries_its_load_balancer_block():
    namespace = cluster.student_objects("alice", "autumn", load_balancer_ips="172.30.255.192/30")[0]
    assert namespace["metadata"]["annotations"] == {"labsupport.dev/load-balancer-ips": "172.30.255.192/30"}
    assert "annotations" not in cluster.student_objects("alice", "autumn")[0]["metadata"]


def test_the_admission_policies_bind_to_student_namespaces_only():
    objects = {(o["kind"], o["metadata"]["name"]): o for o in guards.cluster_objects({"a": "b"})}
    selector = {"matchExpressions": [{"key": "labsupport.dev/student", "operator": "Exists"}]}
    mutating = objects[("MutatingAdmissionPolicyBinding", guards.POD_DEFAULTS)]["spec"]
    validating = objects[("ValidatingAdmissionPolicyBinding", guards.SERVICE_RULES)]["spec"]
    assert mutating["matchResources"]["namespaceSelector"] == validating["matchResources"]["namespaceSelector"] \
        == selector
    assert validating["validationActions"] == ["Deny"]
    policy = objects[("MutatingAdmissionPolicy", guards.POD_DEFAULTS)]["spec"]
    assert policy["failurePolicy"] == "Fail"
    assert policy["matchConstraints"]["resourceRules"][0]["operations"] == ["CREATE"]
    assert [m["patchType"] for m in policy["mutations"]] == ["ApplyConfiguration", "ApplyConfiguration", "JSONPatch",
                                                             "JSONPatch"]
    pod, init, capabilities, sysctl = guards.pod_defaults_expressions()
    # every default keeps what the pod says (Pod Security then judges it) and fills in only what it does not say
    for field, default in (("object.spec.securityContext.runAsNonRoot", "true"),
                           ("object.spec.securityContext.seccompProfile.type", '"RuntimeDefault"')):
        assert f"? {field} : {default})" in pod
    assert "? c.securityContext.allowPrivilegeEscalation : (has(c.securityContext) && (" in pod, \
        "privileged or CAP_SYS_ADMIN containers are not told they do not escalate (the API server would refuse)"
    assert "initContainers" in init and init.endswith(": Object{}")
    # the atomic list `drop` is set by a JSON patch, where no capability is dropped, keeping what is added
    assert capabilities.count("transformList(i, c, !has(c.securityContext.capabilities), ") == 2
    assert capabilities.count("!has(c.securityContext.capabilities.drop), ") == 2
    assert '"net.ipv4.ip_unprivileged_port_start", value: "0"' in sysctl and sysctl.index("? []") < sysctl.index("add")
    assert "object.spec.hostNetwork) ? []" in sysctl, "a hostNetwork pod may not set the sysctl"
    assert all(o["metadata"]["labels"] == {"a": "b"} for o in objects.values())


def test_the_service_rules_refuse_external_ips_and_foreign_load_balancer_addresses():
    no_external, own_address = guards.service_validations()
    assert no_external["expression"] == "!has(object.spec.externalIPs) || size(object.spec.externalIPs) == 0"
    assert "CVE-2020-8554" in no_external["message"]
    assert "cidr(namespaceObject.metadata.annotations['labsupport.dev/load-balancer-ips'])" \
           ".containsIP(object.spec.loadBalancerIP)" in own_address["expression"]
    assert own_address["expression"].startswith("!has(object.spec.loadBalancerIP) || "
                                                "object.spec.loadBalancerIP == '' || (isIP(")


@pytest.mark.parametrize("config, nodes, cidrs", [
    ({"clusterCIDR": "10.244.0.0/16"}, [], ["10.244.0.0/16"]),
    ({"clusterCIDR": "10.1.0.0/16,fd00::/48"}, [], ["10.1.0.0/16"]),
    ({}, [{"spec": {"podCIDR": "10.2.0.0/24"}}, {"spec": {"podCIDRs": ["10.2.1.0/24", "fd00::/64"]}},
          {"spec": {"podCIDR": "10.9.0.0/24"}}], ["10.2.0.0/23", "10.9.0.0/24"]),
    (None, [{"spec": {}}], []),
])
def test_the_pod_network_comes_from_kube_proxy_or_the_nodes(config, nodes, cidrs):
    assert guards.pod_cidrs_of(config, nodes) == cidrs


def test_load_balancer_blocks_are_kept_and_shared_out_lowest_first():
    existing = {"lab-bob": "172.30.255.196/30", "other-team": "172.30.255.192/30"}
    found = cluster.load_balancer_allocations(existing, ["alice", "bob", "carol"], "172.30.255.192/28", 4)
    assert found == {"lab-bob": "172.30.255.196/30", "lab-alice": "172.30.255.200/30",
                     "lab-carol": "172.30.255.204/30"}
    assert cluster.load_balancer_allocations(existing, ["alice", "bob"], None, 4) == {"lab-bob": "172.30.255.196/30"}
    assert guards.load_balancer_blocks("172.30.255.0/29", 3, []) == ["172.30.255.0/30", "172.30.255.4/30"]
    with pytest.raises(cluster.ClassClusterError, match="has 2 free blocks of 4 addresses, and 3 students need one"):
        cluster.load_balancer_allocations(existing, ["alice", "carol", "dave"], "172.30.255.192/28", 4)
    with pytest.raises(cluster.ClassClusterError, match="--load-balancer-pool 'nope' is not an IPv4 CIDR"):
        cluster.load_balancer_allocations({}, ["alice"], "nope", 4)


class FakeClient:
    """The few requests the guard checks make, answered from a table of outcomes."""

    def __init__(self, **answers):
        self.answers = answers
        self.requests: list[tuple[str, str, dict | None]] = []
        self.applied: list[dict] = []
        self.deleted: list[str] = []

    def request(self, method, path, body=None, *, query=(), allow=(), **_):
        self.requests.append((method, path, body))
        name = (body or {}).get("metadata", {}).get("name", "")
        if path.endswith("/daemonsets"):
            return 200, {"items": self.answers.get("daemonsets", [])}
        if path.endswith("/endpointslices"):
            return 200, {"items": self.answers.get("endpointslices", [])}
        return self.answers[name]

    api_endpoints = cluster.ClusterClient.api_endpoints   # the real one, over the requests above

    def apply(self, obj):
        if obj["kind"] == "MutatingAdmissionPolicy" and self.answers.get("no_map"):
            raise cluster.ClassClusterError("PATCH /apis/admissionregistration.k8s.io/v1/mutatingadmissionpolicies/x "
                                            "failed (404): the server could not find the requested resource")
        self.applied.append(obj)
        return obj

    def delete_namespace(self, name):
        self.deleted.append(name)


ROUTER = {"metadata": {"name": "kube-router", "namespace": "kube-system"},
          "spec": {"template": {"spec": {"containers": [{"image": "docker.io/labsupport/kube-router:v2.1.0"}]}}}}
DEFAULTED = {"spec": {"securityContext": {"runAsNonRoot": True},
                      "containers": [{"securityContext": {"allowPrivilegeEscalation": False}}]}}
REFUSED_BY_PSS = (403, {"message": 'pods "guard-privileged" is forbidden: violates PodSecurity "restricted:latest"'})


def _guarded_cluster(**overrides) -> FakeClient:
    answers = {"guard-privileged": REFUSED_BY_PSS, "guard-defaults": (201, DEFAULTED),
               "guard-external-ip": (403, {"message": "denied"}), "guard-balancer-ip": (403, {"message": "denied"}),
               "daemonsets": [ROUTER]}
    return FakeClient(**{**answers, **overrides})


def test_a_cluster_that_enforces_every_guard_makes_a_class_quietly():
    client = _guarded_cluster()
    assert cluster.guarded(client, settle=0) == []
    kinds = [o["kind"] for o in client.applied]
    assert kinds[:1] == ["ClusterRole"] and "MutatingAdmissionPolicy" in kinds and "Namespace" in kinds
    [probe] = [o for o in client.applied if o["kind"] == "Namespace"]
    assert probe["metadata"]["name"].startswith(cluster.PROBE_PREFIX)
    assert probe["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "restricted"
    assert client.deleted == [probe["metadata"]["name"]], "the probe namespace goes, whatever happened"
    dry_runs = [r for r in client.requests if r[0] == "POST"]
    assert dry_runs and all(r[1].startswith(f"/api/v1/namespaces/{probe['metadata']['name']}/") for r in dry_runs)


@pytest.mark.parametrize("overrides, guard, words", [
    ({"guard-privileged": (201, {})}, "pod-security", "does not enforce Pod Security"),
    ({"guard-defaults": (403, {"message": "violates PodSecurity"})}, "pod-defaults", "did not get the restricted"),
    ({"no_map": True}, "pod-defaults", "does not serve MutatingAdmissionPolicy"),
    ({"guard-external-ip": (201, {})}, "service-addresses", "CVE-2020-8554"),
    ({"guard-balancer-ip": (201, {})}, "service-addresses", "a classmate's"),
    ({"daemonsets": []}, "network-policy", "no DaemonSet of a NetworkPolicy enforcer"),
])
def test_a_missing_guard_stops_the_class_unless_allowed_and_then_it_is_loud(overrides, guard, words):
    with pytest.raises(cluster.ClassClusterError) as err:
        cluster.guarded(_guarded_cluster(**overrides), settle=0)
    text = str(err.value)
    assert text.startswith("this cluster does not keep students inside their namespaces, so no class was made")
    assert f"  - {guard}: " in text and words in text and "--allow-missing-guard NAME" in text
    [warning] = cluster.guarded(_guarded_cluster(**overrides), [guard], settle=0)
    assert warning.startswith(f"WARNING: the guard {guard} is missing and you allowed it: ") and words in warning
    with pytest.raises(cluster.ClassClusterError, match="--allow-missing-guard pod-safety: no such guard"):
        cluster.guarded(_guarded_cluster(), ["pod-safety"], settle=0)


def test_network_policy_enforcers_are_known_by_name_or_image():
    calico = {"metadata": {"name": "calico-node", "namespace": "calico-system"}, "spec": {}}
    renamed = {"metadata": {"name": "netpol", "namespace": "kube-system"},
               "spec": {"template": {"spec": {"containers": [{"image": "quay.io/cilium/cilium:v1.18.0"}]}}}}
    proxy = {"metadata": {"name": "kube-proxy", "namespace": "kube-system"},
             "spec": {"template": {"spec": {"containers": [{"image": "registry.k8s.io/kube-proxy:v1.37.2"}]}}}}
    assert guards.policy_enforcers([calico, renamed, proxy, ROUTER]) == [
        "calico-system/calico-node", "kube-system/netpol", "kube-system/kube-router"]
    assert guards.policy_enforcers([proxy]) == []


def test_students_get_an_api_server_address_that_works_from_elsewhere():
    slices = [{"ports": [{"name": "https", "port": 6443}], "endpoints": [{"addresses": ["172.30.0.4"]}]}]
    client = FakeClient(endpointslices=slices)
    assert cluster.student_server("https://10.0.0.5:6443", client) == ("https://10.0.0.5:6443", None)
    server, note = cluster.student_server("https://127.0.0.1:40123", client)
    assert server == "https://172.30.0.4:6443" and "works on this machine only" in note
    assert cluster.student_server("https://127.0.0.1:40123", client, "https://lab.example:6443") == \
        ("https://lab.example:6443", None)
    assert cluster.student_server("https://localhost:1", FakeClient())[1].endswith(
        "give --server with an address the students reach")
    with pytest.raises(cluster.ClassClusterError, match="--server 'lab.example': give the API server's URL"):
        cluster.student_server("https://127.0.0.1:1", client, "lab.example")


def test_the_command_takes_the_guards_options(tmp_path, monkeypatch):
    seen = {}
    monkeypatch.setattr(cluster, "make_class", lambda students, *a, **kw: seen.update(kw, students=students) or [])
    roster = write(tmp_path, "id\nalice\n")
    assert cli.main(["class", "cluster", "--roster", str(roster), "--kubeconfig", "k", "--out", str(tmp_path / "o"),
                     "--server", "https://h:6443", "--pod-cidr", "10.1.0.0/16", "--pod-cidr", "10.2.0.0/16",
                     "--load-balancer-pool", "172.30.255.192/26", "--load-balancer-ips", "2",
                     "--allow-missing-guard", "network-policy"]) == 0
    assert seen["server"] == "https://h:6443" and seen["pod_cidrs"] == ["10.1.0.0/16", "10.2.0.0/16"]
    assert seen["load_balancer_pool"] == "172.30.255.192/26" and seen["load_balancer_ips"] == 2
    assert seen["allow_missing"] == ["network-policy"] and seen["students"] == ["alice"]


def test_doctests_of_the_guards_and_the_class():
    import doctest
    assert doctest.testmod(guards).failed == 0 and doctest.testmod(cluster).failed == 0


class RemoteCluster:
    """A shared cluster as `labsupport clean --kubeconfig` meets it: two classes' namespaces and bindings, a probe
    namespace a killed check left, and another team's namespace."""

    def __init__(self):
        owned = {"app.kubernetes.io/managed-by": "labsupport"}
        self.namespaces = {
            "lab-ann": {**owned, "labsupport.dev/class": "autumn", "labsupport.dev/student": "ann"},
            "lab-bob": {**owned, "labsupport.dev/class": "spring", "labsupport.dev/student": "bob"},
            "labsupport-guard-check-ab12cd": {**owned, "labsupport.dev/student": "guard-check"},
            "payments": {}}
        self.bindings = {"lab-ann-nodes": {**owned, "labsupport.dev/class": "autumn"},
                         "lab-bob-nodes": {**owned, "labsupport.dev/class": "spring"}}
        self.deleted: list[str] = []

    def _matches(self, labels: dict, selector: str) -> bool:
        for term in filter(None, selector.split(",")):
            if "!=" in term:
                key, value = term.split("!=")
                if labels.get(key) == value:
                    return False
                continue
            key, _, value = term.partition("=")
            if key not in labels or (value and labels[key] != value):
                return False
        return True

    def request(self, method, path, body=None, *, query=(), allow=(), **_):
        selector = dict(query).get("labelSelector", "")
        if method == "POST" and path.endswith("selfsubjectaccessreviews"):
            return 201, {"status": {"allowed": True}}
        if method == "GET" and path == "/api/v1/namespaces":
            return 200, {"items": [{"metadata": {"name": n, "labels": l}} for n, l in self.namespaces.items()
                                   if self._matches(l, selector)]}
        if method == "GET" and path.endswith("/clusterrolebindings"):
            return 200, {"items": [{"metadata": {"name": n, "labels": l}} for n, l in self.bindings.items()
                                   if self._matches(l, selector)]}
        if method == "DELETE":
            name = path.rsplit("/", 1)[1]
            self.deleted.append(path)
            if self.namespaces.pop(name, None) is None and self.bindings.pop(name, None) is None:
                return 404, {}
            return 200, {}
        raise AssertionError((method, path))


def test_clean_reaches_a_remote_class_with_a_kubeconfig(monkeypatch, capsys):
    remote = RemoteCluster()
    real = cluster.ClusterClient
    monkeypatch.setattr(cluster, "ClusterClient", lambda kubeconfig, context=None: _as_client(real, remote))
    assert cli.main(["clean", "--kubeconfig", "admin.kubeconfig", "--class", "autumn"]) == 0
    out = capsys.readouterr().out
    assert "deleted the namespace lab-ann" in out and "deleted the ClusterRoleBinding lab-ann-nodes" in out
    assert "lab-bob" in remote.namespaces and "payments" in remote.namespaces, "only the class asked for"
    assert not any("admissionregistration" in p for p in remote.deleted), "another class still needs the guards"
    assert cli.main(["clean", "--kubeconfig", "admin.kubeconfig"]) == 0
    assert sorted(remote.namespaces) == ["payments"] and remote.bindings == {}, "every class, and the probe"
    shared = [p for p in remote.deleted if "admissionregistration" in p or p.endswith(guards.NODE_READER)]
    assert len(shared) == 5, "the guards every class shares go with the last class"


def _as_client(real: type, remote: RemoteCluster):
    """The real client's methods over the remote's answers."""
    client = real.__new__(real)
    client.request = remote.request
    client.kubeconfig = "admin.kubeconfig"
    return client
