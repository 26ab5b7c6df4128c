"""The lessons' widgets without a browser: the picture, its controls, the static copy, speed, and the helpers."""
from __future__ import annotations

import re
import statistics
import time

import pytest

from labsupport.widgets import ClusterGraph, ConntrackView, RulesView, connection_cost, presenter, rule_counts
from labsupport.widgets.rules import parse_conntrack
from labsupport.widgets.scene import Layout, build_model
from labsupport.widgets.live import read_cluster
from tests.conftest import ready_addresses

NODEPORT = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web-np"},
            "spec": {"type": "NodePort", "selector": {"app": "web"}, "ports": [{"port": 80}]}}


def states(svg: str) -> list[str]:
    return re.findall(r'<g class="pod [a-z-]+" data-name="[^"]+" data-state="([a-z-]+)"', svg)


def pod_names(lab, selector="app=web"):
    return [p["metadata"]["name"] for p in lab.get("pods", selector=selector)]


def test_graph_shows_pods_services_slices_and_kube_proxy(web):
    graph = web.graph(live=False)
    assert states(graph.svg) == ["ready"] * 3
    assert 'class="service" data-name="web"' in graph.svg
    assert graph.svg.count('class="slice"') == 1
    assert graph.svg.count('class="endpoint" data-state="ready"') == 3
    assert graph.svg.count('class="kube-proxy" data-running="true"') == 4
    assert graph.svg.count('class="zone"') == 3


def test_static_fallback_travels_with_the_widget_view(web):
    graph = web.graph(live=False)
    bundle = graph._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle
    assert states(bundle["text/html"]) == ["ready"] * 3
    assert not re.search(r"<script|\bsrc=|\bhref=", bundle["text/html"]), "the picture must work offline"


def test_delete_from_the_widget_turns_the_pod_terminating(web):
    graph = web.graph(live=False)
    victim = pod_names(web)[0]
    graph.delete_pod(victim)
    assert graph.pods_by_state()["terminating"] == [victim]
    assert f'data-name="{victim}" data-state="terminating"' in graph.svg


def test_live_updates_follow_the_watch_debounced(web):
    graph = web.graph()
    try:
        before = graph.refresh()
        assert before >= 0
        web.delete("pod", pod_names(web)[0])
        web.scale("web", 5)
        deadline = time.time() + 5
        while "terminating" not in states(graph.svg) and time.time() < deadline:
            time.sleep(0.05)
        assert "terminating" in states(graph.svg)
    finally:
        graph.close()


def test_break_and_mend_readiness_buttons(lab):
    lab.apply("""
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: nginx
        image: nginx:1.27
        readinessProbe: {httpGet: {path: /, port: 80}, periodSeconds: 2}
""")
    lab.wait(lambda l: all(p["status"].get("phase") == "Running" for p in l.get("pods", selector="app=web"))
             and len(l.get("pods", selector="app=web")) == 2)
    lab.advance(3)
    graph = lab.graph(live=False)
    graph.pod.value = f"default/{pod_names(lab)[0]}"
    graph.break_button.click()
    graph.advance_button.click()
    graph.advance_button.click()
    assert graph.pods_by_state().get("not-ready") == [pod_names(lab)[0]]
    graph.mend_button.click()
    graph.advance_button.click()
    assert "not-ready" not in graph.pods_by_state()


def test_scale_and_proxy_mode_and_policy_controls(web):
    web.apply(NODEPORT)
    graph = web.graph(live=False)
    graph.workload.value = "deployment/web"
    graph.replicas.value = 4
    graph.scale_button.click()
    web.wait(lambda l: ready_addresses(l, "web") == 4)
    graph.draw()
    assert graph.pods_by_state()["ready"].__len__() == 4
    graph.mode.value = "nftables"
    assert web.proxy_mode == "nftables"
    assert "kube-proxy ● nftables" in graph.svg
    graph.service.value = "default/web-np"
    graph.policy.value = "Local"
    assert web.get("svc", "web-np")["spec"]["externalTrafficPolicy"] == "Local"
    assert "eTP Local" in graph.svg


def test_policy_on_a_clusterip_service_is_refused_in_the_status_line(web):
    graph = web.graph(live=False)
    graph.service.value = "default/web"
    graph.policy.value = "Local"
    assert "externalTrafficPolicy applies to NodePort and LoadBalancer" in graph.status.value


def test_request_path_is_drawn_hop_by_hop_with_nat(web):
    graph = web.graph(live=False)
    source = pod_names(web)[0]
    trace = graph.request("http://web", source=f"pod/{source}")
    assert graph.steps[0].start == f"pod:default/{source}"
    assert graph.steps[-1].end == f"pod:default/{trace.result.pod}" or graph.steps[-1].start == graph.steps[-1].end
    assert any(rw.startswith("DNAT") for step in graph.steps for rw in step.rewrites)
    assert graph.svg.count('class="trace-step"') == len(graph.steps)
    graph.clear_trace()
    assert 'class="trace-step"' not in graph.svg


def width(svg: str) -> float:
    return float(re.search(r'width="(\d+)"', svg).group(1))


def test_presenter_switch_reaches_new_and_existing_views(web):
    plain = web.graph(live=False)
    presenter(on=True)
    try:
        big = web.graph(live=False)
        assert big.present and plain.present and plain.present_toggle.value
        assert width(big.svg) == width(plain.svg)
    finally:
        presenter(on=False)
    assert not big.present and not plain.present


