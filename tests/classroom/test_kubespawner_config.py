"""The KubeSpawner settings of a class on a shared cluster, as data (the real spawn: tests/kind/test_kubespawner.py)."""
from __future__ import annotations

import doctest

from jupyterhub.traitlets import ByteSpecification
from traitlets.config import Config

from labsupport.hub import cluster, kubespawner_config
from labsupport.hub.kubespawner_config import SERVER_SIZING, configure_kubespawner

MI = 1024 * 1024


def test_doctests():
    assert doctest.testmod(kubespawner_config).failed == 0


def test_the_settings_of_real_clusters_md():
    c = Config()
    configure_kubespawner(c, "labsupport/singleuser:local", pull_policy="Never")
    spawner = c.KubeSpawner
    assert c.JupyterHub.spawner_class == "kubespawner.KubeSpawner"
    assert spawner.enable_user_namespaces is True
    assert spawner.user_namespace_template.format(username="alice") == cluster.namespace_of("alice")
    assert spawner.service_account == cluster.ACCOUNT and spawner.automount_service_account_token is True
    assert spawner.image == "labsupport/singleuser:local" and spawner.image_pull_policy == "Never"
    assert spawner.cmd == ["python", "-m", "labsupport.student_lab"]


def test_the_server_fits_the_student_namespace():
    """The server pod counts against the namespace's quota and must pass its LimitRange."""
    def mebibytes(quantity: str) -> float:
        if quantity.endswith("Gi"):
            return float(quantity.removesuffix("Gi")) * 1024
        return float(quantity.removesuffix("Mi"))

    def bytes_of(text: str) -> int:
        return ByteSpecification().validate(None, text)

    sizing = cluster.SIZING
    assert bytes_of(SERVER_SIZING.mem_limit) <= mebibytes(sizing.max_memory) * MI
    assert SERVER_SIZING.cpu_limit <= float(sizing.max_cpu)
    # room left in the quota for lesson 07's namespace (16 pods at the LimitRange's default requests)
    left = mebibytes(sizing.requests_memory) * MI - bytes_of(SERVER_SIZING.mem_guarantee)
    assert left >= 16 * mebibytes(sizing.default_request_memory) * MI
    assert SERVER_SIZING.cpu_guarantee * 1000 + 16 * int(sizing.default_request_cpu.removesuffix("m")) \
        <= int(sizing.requests_cpu.removesuffix("m"))


def test_the_exchange_reaches_the_pod_through_its_environment_and_token():
    from labsupport.hub.hub_config import SERVER_TOKEN_SCOPES
    c = Config()
    configure_kubespawner(c, "labsupport/singleuser:local",
                          exchange=kubespawner_config.ExchangeSettings("http://172.30.0.1:8090/services/exchange"))
    assert c.KubeSpawner.environment == {"LABSUPPORT_BACKEND": "kube",
                                         "LABSUPPORT_EXCHANGE_URL": "http://172.30.0.1:8090/services/exchange",
                                         "LABSUPPORT_COURSE_ID": "k8s-services"}
    assert c.KubeSpawner.server_token_scopes == SERVER_TOKEN_SCOPES
