"""ClusterGraph: the cluster as a live picture with the controls a lesson needs.

Zones, nodes (with their kube-proxy), pods coloured by state, Services with their EndpointSlices and a line per
endpoint; it follows the cluster's watch. Controls scale a Deployment, delete a pod, break or mend a pod's
readiness, switch kube-proxy's mode and a Service's externalTrafficPolicy, move the clock, and send a request
whose path is drawn hop by hop with its NAT rewrites.
"""
from __future__ import annotations

import html
from typing import Any, Iterable

import ipywidgets as widgets

from labsupport.model.objects import clone
from labsupport.i18n import tr
from labsupport.widgets.lesson import address_owners
from labsupport.widgets.live import LiveView, read_cluster, wanted_namespaces
from labsupport.widgets.present import type_scale
from labsupport.widgets.scene import CLIENT, Layout, Step, build_model, render_svg, trace_steps

NGINX_INDEX = "/usr/share/nginx/html/index.html"
#: How wide the presenter's picture may get (a projector's notebook column): every zone stays on screen.
PRESENTER_WIDTH = 1100.0


def _max_width(present: bool) -> float | None:
    return PRESENTER_WIDTH if present else None


class ClusterGraph(LiveView):
    """A live picture of the cluster with controls. `ClusterGraph(lab, present=True)` for a projector."""

    def __init__(self, lab: Any, *, namespaces: Iterable[str] | None = ("default",), present: bool | None = None,
                 controls: bool = True, live: bool = True, rule_counts: bool = True, title: str = ""):
        super().__init__(lab, present=present, live=live)
        self.namespaces = None if namespaces is None else tuple(namespaces)
        self.rule_counts = rule_counts
        self.title = title
        self.layout_engine = Layout(scale=type_scale(self.present), max_width=_max_width(self.present))
        self.model = None
        self.steps: list[Step] = []
        self.reveal: int | None = None
        self.last_trace = None
        self.svg = ""
        self.picture = widgets.HTML(layout=widgets.Layout(overflow="auto"))
        self.picture.add_class("labsupport-cluster-graph")
        self.status = widgets.HTML()
        self._build_controls()
        self.children = ([self.controls] if controls else []) + [self.picture, self.status]
        self.add_class("labsupport-live-graph")
        self.sync_proxies()
        self.refresh()

    # --- controls ------------------------------------------------------------------------------------------
    def _build_controls(self) -> None:
        # buttons keep their whole caption (a row wraps instead of cutting them, as a long Russian one was)
        small = widgets.Layout(width="auto", flex="0 0 auto")
        self.workload = widgets.Dropdown(layout=widgets.Layout(width="170px"))
        # not a BoundedIntText: the browser would clamp -1 to 0 and scale every pod away without a word
        self.replicas = widgets.IntText(value=3, layout=widgets.Layout(width="70px"))
        self.scale_button = widgets.Button(description=tr("scale"), icon="arrows-v", layout=small)
        self.pod = widgets.Dropdown(layout=widgets.Layout(width="230px"))
        self.delete_button = widgets.Button(description=tr("delete pod"), button_style="danger", icon="trash",
                                            layout=small)
        self.break_button = widgets.Button(description=tr("break readiness"), button_style="warning", layout=small,
                                           tooltip=tr("rm {path} (an nginx pod probed on / turns not ready)",
                                                      path=NGINX_INDEX))
        self.mend_button = widgets.Button(description=tr("mend readiness"), layout=small)
        self.mode = widgets.ToggleButtons(options=["iptables", "ipvs", "nftables"], style={"button_width": "80px"})
        self.service = widgets.Dropdown(layout=widgets.Layout(width="170px"))
        self.policy = widgets.ToggleButtons(options=["Cluster", "Local"], style={"button_width": "70px"})
        self.source = widgets.Dropdown(layout=widgets.Layout(width="230px"))
        self.url = widgets.Text(value="", placeholder="http://<service>", layout=widgets.Layout(width="220px"))
        self.send_button = widgets.Button(description=tr("send request"), button_style="primary", icon="paper-plane",
                                          layout=small)
        self.prev_button = widgets.Button(description=tr("◀ step"), layout=small)
        self.next_button = widgets.Button(description=tr("step ▶"), layout=small)
        self.clear_button = widgets.Button(description=tr("clear path"), layout=small)
        self.advance_button = widgets.Button(description=tr("advance 5 s"), icon="clock-o", layout=small)
        self.present_toggle = widgets.ToggleButton(value=self.present, description=tr("presenter"),
                                                   icon="television", layout=small,
                                                   tooltip=tr("larger type, one trace step at a time"))
        self.present_toggle.observe(lambda change: self.set_present(change["new"]), names="value")
        self.scale_button.on_click(lambda _: self._act(self._scale))
        self.delete_button.on_click(lambda _: self._act(self._delete))
        self.break_button.on_click(lambda _: self._act(self._break))
        self.mend_button.on_click(lambda _: self._act(self._mend))
        self.send_button.on_click(lambda _: self._act(self._send_request))
        self.prev_button.on_click(lambda _: self._step(-1))
        self.next_button.on_click(lambda _: self._step(+1))
        self.clear_button.on_click(lambda _: self._act(self.clear_trace))
        self.advance_button.on_click(lambda _: self._act(self._advance))
        self.mode.observe(self._on_mode, names="value")
        self.policy.observe(self._on_policy, names="value")
        self.service.observe(self._sync_policy, names="value")
        self.service.observe(lambda _: self._sync_url(), names="value")
        self.source.observe(lambda _: self._sync_url(), names="value")
        self.workload.observe(lambda _: self._sync_replicas(force=True), names="value")
        for name in ("workload", "replicas", "pod", "mode", "service", "policy", "source", "url"):
            getattr(self, name).add_class(f"labsupport-{name}")

        def row(*children: widgets.Widget) -> widgets.HBox:
            return widgets.HBox(list(children), layout=widgets.Layout(align_items="center", flex_flow="row wrap"))

        names = [tr("workload"), tr("pod"), "kube-proxy", tr("service"), tr("from")]
        column = label_column(names)
        self.controls = widgets.VBox([
            row(_label(names[0], width=column), self.workload, self.replicas, self.scale_button,
                self.advance_button, self.present_toggle),
            row(_label(names[1], width=column), self.pod, self.delete_button, self.break_button, self.mend_button),
            row(_label(names[2], width=column), self.mode),
            row(_label(names[3], width=column), self.service, _label("eTP", inline=True), self.policy),
            row(_label(names[4], width=column), self.source, _label("curl", inline=True), self.url, self.send_button,
                self.prev_button, self.next_button, self.clear_button),
        ])
        self.controls.add_class("labsupport-controls")
        self._muted = False
        self._workload_replicas: dict[str, int] = {}
        self._shown_replicas: tuple[str, int] | None = None
        self._suggested_url = ""
        self._live_pods: set[str] = set()
        self._families: dict[str, tuple] = {}

    def _act(self, action) -> None:
        """Run a control's action and say in the status line what it did; an action that has nothing to say clears
        the line, so it never shows the previous action's message as this one's."""
        try:
            outcome = action()
        except Exception as exc:
            self._report(f"{type(exc).__name__}: {exc}")
        else:
            if isinstance(outcome, Failure):
                self._report(str(outcome))
            elif isinstance(outcome, str):
                self._report(outcome, error=False)
            else:
                self.status.value = ""
        self.sync_proxies()
        self.refresh()

    def _report(self, message: str, error: bool = True) -> None:
        color = "#b71c1c" if error else "#1b5e20"
        self.status.value = f'<span style="color:{color}">{html.escape(message)}</span>'

    def _scale(self) -> str:
        if not self.workload.value:
            return Failure(tr("no Deployment or StatefulSet to scale"))
        if self.replicas.value is None or int(self.replicas.value) < 0:
            refused = self.replicas.value
            self._sync_replicas(force=True)     # the box shows the count the workload keeps
            return Failure(tr("replicas must be 0 or more, not {replicas}: nothing was scaled",
                              replicas=refused))
        self.lab.scale(self.workload.value, int(self.replicas.value))
        return tr("scaled {workload} to {replicas}", workload=self.workload.value, replicas=self.replicas.value)

    def _advance(self) -> str:
        self.lab.advance(5)
        return tr("the clock moved 5 s")

    def _pod_ref(self) -> tuple[str, str]:
        if not self.pod.value:
            raise ValueError(tr("choose a pod first"))
        ns, _, name = self.pod.value.partition("/")
        return ns, name

    def _delete(self) -> str:
        ns, name = self._pod_ref()
        pod = self.lab.get("pod", name, namespace=ns)
        self.lab.delete("pod", name, namespace=ns)
        return deletion_note(pod)

    def _break(self) -> str:
        ns, name = self._pod_ref()
        missing = _no_index_probe(self.lab.get("pod", name, namespace=ns))
        if missing:
            return Failure(tr("{name}: {missing}, so nothing changes: it stays ready and keeps its traffic. "
                              "Give the pod template a readinessProbe (httpGet on / port 80) to see it leave the "
                              "Service.", name=name, missing=missing))
        result = self.lab.exec(name, ["rm", NGINX_INDEX], namespace=ns)
        code = getattr(result, "code", getattr(result, "returncode", 0))
        if code:
            return Failure(tr("rm failed in {name}: {stderr}", name=name, stderr=getattr(result, 'stderr', '')).strip())
        return tr("removed {path} in {name}: its readiness probe on / fails from the next period", path=NGINX_INDEX,
                  name=name)

    def _mend(self) -> str:
        ns, name = self._pod_ref()
        result = self.lab.exec(name, ["sh", "-c", f"echo ok > {NGINX_INDEX}"], namespace=ns)
        if getattr(result, "code", getattr(result, "returncode", 0)):
            return Failure(tr("could not write {path} in {name}: {stderr}", path=NGINX_INDEX, name=name,
                              stderr=getattr(result, 'stderr', '')).strip())
        return tr("restored {path} in {name}", path=NGINX_INDEX, name=name)

    def _send_request(self) -> str:
        if not self.url.value.strip():
            return Failure(tr("type the URL to send the request to (e.g. http://<service>) in the curl field"))
        trace = self.lab.trace(self.url.value, source=self.source.value or "client")
        self.show_trace(trace)
        result = trace.result
        if not result.ok:
            return Failure(result.error or result.text or tr("no answer"))
        said = tr("{status} from {pod} (client IP seen: {client_ip})", status=result.status, pod=result.pod,
                  client_ip=result.client_ip)
        owner = address_owners(self.lab).get(result.client_ip, "")
        return f"{said} — {owner}" if owner else said

    def _step(self, delta: int) -> None:
        if not self.steps:
            return
        current = len(self.steps) if self.reveal is None else self.reveal
        self.reveal = max(0, min(len(self.steps), current + delta))
        self.draw()

    def _on_mode(self, change) -> None:
        if self._muted or change["new"] == self.lab.proxy_mode:
            return
        self._act(lambda: self._switch_mode(change["new"]))

    def _switch_mode(self, mode: str) -> str:
        self.lab.set_proxy_mode(mode)
        self.steps, self.reveal, self.last_trace = [], None, None    # the old path went through the old rules
        return tr("kube-proxy restarted in {mode} mode (the drawn path was cleared: send the request again)", mode=mode)

    def _service_choice(self, service: str) -> str:
        """The dropdown's value for a Service named bare or as "namespace/name": a bare name is the one in
        "default", else the one in the lab's own namespace (a kind or kube lab works in a namespace of its own)."""
        if "/" in service:
            return service
        values = [o[1] if isinstance(o, tuple) else o for o in self.service.options]
        named = [v for v in values if v.partition("/")[2] == service]
        return f"default/{service}" if f"default/{service}" in values or len(named) != 1 else named[0]

    def _current_service(self) -> dict | None:
        if not self.service.value:
            return None
        ns, _, name = self.service.value.partition("/")
        return self.lab.get("svc", name, namespace=ns)

    def _sync_policy(self, change=None) -> None:
        svc = self._current_service() if self.service.value else None
        self._muted = True
        try:
            self.policy.value = (svc or {}).get("spec", {}).get("externalTrafficPolicy") or "Cluster"
        finally:
            self._muted = False

    def _on_policy(self, change) -> None:
        if self._muted:
            return
        self._act(lambda: self.set_external_traffic_policy(change["new"]))

    def set_external_traffic_policy(self, policy: str, service: str | None = None) -> str:
        """Set externalTrafficPolicy on a NodePort or LoadBalancer Service (default: the one chosen above)."""
        if service is not None:
            choice = self._service_choice(service)
            if choice not in [o[1] if isinstance(o, tuple) else o for o in self.service.options]:
                self.draw()     # a Service made since the picture last drew
                choice = self._service_choice(service)
            self.service.value = choice
        svc = self._current_service()
        if svc is None:
            raise ValueError(tr("choose a Service first"))
        if svc["spec"].get("type") not in ("NodePort", "LoadBalancer"):
            raise ValueError(tr('externalTrafficPolicy applies to NodePort and LoadBalancer Services; '
                                '"{name}" is {type}', name=svc["metadata"]["name"],
                                type=svc["spec"].get("type", "ClusterIP")))
        new = clone(svc)
        new["spec"]["externalTrafficPolicy"] = policy
        if policy != "Local":
            new["spec"].pop("healthCheckNodePort", None)
        for key in ("resourceVersion", "managedFields"):
            new["metadata"].pop(key, None)
        new.pop("status", None)
        self.lab.apply(new)
        return tr('externalTrafficPolicy of "{name}" is now {policy}', name=svc["metadata"]["name"], policy=policy)

    def set_present(self, on: bool) -> None:
        """Presenter mode on or off: larger type, and a drawn request revealed one step at a time."""
        self.present = bool(on)
        self.layout_engine = Layout(scale=type_scale(self.present), slots=self.layout_engine.slots,
                                    max_width=_max_width(self.present))
        if self.steps:
            self.reveal = 1 if self.present else None
        if getattr(self, "present_toggle", None) is not None and self.present_toggle.value != self.present:
            self.present_toggle.value = self.present
        self.refresh()

    # --- public verbs --------------------------------------------------------------------------------------
    def show_trace(self, trace: Any) -> None:
        """Draw a `lab.trace(...)` result over the picture (one step at a time in presenter mode)."""
        self.last_trace = trace
        if self.model is None:
            self.refresh()
        self.steps = trace_steps(trace, self.model)
        self.reveal = 1 if self.present else None
        self.draw()

    def request(self, url: str, source: str = "client"):
        """Trace one request (like the "send request" button) and draw its path; returns the trace."""
        trace = self.lab.trace(url, source=source)
        self.show_trace(trace)
        return trace

    def clear_trace(self) -> None:
        """Remove the drawn request path."""
        self.steps, self.reveal, self.last_trace = [], None, None
        self.draw()

    def delete_pod(self, name: str, namespace: str = "default") -> None:
        """Delete a pod, as the "delete pod" button does."""
        self.pod.value = f"{namespace}/{name}"
        self._act(self._delete)

    def pods_by_state(self) -> dict[str, list[str]]:
        """The pods in the picture grouped by state (ready, not-ready, terminating, pending …), redrawn first."""
        if not self._closed_lab():
            self.sync_proxies()
            self.refresh()
        return self._pods_by_state()

    def _pods_by_state(self) -> dict[str, list[str]]:
        groups: dict[str, list[str]] = {}
        for _, data in (self.model.nodes(data=True) if self.model is not None else []):
            if data["kind"] == "pod":
                groups.setdefault(data["state"], []).append(data["label"])
        return groups

    # --- drawing -------------------------------------------------------------------------------------------
    def draw(self) -> None:
        """Rebuild the model from the cluster and redraw the SVG and the choices in the controls."""
        objects = read_cluster(self.lab, rule_counts=self.rule_counts)
        self.model = build_model(objects, self.namespaces)
        boxes = self.layout_engine.place(self.model)
        self.svg = render_svg(self.model, boxes, steps=self.steps, reveal=self.reveal,
                              scale=type_scale(self.present), title=self.title,
                              width=self.layout_engine.width, height=self.layout_engine.height,
                              fit=True)
        self.picture.value = self.svg
        self._update_choices(objects)

    def _update_choices(self, objects: dict) -> None:
        wanted = wanted_namespaces(self.namespaces, objects)
        shown = [o for o in objects["pods"] if wanted is None or o["metadata"].get("namespace") in wanted]
        one_namespace = self.namespaces is not None and len(self.namespaces) == 1
        pods = [(pod_label(p, one_namespace), f"{p['metadata']['namespace']}/{p['metadata']['name']}")
                for p in shown]
        sources = [(tr("pod {name}", name=label), f"pod/{value}") for (label, value), o in zip(pods, shown)
                   if (o.get("status") or {}).get("phase") == "Running" and not o["metadata"].get("deletionTimestamp")]
        sources += [(tr("node {name}", name=n['metadata']['name']), f"node/{n['metadata']['name']}")
                    for n in objects["nodes"]]
        sources += [(tr("client (outside)"), "client")]
        shown_services = [s for s in objects["services"] if (wanted is None or s["metadata"].get("namespace") in wanted)
                          and s["metadata"]["name"] != "kubernetes"]
        services = [f"{s['metadata']['namespace']}/{s['metadata']['name']}" for s in shown_services]
        # a first request goes through kube-proxy's rules: a Service with a virtual IP, not a headless one
        proxied = [v for v, s in zip(services, shown_services) if _has_virtual_ip(s)]
        workloads = [f"{o['kind'].lower()}/{o['metadata']['name']}" for o in objects["workloads"]
                     if wanted is None or o["metadata"].get("namespace") in wanted]
        self._workload_replicas = {f"{o['kind'].lower()}/{o['metadata']['name']}": int(o["spec"].get("replicas", 1))
                                   for o in objects["workloads"]
                                   if wanted is None or o["metadata"].get("namespace") in wanted}
        self._muted = True
        try:
            previous = self.pod.value
            _set_options(self.pod, pods)
            self._keep_a_live_pod(shown, previous)
            _set_options(self.source, sources)
            _set_options(self.service, services, default=proxied[0] if proxied else None)
            self._sync_url(objects)
            _set_options(self.workload, workloads)
            self._sync_replicas()
            modes = {p.get("mode") for p in objects["proxies"].values() if p.get("running")}
            if len(modes) == 1:
                self.mode.value = modes.pop()
            svc = next((s for s in objects["services"]
                        if f"{s['metadata']['namespace']}/{s['metadata']['name']}" == self.service.value), None)
            if svc is not None:
                self.policy.value = svc["spec"].get("externalTrafficPolicy") or "Cluster"
        finally:
            self._muted = False

    def _keep_a_live_pod(self, pods: list[dict], previous: str | None) -> None:
        """Keep the pod choice on a pod that runs, within the workload the student was acting on.

        The first choice is a pod a workload owns (never a bare pod the lesson made as a client, while there is
        another); when the chosen pod has just begun terminating (a scale-down, a delete) or is gone, the choice
        moves to a pod of the same workload (same owner, else the same labels), else of another workload, a running
        one before one still starting; a terminating pod the student chose on purpose stays chosen.
        """
        by_value = {_pod_value(p): p for p in pods}
        live = [v for v, p in by_value.items() if not p["metadata"].get("deletionTimestamp")]
        live.sort(key=lambda v: (by_value[v].get("status") or {}).get("phase") != "Running")    # running first
        families = {v: _family(p) for v, p in by_value.items()}
        chosen = self.pod.value
        if not previous:
            pick = _first_of([v for v in live if families[v][0]], live) or chosen
        elif previous in live:
            pick = previous
        elif previous in by_value and previous not in self._live_pods:
            pick = previous             # chosen while already terminating: on purpose
        else:
            owner, labels = families.get(previous) or self._families.get(previous) or (None, None)
            pick = _first_of([v for v in live if owner and families[v][0] == owner],
                             [v for v in live if labels and families[v][1] == labels],
                             [v for v in live if families[v][0]]) \
                or (previous if previous in by_value else None)
        if pick != chosen:
            self.pod.value = pick
        self._live_pods = set(live)
        self._families = families

    def _sync_url(self, objects: dict | None = None) -> None:
        """Aim the curl field at the chosen Service as the chosen source reaches it (or, without a Service, at a
        running pod), unless the student has typed a URL of their own."""
        if self._muted and objects is None:
            return
        if self.url.value and self.url.value != self._suggested_url:
            return
        if objects is None:
            objects = read_cluster(self.lab, rule_counts=False)
        svc = next((s for s in objects["services"]
                    if f"{s['metadata']['namespace']}/{s['metadata']['name']}" == self.service.value), None)
        if svc is not None:
            suggested = service_url(svc, self.source.value or "client", objects["nodes"])
        else:
            pod = next((p for p in objects["pods"] if f"pod/{p['metadata']['namespace']}/{p['metadata']['name']}"
                        != self.source.value and (p.get("status") or {}).get("phase") == "Running"
                        and (p.get("status") or {}).get("podIP") and not p["metadata"].get("deletionTimestamp")),
                       None)
            suggested = pod_url(pod) if pod is not None else ""
        self._suggested_url = suggested
        self.url.value = suggested

    def _sync_replicas(self, force: bool = False) -> None:
        """Show the chosen workload's replica count, whenever it (or the choice) changed since it was shown."""
        name = self.workload.value
        if not name or name not in self._workload_replicas:
            return
        shown = (name, self._workload_replicas[name])
        if force or shown != self._shown_replicas:
            self.replicas.value = shown[1]
            self._shown_replicas = shown

    def static_html(self) -> str:
        """The last picture as HTML: the SVG itself, no scripts."""
        return f'<div class="labsupport-cluster-graph" style="overflow:auto">{self.svg}</div>'

    def __repr__(self) -> str:
        counts = {k: len(v) for k, v in self._pods_by_state().items()}
        return f"<ClusterGraph pods={counts}>"


