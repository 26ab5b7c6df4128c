"""The `kind` backend: a kind cluster this machine creates or reuses, with real kube-proxy on real nodes.

`KindCluster` is the lifecycle, as the docker and kind commands it runs (so tests can record them);
`KindBackend` is the kube backend plus what node access gives: kube-proxy's real rules (`iptables-save`,
`nft list table ip kube-proxy`, `ipvsadm -Ln`), conntrack, curl from a node or from a client container on the
kind network, and traces built from the rule counters and conntrack entries a request leaves behind.
"""
from __future__ import annotations

import html
import ipaddress
import secrets
import shlex
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import yaml

from labsupport.i18n import tr
from labsupport.results import CurlResult, Hop, Trace, masquerade_rewrite
from labsupport.errors import APIError, BackendUnavailable, BadRequest, NotFound, ProxyModeUnavailable
from labsupport import tool_output
from labsupport.kind import parse
from labsupport.kind.client import KubeBackend
from labsupport.kind.engine import KIND_NETWORK, cgroup_v1, ensure_network, lacks_sys_resource
from labsupport.kind.loadbalancer import LoadBalancerController, Network, is_ours
from labsupport.kind.node_names import EMBEDDED_NODE_PREFIX, mentioned_nodes, node_alias, rename_nodes
from labsupport.kind.podconn import PodKeepAlive
from labsupport.kind.images import NODE_IMAGE as LOCAL_NODE_IMAGE, local_node_image
from labsupport.kind.config import (CLIENT_IMAGE, DEFAULT_CLUSTER, LESSON_IMAGES, NODE_IMAGE, NODE_PORTS,
                                    POD_SUBNET, PREFIX, cluster_config, config_problems, config_yaml)
from labsupport.kind.preflight import CLIENT_LABEL, delete_cluster, kubeconfig_file, list_clusters, problems, \
    state_dir
from labsupport.kind.progress import KIND_CREATE_STEPS, Progress, make_progress
from labsupport.kind.runner import CommandResult, CommandRunner
from labsupport.model.kinds import resolve

#: kube-proxy's metrics on its node (kind binds them on every address; loopback answers either way).
KUBE_PROXY_METRICS = "http://127.0.0.1:10249/metrics"
#: How long kube-proxy may take to see a write (its informers' delay): traffic waits at least this long after the
#: write, and after the EndpointSlices that follow it, before it trusts kube-proxy's metrics.
NOTICE_SECONDS = 1.0
#: How long traffic waits for kube-proxy to queue a sync after a write when it has queued none since: a write it
#: does not act on (a ConfigMap) queues none, and on a busy machine its informers may take seconds to see one it does.
QUIET_SECONDS = 6.0
#: The longest traffic waits for kube-proxy to write what it noticed.
CATCH_UP_SECONDS = 15.0
#: The longest a proxy-mode switch waits for every restarted kube-proxy's first sync.
RULES_WRITTEN_SECONDS = 90.0
#: The longest `Lab(backend="kind")` waits for every node and system pod of its cluster to be ready.
READY_SECONDS = 600.0
STOPPED_LABEL = "labsupport.dev/kube-proxy-stopped"
#: exits 0 when the node's kernel has IPVS or can load it, 1 when it cannot
IPVS_PROBE = "test -e /proc/net/ip_vs || modprobe -n -q ip_vs 2>/dev/null || exit 1"
CREATE_WAIT = "180s"
#: How many requests `curl_batch` sends in one command before it reads their conntrack entries: a few seconds'
#: work, well inside the 120 s a closed connection's entry stays in TIME_WAIT
CURL_BATCH = 50
#: How many times a node's conntrack table is dumped before what the last dump gave is taken
CONNTRACK_READS = 4
MULTIPATH_HASH_SYSCTL = "net.ipv4.fib_multipath_hash_policy"
#: what `docker inspect` prints of the client container: running, its added capability, its hash policy
CLIENT_STATE_FORMAT = ("{{.State.Running}} {{range .HostConfig.CapAdd}}{{.}}{{end}} "
                       '{{index .HostConfig.Sysctls "' + MULTIPATH_HASH_SYSCTL + '"}}')


@dataclass
class CounterHit:
    """A rule whose counters moved while one request ran (shown in a trace like a matched rule)."""

    table: str
    chain: str
    rule: str
    action: str = ""
    packets: int = 0


