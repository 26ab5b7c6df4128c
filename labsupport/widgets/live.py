"""What every live view shares: it redraws from the cluster's watch (debounced), and it leaves a static picture.

A view displays as the ipywidgets view plus a `text/html` copy of its picture. After each executed cell the
copy is refreshed in place (same display id), so a saved notebook shows the last state even without a kernel or
the widget JavaScript. Where the kernel has no threads (Pyodide in a browser tab), the debounced redraw is a
callback on the kernel's event loop instead of a timer thread. Once its lab is closed, the view freezes: its displays keep only the static picture and the
widget closes, so HTML exports and nbgrader feedback (which prefer a live widget when one is saved) show it too.
"""
from __future__ import annotations

import asyncio
import dataclasses
import functools
import sys
import threading
import time
from typing import Any, Callable, Iterable

import ipywidgets as widgets

from labsupport.i18n import tr
from labsupport.widgets.present import presenting, register
from labsupport.widgets.snapshot import Snapshot

DEBOUNCE_SECONDS = 0.12
#: Whether this Python can start threads: not in Pyodide (a browser tab), where redraws go on the event loop.
THREADS = sys.platform != "emscripten"


def call_later(delay: float, callback: Callable[[], None]) -> Any:
    """Run `callback` once, `delay` seconds from now, beside the kernel's own work; returns a handle with `cancel()`.

    A daemon timer thread where there are threads; else the event loop's `call_later` (Pyodide's loop runs its
    callbacks from the browser's, between cells and while a cell awaits)."""
    if THREADS:
        timer = threading.Timer(delay, callback)
        timer.daemon = True
        timer.start()
        return timer
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        loop = asyncio.get_event_loop_policy().get_event_loop()
    return loop.call_later(delay, callback)


def _ipython():
    try:
        from IPython import get_ipython
    except ImportError:     # pragma: no cover - IPython comes with ipywidgets
        return None
    return get_ipython()


def read_cluster(lab: Any, *, rule_counts: bool = True) -> dict:
    """Nodes, pods, Services, EndpointSlices, workloads and each node's kube-proxy state, from the backend's snapshot."""
    snap = lab.backend.snapshot(rule_counts=rule_counts)
    return {"nodes": snap.nodes, "pods": snap.pods, "services": snap.services, "slices": snap.endpointslices,
            "workloads": snap.workloads, "proxies": {name: dataclasses.asdict(status)
                                                     for name, status in snap.proxies.items()},
            "home": snap.home}


def wanted_namespaces(namespaces: Iterable[str] | None, objects: dict) -> set[str] | None:
    """The namespaces a view shows, "default" read as the lab's own (`objects["home"]`); None: every one."""
    if namespaces is None:
        return None
    home = objects.get("home") or "default"
    return {home if n == "default" else n for n in namespaces}


def _one_draw_at_a_time(draw: Callable[[Any], None]) -> Callable[[Any], None]:
    """A view's `draw`, run under the view's draw lock."""
    @functools.wraps(draw)
    def locked(self: Any) -> None:
        with self._draw_lock:
            draw(self)
    return locked


