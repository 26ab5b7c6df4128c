"""What a lesson must show after Run All: the lab still alive, every live view still open, and each snapshot
showing the moment its cell ran rather than the end of the lesson."""
from __future__ import annotations

import ast
import json
import re

from tests.widgets import drawn

#: Run in the lesson's kernel after its last cell: is the lab closed, and are its live views still open? And what
#: each live picture offers a student who starts there: the pod "delete pod" would delete (a bare pod, such as the
#: lesson's client, or one a workload owns) and what the request the picture suggests answers.
PROBE = """
import json as _json
from labsupport.widgets.live import LiveView as _LiveView
from labsupport.widgets.cluster_graph import ClusterGraph as _ClusterGraph
_views = list({id(_v): _v for _v in list(globals().values()) if isinstance(_v, _LiveView)}.values())
_pictures = []
for _g in _views:
    if isinstance(_g, _ClusterGraph) and _g.comm is not None and not lab.closed:
        _ns, _, _name = (_g.pod.value or "/").partition("/")
        _owned = bool(_g.pod.value) and bool(lab.get("pod", _name, namespace=_ns)["metadata"].get("ownerReferences"))
        _offered = (_g.pod.value, _g.source.value, _g.url.value)
        _g.send_button.click()
        _pictures.append({"pod": _offered[0], "owned": _owned, "source": _offered[1], "url": _offered[2],
                          "answer": _g.status.value, "ok": "#1b5e20" in _g.status.value})
_silent = []
for _p in ([] if lab.closed else lab.get("pods")):
    if _p["status"].get("phase") != "Running" or _p["metadata"].get("deletionTimestamp"):
        continue
    for _c in _p["spec"]["containers"]:
        for _port in _c.get("ports") or []:
            if _port.get("protocol", "TCP") == "TCP" and not lab.curl(
                    f"http://{_p['status']['podIP']}:{_port['containerPort']}/",
                    source=f"node/{_p['spec']['nodeName']}").ok:
                _silent.append(f"{_p['metadata']['name']}:{_port['containerPort']}")
print(_json.dumps({"closed": lab.closed, "views": len(_views), "open": sum(_v.comm is not None for _v in _views),
                   "pictures": _pictures, "silent_ports": _silent}))
"""


def probe_result(cell) -> dict:
    """The probe's answer, read from its output."""
    text = "".join(o.get("text", "") for o in cell.outputs if o.output_type == "stream")
    return json.loads(text.strip().splitlines()[-1])


def check_pictures(name: str, alive: dict) -> None:
    """Each live picture starts on a pod a workload owns (not the lesson's bare client, which would never come back
    once deleted), and the request it offers first gets an answer."""
    for picture in alive.get("pictures", []):
        assert picture["owned"], f"{name}: the picture's pod choice starts on {picture['pod']}, a bare pod"
        assert picture["ok"], (f"{name}: the picture's first request ({picture['url']} from {picture['source']}) "
                               f"fails: {picture['answer']}")


def check_ports(name: str, alive: dict) -> None:
    """A manifest is true to its image: every container port a running pod declares answers."""
    silent = alive.get("silent_ports")
    assert not silent, f"{name}: declared container ports nothing listens on: {silent}"


def html_of(cell) -> str:
    """Every text/html a cell shows, joined."""
    return "\n".join(o.get("data", {}).get("text/html", "") for o in cell.outputs
                     if o.output_type in ("display_data", "execute_result"))


def cell_with(nb, text: str):
    """The one code cell whose source contains `text`."""
    found = [c for c in nb.cells if c.cell_type == "code" and text in c.source]
    assert len(found) == 1, f"{len(found)} cells contain {text!r}"
    return found[0]


def chart_of(cell) -> str:
    """The SVG of the one chart a cell shows (its image/svg+xml output)."""
    charts = ["".join(o.get("data", {}).get("image/svg+xml", "")) for o in cell.outputs
              if o.output_type in ("display_data", "execute_result") and "image/svg+xml" in o.get("data", {})]
    assert len(charts) == 1, f"the cell shows {len(charts)} charts: {[o.get('data', {}).keys() for o in cell.outputs]}"
    return charts[0]