class KindCluster:
    """One kind cluster's lifecycle: create or reuse, load images, run commands on its nodes."""

    def __init__(self, name: str = DEFAULT_CLUSTER, proxy_mode: str = "iptables", runner: CommandRunner | None = None,
                 *, workers: int = 3, image: str | None = NODE_IMAGE, node_ports: tuple[int, ...] | None = None,
                 progress: str | None = None, pod_subnet: str = POD_SUBNET):
        if name != PREFIX and not name.startswith(PREFIX + "-"):
            raise BadRequest(f"a lab cluster's name starts with {PREFIX!r} (so `labsupport clean` finds it), "
                             f"not {name!r}: try {PREFIX + '-' + name!r}")
        self.name = name
        self.proxy_mode = proxy_mode
        self.runner = runner or CommandRunner()
        self.workers = workers
        self.image = image
        # localhost:<nodePort> can belong to one cluster only: by default the lab's own cluster publishes the lessons'
        # NodePorts, and any other (a test's, a second lab's) publishes none, so both can run on one host
        self.node_ports = node_ports if node_ports is not None else (NODE_PORTS if name == DEFAULT_CLUSTER else ())
        self.progress_kind = progress
        self.pod_subnet = pod_subnet
        self.cgroup_v1 = cgroup_v1()
        self.restrict_oom_score_adj = lacks_sys_resource()

    @property
    def kubeconfig_path(self) -> Path:
        """Where this cluster's kubeconfig is written (not ~/.kube/config: the lab leaves that alone)."""
        return kubeconfig_file(self.name)

    @property
    def config_path(self) -> Path:
        """Where the generated kind config is written."""
        return state_dir() / f"kind-{self.name}.yaml"

    def config(self) -> dict:
        """The kind Cluster config for this cluster."""
        return cluster_config(self.proxy_mode, name=self.name, workers=self.workers, image=self.image,
                              node_ports=self.node_ports, cgroup_v1=self.cgroup_v1,
                              restrict_oom_score_adj=self.restrict_oom_score_adj, pod_subnet=self.pod_subnet)

    def choose_image(self) -> str | None:
        """The node image: the one `make kind-images` built here when the default is asked for and it exists
        (then on the lab's own `kind` network), else the one given."""
        if self.image == NODE_IMAGE and local_node_image(self.runner):
            self.image = LOCAL_NODE_IMAGE
        if self.image == LOCAL_NODE_IMAGE:
            ensure_network(self.runner)
        return self.image

    def exists(self) -> bool:
        """Whether kind already has a cluster with this name."""
        return self.name in list_clusters(self.runner)

    def _fail(self, what: str, result: CommandResult) -> BackendUnavailable:
        """`what` went wrong (a clause: a command that failed, a container that did not start), with the end of the
        command's output."""
        tail = "\n".join((result.stdout + result.stderr).strip().splitlines()[-8:])
        return BackendUnavailable(tr("{what} (exit code {code}):\n{tail}\nRun `labsupport doctor`, and "
                                     "`labsupport down` to start over.", what=what, code=result.returncode, tail=tail))

    def create(self) -> None:
        """`kind create cluster` from the generated config, its output streamed into a progress display."""
        self.choose_image()
        config = self.config()
        wrong = config_problems(config)
        if wrong:
            raise BadRequest("the generated kind config is invalid: " + "; ".join(wrong))
        self.config_path.write_text(config_yaml(config))
        progress = make_progress(tr("Creating kind cluster {name} (kube-proxy mode {mode})", name=self.name,
                                    mode=self.proxy_mode), len(KIND_CREATE_STEPS), self.progress_kind)
        result = self.runner.stream(["kind", "create", "cluster", "--name", self.name, "--config",
                                     str(self.config_path), "--kubeconfig", str(self.kubeconfig_path),
                                     "--wait", CREATE_WAIT], progress.line, timeout=900)
        progress.finish(result.ok)
        if not result.ok:
            raise self._fail(tr("`{command}` failed", command=f"kind create cluster --name {self.name}"), result)

    def write_kubeconfig(self) -> None:
        """Write the kubeconfig of an existing cluster (`kind get kubeconfig`)."""
        result = self.runner.run(["kind", "get", "kubeconfig", "--name", self.name], timeout=60)
        if not result.ok:
            raise self._fail(tr("`{command}` failed", command=f"kind get kubeconfig --name {self.name}"), result)
        self.kubeconfig_path.write_text(result.stdout)
        self.kubeconfig_path.chmod(0o600)

    def ensure(self, create: bool = True) -> bool:
        """Reuse the cluster when it exists, else create it; True when it was created now."""
        if self.exists():
            self.write_kubeconfig()
            return False
        if not create:
            raise BackendUnavailable(tr('there is no kind cluster named {name}; create it with Lab(backend="kind") '
                                        "(create=True)", name=self.name))
        self.create()
        return True

    def local_images(self, images: tuple[str, ...] = LESSON_IMAGES) -> list[str]:
        """Which of the lessons' images this machine's Docker already has."""
        return [image for image in images
                if self.runner.run(["docker", "image", "inspect", "--format", "{{.Id}}", image], timeout=60).ok]

    def load_images(self, images: tuple[str, ...] = LESSON_IMAGES) -> list[str]:
        """Preload the lessons' images present locally into every node (`kind load docker-image`)."""
        present = self.local_images(images)
        if not present:
            return []
        progress: Progress = make_progress(tr("Loading {count} image(s) into {name}", count=len(present),
                                              name=self.name), len(present), self.progress_kind)
        loaded = []
        for image in present:
            result = self.runner.stream(["kind", "load", "docker-image", image, "--name", self.name],
                                        progress.line, timeout=600)
            if result.ok:
                loaded.append(image)
            progress.step(tr("loaded {image}", image=image) if result.ok else
                          tr("could not load {image}", image=image))
        progress.finish(len(loaded) == len(present))
        return loaded

    def nodes(self) -> list[str]:
        """The node containers (`kind get nodes`), control plane first."""
        result = self.runner.run(["kind", "get", "nodes", "--name", self.name], timeout=60)
        names = sorted(line.strip() for line in result.stdout.splitlines() if line.strip()) if result.ok else []
        return sorted(names, key=lambda n: (not n.endswith("-control-plane"), len(n), n))

    def node_exec(self, node: str, argv: list[str], input: str | None = None, timeout: float = 120) -> CommandResult:
        """Run a command on a node (`docker exec <node> …`)."""
        return self.runner.run(["docker", "exec", *(["-i"] if input is not None else []), node, *argv],
                               input=input, timeout=timeout)

    def node_pid(self, node: str) -> int | None:
        """The PID of a node container's init, whose network namespace is the node's."""
        result = self.runner.run(["docker", "inspect", "-f", "{{.State.Pid}}", node], timeout=60)
        text = result.stdout.strip()
        return int(text) if result.ok and text.isdigit() and int(text) > 0 else None

    @property
    def client_name(self) -> str:
        """The client container's name."""
        return f"{self.name}-client"

    def ensure_client(self) -> str:
        """Start (once) a container on the kind network to curl from "outside the cluster". It may set routes
        (NET_ADMIN: the kind load balancer's routes live there) and hashes a connection's ports to pick among
        equal routes (`net.ipv4.fib_multipath_hash_policy=1`); a client container made without them is made
        again."""
        state = self.runner.run(["docker", "inspect", "-f", CLIENT_STATE_FORMAT, self.client_name], timeout=60)
        words = state.stdout.split()
        if state.ok and words[:1] == ["true"] and "NET_ADMIN" in state.stdout and words[-1:] == ["1"]:
            return self.client_name
        if state.ok:
            self.runner.run(["docker", "rm", "-f", self.client_name], timeout=60)
        result = self.runner.run(["docker", "run", "-d", "--name", self.client_name, "--network", "kind",
                                  "--label", f"{CLIENT_LABEL}={self.name}", "--cap-add", "NET_ADMIN",
                                  "--sysctl", f"{MULTIPATH_HASH_SYSCTL}=1", "--entrypoint", "sleep", CLIENT_IMAGE,
                                  "infinity"], timeout=300)
        if not result.ok:
            raise self._fail(tr("the client container {name} did not start", name=self.client_name), result)
        return self.client_name

    def client_exec(self, argv: list[str], input: str | None = None, timeout: float = 120) -> CommandResult:
        """Run a command in the client container (with `input` on its stdin when given)."""
        return self.runner.run(["docker", "exec", *(["-i"] if input is not None else []), self.ensure_client(),
                                *argv], input=input, timeout=timeout)

    def network(self) -> Network:
        """The kind Docker network the nodes sit on (`docker network inspect kind`)."""
        result = self.runner.run(["docker", "network", "inspect", KIND_NETWORK], timeout=60)
        if not result.ok:
            raise self._fail(tr("`{command}` failed", command=f"docker network inspect {KIND_NETWORK}"), result)
        return Network.from_inspect(result.stdout)

    def client_ip(self) -> str | None:
        """The client container's address on the kind network."""
        result = self.runner.run(["docker", "inspect", "-f", "{{.NetworkSettings.Networks.kind.IPAddress}}",
                                  self.client_name], timeout=60)
        return result.stdout.strip() or None if result.ok else None

    def delete(self) -> list[str]:
        """Delete the cluster, the client container and the kubeconfig."""
        return delete_cluster(self.name, self.runner)


