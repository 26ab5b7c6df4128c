"""`make lite-serve`: the site `make lite` built (build/lite/), served on loopback with the headers it needs.

Any static host serves the site; two headers make it whole: `Cross-Origin-Opener-Policy: same-origin` and
`Cross-Origin-Embedder-Policy: require-corp` give the page cross-origin isolation, which the kernel's interrupt
(SharedArrayBuffer) needs; and `.wasm` must go out as `application/wasm`, `.mjs` as `text/javascript`.

Run: python lite/serve.py [--port 8800] [--site build/lite]
"""
from __future__ import annotations

import argparse
import sys
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

SITE = Path(__file__).resolve().parent.parent / "build" / "lite"
#: The headers every response carries (what a static host must be told to send).
HEADERS = {"Cross-Origin-Opener-Policy": "same-origin", "Cross-Origin-Embedder-Policy": "require-corp"}
TYPES = {".wasm": "application/wasm", ".mjs": "text/javascript", ".js": "text/javascript", ".json": "application/json",
         ".ipynb": "application/json", ".whl": "application/zip", ".md": "text/markdown"}


class SiteHandler(SimpleHTTPRequestHandler):
    """Static files of the site, with the isolation headers."""

    extensions_map = {**SimpleHTTPRequestHandler.extensions_map, **TYPES}

    def end_headers(self) -> None:
        for name, value in HEADERS.items():
            self.send_header(name, value)
        super().end_headers()

    def log_message(self, format, *args):  # noqa: A002 - the base class's name
        pass


def server(site: Path = SITE, port: int = 0) -> ThreadingHTTPServer:
    """A server of `site` on 127.0.0.1 (`port` 0: any free one); the caller runs `serve_forever`."""
    if not (site / "index.html").is_file():
        raise SystemExit(f"[lite] {site} holds no site: run `make lite` first")
    return ThreadingHTTPServer(("127.0.0.1", port), partial(SiteHandler, directory=str(site)))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--port", type=int, default=8800)
    parser.add_argument("--site", type=Path, default=SITE)
    args = parser.parse_args(argv)
    httpd = server(args.site, args.port)
    print(f"[lite] the course in a browser tab: http://127.0.0.1:{httpd.server_address[1]}/lab/index.html "
          f"(Russian: …?path=ru/00-start-here.ipynb); Ctrl-C stops", flush=True)
    try:
        httpd.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
