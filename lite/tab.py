"""Drive the built site in headless Chromium: open a lesson through the app, Run All, run code in its kernel, with
every request that would leave the site aborted and recorded. The browser edition's test tier and its bench use it.
"""
from __future__ import annotations

import contextlib
import threading
import time
from pathlib import Path
from typing import Iterator

from lite import serve

#: JavaScript run in the page: open a notebook through the app, wait for its kernel.
OPEN = """async (path) => {
  const app = window.jupyterapp;
  await app.started; await app.restored;
  const panel = await app.commands.execute('docmanager:open', {path, factory: 'Notebook'});
  await panel.context.ready; await panel.sessionContext.ready;
  // the session's kernel connection is read again each time: on a busy machine the one first seen can be replaced
  const status = () => panel.sessionContext.session?.kernel?.status ?? 'unknown';
  // on a busy machine the app can end up with a session and no kernel (or a dead one) for a notebook it opened:
  // a student would pick the kernel again, and so does this, twice at most, saying so in what it returns
  const started = [];
  const t0 = Date.now();
  let asked = Date.now();
  while (status() !== 'idle' && Date.now() - t0 < 240000) {
    await new Promise(r => setTimeout(r, 200));
    if (['unknown', 'dead'].includes(status()) && Date.now() - asked > 60000 && started.length < 2) {
      const name = app.serviceManager.kernelspecs.specs?.default ?? 'python';
      started.push(`${status()} after ${Math.round((Date.now() - t0) / 1000)} s: kernel ${name} started again`);
      asked = Date.now();
      try { await panel.sessionContext.changeKernel({name}); } catch (e) { started.push(String(e)); }
    }
  }
  return {id: panel.id, status: status(), started};
}"""
#: Run every cell of the current notebook and wait until the kernel is idle with every code cell run (or one failed,
#: which stops Run All); each code cell's outputs. What is waited on is what a student sees (every cell's count, the
#: kernel idle), not the command's promise; a cell left without its count fails the tier (`tests/lite/conftest.py`).
RUN_ALL = """async () => {
  const app = window.jupyterapp;
  const panel = app.shell.currentWidget;
  const model = panel.content.model.cells;
  const kernel = panel.sessionContext.session.kernel;
  const t0 = Date.now();
  app.commands.execute('notebook:run-all-cells');
  const finished = () => {
    if (kernel.status !== 'idle') return false;
    let all = true;
    for (let i = 0; i < model.length; i++) {
      const cell = model.get(i);
      if (cell.type !== 'code') continue;
      for (let j = 0; j < cell.outputs.length; j++) {
        if (cell.outputs.get(j).type === 'error') return true;
      }
      if (cell.executionCount === null) all = false;
    }
    return all;
  };
  let quiet = 0;
  while (quiet < 3) { await new Promise(r => setTimeout(r, 200)); quiet = finished() ? quiet + 1 : 0; }
  const cells = [];
  for (let i = 0; i < model.length; i++) {
    const cell = model.get(i);
    if (cell.type !== 'code') continue;
    cells.push({index: i, source: cell.sharedModel.getSource(), count: cell.executionCount,
                outputs: cell.outputs.toJSON()});
  }
  return {seconds: (Date.now() - t0) / 1000, cells};
}"""
#: Run code in the current notebook's kernel (not as a cell): what it printed, and its error if any.
EXECUTE = """async (code) => {
  const panel = window.jupyterapp.shell.currentWidget;
  const future = panel.sessionContext.session.kernel.requestExecute({code, store_history: false});
  let text = '', error = null;
  future.onIOPub = (msg) => {
    if (msg.header.msg_type === 'stream') text += msg.content.text;
    if (msg.header.msg_type === 'error') error = msg.content.ename + ': ' + msg.content.evalue;
  };
  await future.done;
  return {text, error};
}"""
#: Close every open document without saving (the next lesson starts in a fresh kernel).
CLOSE_ALL = """async () => {
  const app = window.jupyterapp;
  for (const widget of Array.from(app.shell.widgets('main'))) {
    if (widget.sessionContext) { await widget.sessionContext.shutdown(); }
    widget.dispose();
  }
}"""


class Tab:
    """One Chromium page on the served site; `blocked` lists every request that tried to leave loopback,
    `page_errors` every exception the page did not catch."""

    def __init__(self, page, base: str, blocked: list[str], started_in: float, page_errors: list[str]):
        self.page, self.base, self.blocked, self.started_in = page, base, blocked, started_in
        self.page_errors = page_errors

    def open(self, path: str) -> dict:
        return self.page.evaluate(OPEN, path)

    def run_all(self) -> dict:
        return self.page.evaluate(RUN_ALL)

    def execute(self, code: str) -> str:
        """Run `code` in the open lesson's kernel; what it printed (an error fails the test)."""
        done = self.page.evaluate(EXECUTE, code)
        assert done["error"] is None, done["error"]
        return done["text"]

    def close_all(self) -> None:
        self.page.evaluate(CLOSE_ALL)


@contextlib.contextmanager
def served(site: Path = serve.SITE) -> Iterator[str]:
    """The site on a loopback port, for the block; its base URL."""
    httpd = serve.server(site)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()


@contextlib.contextmanager
def browser_page(base: str, chromium: str, *, on_response=None) -> Iterator[tuple]:
    """A fresh headless Chromium (cold cache) with one page, where every request outside `base` is aborted; yields
    (page, blocked, page_errors): the page, the URLs that tried to leave, the page's uncaught exceptions.
    `on_response(response)` sees every response."""
    blocked: list[str] = []
    page_errors: list[str] = []

    def route(r):
        if r.request.url.startswith(base + "/") or r.request.url.startswith(("data:", "blob:")):
            r.continue_()
        else:
            blocked.append(r.request.url)
            r.abort()

    from playwright.sync_api import sync_playwright
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox", "--headless", "--disable-gpu",
                                                                   "--disable-dev-shm-usage"])
        try:
            context = browser.new_context(viewport={"width": 1400, "height": 900})
            context.route("**/*", route)
            if on_response is not None:
                context.on("response", on_response)
            page = context.new_page()
            page.on("pageerror", lambda error: page_errors.append(str(error)))
            page.set_default_timeout(600_000)
            yield page, blocked, page_errors
        finally:
            browser.close()


@contextlib.contextmanager
def tab(base: str, chromium: str, *, on_response=None) -> Iterator[Tab]:
    """The site's lab page in a fresh Chromium (`browser_page`), the app started; requests outside `base` are listed
    in `Tab.blocked`, the page's uncaught exceptions in `Tab.page_errors`."""
    with browser_page(base, chromium, on_response=on_response) as (page, blocked, page_errors):
        started = time.monotonic()
        page.goto(base + "/lab/index.html")
        page.wait_for_function("window.jupyterapp !== undefined", timeout=120_000)
        page.evaluate("async () => { await window.jupyterapp.started; await window.jupyterapp.restored; }")
        yield Tab(page, base, blocked, time.monotonic() - started, page_errors)