def not_ready(expected: list[str], nodes: list[dict], pods: list[dict]) -> list[str]:
    """What keeps a cluster from being ready: a node (of the `expected` names) not registered or not Ready, a
    kube-system pod not running or not ready. Empty when everything is.

    >>> node = {"metadata": {"name": "c-worker"}, "status": {"conditions": [{"type": "Ready", "status": "False"}]}}
    >>> not_ready(["c-control-plane", "c-worker"], [node], [])
    ['node c-control-plane not registered', 'node c-worker not Ready']
    """
    found = []
    registered = {n["metadata"]["name"]: n for n in nodes}
    for name in expected:
        node = registered.get(name)
        if node is None:
            found.append(tr("node {node} not registered", node=name))
        elif not any(c.get("type") == "Ready" and c.get("status") == "True"
                     for c in (node.get("status") or {}).get("conditions") or []):
            found.append(tr("node {node} not Ready", node=name))
    for pod in pods:
        status = pod.get("status") or {}
        if status.get("phase") == "Succeeded":
            continue
        if status.get("phase") != "Running" or not all(c.get("ready") for c in status.get("containerStatuses") or []):
            found.append(tr("pod kube-system/{pod} {phase}", pod=pod["metadata"]["name"],
                            phase=status.get("phase") or "Pending"))
    return found


