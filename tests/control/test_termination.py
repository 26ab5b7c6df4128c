"""Pod termination as the kubelet and the runtime do it: preStop hook, the image's stop signal, the grace period."""
from __future__ import annotations

import pytest

from labsupport import Lab, NotFound
from labsupport.apps import app_for
from labsupport.apps.stop import hook_seconds, stop_behaviour


def pod_manifest(name: str, image: str, *, args=None, command=None, pre_stop=None, grace=None) -> str:
    container = {"name": "main", "image": image}
    if args:
        container["args"] = args
    if command:
        container["command"] = command
    if pre_stop:
        container["lifecycle"] = {"preStop": pre_stop}
    spec = {"containers": [container]}
    if grace is not None:
        spec["terminationGracePeriodSeconds"] = grace
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": {"app": name}}, "spec": spec}


def service(name: str, port: int) -> dict:
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name},
            "spec": {"selector": {"app": name}, "ports": [{"port": 80, "targetPort": port}]}}


def endpoint_conditions(lab, name: str) -> list[dict]:
    return [e["conditions"] for s in lab.get("endpointslices", selector=f"kubernetes.io/service-name={name}")
            for e in s.get("endpoints") or []]


def seconds_until_gone(lab, name: str) -> float:
    """Delete the pod and return the cluster seconds until the API server no longer has it."""
    lab.delete("pod", name)

    def gone(l):
        try:
            l.get("pod", name)
        except NotFound:
            return True
        return False
    return lab.wait(gone, timeout=200)


def running(lab, name: str) -> None:
    lab.wait(lambda l: l.get("pod", name)["status"].get("phase") == "Running")


@pytest.fixture
def lab():
    with Lab(backend="sim", seed=0) as lab:
        yield lab


@pytest.mark.parametrize("image, args, command, expected", [
    ("nginx:1.27", None, None, ("SIGQUIT", 0.0)),
    ("registry.k8s.io/e2e-test-images/agnhost:2.53", ["netexec", "--http-port=8080"], None, ("SIGTERM", 0.0)),
    ("registry.k8s.io/e2e-test-images/agnhost:2.53", ["netexec", "--delay-shutdown=12"], None, ("SIGTERM", 12.0)),
    ("registry.k8s.io/coredns/coredns:v1.12.0", None, None, ("SIGTERM", 5.0)),
    ("busybox:1.36", None, ["sleep", "3600"], ("SIGTERM", None)),
    ("example.com/unknown:1", None, None, ("SIGTERM", 0.0)),
])
def test_stop_signal_and_exit_per_image(image, args, command, expected):
    pod = pod_manifest("p", image, args=args, command=command)
    pod["metadata"]["namespace"] = "default"
    app = app_for(pod, pod["spec"]["containers"][0])
    behaviour = stop_behaviour(app)
    assert (behaviour.signal, behaviour.exit_seconds) == expected


def test_hook_seconds_reads_sleep_steps():
    assert hook_seconds({"exec": {"command": ["sleep", "30"]}}) == 30
    assert hook_seconds({"exec": {"command": ["/bin/sh", "-c", "sleep 5; nginx -s quit; sleep 2"]}}) == 7
    assert hook_seconds({"sleep": {"seconds": 9}}) == 9
    assert hook_seconds({"httpGet": {"path": "/drain", "port": 80}}) == 0
    assert hook_seconds({"exec": {"command": ["cat", "/no/such/file"]}}) == 0


def test_nginx_without_pre_stop_leaves_its_slice_within_a_second(lab):
    lab.apply([pod_manifest("web", "nginx:1.27"), service("web", 80)])
    running(lab, "web")
    lab.wait(lambda l: endpoint_conditions(l, "web") == [{"ready": True, "serving": True, "terminating": False}])
    lab.delete("pod", "web")
    assert endpoint_conditions(lab, "web") == [{"ready": False, "serving": True, "terminating": True}]
    lab.advance(1)
    assert endpoint_conditions(lab, "web") == []
    with pytest.raises(NotFound):
        lab.get("pod", "web")


def test_pre_stop_sleep_holds_the_endpoint_serving_and_terminating(lab):
    lab.apply([pod_manifest("web", "nginx:1.27", pre_stop={"exec": {"command": ["sleep", "30"]}}),
               service("web", 80)])
    running(lab, "web")
    lab.wait(lambda l: endpoint_conditions(l, "web") == [{"ready": True, "serving": True, "terminating": False}])
    lab.delete("pod", "web")
    terminating = {"ready": False, "serving": True, "terminating": True}
    lab.advance(29)
    assert endpoint_conditions(lab, "web") == [terminating]
    cluster_ip = lab.get("svc", "web")["spec"]["clusterIP"]
    # Nothing is ready, so kube-proxy falls back to the serving, terminating endpoint.
    assert lab.curl(f"http://{cluster_ip}", source="node/lab-worker").status == 200
    lab.advance(2)
    assert endpoint_conditions(lab, "web") == []


@pytest.mark.parametrize("hook, grace, expected", [
    (None, None, 0.5),                                  # nginx quits at once
    ({"exec": {"command": ["sleep", "10"]}}, None, 10.5),  # the hook holds it, then nginx quits
    ({"sleep": {"seconds": 10}}, None, 10.5),
    ({"exec": {"command": ["sleep", "60"]}}, 20, 20.5),    # the grace period cuts the hook short
])
def test_nginx_pod_is_gone_after_hook_then_stop_signal(lab, hook, grace, expected):
    lab.apply(pod_manifest("web", "nginx:1.27", pre_stop=hook, grace=grace))
    running(lab, "web")
    assert seconds_until_gone(lab, "web") == pytest.approx(expected, abs=0.6)


def test_agnhost_exits_on_sigterm_unless_it_delays_shutdown(lab):
    image = "registry.k8s.io/e2e-test-images/agnhost:2.53"
    lab.apply([pod_manifest("quick", image, args=["netexec", "--http-port=8080"]),
               pod_manifest("slow", image, args=["netexec", "--http-port=8080", "--delay-shutdown=15"])])
    running(lab, "quick")
    running(lab, "slow")
    assert seconds_until_gone(lab, "quick") == pytest.approx(0.5, abs=0.6)
    assert seconds_until_gone(lab, "slow") == pytest.approx(15.5, abs=0.6)


def test_sleep_as_pid_1_ignores_sigterm_and_is_killed_at_the_deadline(lab):
    lab.apply(pod_manifest("client", "busybox:1.36", command=["sleep", "3600"], grace=12))
    running(lab, "client")
    assert seconds_until_gone(lab, "client") == pytest.approx(12.5, abs=0.6)