class LiveView(widgets.VBox):
    """A VBox that redraws itself when the cluster changes and displays with a static HTML fallback."""

    #: Kinds whose watch events make this view redraw.
    watched_kinds: frozenset = frozenset({"Pod", "Node", "Service", "EndpointSlice", "ConfigMap"})

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "draw" in cls.__dict__:
            cls.draw = _one_draw_at_a_time(cls.__dict__["draw"])

    def __init__(self, lab: Any, *, present: bool | None = None, live: bool = True, **kwargs: Any):
        super().__init__(**kwargs)
        #: One draw at a time: a redraw on the timer thread and one after a cell (or a button) on the kernel's main
        #: thread would otherwise change the same dropdowns' choices and values under each other.
        self._draw_lock = threading.RLock()
        self.lab = lab
        self.present = presenting() if present is None else bool(present)
        self.debounce = DEBOUNCE_SECONDS
        self.last_update_seconds = 0.0
        self._version = 0
        self._drawn = -1
        self._published_html = ""
        self._timer: Any = None             # the pending redraw (a timer thread or an event-loop handle)
        self._timer_lock = threading.Lock()
        self._display_ids: list[str] = []
        self._unsubscribe: Callable[[], None] | None = None
        self._hooked = False
        register(self)
        if live:
            self._unsubscribe = lab.backend.subscribe(self._on_change)
            shell = _ipython()
            if shell is not None:
                shell.events.register("post_execute", self._after_cell)
                self._hooked = True

    # --- what a subclass provides ------------------------------------------------------------------------------
    def draw(self) -> None:
        """Redraw the widget's picture from the current cluster state."""
        raise NotImplementedError

    def static_html(self) -> str:
        """The current picture as standalone HTML (inline SVG or a table)."""
        raise NotImplementedError

    # --- updates -------------------------------------------------------------------------------------------
    def _on_change(self, kind: str) -> None:
        if kind not in self.watched_kinds:
            return
        self._version += 1
        with self._timer_lock:
            if self._timer is None:
                self._timer = call_later(self.debounce, self._flush)

    def _flush(self) -> None:
        with self._timer_lock:
            self._timer = None
        if self._closed_lab():
            return
        try:
            self.sync_proxies()
            self.refresh()
        except Exception as exc:            # a background redraw must never kill the kernel's thread
            self._report(tr("redraw failed: {error}", error=exc))

    def _closed_lab(self) -> bool:
        return self.lab.closed

    def refresh(self) -> float:
        """Redraw now from a snapshot of the cluster; returns how long it took, in seconds."""
        start = time.perf_counter()
        version = self._version
        self.draw()
        self._drawn = version
        self.last_update_seconds = time.perf_counter() - start
        return self.last_update_seconds

    def snapshot(self) -> Snapshot:
        """The picture as it is now, as a static output that later changes of the cluster do not redraw."""
        if not self._closed_lab():
            self.sync_proxies()
            self.refresh()
        return Snapshot(self.static_html(), repr(self))

    def set_present(self, on: bool) -> None:
        """Switch presenter mode (larger type, step-by-step reveal) for this view and redraw."""
        self.present = bool(on)
        self.refresh()

    def _report(self, message: str) -> None:
        """Show a one-line message under the view (subclasses put it somewhere visible)."""

    def sync_proxies(self) -> None:
        """Let every running kube-proxy catch up with the cluster, as a real one does within its sync period.

        Kept out of `refresh()`: it is the cluster's work, not the picture's."""
        self.lab.backend.sync_proxies()

    def _after_cell(self, *args: Any) -> None:
        if self._closed_lab():
            self.freeze()
            return
        self.sync_proxies()
        self.refresh()
        html = self.static_html()
        if self._display_ids and html != self._published_html:
            from IPython.display import update_display
            bundle = self._repr_mimebundle_()
            for display_id in self._display_ids:
                update_display(bundle, raw=True, display_id=display_id)
            self._published_html = html

    # --- display -------------------------------------------------------------------------------------------
    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict:
        """The widget view plus a static `text/html` picture for places without a kernel."""
        bundle = super()._repr_mimebundle_(include=include, exclude=exclude) or {}
        if isinstance(bundle, tuple):
            bundle = bundle[0]
        bundle = dict(bundle)
        bundle["text/html"] = self.static_html()
        bundle.setdefault("text/plain", repr(self))
        return bundle

    def _ipython_display_(self) -> None:
        from IPython.display import display
        self.sync_proxies()
        self.refresh()
        bundle = self._repr_mimebundle_()
        handle = display(bundle, raw=True, display_id=True)
        if handle is not None:
            self._display_ids.append(handle.display_id)
        self._published_html = bundle["text/html"]

    def freeze(self) -> None:
        """Replace every display of this view by its static picture and close the widget (the lab is gone)."""
        if self._display_ids:
            from IPython.display import update_display
            bundle = {"text/html": self.static_html(), "text/plain": repr(self)}
            for display_id in self._display_ids:
                update_display(bundle, raw=True, display_id=display_id)
            self._display_ids = []
        self.close()

    def close(self) -> None:
        """Stop following the cluster and close the widget."""
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
        if self._hooked:
            shell = _ipython()
            if shell is not None:
                try:
                    shell.events.unregister("post_execute", self._after_cell)
                except ValueError:
                    pass
            self._hooked = False
        with self._timer_lock:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
        for part in _parts(self):
            part.close()
        super().close()


def _parts(widget: Any) -> list:
    """Every widget inside `widget` (children, and their layout and style models), innermost first."""
    found: list = []
    for child in getattr(widget, "children", ()) or ():
        found.extend(_parts(child))
        found.append(child)
    for name in ("layout", "style"):
        model = getattr(widget, name, None)
        if isinstance(model, widgets.Widget):
            found.append(model)
    return found
