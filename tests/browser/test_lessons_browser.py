"""Every lesson in a real browser: Run All, then the live picture still scales, deletes a pod and sends a request,
and redraws each time. Then the kernel shuts down and the lab with it."""
from __future__ import annotations

import pathlib

import pytest

from tests.browser.conftest import ARTIFACTS
from tests.browser.notebook_page import (CURRENT, LIVE, button, control, open_notebook, run_all,
                                         shut_down_kernel, wait_count)

pytestmark = pytest.mark.browser

LESSONS = sorted(p.name for p in (pathlib.Path(__file__).resolve().parents[2] / "notebooks").glob("[0-9][0-9]-*.ipynb"))
PODS = f"{LIVE} svg.cluster-graph g.pod"


def first_pod_ip(page) -> str:
    """The address of the first ready pod the live picture draws (its second line of text)."""
    return page.locator(f"{PODS}.ready").first.locator("text").nth(1).text_content()


def conntrack_on_screen(page) -> None:
    """Lesson 02 §5 shows what its text says after Run All: the open connection's ESTABLISHED row, then the same
    connection in TIME_WAIT once closed (conntrack keeps it for 120 s, as a real node does)."""
    opened = page.locator(".jp-CodeCell", has_text='lab.connect("http://web"').first.locator(".jp-OutputArea")
    closed = page.locator(".jp-CodeCell", has_text="conn.close()").first.locator(".jp-OutputArea")
    opened.scroll_into_view_if_needed()
    assert "ESTABLISHED" in opened.inner_text() and "DNAT" in opened.inner_text(), opened.inner_text()[:500]
    closed.scroll_into_view_if_needed()
    assert "TIME_WAIT" in closed.inner_text(), closed.inner_text()[:500]
    closed.screenshot(path=str(ARTIFACTS / "browser-lesson-02-conntrack.png"))


def run_cell(page, text: str) -> str:
    """Run the one code cell whose source contains `text`, as Shift+Enter does; returns its output's text."""
    index = page.evaluate(f"""() => {{
      const nb = {CURRENT};
      const i = nb.content.widgets.findIndex(c => c.model.type === 'code' && c.model.sharedModel.getSource()
                                                   .includes({text!r}));
      nb.content.widgets[i].model.outputs.clear();
      nb.content.activeCellIndex = i;
      return i;
    }}""")
    page.evaluate("window.jupyterapp.commands.execute('notebook:run-cell')")
    page.wait_for_function(f"""() => {{
      const c = {CURRENT}.content.widgets[{index}];
      return c.model.outputs.length > 0 && {CURRENT}.sessionContext.session.kernel.status === 'idle';
    }}""", timeout=60_000)
    return page.evaluate(f"""() => {CURRENT}.content.widgets[{index}].model.outputs.toJSON().map(o =>
      o.text || (o.data && (o.data['text/html'] || o.data['text/plain'])) || (o.traceback || []).join('\\n')
    ).join('\\n')""")


def delete_twice_spares_the_client(page) -> None:
    """Lesson 01: "delete pod" pressed again deletes another web pod, never the lesson's bare client, and the
    lesson's self-check, which curls from that client, still passes."""
    chosen = control(page, "pod").locator("select")
    victim = chosen.input_value()
    assert victim.startswith("web-"), victim
    button(page, "delete pod").click()
    page.wait_for_function(f"""() => {{
      const g = document.querySelector("{PODS}[data-name='{victim}']");
      return !g || g.dataset.state === 'terminating';
    }}""", timeout=30_000)
    page.wait_for_function(f"() => document.querySelector('{LIVE} .labsupport-pod select').value !== ''")
    assert chosen.input_value().startswith("web-") and chosen.input_value() != victim, chosen.input_value()
    assert page.locator(f"{PODS}[data-name='client']").get_attribute("data-state") == "ready"
    shown = run_cell(page, "lesson.self_check(")
    assert "✓ the hard-coded address no longer answers" in shown and "Traceback" not in shown, shown


@pytest.mark.parametrize("lesson", LESSONS, ids=lambda n: n[:2])
def test_after_run_all_the_picture_scales_deletes_and_sends(page, jupyterlab, lesson):
    open_notebook(page, jupyterlab, lesson)
    errors = run_all(page)
    assert not errors, f"{lesson}: cells failed: {errors}"
    if lesson.startswith("02"):
        conntrack_on_screen(page)
    live = page.locator(LIVE)
    assert live.count() == 1, f"{lesson}: {live.count()} live pictures after Run All (one is where you interact)"
    live.scroll_into_view_if_needed()
    assert page.locator(f"{LIVE} .labsupport-controls button").count() > 5, "the picture lost its controls"
    assert control(page, "pod").locator("select").input_value() != "client", "the pod choice starts on the client"

    # scale: the replica box shows the current count; one more replica appears in the picture
    replicas = control(page, "replicas").locator("input")
    before_pods = page.locator(PODS).count()
    current = int(replicas.input_value())
    replicas.fill(str(current + 1))
    button(page, "scale").click()
    wait_count(page, PODS, f"n === {before_pods + 1}")

    # delete a pod: it turns terminating
    terminating = page.locator(f"{PODS}.terminating").count()
    button(page, "delete pod").click()
    wait_count(page, f"{PODS}.terminating", f"n === {terminating + 1}")

    # send a request as the picture offers it: to the chosen Service as the chosen source reaches it (lesson 00 has
    # no Service yet: to a pod's address); its path is drawn
    url = control(page, "url").locator("input").input_value()
    names = [o.split("/", 1)[-1] for o in control(page, "service").locator("option").all_inner_texts()]
    assert url.startswith("http://") and (names or first_pod_ip(page) in url or "10.244." in url), url
    button(page, "send request").click()
    wait_count(page, f"{LIVE} svg.cluster-graph g.trace-step", "n > 0")
    if lesson.startswith("01"):
        delete_twice_spares_the_client(page)
    page.screenshot(path=str(ARTIFACTS / f"browser-lesson-{lesson[:2]}.png"), full_page=False)
    shut_down_kernel(page)
