"""The kubelet model: pod start-up, IPs from the node's CIDR, apps, probes, restarts and graceful termination."""
from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from labsupport.apps import App, ExecResult, app_for
from labsupport.apps.stop import EXIT_NOTICE_SECONDS, MINIMUM_GRACE_SECONDS, hook_seconds, stop_behaviour
from labsupport.control.clock import Timer
from labsupport.model.objects import clone
from labsupport.control.version import K8S_VERSION

if TYPE_CHECKING:
    from labsupport.control.context import ControllerContext

STARTUP_SECONDS = (1.0, 2.0)
#: What the kubelet's HTTP probes send as User-Agent (`kube-probe/<major>.<minor>`).
PROBE_USER_AGENT = "kube-probe/" + K8S_VERSION.lstrip("v").rsplit(".", 1)[0]


class HostLocalIPAM:
    """host-local IPAM for one node's pod CIDR: sequential after the last reserved address, gateway at .1."""

    def __init__(self, cidr: str):
        self.network = ipaddress.ip_network(cidr)
        self.first = int(self.network.network_address) + 2
        self.last_addr = int(self.network.broadcast_address) - 1
        self.used: set[int] = set()
        self.last_reserved = self.first - 1

    @property
    def gateway(self) -> str:
        """The bridge address pods route through (and masqueraded local traffic comes from)."""
        return str(self.network.network_address + 1)

    def allocate(self) -> str | None:
        """The next free address after the last one handed out, wrapping around; None when full."""
        size = self.last_addr - self.first + 1
        for step in range(1, size + 1):
            candidate = self.first + (self.last_reserved - self.first + step) % size
            if candidate not in self.used:
                self.used.add(candidate)
                self.last_reserved = candidate
                return str(ipaddress.ip_address(candidate))
        return None

    def release(self, ip: str) -> None:
        """Give an address back."""
        self.used.discard(int(ipaddress.ip_address(ip)))


@dataclass
class PodRuntime:
    """What the kubelet keeps for one pod it runs."""

    uid: str
    key: tuple[str, str]
    node: str
    ip: str | None = None
    apps: dict[str, App] = field(default_factory=dict)
    timers: list[Timer] = field(default_factory=list)
    probe_state: dict[str, dict] = field(default_factory=dict)
    exited: dict[str, int] = field(default_factory=dict)
    restarts: dict[str, int] = field(default_factory=dict)
    terminating: bool = False

    def cancel(self) -> None:
        """Stop every pending timer of this pod."""
        for t in self.timers:
            t.cancel()
        self.timers.clear()


