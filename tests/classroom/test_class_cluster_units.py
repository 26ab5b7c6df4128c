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
                                            "LimitRange"]
    assert objects[0]["metadata"]["name"] == "lab-alice" and "namespace" not in objects[0]["metadata"]
    for obj in objects:
        assert obj["metadata"]["labels"] == {"app.kubernetes.io/managed-by": "labsupport",
                                             "labsupport.dev/class": "autumn", "labsupport.dev/student": "alice"}
        assert cluster.RESOURCES[obj["kind"]].namespaced == ("namespace" in obj["metadata"])
        if obj["kind"] != "Namespace":
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
