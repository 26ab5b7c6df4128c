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


def test_a_redraw_on_the_timer_thread_waits_for_one_on_the_kernels_thread(web, monkeypatch):
    """The debounced redraw (a timer thread) and the one after a cell (the kernel's thread) never draw at once: they
    would set the same dropdowns' choices and values under each other ("Invalid selection: value not found")."""
    import threading

    graph = web.graph()
    inside, overlaps = [], []
    original = type(graph)._update_choices

    def slow_update(self, objects):
        inside.append(threading.get_ident())
        if len(inside) > 1:
            overlaps.append(list(inside))
        time.sleep(0.2)                 # long enough for the other thread to come in, were it let in
        try:
            original(self, objects)
        finally:
            inside.remove(threading.get_ident())

    monkeypatch.setattr(type(graph), "_update_choices", slow_update)
    try:
        threads = [threading.Thread(target=graph.refresh) for _ in range(3)]
        for t in threads:
            t.start()
        graph.refresh()
        for t in threads:
            t.join(10)
        assert overlaps == []
    finally:
        graph.close()


def test_without_threads_the_redraw_runs_on_the_event_loop(web, monkeypatch):
    """Where no thread can start (Pyodide in a browser tab), a change is redrawn from the event loop, not lost."""
    import asyncio

    from labsupport.widgets import live

    def no_threads(*args, **kwargs):
        raise RuntimeError("can't start new thread")
    monkeypatch.setattr(live, "THREADS", False)
    monkeypatch.setattr(live.threading.Timer, "start", no_threads)
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    graph = web.graph()
    try:
        graph.refresh()
        web.delete("pod", pod_names(web)[0])
        assert "terminating" not in states(graph.svg)      # nothing redraws inside the cell itself
        loop.run_until_complete(asyncio.sleep(live.DEBOUNCE_SECONDS * 3))
        assert "terminating" in states(graph.svg)
        web.scale("web", 4)                                 # a second change is drawn too (the handle was cleared)
        loop.run_until_complete(asyncio.sleep(live.DEBOUNCE_SECONDS * 3))
        assert len(states(graph.svg)) >= 4
    finally:
        graph.close()
        asyncio.set_event_loop(None)
        loop.close()


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


def test_chart_shows_as_svg():
    """A chart shows as its SVG (in notebooks, HTML exports and nbgrader feedback), sized to fit its container: a line
    and a marker on each point per series, in the proxy mode's colour, named in the legend; feedback's cleaner keeps
    all of it."""
    from xml.etree import ElementTree
    from labsupport.grading.clean import clean_svg
    from labsupport.widgets import line_chart
    from labsupport.widgets.charts import MODE_COLORS
    from tests.widgets import drawn
    chart = line_chart([1, 2, 3], {"iptables": [1, 2, 4], "nftables latency": [1, 1, 1]}, title="t", xlabel="x",
                       ylabel="y")
    bundle = chart._repr_mimebundle_()
    svg = bundle["image/svg+xml"]
    assert svg == chart.svg() and bundle["text/plain"] == "<Chart 't'>" and "image/png" not in bundle
    root = ElementTree.fromstring(svg)
    assert root.get("viewBox") == f"0 0 {root.get('width')} {root.get('height')}"
    assert root.get("style") == "max-width:100%;height:auto"
    lines = [line.get("stroke") for line in root.iter("{http://www.w3.org/2000/svg}polyline")]
    assert lines == [MODE_COLORS["iptables"], MODE_COLORS["nftables"]]
    assert svg.count('class="marker"') == 6
    assert [entry.text for entry in drawn.texts(svg, "legend-entry")] == ["iptables", "nftables latency"]
    assert [drawn.texts(svg, cls)[0].text for cls in ("title", "xlabel", "ylabel")] == ["t", "x", "y"]
    kept = clean_svg(svg)
    assert kept.count('class="marker"') == 6 and [t.text for t in drawn.texts(kept, "legend-entry")] == \
        ["iptables", "nftables latency"]


def test_chart_ticks_are_round_numbers_in_the_language_chosen(monkeypatch):
    """Linear axes step by 1, 2, 2.5 or 5 times a power of ten, with a gridline on each tick; a log axis has a tick
    on each power of ten; all written as the language writes numbers."""
    from labsupport.widgets import bar_chart, line_chart
    from labsupport.widgets.charts import BAR_COLORS
    from tests.widgets import drawn
    monkeypatch.setenv("LABSUPPORT_LANG", "ru")
    svg = line_chart([10, 100, 250, 500], {"iptables": [335, 3205, 8005, 16005]}, title="t", xlabel="x",
                     ylabel="y").svg()
    assert [t.text for t in drawn.texts(svg, "xtick")] == ["0", "100", "200", "300", "400", "500"]
    assert [t.text for t in drawn.texts(svg, "ytick")] == ["0", "2500", "5000", "7500", "10 000", "12 500", "15 000"]
    assert svg.count('class="grid"') == 6 + 7
    svg = bar_chart({"a": 4.5e9, "b": 8.2e7, "c": 1e8}, title="t", ylabel="y", logy=True).svg()
    assert [t.text for t in drawn.texts(svg, "ytick")] == ["10 000 000", "100 000 000", "1 000 000 000",
                                                           "10 000 000 000"]
    assert svg.count('class="grid"') == 4                 # a bar chart's gridlines are level
    assert re.findall(r'<rect class="bar" [^>]*fill="([^"]+)"', svg) == list(BAR_COLORS[:3])
    monkeypatch.setenv("LABSUPPORT_LANG", "en")
    svg = line_chart([0, 1], {"a": [0.1, 0.35]}, title="t", xlabel="x", ylabel="y").svg()
    assert [t.text for t in drawn.texts(svg, "ytick")] == ["0.10", "0.15", "0.20", "0.25", "0.30", "0.35"]


