"""`Lab` — the one object a notebook uses. It picks a backend and offers the verbs of DESIGN.md."""
from __future__ import annotations

import os
import weakref
from typing import Any, Callable

from labsupport import shared_kubeconfig
from labsupport.backend import Backend
from labsupport.errors import BackendUnavailable, BadRequest, LabError, NotFound, UnknownProxyMode
from labsupport.i18n import tr
from labsupport.manifests import load_manifests
from labsupport.results import CurlResult, NslookupAnswer, Trace
from labsupport.shape import PROXY_MODES

BACKENDS = ("sim", "netns", "kind", "kube")
#: kubectl's --validate values and the API server's fieldValidation each stands for.
VALIDATE = {"true": "Strict", "strict": "Strict", "warn": "Warn", "false": "Ignore", "ignore": "Ignore"}


def field_validation(validate: bool | str) -> str:
    """The API server's fieldValidation for a `kubectl apply --validate` value (True, False or its words)."""
    word = str(validate).lower()
    if word not in VALIDATE:
        raise BadRequest(tr('invalid validate option {value!r}: give True or "strict", "warn", False or "ignore"',
                            value=validate))
    return VALIDATE[word]


class Lab:
    """A cluster to learn on. `Lab()` reads LABSUPPORT_BACKEND (default "sim").

    >>> lab = Lab(seed=0)
    >>> [n["metadata"]["name"] for n in lab.get("nodes")]
    ['lab-control-plane', 'lab-worker', 'lab-worker2', 'lab-worker3']
    >>> lab.close()
    """

    def __init__(self, backend: str | None = None, *, seed: int = 0, proxy_mode: str | None = None,
                 workers: int | None = None, zones: tuple[str, ...] | None = None, max_endpoints_per_slice: int = 100,
                 follow_wall_time: bool = False, record_events: bool = True, kubeconfig: str | None = None,
                 namespace: str | None = None, **options: Any):
        backend = backend or os.environ.get("LABSUPPORT_BACKEND", "sim")
        if backend not in BACKENDS:
            raise BackendUnavailable(tr("unknown backend {backend!r}: choose one of {backends}", backend=backend,
                                        backends=", ".join(BACKENDS)))
        proxy_mode = proxy_mode or os.environ.get("LABSUPPORT_PROXY_MODE") or "iptables"
        if proxy_mode not in PROXY_MODES:
            raise UnknownProxyMode(proxy_mode, PROXY_MODES)
        self.backend_name = backend
        self.seed = seed
        if backend == "sim" and os.environ.get("LABSUPPORT_LAB_SOCKET"):
            # While graded, the sim cluster lives in the grader's lab server, outside this process.
            from labsupport.remote import RemoteBackend
            self._backend: Backend = RemoteBackend(os.environ["LABSUPPORT_LAB_SOCKET"], seed=seed,
                                                   proxy_mode=proxy_mode)
        elif backend in ("sim", "netns"):
            if backend == "sim":
                from labsupport.sim.backend import EmbeddedBackend as embedded
            else:
                from labsupport.netns.backend import NetnsBackend as embedded
            self._backend = embedded(seed=seed, proxy_mode=proxy_mode, workers=3 if workers is None else workers,
                                     zones=zones,
                                     max_endpoints_per_slice=max_endpoints_per_slice,
                                     record_events=record_events, **options)
        else:
            from labsupport.kind.backend import make_backend
            if backend == "kind" and workers is not None:
                options["workers"] = workers   # the size of a cluster it creates; an existing one is reused as is
            self._backend = make_backend(backend, proxy_mode=proxy_mode, kubeconfig=kubeconfig,
                                         namespace=namespace, **options)
        # the namespace the lab works in: on kube and kind the one the backend found (the kubeconfig's context, the
        # in-cluster account's, LABSUPPORT_KIND_NAMESPACE), which "default" in the verbs stands for
        self.namespace = getattr(self._backend, "namespace", None) or namespace or "default"
        if follow_wall_time:
            self._backend.follow_wall_time()
        self._closed = False
        # Beside `make lab`'s notebooks, a terminal's kubectl reaches this lab through the shared kubeconfig.
        shared = os.environ.get(shared_kubeconfig.ENV) if self._backend.name in ("sim", "netns") else None
        try:
            context = shared_kubeconfig.add_context(shared, shared_kubeconfig.context_name(),
                                                    self._backend.kubeconfig()) if shared else None
        except BaseException:
            self._backend.close()
            raise
        #: The context of this lab in the shared kubeconfig of `make lab`'s terminals (None outside make lab).
        self.context = context
        # The backend closes when the Lab is collected or the interpreter exits (a kernel shutting down), so a
        # notebook never has to end with close() and a netns lab still leaves nothing behind.
        self._finalizer = weakref.finalize(self, _shut_down, self._backend, shared, context)

    # --- objects -------------------------------------------------------------------------------------------
    def apply(self, manifest: Any, *, validate: bool | str = True) -> list[dict]:
        """Create or update every object in a manifest (YAML text, dict or list), as `kubectl apply` does.

        Like kubectl, a field the kind does not declare (`protcol: TCP`) is refused with the API server's
        message and nothing is stored; `validate` mirrors `kubectl apply --validate`: True or "strict" (the
        default), "warn" (drop such fields with a warning), False or "ignore" (drop them silently)."""
        mode = field_validation(validate)
        objects = load_manifests(manifest)
        return [self._backend.apply(obj, mode) for obj in objects]

    def create(self, manifest: Any, *, validate: bool | str = True) -> list[dict]:
        """Create every object in a manifest; an existing one is an AlreadyExists error (`kubectl create`).
        Unknown fields are refused, or dropped, as `apply` does."""
        mode = field_validation(validate)
        return [self._backend.create(obj, mode) for obj in load_manifests(manifest)]

    def get(self, kind: str, name: str | None = None, namespace: str | None = "default",
            selector: str | dict | None = None) -> dict | list[dict]:
        """One object as a dict, or a list when name is None (namespace None lists all namespaces)."""
        if name is not None:
            return self._backend.get(kind, name, namespace)
        return self._backend.list(kind, namespace, selector)

    def delete(self, kind: str, name: str, namespace: str = "default", *, grace_period: int | None = None) -> dict:
        """Delete an object; returns once accepted. A pod then runs its preStop hook and gets its stop signal."""
        return self._backend.delete(kind, name, namespace, grace_period=grace_period)

    def scale(self, name: str, replicas: int, namespace: str = "default") -> dict:
        """Set the replicas of a Deployment or StatefulSet (`deploy/web`, `sts/db` or a bare name)."""
        if replicas < 0:
            raise BadRequest(f"replicas must be 0 or more, not {replicas}")
        return self._backend.scale(name, replicas, namespace)

    # --- time ----------------------------------------------------------------------------------------------
    def advance(self, seconds: float) -> None:
        """Move the cluster's clock (the embedded clusters' virtual clock; real clusters sleep)."""
        self._backend.advance(seconds)

    def wait(self, predicate: Callable[["Lab"], bool], timeout: float = 60) -> float:
        """Advance the clock until `predicate(lab)` is true; returns the seconds it took, or raises TimeoutError.

        An error in the student's predicate shows as their own line, without the wait's frames in this package
        between it and the cell (IPython hides a frame that sets `__tracebackhide__`)."""
        __tracebackhide__ = True

        def holds() -> bool:
            __tracebackhide__ = True
            return predicate(self)
        return self._backend.wait(holds, timeout)

    @property
    def now(self) -> float:
        """The cluster's clock, in seconds since the Unix epoch."""
        return self._backend.now()

    # --- the network ---------------------------------------------------------------------------------------
    def nslookup(self, name: str, pod: str | None = None) -> NslookupAnswer:
        """Resolve a name as `nslookup` in a pod would (default: a throwaway pod in the default namespace)."""
        return self._backend.nslookup(name, pod)

    def curl(self, url: str, source: str = "client", **options: Any) -> CurlResult:
        """One HTTP request from `source` ("client", "node/<name>", "pod/<name>", "pod/<ns>/<name>").

        Connection refused or timed out is a result, not an exception."""
        return self._backend.curl(url, source, **options)

    def connect(self, url: str, source: str = "client"):
        """Open a keep-alive connection: its requests stay on one pod until it closes."""
        return self._backend.connect(url, source)

    def trace(self, url: str, source: str = "client") -> Trace:
        """The path one new connection takes: hops, the rules that matched, every NAT rewrite."""
        return self._backend.trace(url, source)

    def proxy_rules(self, node: str | None = None) -> str:
        """The node's kube-proxy rules in the current mode, as the node would print them."""
        return self._backend.proxy_rules(node)

    def conntrack(self, node: str | None = None) -> list[str]:
        """The node's conntrack entries, as `conntrack -L` prints them."""
        return self._backend.conntrack(node)

    # --- kube-proxy ----------------------------------------------------------------------------------------
    @property
    def proxy_mode(self) -> str:
        """The mode kube-proxy runs in (on the first worker)."""
        return self._backend.proxy_mode()

    def set_proxy_mode(self, mode: str) -> None:
        """Change `mode` in the kube-proxy ConfigMap and restart the kube-proxy pods, as on a real cluster."""
        if mode not in PROXY_MODES:
            raise UnknownProxyMode(mode, PROXY_MODES)
        self._backend.set_proxy_mode(mode)

    def stop_kube_proxy(self, node: str | None = None) -> None:
        """Stop kube-proxy on a node (all nodes when None): its rules stay, new changes are not applied."""
        self._backend.stop_kube_proxy(node)

    def start_kube_proxy(self, node: str | None = None) -> None:
        """Start kube-proxy again on a node (all nodes when None); it resyncs at once."""
        self._backend.start_kube_proxy(node)

    # --- pods ----------------------------------------------------------------------------------------------
    def exec(self, pod: str, command: list[str] | str, namespace: str = "default", container: str | None = None):
        """Run a command in a pod's container (`kubectl exec`); returns exit code and output."""
        argv = command.split() if isinstance(command, str) else list(command)
        return self._backend.exec(pod, argv, namespace, container)

    def logs(self, pod: str, namespace: str = "default", container: str | None = None) -> str:
        """What a pod's container has printed (`kubectl logs`)."""
        return self._backend.logs(pod, namespace, container)

    # --- tools ---------------------------------------------------------------------------------------------
    def kubectl(self, command: str | list[str], *, show: bool = True, input: str | None = None,
                timeout: float | None = None, events: int | None = None):
        """Run the real kubectl against this cluster; the result has .stdout, .stderr and .returncode.
        A watch (`get -w`) streams and stops after `events` rows or `timeout` seconds (default 10)."""
        return self._backend.kubectl(command, show=show, input=input, timeout=timeout, events=events)

    @property
    def kubeconfig(self) -> str:
        """Path of a kubeconfig for this cluster (starts the API server on first use)."""
        return self._backend.kubeconfig()

    def graph(self, **options: Any):
        """A live ClusterGraph widget of this cluster."""
        from labsupport.widgets import ClusterGraph
        return ClusterGraph(self, **options)

    def task(self, assignment: str):
        """This student's task of a graded assignment (their own names and numbers), shown as a card."""
        from labsupport.tasks import draw, student_identity
        return draw(assignment, student_identity())

    def meter(self, kinds: tuple[str, ...] = ("Endpoints", "EndpointSlice"), watchers: int | None = None):
        """Count the watch traffic a fan-out to `watchers` subscribers (default: one kube-proxy per node) ships."""
        return self._backend.meter(kinds, watchers)

    @property
    def cluster(self):
        """The embedded control plane (sim and netns only)."""
        from labsupport.sim.backend import EmbeddedBackend
        if not isinstance(self._backend, EmbeddedBackend):
            raise LabError(tr("the {backend} backend has no embedded control plane", backend=self.backend_name))
        return self._backend.cluster

    @property
    def backend(self) -> Backend:
        """The backend object behind the verbs."""
        return self._backend

    @property
    def closed(self) -> bool:
        """Whether `close()` has run."""
        return self._closed

    def close(self) -> None:
        """Stop the cluster's servers and remove what it created (a kernel shutting down does it too)."""
        if not self._closed:
            self._closed = True
            self._finalizer()

    def __enter__(self) -> "Lab":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Lab(backend={self.backend_name!r}, proxy_mode={self._backend.proxy_mode()!r}, seed={self.seed})"

    def _repr_html_(self) -> str:
        return self._backend.summary_html()


def _shut_down(backend: Backend, shared: str | None, context: str | None) -> None:
    """Close a lab's backend and take it out of the terminals' kubeconfig."""
    try:
        if shared and context:
            shared_kubeconfig.remove_context(shared, context)
    finally:
        backend.close()


__all__ = ["Lab", "NotFound"]
