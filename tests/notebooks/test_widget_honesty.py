"""The picture's controls say what really happened, and the lab outlives the cells that made it."""
from __future__ import annotations

import gc
import re
import socket
import urllib.parse

import yaml

from labsupport import Lab

RED = "#b71c1c"


def pod_names(lab, selector="app=web"):
    return [p["metadata"]["name"] for p in lab.get("pods", selector=selector)]


def test_replica_box_shows_the_current_count(web):
    graph = web.graph(live=False)
    assert graph.workload.value == "deployment/web" and graph.replicas.value == 3
    web.scale("web", 5)
    graph.refresh()
    assert graph.replicas.value == 5
    graph.replicas.value = 7            # typed but not yet sent: a redraw leaves it alone
    graph.refresh()
    assert graph.replicas.value == 7


def test_a_refused_replica_count_leaves_the_box_at_the_workloads_count(web):
    graph = web.graph(live=False)
    graph.replicas.value = -2
    graph.scale_button.click()
    assert "not -2: nothing was scaled" in graph.status.value
    assert graph.replicas.value == 3, "the box still shows the refused count"


def test_the_status_line_speaks_of_the_last_action_only(web):
    graph = web.graph(live=False)
    graph.send_button.click()
    assert "200 from web-" in graph.status.value
    graph.advance_button.click()
    assert "200 from" not in graph.status.value and "the clock moved 5 s" in graph.status.value
    graph.send_button.click()
    graph.clear_button.click()
    assert graph.status.value == "", graph.status.value


def test_replica_box_starts_at_the_workload_count(lab):
    lab.apply({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "one"},
               "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "one"}},
                        "template": {"metadata": {"labels": {"app": "one"}},
                                     "spec": {"containers": [{"name": "c", "image": "nginx:1.27"}]}}}})
    assert lab.graph(live=False).replicas.value == 1


def test_a_failed_request_is_red(web):
    graph = web.graph(live=False)
    graph.source.value = f"pod/default/{pod_names(web)[0]}"
    graph.url.value = "http://no-such-service"
    graph.send_button.click()
    assert RED in graph.status.value
    assert "resolve" in graph.status.value.lower()


def test_a_good_request_is_not_red(web):
    graph = web.graph(live=False)
    graph.source.value = f"pod/default/{pod_names(web)[0]}"
    graph.send_button.click()
    assert RED not in graph.status.value and "200 from" in graph.status.value


def test_break_readiness_without_a_probe_says_nothing_changes(web):
    graph = web.graph(live=False)
    victim = pod_names(web)[0]
    graph.pod.value = f"default/{victim}"
    graph.break_button.click()
    assert "no readiness probe" in graph.status.value and "nothing changes" in graph.status.value
    assert RED in graph.status.value
    web.advance(10)
    assert graph.pods_by_state().get("ready", []).count(victim) == 1
    assert web.exec(victim, ["cat", "/usr/share/nginx/html/index.html"]).code == 0, "the page was removed anyway"


def test_switching_the_proxy_mode_clears_the_drawn_path(web):
    graph = web.graph(live=False)
    graph.request("http://web", source=f"pod/{pod_names(web)[0]}")
    assert 'class="trace-step"' in graph.svg
    graph.mode.value = "nftables"
    assert web.proxy_mode == "nftables"
    assert graph.steps == [] and 'class="trace-step"' not in graph.svg
    assert "cleared" in graph.status.value


def test_pod_choices_show_the_part_of_the_name_that_tells_pods_apart(web):
    graph = web.graph(live=False)
    labels = [label for label, _ in graph.pod.options]
    names = pod_names(web)
    assert labels == names, "one namespace: the label is the pod's name, without default/"
    assert graph.pod.value == f"default/{names[0]}"
    source_labels = [label for label, _ in graph.source.options]
    assert f"pod {names[0]}" in source_labels and "client (outside)" in source_labels


def test_long_pod_names_keep_their_tail():
    from labsupport.widgets.cluster_graph import pod_label
    pod = {"metadata": {"name": "frontend-payments-7c5b9d4f8d-x2kq9", "namespace": "shop"}}
    label = pod_label(pod, one_namespace=False)
    assert len(label) <= 26 and label.endswith("-x2kq9") and label.startswith("shop/")


