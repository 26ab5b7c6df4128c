"""Run the real kubectl, built for WebAssembly, where Python itself runs in WebAssembly (Pyodide in a browser tab).

kubectl.wasm runs in the kernel's own JavaScript context through kubectl.mjs (lite/kubectl/), a fresh Go program
per command. `lab.kubectl` stays a plain call: Pyodide's stack switching (`run_sync`, JSPI) suspends it while the
browser's event loop runs the Go program; each HTTP request kubectl sends is handed to `serve` (the in-process API
server) in a call of its own, which may pause too (a watch waiting for events), so a stream reaches kubectl as it
is written. kubectl reads and writes the files this Python sees (its kubeconfig, its cache, `-f file.yaml`).
"""
from __future__ import annotations

import os
from typing import Any, Callable

from labsupport.errors import BackendUnavailable
from labsupport.i18n import tr

#: Where a site built by `make lite` serves kubectl.wasm, wasm_exec.js and kubectl.mjs, from the site's root.
SITE_FOLDER = "static/kubectl"
#: Names that folder instead: a URL, or under Node a path (the tests).
LOCATION_VARIABLE = "LABSUPPORT_KUBECTL_WASM"

#: The subcommands that need a live connection to a container, a local port, a terminal or an editor.
_LIVE = {"exec", "attach", "port-forward", "proxy", "cp", "debug", "edit"}
_ATTACHING = {"-i", "-t", "-it", "-ti", "--stdin", "--tty", "--attach", "--rm", "--stdin=true", "--tty=true",
              "--attach=true", "--rm=true"}

#: kubectl's global flags whose value is the next word (`-n kube-system get pods`).
_VALUE_FLAGS = {"-n", "--namespace", "--context", "--cluster", "--user", "--kubeconfig", "-s", "--server", "--token",
                "--as", "--as-group", "--as-uid", "--request-timeout", "--cache-dir", "-v", "--v", "--log-file",
                "--tls-server-name", "--certificate-authority", "--client-certificate", "--client-key", "--username",
                "--password", "--profile", "--profile-output", "--kuberc"}

_loaded: Any = None


def refusal(args: list[str]) -> str | None:
    """The one-line answer for a command kubectl cannot carry out in a browser tab, or None when it can."""
    words = args[: args.index("--")] if "--" in args else args
    verb = _verb(words)
    attaching = verb == "run" and any(w in _ATTACHING for w in words)
    if verb not in _LIVE and not attaching:
        return None
    shown = f"{verb} {' '.join(w for w in words if w in _ATTACHING)}".strip()
    return tr("`kubectl {command}` needs a terminal or a live connection to a container, which a browser tab cannot "
              "give: run it in the course's JupyterLab (`make lab`) or in a terminal beside it", command=shown)


def _verb(words: list[str]) -> str:
    """The subcommand: the first word that is neither a flag nor the value of one of kubectl's global flags."""
    skip = False
    for word in words:
        if skip:
            skip = False
        elif word in _VALUE_FLAGS:
            skip = True
        elif not word.startswith("-"):
            return word
    return ""


def location() -> str:
    """Where kubectl.wasm and its glue are: $LABSUPPORT_KUBECTL_WASM, else the site's folder next to this kernel."""
    named = os.environ.get(LOCATION_VARIABLE)
    if named:
        return named.rstrip("/")
    import js  # type: ignore[import-not-found]
    here = str(js.location.href)
    if "/extensions/" not in here:
        raise BackendUnavailable(tr("kubectl.wasm not found: this kernel runs at {url}, not in a site built by "
                                    "`make lite`; set {variable} to the folder that holds kubectl.wasm",
                                    url=here, variable=LOCATION_VARIABLE))
    return here.split("/extensions/", 1)[0] + "/" + SITE_FOLDER


def _js_fetch(url: str, method: str) -> Any:
    """The page's fetch of a URL (a promise)."""
    import js  # type: ignore[import-not-found]
    from pyodide.ffi import to_js  # type: ignore[import-not-found]
    return js.fetch(url, to_js({"method": method}, dict_converter=js.Object.fromEntries))


