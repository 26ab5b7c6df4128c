"""What a page the course writes may do in a browser: its Content-Security-Policy.

The feedback pages and the class report are files an instructor or a student opens from disk or a web server, and
they show text that came from students. Each carries a policy in a `<meta http-equiv>` at the top of its head: no
script at all (inline or fetched), nothing loaded from elsewhere (images only as `data:` URLs, styles only inline),
no form, no base URL, no frame. A page served over HTTP sends the same policy as a header (`POLICY`).

>>> with_policy("<html><head><title>x</title></head></html>").count("Content-Security-Policy")
1
"""
from __future__ import annotations

import html
import re

#: The policy of every page: nothing runs, nothing is fetched, styles and images only from the page itself.
POLICY = ("default-src 'none'; script-src 'none'; object-src 'none'; img-src data:; style-src 'unsafe-inline'; "
          "font-src data:; base-uri 'none'; form-action 'none'; frame-src 'none'")
META = f'<meta http-equiv="Content-Security-Policy" content="{html.escape(POLICY, quote=False)}">'
_HEAD = re.compile(r"<head\b[^>]*>", re.IGNORECASE)


def with_policy(page: str) -> str:
    """The page with the policy's meta element first in its head (before anything the policy must cover)."""
    match = _HEAD.search(page)
    if match is None:
        return META + page
    return page[:match.end()] + META + page[match.end():]


__all__ = ["POLICY", "META", "with_policy"]
