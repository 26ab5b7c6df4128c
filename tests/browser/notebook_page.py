"""Driving a notebook in JupyterLab from Playwright: open, Run All, wait, shut the kernel down, find the picture."""
from __future__ import annotations

CURRENT = "window.jupyterapp.shell.currentWidget"
KERNEL_READY = (f"window.jupyterapp && {CURRENT} && {CURRENT}.sessionContext && {CURRENT}.sessionContext.session"
                f" && {CURRENT}.sessionContext.session.kernel"
                f" && {CURRENT}.sessionContext.session.kernel.status === 'idle'")
ALL_RAN = f"""() => {{
  const nb = {CURRENT};
  if (!nb || !nb.content || !nb.sessionContext.session || !nb.sessionContext.session.kernel) return false;
  if (nb.sessionContext.session.kernel.status !== 'idle') return false;
  return nb.content.widgets.every(c => c.model.type !== 'code' || c.model.executionCount !== null);
}}"""
ERRORS = f"""() => {{
  const nb = {CURRENT};
  const found = [];
  nb.content.widgets.forEach((c, i) => {{
    if (c.model.type !== 'code') return;
    for (const o of c.model.outputs.toJSON()) if (o.output_type === 'error') found.push(i + ': ' + o.ename + ': ' + o.evalue);
  }});
  return found;
}}"""
LIVE = ".labsupport-live-graph"


def open_notebook(page, server, name: str) -> None:
    """Open a notebook and wait until its kernel is idle."""
    page.goto(server.url(name), timeout=90_000)
    page.wait_for_function(KERNEL_READY, timeout=90_000)
    page.wait_for_timeout(500)


def run_all(page, timeout_ms: int = 240_000) -> list[str]:
    """Run All Cells and wait until every code cell ran; returns the errors the cells showed."""
    page.evaluate("window.jupyterapp.commands.execute('notebook:run-all-cells')")
    page.wait_for_timeout(1000)
    page.wait_for_function(ALL_RAN, timeout=timeout_ms)
    return page.evaluate(ERRORS)


def shut_down_kernel(page) -> None:
    """Shut the notebook's kernel down, as Kernel ▸ Shut Down Kernel does."""
    page.evaluate(f"{CURRENT}.sessionContext.shutdown()")


def live_pods(page, state: str | None = None):
    """The pods the live picture draws (optionally only those in one state)."""
    return page.locator(f"{LIVE} svg.cluster-graph g.pod" + (f".{state}" if state else ""))


def count(page, selector: str) -> int:
    return page.evaluate(f"document.querySelectorAll({selector!r}).length")


def wait_count(page, selector: str, predicate: str, timeout_ms: int = 30_000) -> None:
    """Wait until `document.querySelectorAll(selector).length` satisfies the JS expression `predicate` (in n)."""
    page.wait_for_function(f"(n => {predicate})(document.querySelectorAll({selector!r}).length)",
                           timeout=timeout_ms)


def control(page, name: str):
    """A live picture's control by name: workload, replicas, pod, mode, service, policy, source, url."""
    return page.locator(f"{LIVE} .labsupport-{name}").first


def button(page, text: str):
    return page.locator(f"{LIVE} button", has_text=text).first


def status_html(page) -> str:
    return page.locator(f"{LIVE} > .widget-html").last.inner_html()


#: The picture's status line (the last span of its HTML output).
STATUS_LINE = f"{LIVE} > .widget-html span"
#: Reads the status line in one step in the page: a redraw replaces the span, so a handle taken before it (scroll,
#: then read) can find it gone from the document.
_READ_STATUS_LINE = """selector => {
    const spans = document.querySelectorAll(selector);
    const span = spans[spans.length - 1];
    span.scrollIntoView({block: "nearest"});
    const r = span.getBoundingClientRect();
    return [span.innerText, getComputedStyle(span).color, {x: r.x, y: r.y, width: r.width, height: r.height}];
}"""


def status_line(page) -> tuple[str, str, dict]:
    """The picture's status line, scrolled into view: its text, colour and where it is drawn in the window."""
    page.wait_for_function(f"document.querySelector('{STATUS_LINE}') !== null", timeout=30_000)
    text, color, box = page.evaluate(_READ_STATUS_LINE, STATUS_LINE)
    return text, color, box
