"""What the lessons' views say matches what the cluster does: the picture's controls and notes, its rule counts
against RulesView's, the lesson tables in both languages, client addresses explained, notes shown as text."""
from __future__ import annotations

import math
import re

import pytest

from labsupport.widgets import RulesView, lesson
from tests.conftest import ready_addresses

ECHO = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: echo}
spec:
  replicas: 2
  selector: {matchLabels: {app: echo}}
  template:
    metadata: {labels: {app: echo}}
    spec:
      containers:
      - name: echo
        image: registry.k8s.io/e2e-test-images/agnhost:2.53
        args: [netexec, --http-port=8080]
---
apiVersion: v1
kind: Service
metadata: {name: echo}
spec: {selector: {app: echo}, ports: [{port: 8080}]}
"""


# --- the picture's controls ----------------------------------------------------------------------------------

def test_curl_field_aims_at_the_chosen_service(lab):
    lab.apply(ECHO)
    lab.wait(lambda l: ready_addresses(l, "echo") == 2)
    graph = lab.graph(live=False)
    assert graph.url.value == "http://echo:8080"
    graph.send_button.click()
    assert "Could not resolve host" not in graph.status.value
    assert "200 from echo-" in graph.status.value


def test_curl_field_reaches_the_service_the_way_the_source_can(web):
    web.apply({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web-np"},
               "spec": {"type": "NodePort", "selector": {"app": "web"}, "ports": [{"port": 80, "nodePort": 30080}]}})
    graph = web.graph(live=False)
    graph.service.value = "default/web-np"
    svc = web.get("svc", "web-np")
    graph.source.value = "node/lab-worker2"
    assert graph.url.value == f"http://{svc['spec']['clusterIP']}"     # a node does not ask the cluster's DNS
    graph.source.value = "client"
    worker = next(n["ip"] for n in lesson.nodes(web).rows if n["role"] == "worker")
    assert graph.url.value == f"http://{worker}:30080"
    for source in ("node/lab-worker2", "client"):
        graph.source.value = source
        graph.send_button.click()
        assert "200 from web-" in graph.status.value, (source, graph.status.value)


def test_without_a_service_the_curl_field_aims_at_a_running_pod(lab):
    from tests.conftest import WEB
    lab.apply(WEB.split("---")[0])
    lab.wait(lambda l: lesson.running(l, "app=web") == 3)
    graph = lab.graph(live=False)
    assert graph.url.value.startswith("http://10.244.")
    graph.send_button.click()
    assert "200 from web-" in graph.status.value and 'class="trace-step"' in graph.svg
    graph.url.value = ""
    graph.send_button.click()
    assert "type the URL to send the request to" in graph.status.value


def test_a_url_the_student_typed_stays(web):
    graph = web.graph(live=False)
    assert graph.url.value == "http://web"
    graph.url.value = "http://web/index.html"
    graph.refresh()
    assert graph.url.value == "http://web/index.html"


def test_after_scaling_down_the_pod_choice_is_a_running_pod(web):
    graph = web.graph(live=False)
    graph.workload.value = "deployment/web"
    # scaling to 1 keeps one pod: choose each of the others in turn, and the choice must move to a running pod
    web.scale("web", 1)
    keeps = [p["metadata"]["name"] for p in web.get("pods", selector="app=web")
             if not p["metadata"].get("deletionTimestamp")]
    web.scale("web", 3)
    web.wait(lambda l: ready_addresses(l, "web") == 3 and len(l.get("pods", selector="app=web")) == 3)
    graph.refresh()
    victim = next(v for _, v in graph.pod.options if v.split("/")[1] not in keeps and
                  not web.get("pod", v.split("/")[1])["metadata"].get("deletionTimestamp"))
    graph.pod.value = victim
    graph.replicas.value = 1
    graph.scale_button.click()
    running = [p["metadata"]["name"] for p in web.get("pods", selector="app=web")
               if not p["metadata"].get("deletionTimestamp")]
    assert len(running) == 1 and victim.split("/")[1] not in running
    assert graph.pod.value == f"default/{running[0]}"


def test_a_deleted_pod_does_not_stay_chosen(web):
    graph = web.graph(live=False)
    victim = graph.pod.value.split("/")[1]
    graph.delete_pod(victim)
    assert web.get("pod", victim)["metadata"].get("deletionTimestamp")
    assert graph.pod.value != f"default/{victim}"


CLIENT_POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "client"},
              "spec": {"containers": [{"name": "client", "image": "busybox:1.36", "command": ["sleep", "3600"]}]}}


def test_delete_pod_stays_within_the_workload_and_spares_the_lessons_client(web):
    web.apply(CLIENT_POD)      # a bare pod, as lessons 01-04 make it; its name sorts before web's pods
    web.wait(lambda l: lesson.running(l, name="client") == 1)
    graph = web.graph(live=False)
    assert graph.pod.value.startswith("default/web-"), "the first choice is a pod of the workload, not the client"
    for _ in range(3):
        graph.delete_button.click()
        assert graph.pod.value.startswith("default/web-"), graph.pod.value
        chosen = web.get("pod", graph.pod.value.split("/")[1])
        assert not chosen["metadata"].get("deletionTimestamp")
    web.advance(5)
    graph.refresh()
    assert lesson.running(web, name="client") == 1 and graph.pod.value.startswith("default/web-")


def test_a_deleted_statefulset_pod_hands_the_choice_to_its_sibling(lab):
    from tests.conftest import DB_STATEFULSET
    lab.apply(DB_STATEFULSET)
    lab.apply(CLIENT_POD | {"metadata": {"name": "a-client"}})
    lab.wait(lambda l: lesson.running(l, "app=db") == 3 and lesson.running(l, name="a-client") == 1)
    graph = lab.graph(live=False)
    assert graph.pod.value == "default/db-0"
    graph.delete_button.click()
    assert graph.pod.value in ("default/db-1", "default/db-2")
    lab.advance(40)             # db-0 is gone, then made again under its own name
    graph.refresh()
    assert graph.pod.value.startswith("default/db-")


def test_the_first_service_chosen_is_one_kube_proxy_serves(web):
    from tests.conftest import DB_STATEFULSET
    web.apply(DB_STATEFULSET)       # headless "db" sorts before "web": no virtual IP, no rule to draw
    web.wait(lambda l: lesson.running(l, "app=db") == 3)
    graph = web.graph(live=False)
    assert graph.service.value == "default/web" and graph.url.value == "http://web"
    graph.send_button.click()
    assert "200 from web-" in graph.status.value
    graph.service.value = "default/db"          # chosen on purpose, it stays
    graph.refresh()
    assert graph.service.value == "default/db"


def test_a_terminating_pod_chosen_on_purpose_stays_chosen(web):
    graph = web.graph(live=False)
    victim = graph.pod.value
    web.delete("pod", victim.split("/")[1])
    graph.refresh()
    graph.pod.value = victim        # the student picks the terminating pod again
    graph.refresh()
    assert graph.pod.value == victim


def test_a_negative_replica_count_is_refused_and_nothing_is_deleted(web):
    graph = web.graph(live=False)
    graph.workload.value = "deployment/web"
    graph.replicas.value = -1
    graph.scale_button.click()
    assert "replicas must be 0 or more, not -1: nothing was scaled" in graph.status.value
    assert "#b71c1c" in graph.status.value
    assert not [p for p in web.get("pods", selector="app=web") if p["metadata"].get("deletionTimestamp")]
    assert web.get("deploy", "web")["spec"]["replicas"] == 3


# --- what the picture says happened --------------------------------------------------------------------------

def test_delete_note_speaks_of_a_prestop_hook_only_when_the_pod_has_one(web):
    from labsupport.widgets.cluster_graph import deletion_note
    graph = web.graph(live=False)
    pod = web.get("pods", selector="app=web")[0]
    graph.delete_pod(pod["metadata"]["name"])
    assert "no preStop hook" in graph.status.value and "runs its preStop hook" not in graph.status.value
    hooked = dict(pod, spec=dict(pod["spec"], terminationGracePeriodSeconds=45, containers=[
        dict(pod["spec"]["containers"][0], lifecycle={"preStop": {"exec": {"command": ["sleep", "20"]}}})]))
    assert "runs its preStop hook" in deletion_note(hooked) and "45 s" in deletion_note(hooked)


def test_a_name_that_does_not_resolve_draws_no_arrow(web):
    graph = web.graph(live=False)
    for source in ("client", "node/lab-worker", f"pod/{web.get('pods', selector='app=web')[0]['metadata']['name']}"):
        graph.request("http://nope", source=source)
        assert 'class="trace-step"' not in graph.svg, source
        assert "Could not resolve host: nope" in graph.svg


def test_ipvs_hop_says_ipvs_rewrites_the_destination(web):
    web.set_proxy_mode("ipvs")
    pod = web.get("pods", selector="app=web")[0]["metadata"]["name"]
    trace = web.trace("http://web", source=f"pod/{pod}")
    first = trace.hops[0].what
    assert "IPVS" in first and "kube-ipvs0" in first
    web.set_proxy_mode("iptables")
    assert "IPVS" not in web.trace("http://web", source=f"pod/{pod}").hops[0].what


def test_rules_view_lights_no_rule_of_a_mode_the_trace_did_not_go_through(web):
    pod = web.get("pods", selector="app=web")[1]
    trace = web.trace("http://web", source=f"pod/{pod['metadata']['name']}")
    view = RulesView(web, pod["spec"]["nodeName"], trace=trace, live=False)
    assert view.html.count('class="rule matched"') > 0
    web.set_proxy_mode("ipvs")
    view.refresh()
    assert view.html.count('class="rule matched"') == 0
    assert "went through the iptables rules: trace it again" in view.html
    view.highlight(web.trace("http://web", source=f"pod/{pod['metadata']['name']}"))
    assert "TCP  " in "".join(re.findall(r'<div class="rule matched"[^>]*>([^<]*)', view.html))


# --- one definition of a rule ----------------------------------------------------------------------------------

@pytest.mark.parametrize("mode", ["iptables", "ipvs", "nftables"])
def test_node_box_and_rules_view_count_the_same_rules(web, mode):
    web.set_proxy_mode(mode)
    graph = web.graph(live=False)
    for node in ("lab-control-plane", "lab-worker", "lab-worker2"):
        box = re.search(rf'<g class="node" data-name="{node}">.*?</g></g>', graph.svg).group(0)
        in_picture = int(re.search(r"· (\d+) rules", box).group(1))
        assert re.search(r"<title>rules: ", box), "the picture says what a rule is"
        view = RulesView(web, node, live=False)
        summary = re.search(r"(\d+) rules in (\d+) lines", view.html)
        assert int(summary.group(1)) == in_picture, (node, view.html[:300])
        assert "rules-definition" in view.html
    if mode == "nftables":
        assert "differs from node to node" in graph.svg


# --- lesson tables in both languages -----------------------------------------------------------------------------

def test_lesson_tables_translate_their_headings_and_keep_their_keys(web, monkeypatch):
    english = lesson.nodes(web)._repr_html_()
    assert "<th>name</th><th>role</th><th>zone</th><th>IP</th><th>pod CIDR</th>" in english
    monkeypatch.setenv("LABSUPPORT_LANG", "ru")
    tables = {"nodes": lesson.nodes(web), "pods": lesson.pods(web, "app=web"), "endpoints": lesson.endpoints(web, "web")}
    assert "<th>имя</th><th>роль</th><th>зона</th><th>IP</th><th>pod CIDR</th>" in tables["nodes"]._repr_html_()
    assert "<th>имя</th><th>состояние</th><th>IP</th><th>нода</th>" in tables["pods"]._repr_html_()
    assert ("<th>EndpointSlice</th><th>адрес</th><th>ready</th><th>serving</th><th>terminating</th><th>нода</th>"
            "<th>зона</th><th>под</th>") in tables["endpoints"]._repr_html_()
    assert repr(tables["pods"]).splitlines()[0].split() == ["ИМЯ", "СОСТОЯНИЕ", "IP", "НОДА"]
    # the Lab card follows the same rule
    card = web._repr_html_()
    assert "<th>нода</th><th>IP</th><th>зона</th><th>pod CIDR</th>" in card
    assert tables["nodes"].rows[1]["role"] == "worker" and "ip" in tables["pods"].rows[0]


# --- notes shown as text ------------------------------------------------------------------------------------------

def test_self_check_shows_its_note_without_quotes():
    note = lesson.self_check(True, "web has 3 endpoints", "hint")
    assert repr(note) == "✓ web has 3 endpoints" and note == "✓ web has 3 endpoints"
    from IPython.lib.pretty import pretty
    assert pretty(note) == "✓ web has 3 endpoints"


def test_dns_records_in_a_table_show_no_tabs_or_brackets():
    table = lesson.Table([{"query": "web A", "answer": ["web.default.svc.cluster.local.\t5\tIN\tA\t10.96.0.7",
                                                         "web.default.svc.cluster.local.\t5\tIN\tA\t10.96.0.8"]}])
    shown = table._repr_html_() + repr(table)
    assert "\\t" not in shown and "\t" not in shown and "[" not in shown and "'" not in shown
    assert "<td>web.default.svc.cluster.local. 5 IN A 10.96.0.7<br>web.default.svc.cluster.local. 5 IN A 10.96.0.8</td>" \
        in table._repr_html_()


def test_bar_values_stay_inside_the_frame():
    from labsupport.widgets import bar_chart
    from tests.widgets import drawn
    for logy in (True, False):
        svg = bar_chart({"a": 3.9e9, "b": 7.5e7, "c": 4.5e9, "d": 9e7}, title="t", ylabel="bytes", logy=logy,
                        fmt="{:.2g}").svg()
        _, top, _, _ = drawn.frame(svg)
        labels = drawn.texts(svg, "bar-value")
        assert len(labels) == 4
        for label in labels:      # a whole font size above the baseline: higher than any letter reaches
            assert label.y - label.size > top + 2, (logy, label.text)


@pytest.mark.parametrize("edition", ["", "ru/"])
def test_the_names_under_lesson_03s_bars_do_not_run_into_each_other(edition):
    """The bar chart of lesson 03 §5, with the names the lesson gives its bars in each edition."""
    import ast
    import json
    import pathlib
    from labsupport.widgets import bar_chart
    from tests.widgets import drawn
    path = pathlib.Path(__file__).resolve().parents[2] / "notebooks" / f"{edition}03-endpointslices.ipynb"
    sources = ["".join(c["source"]) for c in json.loads(path.read_text())["cells"]]
    (cell,) = [source for source in sources if "bar_chart({" in source]
    names = [ast.literal_eval(name) for name in re.findall(r'("[^"]*\\n[^"]*")\s*:', cell.split("bar_chart(", 1)[1])]
    assert len(names) == 4, names
    svg = bar_chart({name: 10.0 ** (i + 6) for i, name in enumerate(names)}, title="t", ylabel="bytes",
                    logy=True).svg()
    labels = drawn.texts(svg, "bar-name")
    assert [" ".join(label.text.split()) for label in labels] == [" ".join(name.split()) for name in names]
    spans = [label.span() for label in labels]
    assert all(left[1] < right[0] for left, right in zip(spans, spans[1:])), spans


# --- client addresses explained -----------------------------------------------------------------------------------

def test_a_masqueraded_client_address_says_it_is_the_nodes_pod_network_gateway(lab, monkeypatch):
    lab.apply(ECHO.replace("{port: 8080}", "{port: 8080, nodePort: 30080}").replace(
        "spec: {selector", "spec: {type: NodePort, selector"))
    lab.wait(lambda l: ready_addresses(l, "echo") == 2)
    node_ip = next(n["ip"] for n in lesson.nodes(lab).rows if n["name"] == "lab-worker")
    seen = lesson.spread(lab, f"http://{node_ip}:30080/clientip", requests=30, by="client_ip")
    gateways = [a for a in seen if a.startswith("10.244.") and a.endswith(".1")]
    assert gateways, dict(seen)
    for address in seen:
        assert seen.owners.get(address), f"{address} is shown without saying what it is"
    assert "pod network" in repr(seen) and "gateway" in seen._repr_html_()
    monkeypatch.setenv("LABSUPPORT_LANG", "ru")
    assert "шлюз подов" in lesson.address_owners(lab)[gateways[0]]


# --- where the traced path is drawn --------------------------------------------------------------------------------

def _steps(svg: str) -> list[tuple[list[tuple[float, float]], tuple[float, float]]]:
    """(the points of its line, its number's centre) for every drawn trace step."""
    found = []
    for group in re.findall(r'<g class="trace-step".*?</g>', svg):
        line = re.search(r'points="([^"]+)"', group)
        if line:
            points = [tuple(map(float, p.split(","))) for p in line.group(1).split()]
        else:
            x1, y1, x2, y2 = (float(re.search(rf' {k}="([\d.-]+)"', group).group(1)) for k in ("x1", "y1", "x2", "y2"))
            points = [(x1, y1), (x2, y2)]
        centre = re.search(r'class="trace-number" cx="([\d.-]+)" cy="([\d.-]+)"', group)
        found.append((points, (float(centre.group(1)), float(centre.group(2)))))
    return found


def _crosses(p1, p2, box) -> bool:
    """Whether the axis-parallel or straight segment p1-p2 passes through the box (sampled every pixel)."""
    n = int(max(abs(p2[0] - p1[0]), abs(p2[1] - p1[1]))) + 1
    return any(box.x < p1[0] + (p2[0] - p1[0]) * k / n < box.x + box.w and
               box.y < p1[1] + (p2[1] - p1[1]) * k / n < box.y + box.h for k in range(n + 1))


def test_step_numbers_sit_by_their_own_pods_and_legs_between_nodes_cross_no_pod(web):
    web.scale("web", 5)
    web.wait(lambda l: ready_addresses(l, "web") == 5)
    graph = web.graph(live=False)
    boxes = graph.layout_engine.place(graph.model)
    pods = {n: boxes[n] for n, d in graph.model.nodes(data=True) if d["kind"] == "pod"}
    checked = 0
    for pod in list(pods):
        trace = graph.request("http://web", source=f"pod/{pod.split('/', 1)[1]}")
        drawn = _steps(graph.svg)
        assert len(drawn) == len(graph.steps)
        for step, (points, (cx, cy)) in zip(graph.steps, drawn):
            own = [e for e in (step.start, step.end) if e in pods]
            if own:
                def distance(box):
                    return math.hypot(max(box.x - cx, 0, cx - box.x - box.w), max(box.y - cy, 0, cy - box.y - box.h))
                nearest = min(pods, key=lambda p: distance(pods[p]))
                assert nearest in own, (trace.result.pod, step.start, step.end, nearest)
                checked += 1
            else:
                for p1, p2 in zip(points, points[1:]):
                    assert not any(_crosses(p1, p2, box) for box in pods.values()), (step.start, step.end)
    assert checked >= 2 * len(pods)


@pytest.mark.parametrize("present", [False, True])
def test_an_outside_requests_first_number_sits_by_the_node_it_enters(web, present):
    """From the client outside to each node's NodePort: step 1 runs from the client over the zones down to that
    node; its number is nearer that node than any other (not over a node the packet never entered)."""
    web.apply({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web-np"},
               "spec": {"type": "NodePort", "selector": {"app": "web"}, "ports": [{"port": 80, "nodePort": 30080}]}})
    graph = web.graph(live=False, present=present)
    for node in lesson.nodes(web).rows:
        graph.request(f"http://{node['ip']}:30080", source="client")
        boxes = graph.layout_engine.place(graph.model)
        nodes = {n: boxes[n] for n, d in graph.model.nodes(data=True) if d["kind"] == "node"}
        (points, (cx, cy)), *_ = _steps(graph.svg)
        assert graph.steps[0].start == "client" and graph.steps[0].end == f"node:{node['name']}"

        def distance(box):
            return math.hypot(max(box.x - cx, 0, cx - box.x - box.w), max(box.y - cy, 0, cy - box.y - box.h))
        nearest = min(nodes, key=lambda n: distance(nodes[n]))
        assert nearest == f"node:{node['name']}", (node["name"], nearest, (cx, cy))


def test_the_pictures_status_line_says_what_the_client_address_is(web):
    graph = web.graph(live=False)
    pod = web.get("pods", selector="app=web")[0]["metadata"]["name"]
    graph.source.value = f"pod/default/{pod}"
    graph.url.value = "http://web"
    graph.send_button.click()
    assert "client IP seen: 10.244." in graph.status.value
    assert re.search(r"client IP seen: [\d.]+\) — (pod |node )", graph.status.value), graph.status.value