def _kubectl() -> tuple[Any, Any]:
    """The glue module and the compiled kubectl (both kept for the kernel's life)."""
    global _loaded
    if _loaded is None:
        from pyodide.code import run_js  # type: ignore[import-not-found]
        from pyodide.ffi import can_run_sync, run_sync  # type: ignore[import-not-found]
        if not can_run_sync():
            raise BackendUnavailable(tr("kubectl needs WebAssembly stack switching (JSPI), which this browser does "
                                        "not offer: use Chrome or Edge 137 or newer, or the course's JupyterLab"))
        base = location()
        glue = base + "/kubectl.mjs"
        if "://" not in glue:
            glue = "file://" + os.path.abspath(glue)
        elif run_sync(_js_fetch(glue, "HEAD")).status == 404:
            raise BackendUnavailable(tr("kubectl does not run in this browser tab: it runs in the course's "
                                        "JupyterLab (`make lab`, or the course's server); lab.get() and the picture "
                                        "show the same objects here"))
        try:
            module = run_sync(run_js("(url) => import(url)")(glue))
            _loaded = (module, run_sync(module.loadKubectl(base)))
        except Exception as e:  # noqa: BLE001 - a JavaScript error: say where it came from
            raise BackendUnavailable(tr("kubectl.wasm could not be loaded from {url}: {why}", url=base,
                                        why=str(e).strip().splitlines()[-1] if str(e).strip() else repr(e))) from e
    return _loaded


class _Sink:
    """The glue's answer stream, seen from the in-process API server."""

    def __init__(self, js_sink: Any):
        self._sink = js_sink

    def head(self, status: int, headers: list[tuple[str, str]]) -> None:
        from pyodide.ffi import to_js  # type: ignore[import-not-found]
        self._sink.head(status, to_js([list(h) for h in headers]))

    def data(self, chunk: bytes) -> None:
        from pyodide.ffi import to_js  # type: ignore[import-not-found]
        self._sink.data(to_js(chunk))

    def closed(self) -> bool:
        return bool(self._sink.closed())


def run(args: list[str], *, env: dict[str, str], serve: Callable[..., Any], stdin: str | None,
        timeout: float | None, on_stdout: Callable[[str], bool] | None) -> tuple[str, str, int]:
    """Run `kubectl ARGS` to its end (or until `on_stdout`, given each piece printed, says stop, or `timeout`
    seconds); returns (stdout, stderr, exit code). With `on_stdout` the command streams until stopped, so its
    timeout is its end (exit code 0); without, a timeout is exit code 124."""
    from pyodide.code import run_js  # type: ignore[import-not-found]
    from pyodide.ffi import create_proxy, run_sync, to_js  # type: ignore[import-not-found]
    import js  # type: ignore[import-not-found]
    import pyodide_js  # type: ignore[import-not-found]

    glue, kubectl = _kubectl()

    def answer(method, target, headers, body, sink):
        serve(str(method), str(target), [tuple(h) for h in headers.to_py()], body.to_bytes(), sink=_Sink(sink))

    def printed(chunk) -> bool:
        return bool(on_stdout(chunk.to_bytes().decode("utf-8", errors="replace")))

    answer_proxy = create_proxy(answer)
    printed_proxy = create_proxy(printed) if on_stdout else None
    # each request in a call of its own that may pause (stack switching), so a watch streams while kubectl reads
    promising = run_js("(f) => (...args) => f.callPromising(...args)")(answer_proxy)
    options = {
        "args": to_js(args), "env": to_js(env, dict_converter=js.Object.fromEntries), "cwd": os.getcwd(),
        "stdin": to_js((stdin or "").encode()), "fs": glue.emscriptenFs(pyodide_js.FS, pyodide_js.ERRNO_CODES),
        "server": _server(env["KUBECONFIG"]), "serve": promising, "onStdout": printed_proxy,
        "timeoutMs": int((timeout or 0) * 1000), "streams": on_stdout is not None,
    }
    try:
        result = run_sync(kubectl.run(to_js(options, dict_converter=js.Object.fromEntries)))
    finally:
        answer_proxy.destroy()
        if printed_proxy is not None:
            printed_proxy.destroy()
    out = result.stdout.to_bytes().decode("utf-8", errors="replace")
    err = result.stderr.to_bytes().decode("utf-8", errors="replace")
    return out, err, int(result.code)


def _server(kubeconfig: str) -> str:
    """The server the kubeconfig's current context names."""
    import yaml
    with open(kubeconfig) as f:
        config = yaml.safe_load(f)
    context = next(c["context"] for c in config["contexts"] if c["name"] == config["current-context"])
    return next(c["cluster"]["server"] for c in config["clusters"] if c["name"] == context["cluster"])