def check_00(nb) -> None:
    """Try it scales to five and reads the picture: five ready pods, not the three it drew before."""
    cell = cell_with(nb, "graph.pods_by_state()")
    groups = ast.literal_eval("".join(o["data"]["text/plain"] for o in cell.outputs
                                      if o.output_type == "execute_result"))
    assert len(groups.get("ready", [])) == 5, f"Try it read a stale picture: {groups}"


def text_of(cell) -> str:
    """Every text a cell shows (printed, or its plain-text result), joined."""
    return "\n".join(o.get("text", "") or o.get("data", {}).get("text/plain", "") for o in cell.outputs)


def check_02(nb) -> None:
    """Section 1: the NXDOMAIN lines busybox prints under the short name's answer are explained, each by its name.
    Section 5 shows what its text says: the open connection's DNAT row, then the same row in TIME_WAIT, and no
    other row once Try it and the picture's requests (the probe's) have made more connections."""
    shown = text_of(cell_with(nb, "lesson.search_walk(shown)"))
    missed = re.findall(r"server can't find (\S+): NXDOMAIN", shown)
    assert missed, shown
    note = shown.split(missed[-1] + ": NXDOMAIN")[-1]
    assert "web.default.svc.cluster.local" in note and all(name in note for name in missed), shown
    open_html = html_of(cell_with(nb, 'conn = lab.connect("http://web", source="pod/client")'))
    rows = re.findall(r"<tr><td>[^<]*</td><td>tcp</td><td>\d+</td><td>(\w+)</td>(?:(?!</tr>).)*?<td>(DNAT [^<]*)</td></tr>",
                      open_html)
    assert [state for state, _ in rows] == ["ESTABLISHED"], f"the open connection's table shows {rows}"
    closed_html = html_of(cell_with(nb, "conn.close()"))
    after = re.findall(r"<tr><td>[^<]*</td><td>tcp</td><td>\d+</td><td>(\w+)</td>(?:(?!</tr>).)*?<td>(DNAT [^<]*)</td></tr>",
                       closed_html)
    assert after == [("TIME_WAIT", rows[0][1])], f"after close the table shows {after}"


def check_03(nb) -> None:
    """Section 5 says how full the 1,000 endpoints' slices are, and why there are more than ten of at most 100; its
    chart draws the four bars, each named and with its value."""
    shown = text_of(cell_with(nb, 'lesson.slice_fill(big, "big")'))
    sizes = [int(n) for n in re.search(r"\((\d+(?:, \d+)+)\)", shown).group(1).split(", ")]
    assert sum(sizes) == 1000 and max(sizes) <= 100, shown
    assert len(sizes) == 10 or "EndpointSlice" in shown, f"{len(sizes)} slices, and no word why: {shown}"
    chart = chart_of(cell_with(nb, "bar_chart({"))
    assert len(drawn.texts(chart, "bar-name")) == 4 and len(drawn.texts(chart, "bar-value")) == 4, chart


def check_04(nb) -> None:
    """Section 2 explains thirds for three endpoints: its rules view keeps showing the three of that moment. Try it
    asks how many KUBE-SEP chains serve five endpoints: it shows five jumps, the last without a probability. Section 5's
    two charts draw a line per mode, a marker on each number of Services."""
    try_it = text_of(cell_with(nb, '"-j KUBE-SEP-" in line'))
    jumps = re.findall(r"-j KUBE-SEP-\w+", try_it)
    assert len(jumps) == 5, jumps
    probabilities = re.findall(r"--probability ([0-9.]+) -j KUBE-SEP", try_it)
    assert [round(float(p), 2) for p in probabilities] == [0.2, 0.25, 0.33, 0.5], probabilities
    html = html_of(cell_with(nb, 'RulesView(lab, node=lab.get("pod", "client")'))
    probabilities = re.findall(r"--probability (0\.\d+)", html)
    assert probabilities and all(p.startswith(("0.3333", "0.5")) for p in probabilities), probabilities
    for source in ("line_chart(sizes, counts", "line_chart(sizes, cost"):
        chart = chart_of(cell_with(nb, source))
        assert chart.count('<g class="series">') == 3 and chart.count('class="marker"') == 3 * 4, chart


