"""labsupport.checks on the embedded cluster: each check passes on the right state and teaches on a wrong one."""
from __future__ import annotations

import pytest

from labsupport import Lab, checks
from labsupport.checks import CheckFailed
from tests.conftest import WEB

ECHO = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: echo}
spec:
  replicas: 1
  selector: {matchLabels: {app: echo}}
  template:
    metadata: {labels: {app: echo}}
    spec:
      nodeSelector: {kubernetes.io/hostname: lab-worker}
      containers:
      - {name: netexec, image: "registry.k8s.io/e2e-test-images/agnhost:2.53", args: [netexec, --http-port=8080]}
---
apiVersion: v1
kind: Service
metadata: {name: echo}
spec:
  type: NodePort
  externalTrafficPolicy: POLICY
  selector: {app: echo}
  ports: [{port: 80, targetPort: 8080}]
"""


@pytest.fixture
def web():
    with Lab(backend="sim", seed=0) as lab:
        lab.apply(WEB)
        lab.wait(lambda l: len(checks.ready_addresses(l, "web")) == 3)
        yield lab


def fails(fn, *args, **kwargs) -> str:
    with pytest.raises(CheckFailed) as err:
        fn(*args, **kwargs)
    assert isinstance(err.value, AssertionError)
    return str(err.value)


def test_slice_checks(web):
    assert len(checks.slice_has_ready_addresses(web, "web", 3)) == 3
    checks.slice_matches_pods(web, "web", "app=web")
    checks.deployment_ready(web, "web", 3, image="nginx")
    checks.service_type(web, "web", "ClusterIP")
    assert "expected 4: are all pods Ready? try lab.get('pods', selector='app=web')" in \
        fails(checks.slice_has_ready_addresses, web, "web", 4)
    assert 'there is no Service "nope"' in fails(checks.slice_has_ready_addresses, web, "nope", 3)
    assert "expected an image of \"httpd\"" in fails(checks.deployment_ready, web, "web", 3, image="httpd")
    assert "is of type ClusterIP, expected NodePort" in fails(checks.service_type, web, "web", "NodePort")


def test_selector_mismatch_points_at_the_labels():
    with Lab(backend="sim", seed=0) as lab:
        lab.apply(WEB.replace("selector: {app: web}\n  ports", "selector: {app: wbe}\n  ports"))
        lab.advance(20)
        message = fails(checks.slice_has_ready_addresses, lab, "web", 3)
        assert "The slice is empty: does the selector 'app=wbe' match any pod's labels?" in message


def test_terminating_endpoint(web):
    victim = web.get("pods", selector="app=web")[0]
    ip = victim["status"]["podIP"]
    before = web.get("endpointslices", selector="kubernetes.io/service-name=web")
    assert "is not terminating" in fails(checks.endpoint_terminating, before, ip)
    web.delete("pod", victim["metadata"]["name"])
    captured = web.get("endpointslices", selector="kubernetes.io/service-name=web")
    ep = checks.endpoint_terminating(captured, ip)
    assert ep["conditions"] == {"ready": False, "serving": True, "terminating": True}
    checks.endpoint_terminating(captured[0], ip)
    assert "has no endpoint for 10.9.9.9" in fails(checks.endpoint_terminating, captured, "10.9.9.9")
    assert "still listed" in fails(checks.address_gone, web, "web", ip)
    web.advance(31)
    checks.address_gone(web, "web", ip)


def test_headless_and_dns(web):
    answer = web.nslookup("web")
    assert "is a Service's ClusterIP: the Service is not headless" in \
        fails(checks.nslookup_returns_pod_ips, answer, web, "app=web")
    assert "so it is not headless" in fails(checks.headless, web, "web")
    web.delete("svc", "web")
    web.apply(WEB.split("---")[1].replace("spec:\n", "spec:\n  clusterIP: None\n", 1))
    checks.headless(web, "web")
    checks.nslookup_returns_pod_ips(web.nslookup("web"), web, "app=web")


@pytest.mark.parametrize("policy", ["Cluster", "Local"])
def test_source_ip_checks(policy):
    with Lab(backend="sim", seed=0) as lab:
        lab.apply(ECHO.replace("POLICY", policy))
        lab.wait(lambda l: len(checks.ready_addresses(l, "echo")) == 1)
        port = checks.node_port(lab, "echo")
        ips = checks.node_ips(lab)
        here = lab.curl(f"http://{ips['lab-worker']}:{port}/clientip", source="client")
        there = lab.curl(f"http://{ips['lab-worker2']}:{port}/clientip", source="client")
        checks.reached_node_port(here, lab, "echo")
        assert checks.sent_to(there, lab, "lab-worker2", port=port) == ips["lab-worker2"]
        assert "send it to that node's IP" in fails(checks.sent_to, here, lab, "lab-worker2")
        assert "send it to that node's IP" in fails(checks.sent_to, there, lab, "lab-worker2", port=port + 1)
        checks.external_traffic_policy(lab, "echo", policy)
        if policy == "Cluster":
            checks.source_ip_snatted(there, lab)
            assert "a node's address: the request was masqueraded" in fails(checks.source_ip_preserved, there, lab)
            assert "the request was answered" in fails(checks.dropped, there)
        else:
            assert checks.source_ip_preserved(here, lab) == "172.18.0.100"
            checks.dropped(there)
            assert "got no answer" in fails(checks.reached_node_port, there, lab, "echo")
            checks.node_without_pod(lab, "lab-worker2", "app=echo")
            assert "run on lab-worker" in fails(checks.node_without_pod, lab, "lab-worker", "app=echo")
        vip = lab.get("svc", "echo")["spec"]["clusterIP"]
        outside = lab.curl(f"http://{vip}/clientip", source="client")
        assert "which is not a node's IP" in fails(checks.reached_node_port, outside, lab, "echo")


def test_rule_checks_in_every_mode(web):
    rules = web.proxy_rules("lab-worker")
    chain = checks.iptables_service_chain(rules, "default/web:http")
    assert chain and chain.startswith("KUBE-SVC-")
    checks.service_chain(chain, web, "web")
    assert "is not the chain" in fails(checks.service_chain, "KUBE-SVC-XXXX", web, "web")
    seps = [sep for sep, _ in checks.iptables_endpoint_jumps(rules, chain)]
    checks.endpoint_chains(seps, web, "web")
    assert "not in the order" in fails(checks.endpoint_chains, seps[::-1], web, "web")
    checks.probabilities([1 / 3, 1 / 2, 1], web, "web")
    assert "1/(N-i)" in fails(checks.probabilities, [1 / 3] * 3, web, "web")
    checks.equal_shares([1 / 3] * 3, 3)
    assert "overall shares" in fails(checks.equal_shares, [1 / 3, 1 / 2, 1], 3)
    assert "switch with lab.set_proxy_mode('nftables')" in fails(checks.nft_numgen, "x", web, "web")
    web.set_proxy_mode("nftables")
    line = next(l for l in web.proxy_rules().splitlines() if "default/web/tcp/http " in l and "numgen" in l)
    assert checks.nft_numgen(line, web, "web") == line
    web.set_proxy_mode("ipvs")
    servers = checks.ipvs_real_servers(sorted(f"{ip}:80" for ip in checks.ready_addresses(web, "web")), web, "web")
    assert len(servers) == 3


def test_troubleshooting_checks():
    with Lab(backend="sim", seed=0) as lab:
        lab.apply(WEB.replace("targetPort: 80", "targetPort: 8080"))
        lab.apply({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "client"},
                   "spec": {"containers": [{"name": "c", "image": "busybox:1.36", "command": ["sleep", "3600"]}]}})
        lab.advance(20)
        assert "the targetPort does not match" in fails(checks.service_answers, lab, "web", "pod/client")
        lab.apply(WEB)
        assert checks.service_answers(lab, "web", "pod/client").status == 200
    assert "reached only" in fails(checks.balanced, {"a": 30}, 3)
    assert "uneven" in fails(checks.balanced, {"a": 80, "b": 10, "c": 1}, 3)
    checks.balanced({"a": 30, "b": 28, "c": 32}, 3)


def test_answer_checks():
    checks.close_to(4.5e9, 4.5e9)
    assert "is 1.5e+06" in fails(checks.close_to, 1.5e6, 4.5e9, what="x")
    assert "not a number" not in fails(checks.close_to, "lots", 1.0)
    checks.choice("B ", "b", "abcd")
    assert "one of" in fails(checks.choice, "z", "b", "abcd")
    assert "not the right choice" in fails(checks.choice, "a", "b", "abcd")
    checks.choices(["a", "c", "e"], {"a", "c", "e"}, "abcde")
    assert "1 right option(s) missing, 1 wrong one(s) chosen" in fails(checks.choices, {"a", "b", "c"}, "ace", "abcde")


def test_module_example_runs():
    import doctest

    import labsupport.checks
    assert doctest.testmod(labsupport.checks, optionflags=doctest.ELLIPSIS).failed == 0


def test_pre_stop_seconds_reads_the_hook_and_names_the_fix(web):
    message = fails(checks.pre_stop_seconds, web, "web")
    assert "has no preStop hook" in message and "lifecycle: {preStop:" in message
    dep = web.get("deployment", "web")
    dep["spec"]["template"]["spec"]["containers"][0]["lifecycle"] = {"preStop": {"exec": {"command": ["sleep", "20"]}}}
    web.apply(dep)
    assert checks.pre_stop_seconds(web, "web") == 20
    assert "has no preStop hook" in fails(checks.pre_stop_seconds, web, "web", minimum=30)


def test_captured_slices_must_be_the_services_own_slices(web):
    victim = web.get("pods", selector="app=web")[0]
    ip = victim["status"]["podIP"]
    web.delete("pod", victim["metadata"]["name"])
    captured = web.get("endpointslices", selector="kubernetes.io/service-name=web")
    checks.endpoint_terminating(captured, ip, "web")
    assert checks.was_listed(captured, ip, "web")["targetRef"]["name"] == victim["metadata"]["name"]
    bare = [{"endpoints": [{"addresses": [ip], "conditions": {"ready": False, "serving": True, "terminating": True}}]}]
    for forged in (bare, bare[0]["endpoints"][0], [{"kind": "EndpointSlice", "endpoints": bare[0]["endpoints"]}]):
        assert "not an EndpointSlice object as the cluster returns it" in \
            fails(checks.endpoint_terminating, forged, ip, "web")
    assert "an empty list shows nothing" in fails(checks.endpoint_terminating, [], ip, "web")
    assert 'not those of the Service "db"' in fails(checks.endpoint_terminating, captured, ip, "db")
    assert "has no endpoint for 10.9.9.9" in fails(checks.was_listed, captured, "10.9.9.9", "web")


HELD_WEB = WEB.replace("ports: [{containerPort: 80, name: http}]",
                       'ports: [{containerPort: 80, name: http}], '
                       'lifecycle: {preStop: {exec: {command: [sleep, "20"]}}}')


@pytest.mark.parametrize("late", [15, 25])
def test_a_late_capture_is_told_the_window_is_the_hook_not_the_grace_period(late, monkeypatch):
    """Assignment 01's pods: a 20 s preStop hook and the 30 s default grace period. A capture 15 s after the delete
    still holds the endpoint; one 25 s after it (inside the grace period) does not, and the message says why."""
    assert "preStop" in HELD_WEB
    with Lab(backend="sim", seed=0) as lab:
        lab.apply(HELD_WEB)
        lab.wait(lambda l: len(checks.ready_addresses(l, "web")) == 3)
        victim = lab.get("pods", selector="app=web")[0]
        ip = victim["status"]["podIP"]
        lab.delete("pod", victim["metadata"]["name"])
        lab.advance(late)
        captured = lab.get("endpointslices", selector="kubernetes.io/service-name=web")
        if late < 20:
            checks.endpoint_terminating(captured, ip, "web", lab=lab)
            checks.victim_in_capture(captured, ip, "web", lab=lab)
            return
        at_capture = " ".join(fails(checks.endpoint_terminating, captured, ip, "web", lab=lab).split())
        assert "until its preStop hook ends (here the preStop hook holds it 20 s)" in at_capture, at_capture
        assert "only the deadline for a kill" in at_capture and "advancing the clock past" not in at_capture
        after = " ".join(fails(checks.victim_in_capture, captured, ip, "web", lab=lab).split())
        assert "The mistake is the capture, not this step" in after and "costs the capture's own test too" in after
        assert after != at_capture
        lab.wait(lambda l: len(checks.ready_addresses(l, "web")) == 3, timeout=60)
        assert "The mistake is the capture" in fails(checks.waited, 1.0, lab, captured, ip, "web")
        monkeypatch.setenv("LABSUPPORT_LANG", "ru")
        russian = " ".join(fails(checks.endpoint_terminating, captured, ip, "web", lab=lab).split())
        assert "здесь preStop-хук держит его 20 с" in russian and "grace period" in russian.lower()
        assert "Ошибка — в сохранении слайса" in " ".join(fails(checks.victim_in_capture, captured, ip, "web",
                                                                   lab=lab).split())


def test_a_wait_is_no_longer_than_the_time_since_the_delete(web):
    victim = web.get("pods", selector="app=web")[0]
    ip = victim["status"]["podIP"]
    web.delete("pod", victim["metadata"]["name"])
    captured = web.get("endpointslices", selector="kubernetes.io/service-name=web")
    assert "more cluster time than has passed" in fails(checks.waited, 20.0, web, captured, ip, "web")
    took = web.wait(lambda l: ip not in [a for e in checks.endpoints(checks.slices(l, "web")) for a in e["addresses"]],
                    timeout=60)
    assert checks.waited(took, web, captured, ip, "web") >= took
    assert "expected the number lab.wait returned" in fails(checks.waited, "20", web, captured, ip, "web")


def test_checks_over_nothing_fail(web):
    web.delete("svc", "web")
    web.delete("deploy", "web")
    web.advance(60)
    assert "would match an empty list and prove nothing" in \
        fails(checks.nslookup_returns_pod_ips, web.nslookup("web"), web, "app=web")


def test_rule_checks_refuse_a_service_without_endpoints(web):
    web.scale("web", 0)
    web.advance(60)
    for check in (checks.endpoint_chains, checks.probabilities):
        assert "an empty list matches no rules at all" in fails(check, [], web, "web")
    web.set_proxy_mode("ipvs")
    assert "an empty list matches no rules at all" in fails(checks.ipvs_real_servers, [], web, "web")


def test_a_replaced_pod_is_told_from_the_one_that_was_there(web):
    pod = web.get("pods", selector="app=web")[0]["metadata"]["name"]
    assert "is the pod that was there before" in fails(checks.pod_replaced, web, pod)
    web.apply({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "solo", "labels": {"app": "solo"}},
               "spec": {"containers": [{"name": "c", "image": "nginx:1.27"}]}})
    web.advance(10)
    web.delete("pod", "solo")
    assert "still terminating" in fails(checks.pod_replaced, web, "solo")
    web.advance(40)
    web.apply({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "solo", "labels": {"app": "solo"}},
               "spec": {"containers": [{"name": "c", "image": "nginx:1.27"}]}})
    web.advance(10)
    assert checks.pod_replaced(web, "solo")["metadata"]["name"] == "solo"


def test_a_refusal_on_a_local_cluster_is_checked_for_its_words():
    with Lab(backend="sim", seed=0) as lab:
        assert checks.refusal("x is invalid: provided port is already allocated", lab, "already allocated")
        assert "not the refusal asked for" in fails(checks.refusal, "x is invalid", lab, "already allocated")
        assert "expected the message of the error you caught" in fails(checks.refusal, None, lab, "x")


def test_hits_are_counted_from_the_responses_kept():
    with Lab(backend="sim", seed=0) as lab:
        lab.apply(WEB)
        lab.wait(lambda l: len(checks.ready_addresses(l, "web")) == 3)
        pod = lab.get("pods", selector="app=web")[0]["metadata"]["name"]
        responses = [lab.curl("http://web/", source=f"pod/{pod}") for _ in range(6)]
        hits = {}
        for r in responses:
            hits[r.body] = hits.get(r.body, 0) + 1
        assert checks.counted(hits, responses, "http://web/", f"pod/{pod}") == hits
        assert "more than once" in fails(checks.counted, {responses[0].body: 6}, [responses[0]] * 6, "http://web/",
                                         f"pod/{pod}")
        assert "only numbers written down" in fails(checks.counted, hits, [], "http://web/", f"pod/{pod}")
        assert "are not answers to http://web/ from client" in \
            fails(checks.counted, hits, responses, "http://web/", "client")
        assert "count the .body of each" in fails(checks.counted, {"x": 6}, responses, "http://web/", f"pod/{pod}")