class KindBackend(KubeBackend):
    """The Lab verbs on a kind cluster: the kube backend plus node access through Docker."""

    name = "kind"

    def __init__(self, proxy_mode: str = "iptables", *, namespace: str | None = None, name: str = DEFAULT_CLUSTER,
                 workers: int = 3, image: str | None = NODE_IMAGE, load_images: bool = True,
                 runner: CommandRunner | None = None, progress: str | None = None,
                 node_ports: tuple[int, ...] | None = None, request_timeout: float = 30, create: bool = True,
                 preflight: bool = True, load_balancer: bool = True, pod_subnet: str = POD_SUBNET,
                 ready_timeout: float = READY_SECONDS):
        runner = runner or CommandRunner()
        if preflight:
            found = problems(proxy_mode, runner)
            if found:
                raise BackendUnavailable(tr("the kind backend cannot run here:\n  - {problems}\n(`labsupport doctor` "
                                            "checks again; the sim backend needs nothing)",
                                            problems="\n  - ".join(found)))
        self.kind_cluster = KindCluster(name, proxy_mode, runner, workers=workers, image=image,
                                        node_ports=node_ports, progress=progress, pod_subnet=pod_subnet)
        created = self.kind_cluster.ensure(create=create)
        if load_images:
            self.kind_cluster.load_images()
        super().__init__(str(self.kind_cluster.kubeconfig_path), namespace or "default", proxy_mode=proxy_mode,
                         runner=runner, request_timeout=request_timeout)
        self._virtual = False
        self._last_write: float | None = None
        self._caught_up: dict[str, float] = {}
        self.load_balancer: LoadBalancerController | None = None
        self.load_balancer_problem: str | None = None
        try:
            self.wait_until_ready(ready_timeout)
        except BaseException:
            self.close()
            raise
        if not created and self.proxy_mode() != proxy_mode:
            self.set_proxy_mode(proxy_mode)
        if load_balancer:
            self._start_load_balancer()

    def wait_until_ready(self, timeout: float = READY_SECONDS) -> None:
        """Until every node of the cluster (`kind get nodes`) is registered and Ready, and every kube-system pod
        (CNI, kube-proxy, the NetworkPolicy firewall, CoreDNS) runs and is ready: `kind create cluster --wait` covers
        the control plane only, and a Deployment made before the workers are Ready all lands on the first one."""
        expected = self.kind_cluster.nodes()
        pending: list[str] = []

        def ready() -> bool:
            pending[:] = not_ready(expected, self.list("nodes", None, None), self.list("pods", "kube-system", None))
            return not pending

        if ready():
            return
        progress = make_progress(tr("Waiting for the nodes of {cluster} to be Ready", cluster=self.kind_cluster.name),
                                 1, self.kind_cluster.progress_kind)
        try:
            self._wait(ready, timeout, ("nodes", "pods"), what="the cluster's nodes and system pods")
        except TimeoutError:
            progress.finish(False)
            raise BackendUnavailable(tr("kind cluster {cluster} is not ready after {seconds:g} s: {pending}. `kubectl "
                                        "describe node` and `kubectl -n kube-system get pods` show why",
                                        cluster=self.kind_cluster.name, seconds=timeout,
                                        pending="; ".join(pending))) from None
        progress.finish(True)

    # --- the load balancer --------------------------------------------------------------------------------------
    def _start_load_balancer(self) -> None:
        """Start the kind load balancer's controller (labsupport/kind/loadbalancer.py) in a background thread;
        where it cannot run, say why when a LoadBalancer Service is applied."""
        try:
            network = self.kind_cluster.network()
            self.load_balancer = LoadBalancerController(
                lambda method, path, body=None, query=None: self._call(method, path, body=body, query=query),
                lambda argv, input=None: self.kind_cluster.client_exec(argv, input), network,
                watch=self._watch_services)
        except (APIError, BackendUnavailable) as e:
            self.load_balancer_problem = str(e)
            return
        self.load_balancer.start()

    def _watch_services(self, version: str | None, seconds: int) -> None:
        """Return at the first change to any Service after `version`, or after `seconds`."""
        response = self._call("GET", "/api/v1/services",
                              query=[("watch", "true"), ("resourceVersion", version),
                                     ("timeoutSeconds", max(1, int(seconds)))], stream=True, timeout=seconds + 5)
        try:
            for chunk in response.stream(4096, decode_content=True):
                if chunk:
                    return
        finally:
            response.release_conn()

    def close(self) -> None:
        """Stop the load balancer's controller (its routes and addresses stay), then close the client."""
        if self.load_balancer is not None:
            self.load_balancer.stop()
        super().close()

    def client_ip(self) -> str:
        """The client container's address on the kind network (the container is started first if need be)."""
        self.kind_cluster.ensure_client()
        return self.kind_cluster.client_ip() or "(the client container)"

    # --- writes, and kube-proxy catching up with them -----------------------------------------------------------
    def _wrote(self) -> None:
        self._last_write = time.time()

    def apply(self, obj: dict, field_validation: str = "Strict") -> dict:
        """As on any cluster; the next request waits until kube-proxy has written what this changed. A
        `type: LoadBalancer` Service returns once the kind load balancer has given it an address (so the next line
        can read `status.loadBalancer.ingress`)."""
        try:
            stored = super().apply(obj, field_validation)
        finally:
            self._wrote()
        if stored.get("kind") != "Service" or not is_ours(stored):
            return stored
        namespace, name = stored["metadata"].get("namespace"), stored["metadata"]["name"]
        if self.load_balancer is None:
            raise BackendUnavailable(tr("Service {name} is of type LoadBalancer, but the kind load balancer is not "
                                        "running: {why}", name=name,
                                        why=self.load_balancer_problem or tr("it was turned off with Lab(..., load_balancer=False)")))
        return self._typed(resolve("services"), self.load_balancer.wait_assigned(namespace, name))

    def _catch_up(self, node: str | None) -> None:
        """Before traffic enters `node`: let its kube-proxy write the last change (bounded). A real kube-proxy
        writes a change within its sync period, so a request sent the instant after `lab.apply` would meet the old
        rules. First every Service of the lab's namespace with a selector must have its EndpointSlice (the
        controller writes it a moment after the Service; without it kube-proxy rejects the Service's ports); then
        kube-proxy's metrics say when it last queued and last finished a sync, and traffic goes once NOTICE_SECONDS
        have passed since the write and the slices and every sync queued by then is done, and kube-proxy has queued a
        sync since the write (or QUIET_SECONDS have passed without one: a write it does not act on)."""
        written = self._last_write
        if node is None or written is None or self._caught_up.get(node, 0.0) >= written:
            return
        deadline = time.monotonic() + CATCH_UP_SECONDS
        while not self._slices_written() and time.monotonic() < deadline:
            time.sleep(0.2)
        settled = max(written, time.time() - NOTICE_SECONDS / 2)
        while time.monotonic() < deadline:
            _, marks = self._sync_marks(node)
            if marks is None:
                break       # no metrics to read (kube-proxy stopped, or no curl on the node): go as before
            queued, synced = marks
            quiet = time.time() - settled
            if synced >= queued and quiet >= NOTICE_SECONDS and (queued >= written or quiet >= QUIET_SECONDS):
                break
            time.sleep(0.2)
        self._caught_up[node] = written

    def _sync_marks(self, node: str) -> tuple[CommandResult, tuple[float, float] | None]:
        """The node's kube-proxy metrics as read, and its (last queued, last synced) times when they hold them."""
        done = self.kind_cluster.node_exec(node, ["curl", "-s", "--max-time", "2", KUBE_PROXY_METRICS])
        return done, (parse.sync_marks(done.stdout) if done.ok else None)

    def _catch_up_for(self, url: str, source: str) -> None:
        try:
            self._catch_up(self._entry_node(url if "://" in url else f"http://{url}", source))
        except (APIError, BackendUnavailable):
            pass

    def connect(self, url: str, source: str) -> Any:
        """A keep-alive connection (see KubeBackend.connect), opened once kube-proxy has caught up."""
        self._catch_up_for(url, source)
        return super().connect(url, source)

    # --- nodes --------------------------------------------------------------------------------------------------
    def _node_objects(self) -> list[dict]:
        return self.list("nodes", None, None)

    def _node_name(self, node: str | None) -> str:
        names = self.kind_cluster.nodes()
        if node is None:
            workers = [n for n in names if not n.endswith("-control-plane")]
            if not (workers or names):
                raise BackendUnavailable(tr("kind cluster {name} has no nodes running", name=self.kind_cluster.name))
            return (workers or names)[0]
        node = node[5:] if node.startswith("node/") else node
        alias = node_alias(node, self.kind_cluster.name, names)
        if alias is not None:
            return alias   # a lesson's "lab-worker" (the embedded cluster's name) is this cluster's "-worker"
        if names and node not in names:
            raise NotFound.of("nodes", node)
        return node

    def _for_this_cluster(self, manifest: dict) -> dict:
        """A manifest's node names of the embedded cluster (`nodeName: lab-worker`, a hostname selector or affinity)
        become this cluster's (`<cluster>-worker`), so the pod lands on the node the lesson means."""
        if not any(n.startswith(EMBEDDED_NODE_PREFIX) for n in mentioned_nodes(manifest)):
            return manifest
        names = self.kind_cluster.nodes()
        return rename_nodes(manifest, lambda n: node_alias(n, self.kind_cluster.name, names) or n)

    def _kube_proxy_pod(self, node: str) -> str | None:
        for pod in self.list("pods", "kube-system", "k8s-app=kube-proxy"):
            if pod.get("spec", {}).get("nodeName") == node and pod.get("status", {}).get("phase") == "Running":
                return pod["metadata"]["name"]
        return None

    def _node_run(self, node: str, argv: list[str]) -> CommandResult:
        """A command on the node; a tool the node image lacks is run in the node's kube-proxy pod instead (it
        shares the node's network namespace and carries iptables, nft, ipset and conntrack)."""
        result = self.kind_cluster.node_exec(node, argv)
        if result.returncode in (126, 127) or "executable file not found" in result.stderr:
            pod = self._kube_proxy_pod(node)
            if pod is not None:
                done = self.exec(pod, argv, "kube-system", None)
                return CommandResult(argv, done.code, done.stdout, done.stderr)
        return result

    def _exec_ok(self, node: str, argv: list[str]) -> str:
        result = self._node_run(node, argv)
        if not result.ok:
            raise BackendUnavailable(tr("`{command}` on node {node} failed: {output}", command=" ".join(argv),
                                        node=node, output=(result.stderr or result.stdout).strip()[:300]))
        return result.stdout

    def proxy_rules(self, node: str | None) -> str:
        """kube-proxy's real rules on the node, as the node prints them, for the mode kube-proxy runs in."""
        name = self._node_name(node)
        mode = self.proxy_mode()
        if mode == "nftables":
            return self._exec_ok(name, ["nft", "list", "table", "ip", "kube-proxy"])
        if mode == "ipvs":
            return parse.ipvs_bundle(self._ipvsadm(name), self._exec_ok(name, [
                "ip", "-brief", "addr", "show", "kube-ipvs0"]), self._exec_ok(name, ["ipset", "list"]),
                self._exec_ok(name, ["iptables-save"]))
        return parse.kube_proxy_iptables(self._exec_ok(name, ["iptables-save"]))

    def _ipvsadm(self, node: str, stats: bool = False) -> str:
        result = self._node_run(node, ["ipvsadm", "-Ln", *(["--stats"] if stats else [])])
        if result.ok and result.stdout.strip():
            return result.stdout
        if stats:
            return ""
        return parse.proc_ip_vs_to_ipvsadm(self._exec_ok(node, ["cat", "/proc/net/ip_vs"]))

    def conntrack(self, node: str | None) -> list[str]:
        """The node's conntrack entries, as `conntrack -L` prints them."""
        name = self._node_name(node)
        result = self._node_run(name, ["conntrack", "-L"])
        if result.returncode not in (0, 1):
            raise BackendUnavailable(tr("`{command}` on node {node} failed: {output}", command="conntrack -L",
                                        node=name, output=result.stderr.strip()[:300]))
        return tool_output.conntrack_lines(result.stdout)

    def node_routes(self, node: str | None = None) -> list[str]:
        """The node's IPv4 routes, read from its network namespace with pyroute2 (else `ip route` in it)."""
        name = self._node_name(node)
        pid = self.kind_cluster.node_pid(name)
        if pid is not None:
            try:
                from pyroute2 import NetNS
                with NetNS(f"/proc/{pid}/ns/net") as ns:
                    names = {link["index"]: link.get_attr("IFLA_IFNAME") for link in ns.get_links()}
                    out = []
                    for route in ns.get_routes(family=2, table=254):
                        dst = route.get_attr("RTA_DST") or "default"
                        dst = f"{dst}/{route['dst_len']}" if dst != "default" else dst
                        via = route.get_attr("RTA_GATEWAY")
                        dev = names.get(route.get_attr("RTA_OIF"), "?")
                        out.append(f"{dst}{' via ' + via if via else ''} dev {dev}")
                    return out
            except Exception:  # no root, no local Docker daemon, or an older pyroute2: ask the node instead
                pass
        return [line for line in self._exec_ok(name, ["ip", "-4", "route"]).splitlines() if line.strip()]

    def node_links(self, node: str | None = None) -> list[str]:
        """The node's network links (`ip -brief link`), through pyroute2 when the host allows it."""
        name = self._node_name(node)
        pid = self.kind_cluster.node_pid(name)
        if pid is not None:
            try:
                from pyroute2 import NetNS
                with NetNS(f"/proc/{pid}/ns/net") as ns:
                    return [f"{link.get_attr('IFLA_IFNAME')} {link.get_attr('IFLA_OPERSTATE')}"
                            for link in ns.get_links()]
            except Exception:  # see node_routes
                pass
        return [line for line in self._exec_ok(name, ["ip", "-brief", "link"]).splitlines() if line.strip()]

    # --- curl ---------------------------------------------------------------------------------------------------
    def _entry_node(self, target: str, source: str) -> str | None:
        """The node whose netfilter a new connection meets first."""
        kind, _, rest = source.partition("/")
        if kind == "node":
            return self._node_name(rest)
        if kind == "pod":
            ns, name = self._pod_ref(source)
            return self.get("pods", name, ns).get("spec", {}).get("nodeName")
        host = (parse_host(target) or "")
        return self._node_ips().get(host)

    def _by_node_address(self, target: str) -> str:
        """The URL with a node's name as its host (a lesson's `lab-control-plane`, or this cluster's own node
        names) turned into that node's address, as the embedded cluster resolves node names."""
        from urllib.parse import urlsplit, urlunsplit
        parts = urlsplit(target)
        host = parts.hostname
        if not host or parse_host(target) is not None:
            return target
        names = self.kind_cluster.nodes()
        alias = f"{self.kind_cluster.name}-{host[len(EMBEDDED_NODE_PREFIX):]}"
        name = host if host in names else alias if host.startswith(EMBEDDED_NODE_PREFIX) and alias in names else None
        ip = next((ip for ip, node in self._node_ips().items() if node == name), None) if name else None
        if ip is None:
            return target
        netloc = ip + (f":{parts.port}" if parts.port else "")
        return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))

    def _curl_raw(self, url: str, source: str, options: dict) -> tuple[CurlResult, tool_output.CurlOutput | None]:
        target = self._by_node_address(url if "://" in url else f"http://{url}")
        argv = tool_output.curl_argv(target, headers=options.get("headers"), timeout=float(options.get("timeout", 10)))
        kind, _, rest = source.partition("/")
        if source in ("client", "outside", "external"):
            done = self.kind_cluster.client_exec(argv)
            where = f"client container {self.kind_cluster.client_name} (on the kind network)"
        elif kind == "node":
            node = self._node_name(rest)
            done = self.kind_cluster.node_exec(node, argv)
            where = tr("node {node}", node=node)
        elif kind == "pod":
            ns, name = self._pod_ref(source)
            run = self.exec(name, argv, ns, None)
            done = CommandResult(argv, run.code, run.stdout, run.stderr)
            where = tr("pod {pod}", pod=f"{ns}/{name}")
        else:
            raise BadRequest(f"unknown source {source!r}: use \"client\", \"node/<name>\", \"pod/<name>\" or "
                             "\"pod/<namespace>/<name>\"")
        out = tool_output.parse_curl(done.stdout, done.stderr, done.returncode)
        result = self._curl_result(url, source, out)
        result.hops = [Hop(where, f"curl {target}")]
        return result, out

    def curl(self, url: str, source: str, **options: Any) -> CurlResult:
        """One real request from the client container, a node or a pod. Which pod answered and the client address
        it saw come from the app's reply when it tells (agnhost, echoserver), else from the connection's conntrack
        entry on the node it entered (the reply tuple: from the pod, to the address the pod saw). After a write it
        waits until kube-proxy on that node has caught up (`_catch_up`), as `lab.curl` on sim meets the new rules."""
        self._catch_up_for(url, source)
        result, out = self._curl_in_grace(url, source, options)
        if _unplaced(result, out):
            self._from_conntrack(result, out, url, source)
        return result

    def _connection_entry(self, out: tool_output.CurlOutput, url: str,
                          source: str) -> tuple[str | None, tool_output.ConntrackRecord | None]:
        if not out.local_port:
            return None, None
        nodes = self._entry_candidates(out, url, source)

        def read(node: str) -> list[tool_output.ConntrackRecord]:
            return self._conntrack_entries(node, ["-p", "tcp", "--orig-port-src", str(out.local_port)])

        return _find_entry(out, nodes, read)

    def _entry_candidates(self, out: tool_output.CurlOutput, url: str, source: str,
                          chosen: dict[int, str | None] | None = None) -> list[str]:
        """The nodes whose conntrack may hold a request's connection, the likely ones first (`chosen`: the next hop
        the client's kernel picked for each local port, when a batch already asked it)."""
        target = _entry_target(out, url)
        try:
            node = self._entry_node(target, source)
            if node is not None:
                return [node]
            hop = chosen.get(out.local_port) if chosen is not None else self._chosen_hops(target, source, [out])[0]
            nodes = self._balancer_entry_nodes(target, source, hop)
        except APIError:
            return []
        if nodes:
            # the balancer's routes may have moved since this request (a health check changed): every node is a
            # candidate, the likely ones first
            nodes += [n for n in self.kind_cluster.nodes() if n not in nodes]
        return nodes

    def _chosen_hops(self, target: str, source: str, outs: list[tool_output.CurlOutput]) -> list[str | None]:
        """For requests from the client to a load-balancer address: the next hop the client's kernel picks for each
        connection's ports (`ip route get`, one command for them all); None where there is no such route."""
        host = parse_host(target)
        if source not in ("client", "outside", "external") or host is None or self.load_balancer is None \
                or not self.load_balancer.next_hops(host):
            return [None] * len(outs)
        lines = []
        for out in outs:
            line = f"route get {host} ipproto tcp sport {out.local_port}"
            line += f" dport {out.remote_port}" if out.remote_port else ""
            lines.append(line + (f" from {out.local_ip}" if out.local_ip else ""))
        answers = self.kind_cluster.client_exec(["ip", "-4", "-o", "-force", "-batch", "-"],
                                                input="\n".join(lines) + "\n").stdout.splitlines()
        if len(answers) != len(outs):
            answers = [self.kind_cluster.client_exec(["ip", "-4", "-o", *line.split()]).stdout for line in lines]
        return [words[words.index("via") + 1] if "via" in words[:-1] else None
                for words in (answer.split() for answer in answers)]

    def _balancer_entry_nodes(self, target: str, source: str, chosen: str | None) -> list[str]:
        """The nodes a request from the client to a load-balancer address may have entered: first the next hop
        the client's kernel picked for the connection's ports (`chosen`), then the route's other ones."""
        host = parse_host(target)
        if source not in ("client", "outside", "external") or host is None or self.load_balancer is None:
            return []
        hops = list(self.load_balancer.next_hops(host))
        if not hops:
            return []
        if chosen in hops:
            hops.remove(chosen)
            hops.insert(0, chosen)
        names = self._node_ips()
        return [names[ip] for ip in hops if ip in names]

    def _from_conntrack(self, result: CurlResult, out: tool_output.CurlOutput, url: str, source: str) -> None:
        _, record = self._connection_entry(out, url, source)
        self._fill_from_entry(result, record)

    def _fill_from_entry(self, result: CurlResult, record: tool_output.ConntrackRecord | None,
                         pods: list[dict] | None = None) -> None:
        """What a request's result does not know yet, from its connection's conntrack entry."""
        if record is None:
            return
        if result.client_ip is None:
            result.client_ip, result.client_port = record.seen_client, record.reply.dport
        if result.pod is None:
            pod = self._pod_by_ip(record.reply.src, pods)
            if pod is not None:
                result.pod = pod["metadata"]["name"]
                result.namespace = pod["metadata"].get("namespace")
                result.node = pod.get("spec", {}).get("nodeName")
                result.endpoint = record.endpoint

    def curl_batch(self, url: str, source: str, count: int, **options: Any) -> list[CurlResult]:
        """`count` requests one after another, each a new connection, answered as `count` calls of `curl` answer
        them. curl runs CURL_BATCH times in one command where it runs (the client container, a node or a pod), and
        who answered is read from each node's conntrack table once per batch, not once per request."""
        self._catch_up_for(url, source)
        results: list[CurlResult] = []
        while len(results) < count:
            results += self._curl_chunk(url, source, min(CURL_BATCH, count - len(results)), options)
        return results

    def _curl_chunk(self, url: str, source: str, count: int, options: dict) -> list[CurlResult]:
        target = self._by_node_address(url if "://" in url else f"http://{url}")
        seconds = float(options.get("timeout", 10))
        boundary = f"__labsupport_batch_{secrets.token_hex(8)}__"
        script = parse.repeat_argv(tool_output.curl_argv(target, headers=options.get("headers"), timeout=seconds),
                                   count, boundary)
        limit = count * (seconds + 5) + 60
        kind, _, rest = source.partition("/")
        if source in ("client", "outside", "external"):
            done = self.kind_cluster.client_exec(script, timeout=limit)
            where = f"client container {self.kind_cluster.client_name} (on the kind network)"
        elif kind == "node":
            node = self._node_name(rest)
            done = self.kind_cluster.node_exec(node, script, timeout=limit)
            where = tr("node {node}", node=node)
        elif kind == "pod":
            ns, name = self._pod_ref(source)
            done = self._kubectl_run(self._exec_args(name, script, ns, None), timeout=limit)
            where = tr("pod {pod}", pod=f"{ns}/{name}")
        else:
            raise BadRequest(f"unknown source {source!r}: use \"client\", \"node/<name>\", \"pod/<name>\" or "
                             "\"pod/<namespace>/<name>\"")
        pods = self._pods()
        runs: list[tuple[CurlResult, tool_output.CurlOutput | None]] = []
        for code, stdout, stderr in parse.repeated_runs(done.stdout, boundary):
            out = tool_output.parse_curl(stdout, stderr, code)
            result = self._curl_result(url, source, out, pods)
            result.hops = [Hop(where, f"curl {target}")]
            runs.append(self._again_in_grace(url, source, options, result, out))
        # what the batch did not run (a shell without mktemp, a timeout), one request at a time
        runs += [self._curl_in_grace(url, source, options) for _ in range(count - len(runs))]
        unknown = [(result, out) for result, out in runs if _unplaced(result, out)]
        if unknown:
            pods = self._pods()
            for (result, _), record in zip(unknown, self._connection_entries([o for _, o in unknown], url, source)):
                self._fill_from_entry(result, record, pods)
            # what one dump per node missed (an entry written late, a node the routes did not name): each alone,
            # on every node
            for result, out in unknown:
                if _unplaced(result, out):
                    self._fill_from_entry(result, self._connection_entry(out, url, source)[1], pods)
        return [result for result, _ in runs]

    def _connection_entries(self, outs: list[tool_output.CurlOutput], url: str,
                            source: str) -> list[tool_output.ConntrackRecord | None]:
        """The conntrack entry of each of a batch's connections (None where none is found), each node's table read
        at most once for them all."""
        chosen: dict[int, str | None] = {}
        by_target: dict[str, list[tool_output.CurlOutput]] = {}
        for out in outs:
            if out.local_port:
                by_target.setdefault(_entry_target(out, url), []).append(out)
        for target, group in by_target.items():
            chosen.update(zip((o.local_port for o in group), self._chosen_hops(target, source, group)))
        sources = {o.local_ip for o in outs}
        tables: dict[str, list[tool_output.ConntrackRecord]] = {}

        def read(node: str) -> list[tool_output.ConntrackRecord]:
            if node not in tables:
                argv = ["-p", "tcp"]
                argv += ["--orig-src", next(iter(sources))] if len(sources) == 1 and None not in sources else []
                tables[node] = self._conntrack_entries(node, argv)
            return tables[node]

        candidates: dict[tuple, list[str]] = {}
        found = []
        for out in outs:
            if not out.local_port:
                found.append(None)
                continue
            key = (out.remote_ip, chosen.get(out.local_port))
            if key not in candidates:
                candidates[key] = self._entry_candidates(out, url, source, chosen)
            found.append(_find_entry(out, candidates[key], read)[1])
        return found

    def _conntrack_entries(self, node: str, filters: list[str]) -> list[tool_output.ConntrackRecord]:
        """A node's conntrack entries that match `filters` (`conntrack -L` options). A dump of a large table on a busy
        node can fail part way ("Operation failed: No buffer space available", the netlink socket overrun) and leave
        entries out: it is read again, up to CONNTRACK_READS times, until one dump completes."""
        argv = ["conntrack", "-L", *filters]
        done = self._node_run(node, argv)
        for _ in range(CONNTRACK_READS - 1):
            if done.returncode in (0, 1) and "Operation failed" not in done.stderr:
                break
            time.sleep(0.2)
            done = self._node_run(node, argv)
        return tool_output.parse_conntrack(done.stdout)

    def _identify_connection(self, result: CurlResult, conn: PodKeepAlive, known: CurlResult | None) -> None:
        """As on any cluster (the app's reply, else the connection's first answer); what is still unknown comes
        from the connection's conntrack entry on the client pod's node, found by the local port of nc's socket."""
        super()._identify_connection(result, conn, known)
        if (result.pod is None or result.client_ip is None) and conn.socket is not None:
            out = tool_output.CurlOutput(body="", status=result.status, local_ip=conn.socket.local_ip,
                                         local_port=conn.socket.local_port)
            self._from_conntrack(result, out, conn.url, conn.source)

    # --- trace --------------------------------------------------------------------------------------------------
    def _counters(self, node: str, mode: str) -> list[parse.RuleCounter]:
        if mode == "iptables":
            _, counters = parse.strip_iptables_counters(self._exec_ok(node, ["iptables-save", "-c"]))
            return [c for c in counters if c.chain.startswith("KUBE-") or "KUBE-" in c.rule]
        if mode == "nftables":
            return parse.nft_counters(self._exec_ok(node, ["nft", "list", "table", "ip", "kube-proxy"]))
        return parse.ipvs_stats(self._ipvsadm(node, stats=True))

    def trace(self, url: str, source: str) -> Trace:
        """One real request, with the kube-proxy rules whose counters it moved and its conntrack entry."""
        target = self._by_node_address(url if "://" in url else f"http://{url}")
        node = self._entry_node(target, source)
        self._catch_up(node)
        mode = self.proxy_mode()
        before = {(c.table, c.chain, c.rule): c.packets for c in self._counters(node, mode)} if node else {}
        result, out = self._curl_raw(url, source, {})
        hops = list(result.hops)
        if node:
            after = self._counters(node, mode)
            moved = [CounterHit(c.table, c.chain, c.rule, parse._rule_target(c.rule) or "",
                                c.packets - before.get((c.table, c.chain, c.rule), 0))
                     for c in after if c.packets > before.get((c.table, c.chain, c.rule), 0)]
            note = (tr("netfilter on {node} ({mode}): {count} kube-proxy rule(s) counted this request", node=node,
                       mode=mode, count=len(moved))
                    + ("" if mode != "nftables" else tr(" (kube-proxy's nftables rules carry no counters; the "
                                                        "conntrack entry below shows the DNAT)")))
            rewrites = []
            if out is not None:
                _, record = self._connection_entry(out, url, source)
                if record is not None:
                    # the entry itself is what the node shows; the rewrites are the NAT it records, in sim's words
                    note += f"\nconntrack: {record.line}"
                    if record.dnat:
                        rewrites.append(f"DNAT {record.original.dst}:{record.original.dport} -> {record.endpoint}")
                    if record.snat:
                        rewrites.append(masquerade_rewrite(f"{record.original.src}:{record.original.sport}",
                                                           f"{record.reply.dst}:{record.reply.dport}"))
                    pod = self._pod_by_ip(record.reply.src)
                    if pod is not None and result.pod is None:
                        result.pod, result.namespace = pod["metadata"]["name"], pod["metadata"].get("namespace")
                        result.node, result.endpoint = pod.get("spec", {}).get("nodeName"), record.endpoint
            hops.append(Hop(node, note, moved, rewrites))
        result.hops = hops
        return Trace(url, source, result)

    # --- kube-proxy ---------------------------------------------------------------------------------------------
    def ipvs_problem(self) -> str | None:
        """Why kube-proxy cannot run in IPVS mode on this cluster's nodes, or None when it can. The nodes share the
        Docker host's kernel: IPVS is there when `/proc/net/ip_vs` exists (ip_vs built in or loaded) or `modprobe`
        finds the module to load (asked as a dry run, so nothing is loaded into the host's kernel here)."""
        node = self._node_name(None)
        probe = self.kind_cluster.node_exec(node, ["sh", "-c", IPVS_PROBE])
        if probe.ok:
            return None
        if probe.returncode != 1:
            raise BackendUnavailable(tr("`{command}` on node {node} failed: {output}", command=IPVS_PROBE, node=node,
                                        output=(probe.stderr or probe.stdout).strip()[:300]))
        release = self.kind_cluster.node_exec(node, ["uname", "-r"]).stdout.strip() or "?"
        return tr("the Linux kernel {release} that kind's nodes share with the Docker host has no IPVS (no "
                  "/proc/net/ip_vs, and `modprobe ip_vs` finds no module)", release=release)

    def set_proxy_mode(self, mode: str) -> None:
        """Edit `mode` in the kube-proxy ConfigMap and restart kube-proxy's pods, as on any real cluster. IPVS is
        refused before anything changes when the nodes' kernel has no IPVS (kube-proxy would only crash-loop)."""
        current = self.proxy_mode()
        if mode == "ipvs" and current != "ipvs":
            reason = self.ipvs_problem()
            if reason is not None:
                raise ProxyModeUnavailable(mode, reason, tr(
                    "kube-proxy cannot switch to IPVS mode on kind cluster {cluster}: {reason}. kube-proxy stays in "
                    '{current} mode. See IPVS on the sim backend (Lab(backend="sim", proxy_mode="ipvs")), or run '
                    "kind on a Docker host whose kernel has IPVS (`sudo modprobe ip_vs` there must succeed)",
                    cluster=self.kind_cluster.name, reason=reason, current=current))
        cm = self.get("configmaps", "kube-proxy", "kube-system")
        config = yaml.safe_load(cm["data"]["config.conf"]) or {}
        config["mode"] = mode
        cm["data"]["config.conf"] = yaml.safe_dump(config, sort_keys=False)
        self._call("PUT", self._path_of("configmaps", "kube-system", "kube-proxy"), body=cm)
        for pod in self.list("pods", "kube-system", "k8s-app=kube-proxy"):
            self.delete("pods", pod["metadata"]["name"], "kube-system", grace_period=1)
        self._configured_mode = mode

        def rolled() -> bool:
            pods = self.list("pods", "kube-system", "k8s-app=kube-proxy")
            return bool(pods) and len(pods) == len(self._node_objects()) and all(
                p.get("status", {}).get("phase") == "Running" and not p["metadata"].get("deletionTimestamp")
                for p in pods)

        self._wait(rolled, 180, ("pods",), what=f"kube-proxy restarting in {mode} mode")
        self._wait_for_first_sync()

    def _wait_for_first_sync(self) -> None:
        """Until every node's new kube-proxy has written its rules once (bounded by RULES_WRITTEN_SECONDS): a Running
        pod has not yet synced, and its table (`nft list table ip kube-proxy`) may not exist yet. Its sync gauges
        appear with its first sync; a node whose metrics are not kube-proxy's is not waited for."""
        pending = list(self.kind_cluster.nodes())
        deadline = time.monotonic() + RULES_WRITTEN_SECONDS
        while pending and time.monotonic() < deadline:
            for node in list(pending):
                done, marks = self._sync_marks(node)
                if (marks is not None and marks[1] > 0) or (done.ok and "kubeproxy_" not in done.stdout):
                    pending.remove(node)
            if pending:
                time.sleep(0.5)

    def _path_of(self, kind: str, namespace: str | None, name: str | None = None) -> str:
        return self._path(resolve(kind), namespace, name)

    def _keep_off_stopped_nodes(self) -> None:
        """Give the kube-proxy DaemonSet a node affinity that leaves nodes labelled as stopped (once)."""
        ds = self.get("daemonsets", "kube-proxy", "kube-system")
        affinity = ds["spec"]["template"]["spec"].setdefault("affinity", {})
        terms = affinity.setdefault("nodeAffinity", {}).setdefault(
            "requiredDuringSchedulingIgnoredDuringExecution", {}).setdefault("nodeSelectorTerms", [])
        rule = {"key": STOPPED_LABEL, "operator": "DoesNotExist"}
        if any(rule in t.get("matchExpressions", []) for t in terms):
            return
        if terms:
            for term in terms:
                term.setdefault("matchExpressions", []).append(rule)
        else:
            terms.append({"matchExpressions": [rule]})
        self._call("PUT", self._path_of("daemonsets", "kube-system", "kube-proxy"), body=ds)

    def _label_nodes(self, node: str | None, value: str | None) -> list[str]:
        names = [self._node_name(node)] if node else [n["metadata"]["name"] for n in self._node_objects()]
        for name in names:
            obj = self.get("nodes", name, None)
            labels = obj["metadata"].setdefault("labels", {})
            if value is None:
                labels.pop(STOPPED_LABEL, None)
            else:
                labels[STOPPED_LABEL] = value
            self._call("PUT", self._path_of("nodes", None, name), body=obj)
        return names

    def _proxy_running(self, node: str) -> bool:
        return any(p.get("spec", {}).get("nodeName") == node and p.get("status", {}).get("phase") == "Running"
                   and not p["metadata"].get("deletionTimestamp")
                   for p in self.list("pods", "kube-system", "k8s-app=kube-proxy"))

    def stop_kube_proxy(self, node: str | None) -> None:
        """Keep kube-proxy off a node (label + DaemonSet affinity); the node keeps its last rules."""
        self._keep_off_stopped_nodes()
        names = self._label_nodes(node, "true")
        self._wait(lambda: not any(self._proxy_running(n) for n in names), 180, ("pods",),
                   what="kube-proxy stopping")

    def start_kube_proxy(self, node: str | None) -> None:
        """Let kube-proxy run on the node again; it resyncs at once."""
        names = self._label_nodes(node, None)
        self._wait(lambda: all(self._proxy_running(n) for n in names), 180, ("pods",), what="kube-proxy starting")

    # --- tools --------------------------------------------------------------------------------------------------
    def kubeconfig(self) -> str:
        """kind's kubeconfig for this cluster; for a lab in a namespace of its own, a copy whose context names that
        namespace, so `lab.kubectl("delete pod web-0")` acts where the lab's verbs act."""
        if self.namespace == "default":
            return str(self.kind_cluster.kubeconfig_path)
        return super().kubeconfig()

    def summary_html(self) -> str:
        """A short HTML card for the Lab's repr."""
        return super().summary_html().replace(
            "<code>kind</code>",
            "<code>kind</code> " + tr("(cluster {cluster}, kube-proxy {mode})",
                                      cluster=f"<code>{html.escape(self.kind_cluster.name)}</code>",
                                      mode=f"<code>{html.escape(self.proxy_mode())}</code>"), 1)

    def delete_cluster(self) -> list[str]:
        """Delete the kind cluster (what `labsupport down` does)."""
        self.close()
        return self.kind_cluster.delete()


