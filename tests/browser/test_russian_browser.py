"""A Russian lesson in a real browser: its first cell switches labsupport to Russian, and the live picture's
buttons, labels and drawing speak Russian (a small Russian notebook of the test's own stands in while
notebooks/ru/ is not there)."""
from __future__ import annotations

import nbformat
import pytest

from tests.browser.conftest import ARTIFACTS, ROOT, lesson_up_to_the_graph
from tests.browser.notebook_page import LIVE, button, open_notebook, run_all, shut_down_kernel, wait_count
from tests.conftest import WEB

pytestmark = pytest.mark.browser

NAME = "ru-up-to-the-picture.ipynb"
#: What the Russian picture must show: (CSS selector, text).
RUSSIAN_TEXT = [
    (f"{LIVE} button", "масштабировать"),
    (f"{LIVE} button", "удалить под"),
    (f"{LIVE} button", "отправить запрос"),
    (f"{LIVE} .labsupport-controls", "рабочая нагрузка"),
    (f"{LIVE} .labsupport-controls", "откуда"),
    (f"{LIVE} svg.cluster-graph", "клиент"),
    (f"{LIVE} svg.cluster-graph", "зона ru-central1-a"),
]


def russian_notebook() -> nbformat.NotebookNode:
    """A minimal Russian lesson: the language line first, a Deployment and its Service, then the picture."""
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = [
        nbformat.v4.new_markdown_cell("# Поды смертны, Service остаётся\n\n**Цели**: увидеть кластер на схеме."),
        nbformat.v4.new_code_cell("%env LABSUPPORT_LANG=ru\nfrom labsupport import Lab\nlab = Lab(seed=0)\n"
                                  f"lab.apply('''{WEB}''');"),
        nbformat.v4.new_code_cell("lab.graph()"),
    ]
    return nb


@pytest.fixture
def russian_lesson(jupyterlab):
    """The first Russian lesson up to its picture (or the stand-in), in the served folder."""
    source = ROOT / "notebooks" / "ru" / "00-start-here.ipynb"
    target = jupyterlab.root / NAME
    if source.exists():
        lesson_up_to_the_graph(source, target)
    else:
        nbformat.write(russian_notebook(), target)
    yield NAME
    target.unlink(missing_ok=True)


def test_a_russian_lesson_shows_the_picture_in_russian(page, jupyterlab, russian_lesson):
    open_notebook(page, jupyterlab, russian_lesson)
    errors = run_all(page)
    assert not errors, f"{russian_lesson}: cells failed: {errors}"
    wait_count(page, f"{LIVE} svg.cluster-graph g.pod", "n > 0")
    missing = [text for selector, text in RUSSIAN_TEXT
               if text not in " ".join(t or "" for t in page.locator(selector).all_text_contents())]
    page.locator(LIVE).scroll_into_view_if_needed()
    page.screenshot(path=str(ARTIFACTS / "browser-russian-lesson.png"), full_page=False)
    assert not missing, f"the picture does not say {missing} in Russian"
    # at 1400 px every label and button shows its whole caption, inside the window
    cut = page.evaluate(f"""() => [...document.querySelectorAll('{LIVE} .labsupport-label, {LIVE} button')]
        .filter(e => e.scrollWidth > e.clientWidth + 1 || e.getBoundingClientRect().right > window.innerWidth)
        .map(e => e.innerText)""")
    assert not cut, f"cut or off screen: {cut}"
    # the control-plane node is marked as such, and the mark does not run into its IP
    role = page.locator(f"{LIVE} svg g.node text.node-role")
    assert role.count() == 1 and "control plane" in role.text_content(), "no (control plane) mark"
    before, after = page.evaluate(f"""() => {{
      const role = document.querySelector('{LIVE} svg g.node text.node-role');
      const texts = [...role.parentNode.querySelectorAll('text')];
      const name = texts[0], ip = texts.find(t => t.getAttribute('text-anchor') === 'end');
      return [role.getBoundingClientRect().left - name.getBoundingClientRect().right,
              ip.getBoundingClientRect().left - role.getBoundingClientRect().right];
    }}""")
    assert before > 1 and after > 0, f"the mark touches the node's name ({before:.0f} px) or its IP ({after:.0f} px)"
    assert page.locator(f"{LIVE} button", has_text="send request").count() == 0, "an English button is left"
    button(page, "отправить запрос").click()
    wait_count(page, f"{LIVE} svg.cluster-graph g.trace-step", "n > 0")
    shut_down_kernel(page)
