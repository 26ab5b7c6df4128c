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


NAMED_PORT = TYPO.replace("{port: 80, targetPort: 80, protcol: TCP}", "{port: http, targetPort: 80}")
DECODING = ('Service in version "v1" cannot be handled as a Service: json: cannot unmarshal string into Go struct '
            'field ServicePort.spec.ports.port of type int32')


@pytest.mark.parametrize("validate", [True, "warn", False])
def test_a_port_named_where_a_number_belongs_is_refused_at_decoding(lab, validate):
    """`port: http` never reaches validation (no "must be between 1 and 65535"): the API server cannot decode it into
    the int32 the field is, whatever --validate says; `targetPort` may be a name, `port` may not."""
    with pytest.raises(BadRequest) as refused:
        lab.apply(NAMED_PORT, validate=validate)
    assert str(refused.value) == DECODING
    with pytest.raises(NotFound):
        lab.get("svc", "web")


def test_kubectl_apply_of_a_named_port_says_the_same(lab):
    result = lab.kubectl("apply -f -", input=NAMED_PORT, show=False)
    assert result.returncode == 1
    assert result.stderr.strip() == f'Error from server (BadRequest): error when creating "STDIN": {DECODING}'


def test_without_the_client_ssl_or_threads_lab_apply_is_exactly_as_strict(tmp_path):
    """Where a kernel has no `kubernetes` client, `ssl`, `cryptography` or sockets server (a browser tab), `import
    labsupport` and `Lab()` still work, and `lab.apply` refuses the same typo with the same words."""
    import subprocess
    import sys
    import textwrap
    script = textwrap.dedent(f"""
        import sys
        for name in ("kubernetes", "ssl", "cryptography", "socketserver", "matplotlib"):
            sys.modules[name] = None
        from labsupport import Lab
        from labsupport.errors import BadRequest
        lab = Lab(backend="sim", seed=0)
        try:
            lab.apply({TYPO!r})
        except BadRequest as e:
            print("refused:", e)
        print("stored:", [s["metadata"]["name"] for s in lab.get("services")])
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert f"refused: {MESSAGE}" in done.stdout, done.stdout
    assert "'web'" not in done.stdout.split("stored:")[1], done.stdout


def test_the_shipped_field_map_is_what_the_client_gives():
    """fields.json (read where the client is not installed) matches the installed client; if this fails, run
    `python -m labsupport.apiserver.schema` and commit the file."""
    import json

    from labsupport.apiserver import schema
    assert json.loads(schema.FIELDS_PATH.read_text(encoding="utf-8")) == schema.fields_from_client()