def check_06(nb) -> None:
    """Section 1 is drawn before echo-lb exists and while two echo pods run."""
    html = html_of(cell_with(nb, "graph.show_trace(trace)"))
    assert 'data-name="echo-lb"' not in html, "section 1's picture shows echo-lb, created in section 3"
    assert len(re.findall(r'<g class="pod [a-z-]+" data-name="echo-', html)) == 2


def check_08(nb) -> None:
    """Section 4 speaks of "connection refused" where curl prints "Couldn't connect to server": the output says that
    curl's words are that refusal."""
    shown = text_of(cell_with(nb, "lesson.why_failed(refused)   #"))
    assert "curl: (7)" in shown and "Couldn't connect to server" in shown, shown
    assert "connection refused" in shown.split("Couldn't connect to server", 1)[1], shown


def _bytes(number: str, unit: str) -> float:
    """A size as the English (1,234.5 kB) or the Russian edition (1 234,5 кБ) prints it, in bytes."""
    if unit.endswith("Б"):
        number = number.replace("\u00a0", "").replace(" ", "").replace(",", ".")
    else:
        number = number.replace(",", "")
    return float(number) * {"B": 1, "kB": 1e3, "MB": 1e6, "GB": 1e9, "Б": 1, "кБ": 1e3, "МБ": 1e6, "ГБ": 1e9}[unit]


def check_09(nb) -> None:
    """Q1's evidence shows the slice write larger at 4 pods and says why the slices still win, with the sizes at
    1,000 pods; Q3's shows each node's answer whole (curl's error is not cut at 60 characters)."""
    shown = text_of(cell_with(nb, 'lesson.write_sizes(lab, meter, "web")'))
    row = re.search(r"^1000\s+([\d.,]+) (\w?Б|\w?B)\s+([\d.,]+) (\w?Б|\w?B)", shown, re.M)
    assert row and _bytes(*row.group(1, 2)) > 5 * _bytes(*row.group(3, 4)), shown
    assert len(shown.splitlines()[-1]) > 80, f"no word on why the slice is the larger write at 4 pods: {shown}"
    answers = text_of(cell_with(nb, "lesson.answers(lab,"))
    dropped = re.findall(r"curl: \(28\)[^\n]*", answers)
    assert len(dropped) == 2 and all(line.rstrip().endswith("Timeout was reached") for line in dropped), answers
    assert "172.18.0.100" in answers, answers


def printed(nb) -> list[str]:
    """Every line a lesson printed or a cell returned as text."""
    texts = [o.get("text", "") if o.output_type == "stream" else o.get("data", {}).get("text/plain", "")
             for c in nb.cells if c.cell_type == "code" for o in c.outputs
             if o.output_type in ("stream", "execute_result")]
    return [line for text in texts for line in text.splitlines()]


def check_russian_output(nb) -> None:
    """What a Russian lesson prints writes as its prose does: да/нет, not Python's True/False, in a Russian line;
    sizes in Б/кБ/МБ/ГБ with a decimal comma, not «245.3 MB»."""
    wrong = [line for line in printed(nb)
             if (re.search(r"[А-Яа-яЁё]", line) and re.search(r"\b(True|False)\b", line))
             or re.search(r"\d(\.\d+)? (B|kB|MB|GB|TB)\b|\d\.\d+ [кМГТ]?Б\b", line)]
    assert not wrong, f"printed as English writes it: {wrong}"


CHECKS = {"00-start-here": check_00, "02-service-clusterip": check_02, "03-endpointslices": check_03,
          "04-kube-proxy-modes": check_04, "06-source-ip": check_06, "08-pitfalls": check_08,
          "09-practice": check_09}
