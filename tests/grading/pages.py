"""Reading a page back for what could run or load: the elements, event handlers and URLs of an HTML page."""
from __future__ import annotations

import re
from html.parser import HTMLParser

import nbformat
from nbconvert.exporters import HTMLExporter

ACTIVE_ATTRIBUTES = re.compile(r"^on|^formaction$|^srcdoc$")


class Page(HTMLParser):
    """Every element, attribute and URL of a page."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict]] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, {k: v or "" for k, v in attrs}))

    handle_startendtag = handle_starttag


def parsed(page: str) -> Page:
    """The page, read."""
    reader = Page()
    reader.feed(page)
    return reader


RISKY = ("script", "iframe", "object", "embed", "form", "base", "meta", "svg", "style", "link", "img", "a",
         "image", "frame", "video", "audio", "source", "button", "input", "textarea")


def risky(page: str) -> list[str]:
    """The page's elements that could run, load, link or pretend, as sorted text."""
    return sorted(f"{tag} {sorted(attrs.items())}" for tag, attrs in parsed(page).tags if tag in RISKY)


def template_risks() -> list[str]:
    """The risky elements the page's template itself has (a notebook with no cells)."""
    page, _ = HTMLExporter(template_name="classic").from_notebook_node(nbformat.v4.new_notebook())
    return risky(page)


def dangers(page: str, baseline: list[str]) -> list[str]:
    """What on a page could run or load something (beyond the template's own elements)."""
    found = []
    extra = list(risky(page))
    for item in baseline:
        if item in extra:
            extra.remove(item)
    # an image from the notebook itself, and a plain web link (it loads nothing until followed), are no danger
    found += [item for item in extra if not (item.startswith("img ") and re.search(
              r"\('src', 'data:image/(png|svg\+xml);base64,[A-Za-z0-9+/=]*'\)", item))
              and not re.match(r"a \[\('href', 'https?://[^']*'\)\]$", item)]
    for tag, attrs in parsed(page).tags:
        for name, value in attrs.items():
            if ACTIVE_ATTRIBUTES.search(name):
                found.append(f"<{tag} {name}={value!r}>")
            if name in ("href", "src", "action", "xlink:href"):
                url = re.sub(r"[\x00-\x20]", "", value).lower()
                if tag == "script" or tag == "a" and url.startswith(("http:", "https:")) or \
                        tag == "img" and re.match(r"data:image/(png|jpeg|gif|svg\+xml);base64,", url):
                    continue
                if url.startswith(("javascript:", "vbscript:", "data:", "http:", "https:", "//")):
                    found.append(f"<{tag} {name}={value!r}>")
    return found
