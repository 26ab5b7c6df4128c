"""The scripts every app page of the site loads before the app (lite/page/), put in place by `make lite`."""
from __future__ import annotations

import pytest

from lite import build

APP_PAGE = """<!DOCTYPE html>
<html>
<head>
    <title>JupyterLite</title>
    <link id="jupyter-lite-main" rel="preload" href="../build/lab/bundle.js" main="index" as="script">
</head>
</html>
"""
REDIRECT = "<html><head><script>window.location.href = '../index.html';</script></head></html>"


def test_each_app_page_loads_the_scripts_first_and_other_pages_are_left_alone(tmp_path):
    (tmp_path / "lab" / "tree").mkdir(parents=True)
    (tmp_path / "lab" / "index.html").write_text(APP_PAGE)
    (tmp_path / "lab" / "tree" / "index.html").write_text(REDIRECT)
    assert build.page_scripts(tmp_path) == [tmp_path / "lab" / "index.html"]
    html = (tmp_path / "lab" / "index.html").read_text()
    assert html.index('<script src="../static/page/worker-calls.js"></script>') < html.index("<title>")
    assert (tmp_path / "lab" / "tree" / "index.html").read_text() == REDIRECT
    for name in build.PAGE_SCRIPTS:
        assert (tmp_path / "static" / "page" / name).read_bytes() == (build.HERE / "page" / name).read_bytes()


def test_a_site_without_an_app_page_fails_the_build(tmp_path):
    (tmp_path / "index.html").write_text(REDIRECT)
    with pytest.raises(build.BuildError):
        build.page_scripts(tmp_path)
