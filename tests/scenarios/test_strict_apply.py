"""`lab.apply` is as strict as `kubectl apply`: a field the kind does not declare is refused with the API server's
message and nothing is stored, unless the student opts out as kubectl's --validate does."""
from __future__ import annotations

import pytest

from labsupport import Lab
from labsupport.errors import BadRequest, NotFound

TYPO = """
apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  selector: {app: web}
  ports:
  - {port: 80, targetPort: 80, protcol: TCP}
"""
MESSAGE = ('Service in version "v1" cannot be handled as a Service: strict decoding error: '
           'unknown field "spec.ports[0].protcol"')


@pytest.fixture
def lab():
    with Lab(backend="sim", seed=0) as lab:
        yield lab


def test_an_unknown_field_is_refused_with_the_api_servers_message_and_nothing_is_stored(lab):
    with pytest.raises(BadRequest) as refused:
        lab.apply(TYPO)
    assert str(refused.value) == MESSAGE
    with pytest.raises(NotFound):
        lab.get("svc", "web")


def test_kubectl_apply_on_the_same_cluster_says_the_same(lab):
    result = lab.kubectl("apply -f -", input=TYPO, show=False)
    assert result.returncode == 1
    assert result.stderr.strip() == f'Error from server (BadRequest): error when creating "STDIN": {MESSAGE}'


def test_an_update_with_an_unknown_field_changes_nothing(lab):
    lab.apply(TYPO.replace(", protcol: TCP", ""))
    before = lab.get("svc", "web")
    with pytest.raises(BadRequest, match='strict decoding error: unknown field "spec.ports\\[0\\].protcol"'):
        lab.apply(TYPO.replace("targetPort: 80", "targetPort: 8080"))
    assert lab.get("svc", "web") == before


def test_validate_warn_and_ignore_drop_the_field_as_kubectl_does(lab):
    with pytest.warns(UserWarning, match='^unknown field "spec.ports\\[0\\].protcol"$'):
        [svc] = lab.apply(TYPO, validate="warn")
    assert "protcol" not in svc["spec"]["ports"][0]
    lab.delete("svc", "web")
    [svc] = lab.apply(TYPO, validate=False)
    assert "protcol" not in svc["spec"]["ports"][0]
    with pytest.raises(BadRequest, match="validate"):
        lab.apply(TYPO, validate="maybe")



def test_create_is_as_strict_as_kubectl_create(lab):
    with pytest.raises(BadRequest) as refused:
        lab.create(TYPO)
    assert str(refused.value) == MESSAGE
    with pytest.raises(NotFound):
        lab.get("svc", "web")
    [svc] = lab.create(TYPO, validate=False)
    assert "protcol" not in svc["spec"]["ports"][0]
