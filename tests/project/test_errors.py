"""One exception tree: every error class of the package is a LabError, and an unknown proxy mode reads the same
wherever it is refused."""
import importlib
import inspect
import pkgutil

import pytest

import labsupport
from labsupport import Lab
from labsupport.checks import CheckFailed
from labsupport.control.allocators import RangeError
from labsupport.apiserver.websocket import WebSocketClosed
from labsupport.dataplane.model import NodeDatapath, trace_packet
from labsupport.errors import LabError, UnknownProxyMode
from labsupport.kind.config import cluster_config
from labsupport.proxy import KubeProxy, render

NODE = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1", "labels": {}},
        "status": {"addresses": [{"type": "InternalIP", "address": "172.18.0.2"}]}}
MESSAGE = "unknown proxy mode 'userspace': choose one of iptables, ipvs, nftables"


def _modules():
    """Every module of the package but `labsupport.apps`, whose programs run inside pods: an exception there is a
    program's own control flow (a shell's `exit`), answered inside the pod, never raised to the lab's caller."""
    for info in pkgutil.walk_packages(labsupport.__path__, "labsupport."):
        if info.name == "labsupport.apps" or info.name.startswith("labsupport.apps."):
            continue
        yield importlib.import_module(info.name)


def test_every_error_class_is_a_lab_error():
    strays = sorted(f"{module.__name__}.{name}" for module in _modules()
                    for name, cls in inspect.getmembers(module, inspect.isclass)
                    if cls.__module__ == module.__name__ and issubclass(cls, BaseException)
                    and not issubclass(cls, LabError))
    assert not strays, f"exception classes outside the LabError tree: {strays}"


def test_named_errors_sit_under_lab_error():
    for cls in (CheckFailed, RangeError, WebSocketClosed, UnknownProxyMode):
        assert issubclass(cls, LabError), cls
    assert issubclass(CheckFailed, AssertionError)      # nbgrader counts a failed assertion as a failed test
    assert issubclass(UnknownProxyMode, ValueError)


def _kube_proxy_switch():
    KubeProxy(NODE, "iptables").set_mode("userspace")


def _lab_switch():
    lab = Lab(seed=0)
    try:
        lab.set_proxy_mode("userspace")
    finally:
        lab.close()


@pytest.mark.parametrize("refuse", [
    lambda: Lab(proxy_mode="userspace"),
    _lab_switch,
    lambda: render("userspace", [], [], NODE),
    lambda: KubeProxy(NODE, "userspace"),
    _kube_proxy_switch,
    lambda: cluster_config("userspace"),
    lambda: trace_packet("userspace", "", ["172.18.0.2"], "10.0.0.1", "10.0.0.2", 80),
    lambda: NodeDatapath("userspace", "", ["172.18.0.2"]),
], ids=["Lab", "Lab.set_proxy_mode", "render", "KubeProxy", "KubeProxy.set_mode", "kind config", "trace_packet",
        "NodeDatapath"])
def test_unknown_proxy_mode_is_one_error_with_one_message(refuse):
    with pytest.raises(UnknownProxyMode) as err:
        refuse()
    assert str(err.value) == MESSAGE
    assert err.value.mode == "userspace" and err.value.modes == ("iptables", "ipvs", "nftables")