def label_column(names: list[str]) -> str:
    """The width of the controls' label column, so that every row's control starts at the same place: as wide as the
    longest label in the language shown ("рабочая нагрузка" as well as "workload"), 10 characters at least."""
    return f"{max(10, max(len(name) for name in names) + 2)}ch"


def _label(text: str, inline: bool = False, width: str = "10ch") -> widgets.HTML:
    """A control's label: right-aligned in the label column (or, inline, just before its control)."""
    layout = widgets.Layout(width="auto" if inline else width, margin="0 6px 0 8px" if inline else "0 6px 0 0",
                            flex="0 0 auto")
    label = widgets.HTML(f'<div style="text-align:right;white-space:nowrap">{html.escape(text)}</div>',
                         layout=layout)
    label.add_class("labsupport-label")
    return label


def _pod_value(pod: dict) -> str:
    return f"{pod['metadata']['namespace']}/{pod['metadata']['name']}"


#: Labels a controller gives each pod of its own, which its siblings do not share.
_PER_POD_LABELS = ("pod-template-hash", "controller-revision-hash", "statefulset.kubernetes.io/pod-name",
                   "apps.kubernetes.io/pod-index")


def _family(pod: dict) -> tuple:
    """What ties a pod to its workload: its controller's uid (None for a bare pod), and the labels its siblings
    share (a Deployment's pods keep them across a rollout, when the ReplicaSet changes)."""
    meta = pod["metadata"]
    owner = next((ref.get("uid") or ref.get("name") for ref in meta.get("ownerReferences") or []
                  if ref.get("controller")), None)
    labels = tuple(sorted((k, v) for k, v in (meta.get("labels") or {}).items() if k not in _PER_POD_LABELS))
    return owner, (meta.get("namespace"), labels) if labels else None


