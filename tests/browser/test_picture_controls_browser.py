"""The live picture's controls in Chromium, on a lab without a `web` Service (like lesson 06): the curl field aims
at the Service there is, a negative replica count is refused on screen, a deleted pod without a preStop hook is
described as it really ends, and a name that does not resolve draws no arrow. Screenshots go to test-artifacts/."""
from __future__ import annotations

import nbformat
import pytest

from tests.browser.conftest import ARTIFACTS
from tests.browser.notebook_page import (LIVE, button, control, open_notebook, run_all, shut_down_kernel,
                                        status_line)

pytestmark = pytest.mark.browser
PODS = f"{LIVE} svg.cluster-graph g.pod"
RED, GREEN = "rgb(183, 28, 28)", "rgb(27, 94, 32)"
SETUP = '''from labsupport import Lab
lab = Lab()
lab.apply("""
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
      - {name: echo, image: "registry.k8s.io/e2e-test-images/agnhost:2.53", args: [netexec, --http-port=8080]}
---
apiVersion: v1
kind: Service
metadata: {name: echo}
spec: {selector: {app: echo}, ports: [{port: 8080}]}
""")
lab.wait(lambda l: sum(1 for p in l.get("pods") if p["status"].get("phase") == "Running") == 2)'''


@pytest.fixture(scope="module")
def picture(browser, jupyterlab):
    """A notebook with only an `echo` Service and its live picture, after Run All."""
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(SETUP), nbformat.v4.new_code_cell("lab.graph()")],
                                  metadata={"kernelspec": {"name": "python3", "display_name": "Python 3 (ipykernel)",
                                                           "language": "python"}})
    nbformat.write(nb, jupyterlab.root / "echo-only.ipynb")
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    open_notebook(page, jupyterlab, "echo-only.ipynb")
    assert not run_all(page)
    page.wait_for_function(f"document.querySelectorAll('{PODS}.ready').length === 2", timeout=60_000)
    page.locator(LIVE).scroll_into_view_if_needed()
    yield page
    shut_down_kernel(page)
    context.close()


def on_screen(page, box: dict) -> bool:
    """Whether the box is drawn whole inside the window."""
    size = page.viewport_size
    return (box is not None and box["width"] > 0 and box["height"] > 0 and box["x"] >= 0 and box["y"] >= 0
            and box["x"] + box["width"] <= size["width"] and box["y"] + box["height"] <= size["height"])


def test_curl_field_aims_at_the_service_there_is(picture):
    assert control(picture, "url").locator("input").input_value() == "http://echo:8080"
    button(picture, "send request").click()
    picture.wait_for_function(f"document.querySelectorAll('{LIVE} g.trace-step').length > 0", timeout=30_000)
    text, color, box = status_line(picture)
    picture.screenshot(path=str(ARTIFACTS / "browser-picture-echo-request.png"), full_page=False)
    assert "200 from echo-" in text and color == GREEN and on_screen(picture, box), text
    # the first number sits by the pod that sent, the last by the pod that answered
    sender = control(picture, "source").locator("select").input_value().split()[-1]   # "pod <name>"
    answerer = text.split("200 from ", 1)[1].split()[0]
    nearest = picture.evaluate(f"""() => {{
      const pods = [...document.querySelectorAll('{PODS}')].map(g => [g.dataset.name, g.querySelector('rect')
                                                                       .getBoundingClientRect()]);
      const gap = (r, x, y) => Math.hypot(Math.max(r.left - x, 0, x - r.right), Math.max(r.top - y, 0, y - r.bottom));
      return [...document.querySelectorAll('{LIVE} circle.trace-number')].map(c => {{
        const b = c.getBoundingClientRect(), x = (b.left + b.right) / 2, y = (b.top + b.bottom) / 2;
        return pods.reduce((best, p) => gap(p[1], x, y) < gap(best[1], x, y) ? p : best)[0];
      }});
    }}""")
    assert nearest[0] == sender and nearest[-1] == answerer, (nearest, sender, answerer)


def test_a_negative_replica_count_is_refused_on_screen(picture):
    box = control(picture, "replicas").locator("input")
    box.fill("-1")
    box.press("Tab")
    button(picture, "scale").click()
    picture.wait_for_function(f"document.querySelector('{LIVE} > .widget-html:last-child').innerText"
                              ".includes('replicas must be 0 or more')", timeout=30_000)
    picture.wait_for_timeout(1000)
    text, color, where = status_line(picture)
    picture.screenshot(path=str(ARTIFACTS / "browser-picture-negative-replicas.png"), full_page=False)
    assert "not -1: nothing was scaled" in text and color == RED and on_screen(picture, where)
    assert box.input_value() == "2", "the box still shows the refused count"
    assert picture.locator(f"{PODS}.ready").count() == 2 and picture.locator(f"{PODS}.terminating").count() == 0


def test_delete_pod_says_what_happens_and_moves_the_choice(picture):
    chosen = control(picture, "pod").locator("select").input_value()
    button(picture, "delete pod").click()
    picture.wait_for_function(f"document.querySelectorAll('{PODS}.terminating').length === 1", timeout=30_000)
    picture.wait_for_timeout(500)
    text, color, where = status_line(picture)
    picture.screenshot(path=str(ARTIFACTS / "browser-picture-deleted.png"), full_page=False)
    assert "no preStop hook" in text and "runs its preStop hook" not in text, text
    assert on_screen(picture, where) and where["height"] >= 10
    assert control(picture, "pod").locator("select").input_value() != chosen


def test_a_name_that_does_not_resolve_draws_no_arrow(picture):
    url = control(picture, "url").locator("input")
    url.fill("http://nope")
    url.press("Tab")
    button(picture, "send request").click()
    picture.wait_for_function(f"document.querySelector('{LIVE} svg.cluster-graph').textContent"
                              ".includes('Could not resolve host: nope')", timeout=30_000)
    picture.wait_for_timeout(1000)      # the picture redraws once more after the cell's events
    caption = picture.locator(f"{LIVE} text.trace-caption").first
    picture.evaluate(f"document.querySelector('{LIVE} text.trace-caption').scrollIntoView({{block: 'center'}})")
    picture.screenshot(path=str(ARTIFACTS / "browser-picture-no-such-name.png"), full_page=False)
    assert picture.locator(f"{LIVE} g.trace-step").count() == 0
    assert "Could not resolve host: nope" in caption.text_content()
    assert on_screen(picture, caption.bounding_box())