def test_presenter_mode_is_larger_and_reveals_step_by_step(web):
    plain = web.graph(live=False)
    big = ClusterGraph(web, present=True, live=False)
    assert width(big.svg) > width(plain.svg)
    big.request("http://web", source=f"pod/{pod_names(web)[0]}")
    assert big.svg.count('class="trace-step"') == 1
    big.next_button.click()
    assert big.svg.count('class="trace-step"') == min(2, len(big.steps))
    big.prev_button.click()
    assert big.svg.count('class="trace-step"') == 1
    big.present_toggle.value = False
    assert big.svg.count('class="trace-step"') == len(big.steps) and width(big.svg) == width(plain.svg)


def test_layout_is_stable_when_pods_come_and_go(web):
    layout = Layout()
    first = layout.place(build_model(read_cluster(web)))
    web.scale("web", 6)
    web.wait(lambda l: ready_addresses(l, "web") == 6)
    second = layout.place(build_model(read_cluster(web)))
    for key, box in first.items():
        if key.startswith("pod:"):
            assert second[key] == box, key


def test_update_at_100_pods_within_100_ms(lab):
    lab.apply("""
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 100
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: nginx, image: "nginx:1.27"}]
---
apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  selector: {app: web}
  ports: [{port: 80}]
""")
    lab.wait(lambda l: ready_addresses(l, "web") == 100, timeout=600)
    graph = lab.graph(live=False)
    times = []
    for name in pod_names(lab)[:8]:
        lab.delete("pod", name)
        graph.sync_proxies()
        times.append(graph.refresh())
    assert len(states(graph.svg)) >= 100
    assert statistics.median(times) <= 0.100, times


@pytest.mark.parametrize("mode", ["iptables", "nftables", "ipvs"])
def test_rules_view_lights_the_matched_rules(web, mode):
    web.set_proxy_mode(mode)
    source = web.get("pods", selector="app=web")[0]
    trace = web.trace("http://web", source=f"pod/{source['metadata']['name']}")
    view = RulesView(web, node=source["spec"]["nodeName"], trace=trace, only_matched=True, live=False)
    matched = view.html.count('class="rule matched"')
    assert matched >= 2, view.html[:2000]
    assert "dnat" in view.html.lower() or "DNAT" in view.html or "TCP " in view.html
    assert view._repr_mimebundle_()["text/html"] == view.html


def test_conntrack_view_shows_the_dnat_of_a_keep_alive_connection(web):
    source = web.get("pods", selector="app=web")[0]
    conn = web.connect("http://web", source=f"pod/{source['metadata']['name']}")
    view = ConntrackView(web, node=source["spec"]["nodeName"], live=False)
    vip = web.get("svc", "web")["spec"]["clusterIP"]
    assert f"DNAT {vip}:80 →" in view.html and "ESTABLISHED" in view.html
    conn.close()
    view.refresh()
    assert f"DNAT {vip}:80 →" in view.html and "TIME_WAIT" in view.html and "ESTABLISHED" not in view.html
    web.advance(121)
    view.refresh()
    assert f"DNAT {vip}:80 →" not in view.html


def test_parse_conntrack_line():
    line = ("tcp      6 86399 ESTABLISHED src=10.244.1.2 dst=10.96.0.7 sport=40000 dport=80 src=10.244.2.3 "
            "dst=172.18.0.3 sport=80 dport=40000 [ASSURED] mark=0 use=1")
    entry = parse_conntrack(line)
    assert entry["nat"] == "DNAT 10.96.0.7:80 → 10.244.2.3:80; SNAT 10.244.1.2:40000 → 172.18.0.3:40000"
    assert parse_conntrack("garbage") is None


def test_scale_charts_numbers():
    counts = rule_counts([5, 20], endpoints=3, modes=("iptables", "ipvs", "nftables"))
    assert all(counts[m][1] > counts[m][0] for m in counts)
    cost = connection_cost([5, 40], endpoints=2)
    assert cost["iptables"][1] > cost["iptables"][0]
    assert cost["nftables"][0] == cost["nftables"][1]
    assert cost["ipvs"][0] == cost["ipvs"][1]


def test_chart_shows_as_png():
    from labsupport.widgets import line_chart
    chart = line_chart([1, 2], {"iptables": [1, 2]}, title="t", xlabel="x", ylabel="y")
    bundle = chart._repr_mimebundle_()
    assert bundle["image/png"].startswith("iVBOR")


def test_a_bare_service_name_finds_the_service_in_the_labs_own_namespace(lab):
    lab.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "student"}})
    lab.apply({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "echo", "namespace": "student"},
               "spec": {"type": "NodePort", "selector": {"app": "echo"}, "ports": [{"port": 80}]}})
    graph = ClusterGraph(lab, namespaces=("default", "student"))
    graph.set_external_traffic_policy("Local", service="echo")
    assert lab.get("svc", "echo", namespace="student")["spec"]["externalTrafficPolicy"] == "Local"
    lab.apply({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "echo"},
               "spec": {"type": "NodePort", "selector": {"app": "echo"}, "ports": [{"port": 80}]}})
    graph.draw()
    graph.set_external_traffic_policy("Local", service="echo")
    assert lab.get("svc", "echo")["spec"]["externalTrafficPolicy"] == "Local", "default's comes first"