def _first_of(*candidates: list[str]) -> str | None:
    """The first value of the first list that has one."""
    return next((group[0] for group in candidates if group), None)


class Failure(str):
    """What a control reports when its action did not do what was asked (shown in red)."""


def pod_label(pod: dict, one_namespace: bool, width: int = 26) -> str:
    """A pod's name as a dropdown shows it: without the namespace when there is one, the tail that tells pods
    apart always kept (`web-7c5b9d4f8d-x2kq9` → `web-7c5b…-x2kq9` only when too long)."""
    name = pod["metadata"]["name"]
    label = name if one_namespace else f"{pod['metadata']['namespace']}/{name}"
    if len(label) <= width:
        return label
    tail = name.rsplit("-", 1)[-1] if "-" in name else name[-8:]
    head = label[:max(4, width - len(tail) - 2)]
    return f"{head}…-{tail}" if "-" in name else f"{head}…{tail}"


def deletion_note(pod: dict) -> str:
    """What happens to a pod once deleted, as its own spec decides: a preStop hook first (only if it has one),
    then the stop signal, and the kill when the grace period runs out."""
    name = pod["metadata"]["name"]
    grace = pod["spec"].get("terminationGracePeriodSeconds", 30)
    hooks = [c for c in pod["spec"].get("containers", []) if (c.get("lifecycle") or {}).get("preStop")]
    if hooks:
        return tr('pod "{name}" deleted: it runs its preStop hook, then gets its stop signal, and is killed if it '
                  'still runs {grace} s after the delete (its grace period); "{advance}" moves the clock',
                  name=name, grace=grace, advance=tr("advance 5 s"))
    return tr('pod "{name}" deleted: it has no preStop hook, so it gets its stop signal at once, and is killed if '
              'it still runs {grace} s later (its grace period); "{advance}" moves the clock',
              name=name, grace=grace, advance=tr("advance 5 s"))