def test_pods_by_state_reads_the_cluster_now(lab):
    from tests.conftest import WEB, ready_addresses
    lab.apply(WEB)
    lab.wait(lambda l: ready_addresses(l, "web") == 3)
    graph = lab.graph()
    try:
        graph.debounce = 600            # no background redraw: only reading fresh state can see the new pods
        lab.scale("web", 5)
        lab.wait(lambda l: ready_addresses(l, "web") == 5)
        assert len(graph.pods_by_state()["ready"]) == 5
    finally:
        graph.close()


def test_a_snapshot_keeps_its_moment(web):
    graph = web.graph(live=False)
    shot = graph.snapshot()
    web.scale("web", 5)
    web.advance(30)
    graph.refresh()
    bundle = shot._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" not in bundle
    assert bundle["text/html"].count('<g class="pod ') == 3
    assert graph.snapshot().html.count('<g class="pod ') == 5


def _server_address(lab) -> tuple[str, int]:
    config = yaml.safe_load(open(lab.kubeconfig))
    url = urllib.parse.urlparse(config["clusters"][0]["cluster"]["server"])
    return url.hostname, url.port


def _answers(address) -> bool:
    try:
        socket.create_connection(address, timeout=2).close()
        return True
    except OSError:
        return False


def test_a_lab_nobody_closes_stops_when_it_is_collected():
    lab = Lab(backend="sim", seed=0)
    address = _server_address(lab)
    assert _answers(address)
    del lab
    gc.collect()
    assert not _answers(address), "the API server of a forgotten lab still listens"


def _rects(svg: str, group: str) -> list[tuple[float, float, float, float]]:
    import re
    found = re.findall(rf'<g class="{group}[^"]*"[^>]*>(?:<title>[^<]*</title>)?<rect x="([\d.]+)" y="([\d.]+)" '
                       r'width="([\d.]+)" height="([\d.]+)"', svg)
    return [tuple(map(float, r)) for r in found]


def _inside(x: float, y: float, rect, pad: float = 0.5) -> bool:
    rx, ry, rw, rh = rect
    return rx + pad < x < rx + rw - pad and ry + pad < y < ry + rh - pad


def _traced(lab):
    from tests.conftest import WEB
    lab.apply(WEB)
    lab.apply({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "client"},
               "spec": {"containers": [{"name": "c", "image": "busybox:1.36", "command": ["sleep", "3600"]}]}})
    lab.wait(lambda l: sum(p["status"].get("phase") == "Running" for p in l.get("pods")) == 4)
    graph = lab.graph(live=False)
    graph.request("http://web", source="pod/client")
    return graph


def test_trace_numbers_and_lines_stay_off_the_pods_names(lab):
    import re
    graph = _traced(lab)
    pods = _rects(graph.svg, "pod")
    numbers = [tuple(map(float, c)) for c in re.findall(r'<circle class="trace-number" cx="([\d.]+)" cy="([\d.]+)"',
                                                         graph.svg)]
    assert numbers and len(numbers) == len(graph.steps)
    for x, y in numbers:
        assert not any(_inside(x, y, pod) for pod in pods), f"a step number at {x},{y} sits on a pod"
    for x1, y1, x2, y2 in re.findall(r'<g class="trace-step"[^>]*><line x1="([\d.]+)" y1="([\d.]+)" '
                                     r'x2="([\d.]+)" y2="([\d.]+)"', graph.svg):
        for x, y in ((float(x1), float(y1)), (float(x2), float(y2))):
            assert not any(_inside(x, y, pod) for pod in pods), "a trace line ends on a pod's name"
    labels = graph.svg.split('class="trace-labels"', 1)[1]
    assert ">client</text>" in labels and "kube-proxy ● iptables" in labels, "names are not redrawn over the path"


def test_presenter_mode_fits_three_zones(lab):
    from labsupport.widgets.cluster_graph import PRESENTER_WIDTH
    graph = _traced(lab)
    graph.set_present(True)
    width = float(re.search(r'<svg [^>]*width="([\d.]+)"', graph.svg).group(1))
    zones = _rects(graph.svg, "zone")
    assert len(zones) == 3 and width <= PRESENTER_WIDTH
    assert all(x + w <= width for x, _, w, _ in zones), "a zone falls off the right edge"
    assert "font-size=\"16.1\"" in graph.svg, "presenter type is still the larger one"