class Kubelet:
    """Runs the pods bound to the cluster's nodes (one object plays every node's kubelet)."""

    def __init__(self, cluster: "ControllerContext"):
        self.cluster = cluster
        self.ipam: dict[str, HostLocalIPAM] = {}
        self.pods: dict[str, PodRuntime] = {}
        self._todo: list[tuple[str, dict]] = []
        cluster.store.subscribe(self._on_event)

    # --- wiring --------------------------------------------------------------------------------------------
    def add_node(self, node: dict) -> None:
        """Start IPAM for a node's pod CIDR."""
        cidr = node.get("spec", {}).get("podCIDR")
        if cidr:
            self.ipam[node["metadata"]["name"]] = HostLocalIPAM(cidr)

    def _on_event(self, event) -> None:
        if event.kind != "Pod":
            return
        pod, old = event.object, event.old
        uid = pod["metadata"]["uid"]
        if event.type == "DELETED":
            self._todo.append(("forget", pod))
        elif pod["spec"].get("nodeName") and uid not in self.pods:
            self._todo.append(("admit", pod))
        if event.type == "MODIFIED" and pod["metadata"].get("deletionTimestamp") and \
                not (old or {}).get("metadata", {}).get("deletionTimestamp"):
            self._todo.append(("terminate", pod))

    def sync(self) -> bool:
        """Act on pods bound, deleted or marked for deletion since the last sync."""
        if not self._todo:
            return False
        todo, self._todo = self._todo, []
        for action, pod in todo:
            getattr(self, "_" + action)(pod)
        return True

    def runtime(self, pod: dict) -> PodRuntime | None:
        """The kubelet's state for a pod, if it runs it."""
        return self.pods.get(pod["metadata"]["uid"])

    def gateway(self, node: str) -> str | None:
        """The pod-network gateway address of a node."""
        ipam = self.ipam.get(node)
        return ipam.gateway if ipam else None

    # --- lifecycle -----------------------------------------------------------------------------------------
    def _admit(self, pod: dict) -> None:
        uid = pod["metadata"]["uid"]
        if uid in self.pods or pod["metadata"].get("deletionTimestamp"):
            return
        rt = PodRuntime(uid, (pod["metadata"]["namespace"], pod["metadata"]["name"]), pod["spec"]["nodeName"])
        self.pods[uid] = rt
        node = self.cluster.store.find("Node", None, rt.node)
        status = clone(pod.get("status") or {})
        status.update({"phase": "Pending", "hostIP": self.cluster.node_ip(node) if node else "",
                       "startTime": self.cluster.timestamp(), "qosClass": status.get("qosClass", "BestEffort")})
        if status["hostIP"]:
            status["hostIPs"] = [{"ip": status["hostIP"]}]
        status["conditions"] = self._conditions(pod, scheduled=True, initialized=True, ready=False, sandbox=False)
        status["containerStatuses"] = [self._waiting(c, "ContainerCreating") for c in pod["spec"]["containers"]]
        self._write_status(pod, status)
        low, high = STARTUP_SECONDS
        delay = round(low + (high - low) * self.cluster.rng.random(), 1)
        rt.timers.append(self.cluster.clock.after(delay, lambda: self._start(uid), "start"))

    def _start(self, uid: str) -> None:
        rt = self.pods.get(uid)
        pod = self._pod(rt)
        if rt is None or pod is None or rt.terminating:
            return
        ipam = self.ipam.get(rt.node)
        if pod["spec"].get("hostNetwork"):
            rt.ip = pod["status"].get("hostIP")
        else:
            rt.ip = pod["status"].get("podIP") or (ipam.allocate() if ipam else None)
        env = self.cluster.pod_env(pod)
        for c in pod["spec"]["containers"]:
            rt.apps[c["name"]] = app_for(pod, c, env)
        status = clone(pod["status"])
        status["phase"] = "Running"
        if rt.ip:
            status["podIP"] = rt.ip
            status["podIPs"] = [{"ip": rt.ip}]
        now = self.cluster.timestamp()
        statuses = [self._running(c, now, "readinessProbe" not in c, rt) for c in pod["spec"]["containers"]]
        status["containerStatuses"] = statuses
        all_ready = all(s["ready"] for s in statuses)
        status["conditions"] = self._conditions(pod, scheduled=True, initialized=True, ready=all_ready, sandbox=True,
                                                old=status.get("conditions"))
        self._write_status(pod, status)
        for c in pod["spec"]["containers"]:
            self._schedule_container(rt, c)
        for c in pod["spec"]["containers"]:
            self.cluster.record_event(pod, "Normal", "Pulled",
                                      f'Container image "{c.get("image", "")}" already present on machine',
                                      source="kubelet")
            self.cluster.record_event(pod, "Normal", "Created", f"Created container: {c['name']}", source="kubelet")
            self.cluster.record_event(pod, "Normal", "Started", f"Started container {c['name']}", source="kubelet")

    def _schedule_container(self, rt: PodRuntime, c: dict) -> None:
        app = rt.apps[c["name"]]
        run = app.run_command()
        if run is not None and not app.long_running:
            code, output, seconds = run
            app.log.extend(output.splitlines())
            rt.timers.append(self.cluster.clock.after(max(seconds, 0.1), lambda: self._exited(rt.uid, c["name"], code),
                                                      "exit"))
        for kind in ("readinessProbe", "livenessProbe"):
            probe = c.get(kind)
            if probe:
                rt.probe_state[f"{c['name']}/{kind}"] = {"ok": 0, "fail": 0}
                rt.timers.append(self.cluster.clock.after(
                    max(probe.get("initialDelaySeconds", 0), 0.1), lambda k=kind, name=c["name"]: self._probe(rt.uid, name, k), kind))

    def _probe(self, uid: str, container: str, kind: str) -> None:
        rt = self.pods.get(uid)
        pod = self._pod(rt)
        if rt is None or pod is None or container in rt.exited:
            return
        spec = next(c for c in pod["spec"]["containers"] if c["name"] == container)
        probe = spec[kind]
        ok, message = self.run_probe(pod, rt, rt.apps[container], probe)
        state = rt.probe_state[f"{container}/{kind}"]
        if ok:
            state["ok"] += 1
            state["fail"] = 0
        else:
            state["fail"] += 1
            state["ok"] = 0
        if kind == "readinessProbe":
            if ok and state["ok"] >= probe.get("successThreshold", 1):
                self._set_ready(pod, container, True)
            elif not ok and state["fail"] >= probe.get("failureThreshold", 3):
                self._set_ready(pod, container, False)
            if not ok:
                self.cluster.record_event(pod, "Warning", "Unhealthy", f"Readiness probe failed: {message}",
                                          source="kubelet")
        elif not ok and state["fail"] >= probe.get("failureThreshold", 3) and not rt.terminating:
            self.cluster.record_event(pod, "Warning", "Unhealthy", f"Liveness probe failed: {message}",
                                      source="kubelet")
            state["fail"] = 0
            self._restart(rt, pod, container, "Error", 137)
        rt.timers.append(self.cluster.clock.after(probe.get("periodSeconds", 10),
                                                  lambda: self._probe(uid, container, kind), kind))

    def run_probe(self, pod: dict, rt: PodRuntime, app: App, probe: dict) -> tuple[bool, str]:
        """Evaluate one probe against what the container really serves: (passed, the kubelet's message)."""
        if self.cluster.prober is not None:
            # A real data plane probes for real; None falls through to the model.
            verdict = self.cluster.prober.probe(pod, rt, app, probe)
            if verdict is not None:
                return verdict
        if "exec" in probe:
            result = app.exec(probe["exec"].get("command") or [])
            return result.code == 0, (result.stdout + result.stderr).strip()
        port_spec = (probe.get("httpGet") or probe.get("tcpSocket") or probe.get("grpc") or {}).get("port")
        port = self.resolve_port(pod, port_spec)
        target = rt.ip or ""
        if port is None or ("TCP", port) not in app.listens():
            refused = f"dial tcp {target}:{port_spec}: connect: connection refused"
            if "httpGet" in probe:
                return False, f'Get "http://{target}:{port_spec}{probe["httpGet"].get("path", "/")}": {refused}'
            return False, refused
        if "httpGet" in probe:
            path = probe["httpGet"].get("path", "/")
            gateway = self.gateway(rt.node) or "0.0.0.0"
            resp = app.http("GET", path, (gateway, 40000), port, {"User-Agent": PROBE_USER_AGENT})
            if resp is None:
                return False, f'Get "http://{target}:{port}{path}": EOF'
            return 200 <= resp.status < 400, f"HTTP probe failed with statuscode: {resp.status}"
        return True, ""

    @staticmethod
    def resolve_port(pod: dict, port) -> int | None:
        """A probe or targetPort value as a number: named ports are looked up in the pod's containers."""
        if isinstance(port, int):
            return port
        if isinstance(port, str) and port.isdigit():
            return int(port)
        for c in pod["spec"].get("containers", []):
            for p in c.get("ports") or []:
                if p.get("name") == port:
                    return p.get("containerPort")
        return None

    def _set_ready(self, pod: dict, container: str, ready: bool) -> None:
        status = clone(pod["status"])
        changed = False
        for cs in status.get("containerStatuses", []):
            if cs["name"] == container and cs.get("ready") != ready:
                cs["ready"] = ready
                changed = True
        if not changed:
            return
        all_ready = all(cs.get("ready") for cs in status.get("containerStatuses", []))
        status["conditions"] = self._conditions(pod, scheduled=True, initialized=True, ready=all_ready, sandbox=True,
                                                old=status.get("conditions"))
        self._write_status(pod, status)

    def process_ended(self, pod: dict, container: str, code: int) -> None:
        """A container's main process ended by itself (an attached shell that exited) with this exit code."""
        rt = self.runtime(pod)
        if rt is not None:
            self._exited(rt.uid, container, code)

    def _exited(self, uid: str, container: str, code: int) -> None:
        rt = self.pods.get(uid)
        pod = self._pod(rt)
        if rt is None or pod is None:
            return
        policy = pod["spec"].get("restartPolicy", "Always")
        if policy == "Always" or (policy == "OnFailure" and code != 0):
            self._restart(rt, pod, container, "Completed" if code == 0 else "Error", code)
            return
        rt.exited[container] = code
        status = clone(pod["status"])
        now = self.cluster.timestamp()
        for cs in status.get("containerStatuses", []):
            if cs["name"] == container:
                started = cs.get("state", {}).get("running", {}).get("startedAt", now)
                cs["state"] = {"terminated": {"exitCode": code, "reason": "Completed" if code == 0 else "Error",
                                              "startedAt": started, "finishedAt": now,
                                              "containerID": cs.get("containerID", "")}}
                cs["ready"] = False
                cs["started"] = False
        if len(rt.exited) == len(pod["spec"]["containers"]):
            status["phase"] = "Succeeded" if all(c == 0 for c in rt.exited.values()) else "Failed"
        status["conditions"] = self._conditions(pod, scheduled=True, initialized=True, ready=False, sandbox=False,
                                                old=status.get("conditions"), reason="PodCompleted")
        self._write_status(pod, status)

    def _restart(self, rt: PodRuntime, pod: dict, container: str, reason: str, code: int) -> None:
        count = rt.restarts.get(container, 0) + 1
        rt.restarts[container] = count
        backoff = min(10 * 2 ** (count - 1), 300) if reason != "Error" or code != 137 else 0
        status = clone(pod["status"])
        now = self.cluster.timestamp()
        for cs in status.get("containerStatuses", []):
            if cs["name"] == container:
                started = cs.get("state", {}).get("running", {}).get("startedAt", now)
                cs["lastState"] = {"terminated": {"exitCode": code, "reason": reason, "startedAt": started,
                                                  "finishedAt": now, "containerID": cs.get("containerID", "")}}
                cs["restartCount"] = count
                cs["ready"] = False
                cs["started"] = False
                cs["state"] = ({"waiting": {"reason": "CrashLoopBackOff",
                                            "message": f"back-off {backoff}s restarting failed container={container} "
                                                       f"pod={pod['metadata']['name']}_{pod['metadata']['namespace']}"
                                                       f"({pod['metadata']['uid']})"}}
                               if backoff else {"running": {"startedAt": now}})
        status["conditions"] = self._conditions(pod, scheduled=True, initialized=True, ready=False, sandbox=True,
                                                old=status.get("conditions"))
        self._write_status(pod, status)

        def again():
            current = self._pod(rt)
            if current is None or rt.terminating:
                return
            spec = next(c for c in current["spec"]["containers"] if c["name"] == container)
            rt.apps[container] = app_for(current, spec, self.cluster.pod_env(current))
            st = clone(current["status"])
            for cs in st.get("containerStatuses", []):
                if cs["name"] == container:
                    cs["state"] = {"running": {"startedAt": self.cluster.timestamp()}}
                    cs["started"] = True
                    cs["ready"] = "readinessProbe" not in spec
            ready = all(cs.get("ready") for cs in st.get("containerStatuses", []))
            st["conditions"] = self._conditions(current, scheduled=True, initialized=True, ready=ready, sandbox=True,
                                                old=st.get("conditions"))
            self._write_status(current, st)
            self._schedule_container(rt, spec)

        rt.timers = [t for t in rt.timers if t.label not in ("readinessProbe", "livenessProbe", "exit")]
        rt.timers.append(self.cluster.clock.after(max(backoff, 0.5), again, "restart"))

    def _terminate(self, pod: dict) -> None:
        rt = self.runtime(pod)
        grace = pod["metadata"].get("deletionGracePeriodSeconds", 30)
        if rt is None or grace == 0 or not pod["spec"].get("nodeName"):
            self.cluster.finalize_pod(pod)
            return
        rt.terminating = True
        self.cluster.record_event(pod, "Normal", "Killing", f"Stopping container {pod['spec']['containers'][0]['name']}",
                                  source="kubelet")
        for t in rt.timers:
            if t.label in ("start", "exit", "restart", "livenessProbe"):
                t.cancel()
        if not rt.apps:
            self.cluster.finalize_pod(pod)
            return
        # Containers stop in parallel: each runs its preStop hook, then gets its image's stop signal with what is left
        # of the grace period (at least 2 s); the pod is gone when the last process has exited or been killed.
        ends = [self._stop_container(pod, rt, c, grace) for c in pod["spec"]["containers"]]
        rt.timers.append(self.cluster.clock.after(max(ends) + EXIT_NOTICE_SECONDS, lambda: self._killed(rt.uid),
                                                  "killed"))

    def _stop_container(self, pod: dict, rt: PodRuntime, container: dict, grace: float) -> float:
        """Seconds from the delete until this container's process is gone."""
        app = rt.apps.get(container["name"])
        if app is None or container["name"] in rt.exited:
            return 0.0
        hook = (container.get("lifecycle") or {}).get("preStop") or {}
        self._pre_stop(pod, rt, container)
        hook_time = min(hook_seconds(hook), grace) if hook else 0.0
        remaining = max(grace - hook_time, MINIMUM_GRACE_SECONDS)
        return hook_time + stop_behaviour(app).exit_after(remaining)

    def _pre_stop(self, pod: dict, rt: PodRuntime, container: dict) -> None:
        """Run a container's preStop hook (exec or httpGet) and report a failure as upstream does."""
        hook = (container.get("lifecycle") or {}).get("preStop") or {}
        app = rt.apps.get(container["name"])
        if not hook or app is None:
            return
        if "exec" in hook:
            result = app.exec(hook["exec"].get("command") or [])
            if result.code != 0:
                self.cluster.record_event(pod, "Warning", "FailedPreStopHook",
                                          f"PreStopHook failed: command {hook['exec'].get('command')!r} exited with "
                                          f"{result.code}: {(result.stdout + result.stderr).strip()}",
                                          source="kubelet")
        elif "httpGet" in hook:
            port = self.resolve_port(pod, hook["httpGet"].get("port"))
            resp = app.http("GET", hook["httpGet"].get("path", "/"), (rt.ip or "", 40001), port or 0) \
                if port else None
            if resp is None or resp.status >= 400:
                self.cluster.record_event(pod, "Warning", "FailedPreStopHook",
                                          f"PreStopHook failed: HTTP lifecycle hook ({hook['httpGet'].get('path', '/')}) "
                                          f"for Container \"{container['name']}\" in Pod \"{pod['metadata']['name']}\" "
                                          "failed", source="kubelet")

    def _killed(self, uid: str) -> None:
        rt = self.pods.get(uid)
        pod = self._pod(rt)
        if pod is not None:
            self.cluster.finalize_pod(pod)

    def _forget(self, pod: dict) -> None:
        rt = self.pods.pop(pod["metadata"]["uid"], None)
        if rt is None:
            return
        rt.cancel()
        ipam = self.ipam.get(rt.node)
        if ipam and rt.ip and not pod["spec"].get("hostNetwork"):
            ipam.release(rt.ip)

    # --- helpers -------------------------------------------------------------------------------------------
    def _pod(self, rt: PodRuntime | None) -> dict | None:
        if rt is None:
            return None
        pod = self.cluster.store.find("Pod", *rt.key)
        return pod if pod is not None and pod["metadata"]["uid"] == rt.uid else None

    def _write_status(self, pod: dict, status: dict) -> None:
        new = dict(pod)
        new["status"] = status
        self.cluster.store.update(new, check_version=False)

    def _waiting(self, c: dict, reason: str) -> dict:
        return {"name": c["name"], "image": c.get("image", ""), "imageID": "", "ready": False, "restartCount": 0,
                "started": False, "state": {"waiting": {"reason": reason}}, "lastState": {}}

    def _running(self, c: dict, now: str, ready: bool, rt: PodRuntime) -> dict:
        digest = "%064x" % (hash((rt.uid, c["name"], c.get("image"))) & (2 ** 256 - 1))
        cid = "%064x" % self.cluster.rng.getrandbits(256)
        return {"name": c["name"], "image": c.get("image", ""), "imageID": f"{c.get('image', '').split(':')[0]}@sha256:{digest}",
                "containerID": f"containerd://{cid}", "ready": ready, "restartCount": 0, "started": True,
                "state": {"running": {"startedAt": now}}, "lastState": {}}

    def _conditions(self, pod: dict, *, scheduled: bool, initialized: bool, ready: bool, sandbox: bool,
                    old: list | None = None, reason: str = "ContainersNotReady") -> list[dict]:
        now = self.cluster.timestamp()
        previous = {c["type"]: c for c in (old or pod.get("status", {}).get("conditions") or [])}
        wanted = [("PodReadyToStartContainers", sandbox), ("Initialized", initialized), ("Ready", ready),
                  ("ContainersReady", ready), ("PodScheduled", scheduled)]
        out = []
        for kind, value in wanted:
            status = "True" if value else "False"
            prev = previous.get(kind)
            cond = {"type": kind, "status": status, "lastProbeTime": None,
                    "lastTransitionTime": prev["lastTransitionTime"] if prev and prev.get("status") == status else now}
            if not value and kind in ("Ready", "ContainersReady"):
                cond["reason"] = reason
                if reason == "ContainersNotReady":
                    names = ", ".join(c["name"] for c in pod["spec"]["containers"])
                    cond["message"] = f"containers with unready status: [{names}]"
            out.append(cond)
        return out

    def exec(self, pod: dict, container: str | None, argv: list[str]) -> ExecResult:
        """Run a command in a running container (kubectl exec)."""
        rt = self.runtime(pod)
        if rt is None or not rt.apps:
            return ExecResult(1, "", "error: unable to upgrade connection: container not found\n")
        name = container or pod["spec"]["containers"][0]["name"]
        app = rt.apps.get(name)
        if app is None:
            return ExecResult(1, "", f'error: unable to upgrade connection: container not found ("{name}")\n')
        return app.exec(argv)

    def logs(self, pod: dict, container: str | None = None) -> str:
        """What a container has printed."""
        rt = self.runtime(pod)
        if rt is None:
            return ""
        name = container or pod["spec"]["containers"][0]["name"]
        app = rt.apps.get(name)
        return "".join(line + "\n" for line in app.log) if app else ""