def _url(host: str, port: int) -> str:
    return f"http://{host}" + ("" if port == 80 else f":{port}")


def service_url(svc: dict, source: str = "pod", nodes: list[dict] = ()) -> str:
    """The URL that reaches a Service from `source` as a real curl there would need it: a pod uses the Service's DNS
    name (cluster DNS), a node its ClusterIP (a node does not ask the cluster's DNS), the client outside a
    LoadBalancer IP or a node's NodePort (the DNS name when the Service has neither, which fails as it would)."""
    from labsupport.widgets.scene import node_ip
    meta, spec = svc["metadata"], svc.get("spec") or {}
    ports = spec.get("ports") or [{}]
    port = ports[0].get("port", 80)
    host = meta["name"] if meta.get("namespace", "default") == "default" else f"{meta['name']}.{meta['namespace']}"
    cluster_ip = spec.get("clusterIP")
    if source.startswith("node/") and cluster_ip and cluster_ip != "None":
        return _url(cluster_ip, port)
    if source == "client":
        ingress = ((svc.get("status") or {}).get("loadBalancer") or {}).get("ingress") or []
        if ingress and ingress[0].get("ip"):
            return _url(ingress[0]["ip"], port)
        workers = [node_ip(n) for n in nodes if "node-role.kubernetes.io/control-plane"
                   not in (n["metadata"].get("labels") or {})]
        if ports[0].get("nodePort") and workers:
            return _url(workers[0], ports[0]["nodePort"])
    return _url(host, port)


