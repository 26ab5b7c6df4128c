"""What a lesson must show after Run All: the lab still alive, every live view still open, and each snapshot
showing the moment its cell ran rather than the end of the lesson."""
from __future__ import annotations

import ast
import json
import re

#: Run in the lesson's kernel after its last cell: is the lab closed, and are its live views still open?
PROBE = """
import json as _json
from labsupport.widgets.live import LiveView as _LiveView
_views = [_v for _v in list(globals().values()) if isinstance(_v, _LiveView)]
print(_json.dumps({"closed": lab.closed, "views": len(_views), "open": sum(_v.comm is not None for _v in _views)}))
"""


def probe_result(cell) -> dict:
    """The probe's answer, read from its output."""
    text = "".join(o.get("text", "") for o in cell.outputs if o.output_type == "stream")
    return json.loads(text.strip().splitlines()[-1])


def html_of(cell) -> str:
    """Every text/html a cell shows, joined."""
    return "\n".join(o.get("data", {}).get("text/html", "") for o in cell.outputs
                     if o.output_type in ("display_data", "execute_result"))


def cell_with(nb, text: str):
    """The one code cell whose source contains `text`."""
    found = [c for c in nb.cells if c.cell_type == "code" and text in c.source]
    assert len(found) == 1, f"{len(found)} cells contain {text!r}"
    return found[0]


def check_00(nb) -> None:
    """Try it scales to five and reads the picture: five ready pods, not the three it drew before."""
    cell = cell_with(nb, "graph.pods_by_state()")
    groups = ast.literal_eval("".join(o["data"]["text/plain"] for o in cell.outputs
                                      if o.output_type == "execute_result"))
    assert len(groups.get("ready", [])) == 5, f"Try it read a stale picture: {groups}"


def check_02(nb) -> None:
    """Section 5 shows what its text says: the open connection's DNAT row, then the same row in TIME_WAIT."""
    open_html = html_of(cell_with(nb, 'conn = lab.connect("http://web", source="pod/client")'))
    rows = re.findall(r"<tr><td>[^<]*</td><td>tcp</td><td>\d+</td><td>(\w+)</td>(?:(?!</tr>).)*?<td>(DNAT [^<]*)</td></tr>",
                      open_html)
    assert [state for state, _ in rows] == ["ESTABLISHED"], f"the open connection's table shows {rows}"
    closed_html = html_of(cell_with(nb, "conn.close()"))
    after = re.findall(r"<tr><td>[^<]*</td><td>tcp</td><td>\d+</td><td>(\w+)</td>(?:(?!</tr>).)*?<td>(DNAT [^<]*)</td></tr>",
                       closed_html)
    assert after == [("TIME_WAIT", rows[0][1])], f"after close the table shows {after}"


def check_04(nb) -> None:
    """Section 2 explains thirds for three endpoints: its rules view keeps showing the three of that moment."""
    html = html_of(cell_with(nb, 'RulesView(lab, node=lab.get("pod", "client")'))
    probabilities = re.findall(r"--probability (0\.\d+)", html)
    assert probabilities and all(p.startswith(("0.3333", "0.5")) for p in probabilities), probabilities


def check_06(nb) -> None:
    """Section 1 is drawn before echo-lb exists and while two echo pods run."""
    html = html_of(cell_with(nb, "graph.show_trace(trace)"))
    assert 'data-name="echo-lb"' not in html, "section 1's picture shows echo-lb, created in section 3"
    assert len(re.findall(r'<g class="pod [a-z-]+" data-name="echo-', html)) == 2


CHECKS = {"00-start-here": check_00, "02-service-clusterip": check_02, "04-kube-proxy-modes": check_04, "06-source-ip": check_06}
