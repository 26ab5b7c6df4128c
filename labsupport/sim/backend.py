"""The embedded backends: `sim` (the data plane modelled from kube-proxy's rules) and `netns` (a real Linux one).

Both run the embedded control plane; they differ only in where packets go.
"""
from __future__ import annotations

import html
import json
import warnings
from typing import Any, Callable

import yaml

from labsupport.apiserver.schema import check_fields, warning_text
from labsupport.apps import image_repository
from labsupport.apps.images import image_for
from labsupport.control.cluster import Cluster
from labsupport.i18n import tr
from labsupport.kubectl import IN_BROWSER
from labsupport.shape import CLIENT_IP, ZONES, ClusterConfig
from labsupport.sim.network import SimNetwork
from labsupport.model.objects import LAST_APPLIED, clone, merge_for_apply
from labsupport.errors import BackendUnavailable, BadRequest, NotFound
from labsupport.model.kinds import by_kind, resolve
from labsupport.proxy.daemon import KubeProxyDaemons
from labsupport.results import ClusterSnapshot, CurlResult
from labsupport.tool_output import parse_nslookup

STOPPED_LABEL = "labsupport.dev/kube-proxy-stopped"


class EmbeddedBackend:
    """The embedded control plane with the modelled data plane (`sim`); `netns` swaps in a real kernel's."""

    name = "sim"
    #: The Lab options this backend takes besides the shared ones.
    options_allowed = frozenset({"control_plane", "node_labels", "max_pods", "name"})

    def __init__(self, *, seed: int = 0, proxy_mode: str = "iptables", workers: int = 3,
                 zones: tuple[str, ...] | None = None, max_endpoints_per_slice: int = 100, record_events: bool = True,
                 **options: Any):
        real_programs = sorted(set(options) & {"kube_proxy", "dns"} - self.options_allowed)
        if real_programs:
            given = ", ".join(f"{o}={options[o]!r}" for o in real_programs)
            raise BackendUnavailable(tr('{given}: the real programs run in the node and pod namespaces of the netns '
                                        'backend; use Lab(backend="netns", {given})', given=given))
        unknown = set(options) - self.options_allowed
        if unknown:
            raise BadRequest(f"unknown Lab option(s): {', '.join(sorted(unknown))}")
        self.options = options
        config = ClusterConfig(workers=workers, zones=tuple(zones or ZONES), proxy_mode=proxy_mode,
                               max_endpoints_per_slice=max_endpoints_per_slice, record_events=record_events,
                               control_plane=options.get("control_plane", True),
                               max_pods=options.get("max_pods", 110),
                               extra_node_labels=options.get("node_labels", {}))
        self.preflight(proxy_mode)
        self.cluster = Cluster(config, seed=seed)
        self.proxies = KubeProxyDaemons(self.cluster)
        self.network = self.make_network(seed)
        self.cluster.connect_data_plane(self.network, prober=self.prober())
        self._apiserver = None
        self.start_data_plane(proxy_mode)

    # --- the data plane (what `netns` replaces) ------------------------------------------------------------
    def preflight(self, proxy_mode: str) -> None:
        """Refuse to start when this machine cannot run the data plane (the model runs anywhere)."""

    def make_network(self, seed: int) -> Any:
        """The data plane: where connections go, decided by interpreting kube-proxy's rules."""
        return SimNetwork(self.cluster, self.proxies, seed=seed)

    def prober(self) -> Any:
        """A prober that probes pods for real, or None to let the kubelet model answer."""
        return None

    def start_data_plane(self, proxy_mode: str) -> None:
        """Start what runs beside the cluster once it exists (the model needs nothing)."""

    # --- objects -------------------------------------------------------------------------------------------
    def apply(self, obj: dict, field_validation: str = "Strict") -> dict:
        """Create the object, or update it as `kubectl apply` would (the API server's field validation)."""
        info = by_kind(obj.get("kind", ""), obj.get("apiVersion"))
        meta = obj.get("metadata") or {}
        ns = (meta.get("namespace") or "default") if info.namespaced else None
        current = self.cluster.store.find(info.kind, ns, meta.get("name", "")) if meta.get("name") else None
        obj = clone(obj)
        found: list[str] = []
        check_fields(obj, field_validation, found, stored=current)
        for warning in found:
            warnings.warn(warning_text(warning), UserWarning, stacklevel=3)
        manifest = clone(obj)
        manifest.setdefault("metadata", {}).setdefault("annotations", {})[LAST_APPLIED] = \
            json.dumps(obj, sort_keys=True, separators=(",", ":")) + "\n"
        if current is None:
            return self.cluster.create(manifest)
        return self.cluster.replace(merge_for_apply(current, manifest))

    def create(self, obj: dict, field_validation: str = "Strict") -> dict:
        """Create one object (`kubectl create`: fields validated as the API server does)."""
        obj = clone(obj)
        found: list[str] = []
        check_fields(obj, field_validation, found)
        for warning in found:
            warnings.warn(warning_text(warning), UserWarning, stacklevel=3)
        return self.cluster.create(obj)

    def get(self, kind: str, name: str, namespace: str | None) -> dict:
        """One object."""
        return self.cluster.get(kind, namespace, name)

    def list(self, kind: str, namespace: str | None, selector: Any) -> list[dict]:
        """Objects of a kind."""
        return self.cluster.list(kind, namespace, selector)

    def delete(self, kind: str, name: str, namespace: str | None, grace_period: int | None = None) -> dict:
        """Delete one object."""
        return self.cluster.delete(kind, namespace, name, grace_period=grace_period)

    def scale(self, name: str, replicas: int, namespace: str) -> dict:
        """Set replicas on a Deployment or StatefulSet."""
        kind, _, bare = name.rpartition("/")
        kinds = [resolve(kind).kind] if kind else ["Deployment", "StatefulSet", "ReplicaSet"]
        with self.cluster.lock:
            for k in kinds:
                obj = self.cluster.store.find(k, namespace, bare)
                if obj is not None:
                    new = clone(obj)
                    new["spec"]["replicas"] = replicas
                    new["metadata"].pop("resourceVersion", None)
                    return self.cluster.replace(new)
        raise NotFound.of(resolve(kinds[0]).resource, bare)

    # --- time ----------------------------------------------------------------------------------------------
    def advance(self, seconds: float) -> None:
        """Move the virtual clock."""
        self.cluster.advance(seconds)

    def now(self) -> float:
        """Virtual time."""
        return self.cluster.clock.now

    def wait(self, condition: Callable[[], bool], timeout: float) -> float:
        """Advance timer by timer until the condition holds."""
        __tracebackhide__ = True     # a student's predicate fails on their own line
        start = self.cluster.clock.now
        deadline = start + timeout
        while True:
            if condition():
                return self.cluster.clock.now - start
            with self.cluster.lock:
                due = self.cluster.clock.next_due()
                if self.cluster.clock.now >= deadline:
                    raise TimeoutError(f"the condition did not hold within {timeout:g} s of cluster time")
                step_to = min(deadline, due if due is not None else deadline)
                step_to = max(step_to, self.cluster.clock.now + 0.1)
                self.cluster.advance(min(step_to, deadline) - self.cluster.clock.now)

    def follow_wall_time(self) -> None:
        """Let the virtual clock follow real time (for live demos)."""
        self.cluster.clock.follow_wall_time(True)

    # --- network -------------------------------------------------------------------------------------------
    def nslookup(self, name: str, pod: str | None):
        """nslookup through the cluster DNS; in a pod, printed as that pod's image's nslookup prints it."""
        self.before_traffic()
        with self.cluster.lock:
            found = self._pod_for_nslookup(pod) if pod else None
            if found is None:
                return self.network.nslookup(name, pod)
            # the very command `kubectl exec <pod> -- nslookup <name>` runs (busybox's own format)
            result = self.cluster.kubelet.exec(found, None, ["nslookup", name])
            self.cluster.settle()
            if not result.stdout:           # no running container to run it in: ask from the pod's address
                return self.network.nslookup(name, pod)
            answer = parse_nslookup(result.stdout + result.stderr, name)
            answer.text = result.stdout + result.stderr             # exactly as printed
            if answer.addresses:            # busybox asks each search name: one that answered is the answer
                answer.rcode = "NOERROR"
            return answer

    def _pod_for_nslookup(self, pod: str) -> dict | None:
        """The pod named by `pod` ("name", "pod/name", "pod/ns/name") when its image ships busybox's nslookup."""
        parts = pod.removeprefix("pod/").split("/")
        namespace, name = (parts[0], parts[1]) if len(parts) == 2 else ("default", parts[0])
        obj = self.cluster.store.find("Pod", namespace, name)
        containers = (obj or {}).get("spec", {}).get("containers") or []
        if not containers or image_for(image_repository(containers[0].get("image", ""))).nslookup != "busybox":
            return None
        return obj

    def curl(self, url: str, source: str, **options: Any):
        """One request."""
        self.before_traffic()
        with self.cluster.lock:
            return self.network.curl(url, source, **options)

    def curl_batch(self, url: str, source: str, count: int, **options: Any) -> list[CurlResult]:
        """`count` requests one after another."""
        return [self.curl(url, source, **options) for _ in range(count)]

    def connect(self, url: str, source: str):
        """A keep-alive connection."""
        self.before_traffic()
        with self.cluster.lock:
            return self.network.connect(url, source)

    def trace(self, url: str, source: str):
        """Trace one new connection."""
        self.before_traffic()
        with self.cluster.lock:
            return self.network.trace(url, source)

    def _node_name(self, node: str | None) -> str:
        if node is None:
            workers = [n["metadata"]["name"] for n in self.cluster.store.list("Node")
                       if "node-role.kubernetes.io/control-plane" not in n["metadata"]["labels"]]
            return (workers or [n["metadata"]["name"] for n in self.cluster.store.list("Node")])[0]
        node = node.split("/", 1)[1] if node.startswith("node/") else node
        if self.cluster.store.find("Node", None, node) is None:
            raise NotFound.of("nodes", node)
        return node

    def before_traffic(self) -> None:
        """Let whatever programs the data plane catch up before a packet is sent (the model is always current)."""

    def proxy_rules(self, node: str | None) -> str:
        """The node's rules."""
        with self.cluster.lock:
            return self.proxies.rules(self._node_name(node))

    def conntrack(self, node: str | None) -> list[str]:
        """The node's conntrack table."""
        with self.cluster.lock:
            return self.network.conntrack(self._node_name(node))

    # --- kube-proxy ----------------------------------------------------------------------------------------
    def proxy_mode(self) -> str:
        """The first worker's kube-proxy mode."""
        return self.proxies.mode(self._node_name(None))

    def set_proxy_mode(self, mode: str) -> None:
        """Edit the ConfigMap and roll the kube-proxy DaemonSet, then wait for every agent to run the new mode."""
        with self.cluster.lock:
            cm = clone(self.cluster.store.get("ConfigMap", "kube-system", "kube-proxy"))
            config = yaml.safe_load(cm["data"]["config.conf"]) or {}
            config["mode"] = mode
            cm["data"]["config.conf"] = yaml.safe_dump(config, sort_keys=False)
            cm["metadata"].pop("resourceVersion", None)
            self.cluster.replace(cm)
            for pod in self.cluster.store.list("Pod", "kube-system"):
                if (pod["metadata"].get("labels") or {}).get("k8s-app") == "kube-proxy":
                    self.cluster.delete("Pod", "kube-system", pod["metadata"]["name"], grace_period=1)
        nodes = [n["metadata"]["name"] for n in self.cluster.store.list("Node")]
        self.wait(lambda: all(self.proxies.running.get(n) and self.proxies.agents[n].mode == mode for n in nodes), 120)

    def stop_kube_proxy(self, node: str | None) -> None:
        """Keep kube-proxy off a node (label the node so the DaemonSet leaves it); its rules stay."""
        self._label_nodes(node, {STOPPED_LABEL: "true"})
        names = [self._node_name(node)] if node else [n["metadata"]["name"] for n in self.cluster.store.list("Node")]
        self.wait(lambda: not any(self.proxies.running.get(n) for n in names), 120)

    def start_kube_proxy(self, node: str | None) -> None:
        """Let the DaemonSet run kube-proxy on a node again."""
        self._label_nodes(node, {STOPPED_LABEL: None})
        names = [self._node_name(node)] if node else [n["metadata"]["name"] for n in self.cluster.store.list("Node")]
        self.wait(lambda: all(self.proxies.running.get(n) for n in names), 120)

    def _label_nodes(self, node: str | None, labels: dict) -> None:
        with self.cluster.lock:
            targets = [self._node_name(node)] if node else [n["metadata"]["name"] for n in self.cluster.store.list("Node")]
            for name in targets:
                obj = clone(self.cluster.store.get("Node", None, name))
                for k, v in labels.items():
                    if v is None:
                        obj["metadata"]["labels"].pop(k, None)
                    else:
                        obj["metadata"]["labels"][k] = v
                obj["metadata"].pop("resourceVersion", None)
                self.cluster.replace(obj)

    # --- pods ----------------------------------------------------------------------------------------------
    def exec(self, pod: str, argv: list[str], namespace: str, container: str | None):
        """kubectl exec."""
        with self.cluster.lock:
            obj = self.cluster.store.get("Pod", namespace, pod)
            result = self.cluster.kubelet.exec(obj, container, argv)
            self.cluster.settle()
            return result

    def logs(self, pod: str, namespace: str, container: str | None) -> str:
        """kubectl logs."""
        with self.cluster.lock:
            return self.cluster.kubelet.logs(self.cluster.store.get("Pod", namespace, pod), container)

    # --- tools ---------------------------------------------------------------------------------------------
    def apiserver(self):
        """The embedded API server, started on first use; in a browser tab, answering in this process."""
        if self._apiserver is None:
            if IN_BROWSER:
                from labsupport.apiserver.inprocess import InProcessAPI
                self._apiserver = InProcessAPI(self.cluster)
            else:
                from labsupport.apiserver import APIServer
                self._apiserver = APIServer(self.cluster)
                self._apiserver.start()
        return self._apiserver

    def kubeconfig(self) -> str:
        """A kubeconfig for the embedded API server."""
        return self.apiserver().kubeconfig_path

    def kubectl(self, command, *, show: bool = True, input: str | None = None, timeout: float | None = None,
                events: int | None = None):
        """Real kubectl against the embedded API server (in a browser tab, kubectl.wasm against it in process)."""
        from labsupport.kubectl import run_kubectl
        server = self.apiserver()
        return run_kubectl(server.kubeconfig_path, command, show=show, input=input, timeout=timeout, events=events,
                           serve=server.handle if IN_BROWSER else None)

    def meter(self, kinds, watchers):
        """A watch-traffic meter."""
        n = watchers if watchers is not None else self.cluster.store.count("Node")
        return self.cluster.store.meter(kinds, n)

    def client_ip(self) -> str:
        """The outside client's address on the node network."""
        return CLIENT_IP

    # --- the picture ---------------------------------------------------------------------------------------
    def snapshot(self, *, rule_counts: bool = True) -> ClusterSnapshot:
        """Objects and each node's kube-proxy status, read under the cluster's lock."""
        with self.cluster.lock:
            store = self.cluster.store
            workloads = store.list("Deployment") + store.list("StatefulSet")
            return ClusterSnapshot(nodes=store.list("Node"), pods=store.list("Pod"), services=store.list("Service"),
                                   endpointslices=store.list("EndpointSlice"), workloads=workloads,
                                   proxies=self.proxies.status(rule_counts=rule_counts))

    def subscribe(self, callback: Callable[[str], None]) -> Callable[[], None]:
        """Call `callback(kind)` after every write to the store."""
        return self.cluster.store.subscribe(lambda event: callback(event.kind))

    def sync_proxies(self) -> None:
        """Let every running kube-proxy with pending changes sync now."""
        with self.cluster.lock:
            if self.proxies.dirty:
                self.proxies.sync_all()

    def summary_html(self) -> str:
        """A short HTML card for the Lab's repr."""
        nodes = self.cluster.store.list("Node")
        rows = "".join(f"<tr><td>{html.escape(n['metadata']['name'])}</td>"
                       f"<td>{html.escape(self.cluster.node_ip(n))}</td>"
                       f"<td>{html.escape(n['metadata']['labels'].get('topology.kubernetes.io/zone', ''))}</td>"
                       f"<td>{html.escape(n['spec'].get('podCIDR', ''))}</td></tr>" for n in nodes)
        mode = self.proxy_mode()
        return (f"<div><b>{tr('Lab')}</b> — " + tr("backend {backend}, kube-proxy mode {mode}",
                                          backend=f"<code>{self.name}</code>", mode=f"<code>{mode}</code>")
                + f"<table><tr><th>{tr('node')}</th><th>IP</th><th>{tr('zone')}</th><th>pod CIDR</th></tr>"
                f"{rows}</table></div>")

    def close(self) -> None:
        """Stop servers, remove kernel objects."""
        if self._apiserver is not None:
            self._apiserver.stop()
            self._apiserver = None
        close = getattr(self.network, "close", None)
        if close:
            close()