def pod_url(pod: dict) -> str:
    """The URL of a pod's own address and first container port (80 when it declares none)."""
    declared = [p.get("containerPort") for c in pod["spec"].get("containers", []) for p in c.get("ports") or []]
    return _url(pod["status"]["podIP"], declared[0] if declared else 80)


def _no_index_probe(pod: dict) -> str:
    """Why removing nginx's index page would not change this pod's readiness ("" when it would)."""
    probes = [c.get("readinessProbe") for c in pod["spec"].get("containers", [])]
    if not any(probes):
        return tr("this pod has no readiness probe (nothing checks it, and a pod without one counts as ready)")
    for probe in probes:
        get = (probe or {}).get("httpGet")
        if get and get.get("path", "/") in ("/", "/index.html"):
            return ""
    return tr("its readiness probe does not ask nginx for / (removing the index page does not make it fail)")


def _has_virtual_ip(svc: dict) -> bool:
    """Whether kube-proxy writes rules for the Service: it has a ClusterIP (not headless, not ExternalName)."""
    spec = svc.get("spec") or {}
    return spec.get("type") != "ExternalName" and spec.get("clusterIP") not in (None, "", "None")


def _set_options(dropdown: widgets.Dropdown, options: list, default: str | None = None) -> None:
    """Give a dropdown new choices (strings, or (label, value) pairs), keeping the chosen value when it stays, else
    choosing `default` (when it is one of them) or the first."""
    if tuple(tuple(o) if isinstance(o, list) else o for o in dropdown.options) == tuple(options):
        return
    values = [o[1] if isinstance(o, tuple) else o for o in options]
    current = dropdown.value
    dropdown.options = options
    if current in values:
        dropdown.value = current
    elif values:
        dropdown.value = default if default in values else values[0]


__all__ = ["ClusterGraph", "CLIENT"]