def _entry_target(out: tool_output.CurlOutput, url: str) -> str:
    """The URL a request's connection went to: the URL, or where its host is a name, the address curl connected to."""
    target = url if "://" in url else f"http://{url}"
    return f"http://{out.remote_ip}/" if parse_host(target) is None and out.remote_ip else target


def _unplaced(result: CurlResult, out: tool_output.CurlOutput | None) -> bool:
    """Whether an answered request's result still lacks who answered it or the client address it saw."""
    return result.ok and out is not None and (result.pod is None or result.client_ip is None)


def _find_entry(out: tool_output.CurlOutput, nodes: list[str], read: Callable[[str], list[tool_output.ConntrackRecord]]
                ) -> tuple[str | None, tool_output.ConntrackRecord | None]:
    """The first of `nodes` whose conntrack entries (`read(node)`) hold the connection curl reported in `out`: its
    local port, and its local and remote addresses where curl said them."""
    for node in nodes:
        for record in read(node):
            if record.original.sport == out.local_port and \
                    (not out.local_ip or record.original.src == out.local_ip) and \
                    (not out.remote_ip or record.original.dst == out.remote_ip):
                return node, record
    return (nodes[0] if nodes else None), None


def parse_host(url: str) -> str | None:
    """The host of a URL, if it is an IP address."""
    from urllib.parse import urlsplit
    host = urlsplit(url if "://" in url else f"http://{url}").hostname
    try:
        ipaddress.ip_address(host or "")
    except ValueError:
        return None
    return host