def test_a_note_stands_at_the_end_of_its_series_inside_the_frame():
    from labsupport.widgets import line_chart
    from tests.widgets import drawn
    svg = line_chart([1, 2, 3], {"iptables": [1, 2, 9], "ipvs": [1, 1, 1]}, title="t", xlabel="x", ylabel="y",
                     notes={"iptables": "grows with every Service"}).svg()
    (note,) = drawn.texts(svg, "note")
    last = re.findall(r'<circle class="marker" cx="([\d.]+)" cy="([\d.]+)"', svg)[2]
    left, top, right, bottom = drawn.frame(svg)
    assert note.text == "grows with every Service" and note.span()[1] < float(last[0])
    assert left < note.span()[0] and top < note.y - note.size and note.y < bottom


def test_the_legend_keeps_off_the_lines():
    from labsupport.widgets import line_chart
    svg = line_chart([10, 100, 250, 500], {"iptables": [335, 3205, 8005, 16005], "ipvs": [40, 400, 1000, 2000],
                                           "other": [2, 3, 4, 5]}, title="t", xlabel="x", ylabel="y", logy=True).svg()
    box = re.search(r'<g class="legend"><rect x="([\d.]+)" y="([\d.]+)" width="([\d.]+)" height="([\d.]+)"', svg)
    x, y, width, height = map(float, box.groups())
    for points in re.findall(r'<polyline class="line" points="([^"]+)"', svg):
        corners = [tuple(map(float, point.split(","))) for point in points.split()]
        for (x0, y0), (x1, y1) in zip(corners, corners[1:]):
            for k in range(101):
                px, py = x0 + (x1 - x0) * k / 100, y0 + (y1 - y0) * k / 100
                assert not (x <= px <= x + width and y <= py <= y + height), (px, py)


def test_chart_texts_are_shown_as_text_never_run():
    """Titles, labels, names and values come from lessons: markup in them is escaped, and the SVG holds drawing
    elements only, with nothing that fetches or runs."""
    from xml.etree import ElementTree
    from labsupport.widgets import bar_chart, line_chart
    from tests.widgets import drawn
    title = "<script>alert(1)</script> & <b>bold</b>"
    bars = bar_chart({"<img src=x onerror=alert(1)>": 1, "a & b": 2}, title=title, ylabel="<y>", fmt="<{}>").svg()
    line = line_chart([1, 2], {"<script>": [1, 2]}, title=title, xlabel="a < b", ylabel="y",
                      notes={"<script>": "&amp;"}).svg()
    for svg in (bars, line):
        assert "<script" not in svg and "&lt;script&gt;alert(1)&lt;/script&gt; &amp; &lt;b&gt;bold&lt;/b&gt;" in svg
        elements = list(ElementTree.fromstring(svg).iter())
        assert {e.tag.split("}")[1] for e in elements} <= {"svg", "title", "g", "rect", "line", "polyline", "circle",
                                                          "text", "tspan"}
        assert not [name for e in elements for name in e.attrib
                    if name.split("}")[-1] in ("href", "src") or name.startswith("on")]
        assert drawn.texts(svg, "title")[0].text == title
    assert [t.text for t in drawn.texts(bars, "bar-name")] == ["<img src=x onerror=alert(1)>", "a & b"]
    assert [t.text for t in drawn.texts(bars, "bar-value")] == ["<1>", "<2>"]
    assert drawn.texts(line, "legend-entry")[0].text == "<script>" and drawn.texts(line, "note")[0].text == "&amp;"


def test_charts_draw_where_there_is_no_matplotlib():
    """The browser has no matplotlib: the lessons' charts and the class report's histogram draw without it."""
    import pathlib
    import subprocess
    import sys
    import textwrap
    code = textwrap.dedent("""
        import sys
        sys.modules["matplotlib"] = None            # `import matplotlib` fails from here on, as in the browser
        from labsupport.classroom.report import histogram_svg
        from labsupport.widgets import bar_chart, human_bytes, line_chart
        line = line_chart([10, 100], {"iptables": [3, 30], "nftables": [2, 2]}, title="t", xlabel="x", ylabel="y",
                          logy=True, notes={"iptables": "n"})
        bars = bar_chart({"Endpoints\\n(measured, x5)": 2.6e9, "EndpointSlice\\n(blog's 300 B x 100 x 3,000)": 9e7},
                         title="t", ylabel="y", logy=True, fmt=human_bytes)
        drawn = [line.svg(), bars.svg(), histogram_svg([1, 2, 2], 3)]
        print(all(svg.startswith("<svg") and svg.endswith("</svg>") for svg in drawn))
    """)
    root = pathlib.Path(__file__).resolve().parents[2]
    proc = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and proc.stdout.strip() == "True", proc.stdout + proc.stderr


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
