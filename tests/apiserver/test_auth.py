"""kubectl auth can-i / whoami: the self reviews the lab's administrator and impersonated users get."""
from __future__ import annotations


def test_the_administrator_can_do_anything(kubectl):
    assert kubectl("auth can-i create pods").stdout == "yes\n"
    assert kubectl("auth can-i delete deployments.apps -n kube-system").stdout == "yes\n"
    assert kubectl(["auth", "can-i", "*", "*"]).stdout == "yes\n"


def test_list_shows_the_rules(kubectl):
    out = kubectl("auth can-i --list").stdout.splitlines()
    assert out[0].split() == ["Resources", "Non-Resource", "URLs", "Resource", "Names", "Verbs"]
    assert out[1].split() == ["*.*", "[]", "[]", "[*]"]
    assert any(line.split() == ["selfsubjectaccessreviews.authorization.k8s.io", "[]", "[]", "[create]"]
               for line in out)


def test_whoami(kubectl):
    out = kubectl("auth whoami").stdout
    assert "Username    kubernetes-admin\n" in out and "system:authenticated" in out


def test_an_impersonated_user_has_only_the_basic_roles(kubectl):
    result = kubectl("auth can-i get pods --as=system:serviceaccount:default:default", ok=False)
    assert result.returncode == 1 and result.stdout == "no\n"
    assert kubectl("auth can-i create selfsubjectaccessreviews --as=bob").stdout == "yes\n"
    assert kubectl("auth can-i get /healthz --as=bob").stdout == "yes\n"
    assert kubectl("auth whoami --as=bob").stdout.splitlines()[1].split() == ["Username", "bob"]


def test_reviews_are_create_only(kubectl):
    result = kubectl("get selfsubjectaccessreviews", ok=False)
    assert "MethodNotAllowed" in result.stderr


def test_discovery_lists_the_reviews(kubectl):
    lines = kubectl("api-resources --api-group=authorization.k8s.io -o name").stdout.split()
    assert lines == ["selfsubjectaccessreviews.authorization.k8s.io", "selfsubjectrulesreviews.authorization.k8s.io"]
