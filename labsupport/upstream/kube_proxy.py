"""The real kube-proxy in a network namespace, as one node, against the embedded API server.

Its configuration is the cluster's own kube-proxy ConfigMap (`config.conf`) with what a namespace needs: the
kubeconfig of the embedded API server, JSON on the wire, the node named by `hostnameOverride`, and no conntrack
tuning (the conntrack table's size is the host's, not a namespace's). Syncs are awaited through its metrics
(the time a change was queued against the time rules were last written, the changes not yet taken) and its log,
never by sleeping. The log is needed because a sync takes its pending changes when it starts and stamps the time
of writing when it ends: while one runs, the last write can postdate the last change, with nothing pending, though
that change is not written yet. kube-proxy logs both ends of every sync at --v=2.

The zone of its Node, which decides the endpoints of a Service with topology hints or a `trafficDistribution`,
reaches kube-proxy apart from Services and EndpointSlices and apart from those metrics: from its Node informer,
which is already running when the topology handler is added to it and replays the Node to that handler on a
goroutine of its own. Usually the proxier takes the zone before its first sync; it can take it after a sync (then
the wait goes on until a sync begun after it has ended), and now and then (about one start in a few hundred on a
loaded machine) the replay is handled before the proxier is registered as the handler's receiver, so the proxier
never hears of the zone and writes every endpoint of a same-zone Service for good (its log says "Ignoring
same-zone topology hints … since node is missing label"); such a start is stopped and reported (ZoneLost).
A later label change comes on that watch alone. The zone taken is logged only at --v=4 (proxier.go), so that one
file logs at 4. The Service CIDRs come the same way, from a ServiceCIDR informer the first sync does not wait for;
nftables mode writes their drop rule only in a full sync, so a first sync without them stays without it for an
hour: such a start is stopped and reported too (ServiceCIDRsLost).
"""
from __future__ import annotations

import enum
import json
import os
import re
import tempfile
import threading
import time
from typing import Any

import yaml

from labsupport.netns.namespaces import KernelError, run_in
from labsupport.errors import LabError
from labsupport.proxy.topology import ZONE_LABEL
from labsupport.upstream.binaries import BUILD_HINT, binary
from labsupport.upstream.process import NamespacedProcess

HEALTHZ_PORT = 10256
METRICS_PORT = 10249
START_TIMEOUT = 60.0
SYNC_TIMEOUT = 60.0
#: The rule nftables mode writes, in a full sync, for the Service CIDRs it knows.
CIDR_DROP = "Drop traffic to unallocated ClusterIPs"
#: How long kube-proxy has, once synced, to take its Node's zone before its start counts as one that lost it. Only
#: that decision rests on it: nothing is compared before kube-proxy has the zone.
ZONE_GRACE = 2.0
POLL = 0.1
# The first and the last line a sync logs (iptables and nftables proxiers, at --v=2).
SYNC_STARTED = re.compile(r'"Syncing (?:iptables|nftables) rules"')
SYNC_ENDED = re.compile(r'"SyncProxyRules complete"')
IPV4 = 'ipFamily="IPv4"'
# A klog line's header: severity, month, day and the local time of day to the microsecond.
KLOG_TIME = re.compile(r"^[IWEF](\d\d)(\d\d) (\d\d):(\d\d):(\d\d)\.(\d{6}) ")
# The topology labels a proxier takes from its Node (proxier.go, at --v=4), as a JSON object.
TOPOLOGY_TAKEN = re.compile(r'"Updated proxier node topology labels".*? labels=(\{.*?\})')

# What a clean run's log must not contain: every way client-go reports that a list or watch went wrong.
LOG_PROBLEMS = re.compile(
    r"Failed to watch|[Ff]ailed to list \*|watch of \S+ ended with|Unhandled Error|reflector\.go.*(?:error|"
    r"fail)|the server could not find the requested resource|could not find the requested resource|"
    r"no kind is registered|unknown \(get |is forbidden|Unauthorized|http2: |unexpected EOF|"
    r"Failed to (?:get|update|create|patch)|Error syncing|an error on the server", re.IGNORECASE)


class ZoneStage(enum.Enum):
    """How far kube-proxy's rules are from the zone it last took from its Node."""
    TAKEN = "taken"          # no sync has begun since
    SYNCING = "syncing"      # a sync begun after it runs
    WRITTEN = "written"      # a sync begun after it has ended


def topology_zone(labels: str) -> str:
    """The zone in the topology labels kube-proxy logs (a JSON object; "" when it has none or is unreadable)."""
    try:
        found = json.loads(labels)
    except ValueError:
        return ""
    return found.get(ZONE_LABEL, "") if isinstance(found, dict) else ""


class UpstreamError(LabError):
    """The real kube-proxy or CoreDNS could not be started or did not do what was asked in time."""


class LostAtStart(UpstreamError):
    """kube-proxy started without a piece of its node's state that it will not take later on its own."""


class ZoneLost(LostAtStart):
    """kube-proxy started without taking its Node's zone, and will not take it while that zone stays."""


class ServiceCIDRsLost(LostAtStart):
    """kube-proxy (nftables mode) wrote its first full sync before it had the Service CIDRs: v1.37.2 writes their
    drop rule only in a full sync, and learning them asks for none (the next comes an hour later)."""


def configuration(config_map: dict, node: str, mode: str, kubeconfig: str) -> dict:
    """The KubeProxyConfiguration for one node: the ConfigMap's `config.conf` adapted to a network namespace."""
    try:
        config = yaml.safe_load(config_map["data"]["config.conf"])
    except (KeyError, TypeError, yaml.YAMLError) as e:
        raise UpstreamError("the kube-proxy ConfigMap (kube-system/kube-proxy) has no readable data.config.conf")\
            from e
    config = dict(config)
    config["mode"] = mode
    config["hostnameOverride"] = node
    config["clientConnection"] = dict(config.get("clientConnection") or {}, kubeconfig=kubeconfig,
                                      contentType="application/json", acceptContentTypes="application/json")
    # maxPerCore 0 leaves nf_conntrack_max alone and 0s leaves each timeout as it is
    config["conntrack"] = {"maxPerCore": 0, "min": 0, "tcpEstablishedTimeout": "0s", "tcpCloseWaitTimeout": "0s"}
    config["healthzBindAddress"] = f"0.0.0.0:{HEALTHZ_PORT}"
    config["metricsBindAddress"] = f"127.0.0.1:{METRICS_PORT}"
    config["oomScoreAdj"] = None
    return config


def parse_metrics(text: str) -> dict[str, float]:
    """Prometheus text exposition: metric name (with labels, as written) -> value."""
    out = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        name, _, value = line.rpartition(" ")
        try:
            out[name] = float(value)
        except ValueError:
            continue
    return out


class UpstreamKubeProxy:
    """The real kube-proxy, run in namespace `ns` as node `node`, watching the API server of `kubeconfig`."""

    def __init__(self, ns: str, node: str, config_map: dict, kubeconfig: str, *, mode: str = "iptables",
                 verbosity: int = 2):
        if mode not in ("iptables", "nftables"):
            raise UpstreamError(f"the real kube-proxy runs here in iptables or nftables mode, not {mode!r}")
        if verbosity < 2:
            raise UpstreamError(f"kube-proxy runs here at --v=2 or more (it logs each sync there), not --v={verbosity}")
        self.ns = ns
        self.node = node
        self.mode = mode
        self.kubeconfig = kubeconfig
        self.config_map = config_map
        self.verbosity = verbosity
        self.dir: str | None = None
        self.process: NamespacedProcess | None = None
        self._log_lock = threading.Lock()
        self._log_read = 0            # how much of the log _read_log() has taken in
        self._syncs = [0, 0]          # syncs started, ended
        self._ipv4_began = 0.0        # when the IPv4 proxier's running (or last) sync took the changes in
        self._ipv4_written_from = 0.0  # when its last ended sync took them in (Unix seconds; 0: none yet)
        self._zone = ""               # the IPv4 proxier's zone ("" until it takes one)
        self._zone_stage = ZoneStage.WRITTEN  # how far the rules are from taking that zone in

    # --- lifecycle -----------------------------------------------------------------------------------------
    def start(self, timeout: float = START_TIMEOUT, *, zone: str | None = None,
              service_cidrs: bool = False) -> "UpstreamKubeProxy":
        """Start kube-proxy and return once it has written its first complete rule set; given `zone` (its Node's
        zone label now, "" for none), once it has also taken that zone and written rules with it (ZoneLost when it
        lost it: see _takes_zone); given `service_cidrs` (the cluster has ServiceCIDRs), nftables mode must have
        written their drop rule (ServiceCIDRsLost if not)."""
        path = binary("kube-proxy")
        if path is None:
            raise UpstreamError(f"the real kube-proxy is not built: {BUILD_HINT}")
        self.dir = tempfile.mkdtemp(prefix=f"labsupport-kube-proxy-{self.node}-")
        config_path = os.path.join(self.dir, "config.json")
        with open(config_path, "w") as fh:
            json.dump(configuration(self.config_map, self.node, self.mode, self.kubeconfig), fh, indent=1)
        argv = [path, f"--config={config_path}", f"--hostname-override={self.node}", f"--v={self.verbosity}",
                f"--vmodule=proxier={max(4, self.verbosity)}"]
        with self._log_lock:
            self._log_read, self._syncs, self._zone, self._zone_stage = 0, [0, 0], "", ZoneStage.WRITTEN  # a new log
            self._ipv4_began = self._ipv4_written_from = 0.0
        self.process = NamespacedProcess(self.ns, argv, os.path.join(self.dir, "kube-proxy.log"))
        try:
            self.wait_synced(since=0.0, timeout=timeout)
            if zone is not None and not self._takes_zone(zone, ZONE_GRACE):
                raise ZoneLost(f"kube-proxy in {self.ns} wrote its rules without its Node's zone {zone!r} and did not "
                               f"take it within {ZONE_GRACE:g} s of its first sync; its log ends:\n"
                               + "\n".join(self.log().splitlines()[-30:]))
            self.wait_synced(since=0.0, timeout=timeout, zone=zone)
            if service_cidrs and self.mode == "nftables" and CIDR_DROP not in self.rules():
                raise ServiceCIDRsLost(f"kube-proxy in {self.ns} wrote its first full sync before it had the Service "
                                       f"CIDRs (no {CIDR_DROP!r} rule); it writes that rule only in a full sync")
        except BaseException:
            self.stop()
            raise
        return self

    def _takes_zone(self, zone: str, grace: float) -> bool:
        """Whether kube-proxy, synced once, takes `zone` from its Node within `grace` seconds (v1.37 adds the
        proxier's topology handler after the Node informer that replays the Node to it has started: when the
        replay is handled first, the proxier never hears of the zone until the label changes)."""
        deadline = time.monotonic() + grace
        while self.zone_written()[0] != zone:
            if self.process is not None and self.process.poll() is not None:
                raise UpstreamError(f"kube-proxy in {self.ns} exited ({self.process.returncode}); its log ends:\n"
                                    + "\n".join(self.log().splitlines()[-30:]))
            if time.monotonic() > deadline:
                return False
            time.sleep(POLL)
        return True

    def stop(self) -> None:
        """Stop kube-proxy (its rules stay, as on a node whose kube-proxy exits) and close its log."""
        if self.process is not None:
            self.process.stop()       # the log stays readable until the folder is removed

    def remove(self) -> None:
        """Stop kube-proxy and delete its working folder."""
        self.stop()
        if self.dir:
            import shutil
            shutil.rmtree(self.dir, ignore_errors=True)
            self.dir = None

    def __enter__(self) -> "UpstreamKubeProxy":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.remove()

    # --- what it says --------------------------------------------------------------------------------------
    def log(self) -> str:
        """Everything kube-proxy has logged so far."""
        return self.process.log() if self.process is not None and self.dir else ""

    def log_problems(self) -> list[str]:
        """Log lines that report a failed list or watch, an unknown resource or a refused request."""
        return [line for line in self.log().splitlines() if LOG_PROBLEMS.search(line)]

    def _get(self, port: int, path: str) -> str | None:
        proc = run_in(self.ns, ["curl", "-s", "--max-time", "2", f"http://127.0.0.1:{port}{path}"], timeout=10)
        return proc.stdout if proc.returncode == 0 else None

    def metrics(self) -> dict[str, float]:
        """kube-proxy's metrics now (empty while it is not serving them)."""
        text = self._get(METRICS_PORT, "/metrics")
        return parse_metrics(text) if text else {}

    def healthz(self) -> dict | None:
        """kube-proxy's /healthz answer (None while it is not serving it)."""
        text = self._get(HEALTHZ_PORT, "/healthz")
        try:
            return json.loads(text) if text else None
        except ValueError:
            return None

    def sync_state(self) -> tuple[float, float, float]:
        """IPv4: (when a change was last queued, when rules were last written, changes not yet written), with
        Unix seconds, 0 for never."""
        m = self.metrics()
        family = '{ip_family="IPv4"}'
        return (m.get(f"kubeproxy_sync_proxy_rules_last_queued_timestamp_seconds{family}", 0.0),
                m.get(f"kubeproxy_sync_proxy_rules_last_timestamp_seconds{family}", 0.0),
                m.get("kubeproxy_sync_proxy_rules_service_changes_pending", 0.0)
                + m.get("kubeproxy_sync_proxy_rules_endpoint_changes_pending", 0.0))

    def _read_log(self) -> None:
        """Take in the log lines written since the last call (call with _log_lock held)."""
        if self.process is None or not self.dir:
            return
        with open(self.process.log_path, "rb") as fh:
            fh.seek(self._log_read)
            text = fh.read()
        whole = text[:text.rfind(b"\n") + 1]       # a line still being written is counted next time
        self._log_read += len(whole)
        for line in whole.decode(errors="replace").splitlines():
            if SYNC_STARTED.search(line):
                self._syncs[0] += 1
                if IPV4 in line:
                    self._ipv4_began = klog_time(line) or time.time()
                if IPV4 in line and self._zone_stage is ZoneStage.TAKEN:
                    self._zone_stage = ZoneStage.SYNCING
            elif SYNC_ENDED.search(line):
                self._syncs[1] += 1
                if IPV4 in line:
                    self._ipv4_written_from = self._ipv4_began
                if IPV4 in line and self._zone_stage is ZoneStage.SYNCING:
                    self._zone_stage = ZoneStage.WRITTEN
            elif IPV4 in line and (taken := TOPOLOGY_TAKEN.search(line)):
                self._zone = topology_zone(taken.group(1))
                self._zone_stage = ZoneStage.TAKEN

    def syncs_running(self) -> int:
        """How many syncs have started and not ended, from kube-proxy's log (read on from where it was)."""
        with self._log_lock:
            self._read_log()
            return self._syncs[0] - self._syncs[1]

    def written_from(self) -> float:
        """When the IPv4 proxier's last finished sync took in the changes it wrote (Unix seconds, 0 for none): a
        change queued after that is not in the rules, whatever the time the sync ended."""
        with self._log_lock:
            self._read_log()
            return self._ipv4_written_from

    def zone_written(self) -> tuple[str, bool]:
        """The zone kube-proxy last took from its Node ("" before any), and whether a sync that began after it
        took it has ended (a proxier sets the zone under its lock and logs it after, and logs a sync's start under
        that lock: a sync whose start follows the zone's line in the log uses that zone)."""
        with self._log_lock:
            self._read_log()
            return self._zone, self._zone_stage is ZoneStage.WRITTEN

    def changes_received(self) -> float:
        """How many Service and EndpointSlice events kube-proxy's informers have handed its proxiers so far
        (every event counts, also one that changes no rule)."""
        m = self.metrics()
        return (m.get("kubeproxy_sync_proxy_rules_service_changes_total", 0.0)
                + m.get("kubeproxy_sync_proxy_rules_endpoint_changes_total", 0.0))

    def wait_synced(self, since: float | None = None, timeout: float = SYNC_TIMEOUT, *,
                    zone: str | None = None) -> float:
        """Wait until kube-proxy has seen a change made at or after `since` (Unix seconds; default now; 0: any)
        and written rules after it, with nothing pending, and (given `zone`, its Node's zone label now, "" for
        none) has taken that zone and written rules with it; returns the time of that write."""
        since = time.time() if since is None else since
        deadline = time.monotonic() + timeout
        while True:
            if self.process is not None and self.process.poll() is not None:
                raise UpstreamError(f"kube-proxy in {self.ns} exited ({self.process.returncode}); its log ends:\n"
                                    + "\n".join(self.log().splitlines()[-30:]))
            queued, written, pending = self.sync_state()
            taken, zone_written = self.zone_written()
            zoned = zone is None or (taken == zone and zone_written)
            # the pending gauges are shared by the IPv4 and IPv6 proxiers (the IPv6 one sets them to its own count
            # on every event), so a change counts as written only by a sync that took changes in after it was queued
            if written and written >= queued and queued >= since and not pending and not self.syncs_running() \
                    and self.written_from() >= queued and zoned:
                return written
            if time.monotonic() > deadline:
                raise UpstreamError(f"kube-proxy in {self.ns} did not sync within {timeout:g} s (queued {queued}, "
                                    f"written {written}, pending {pending:g}, zone {taken!r} "
                                    f"{'written' if zone_written else 'not written yet'}, wanted {zone!r}); "
                                    f"its log ends:\n"
                                    + "\n".join(self.log().splitlines()[-30:]))
            time.sleep(POLL)

    def rules(self) -> str:
        """What kube-proxy wrote: `iptables-save` of the nat and filter tables, or the `kube-proxy` nft table."""
        if self.mode == "nftables":
            argv = [["nft", "list", "table", "ip", "kube-proxy"]]
        else:
            argv = [["iptables-save", "-t", "filter"], ["iptables-save", "-t", "nat"]]
        out = []
        for cmd in argv:
            try:
                out.append(run_in(self.ns, cmd, check=True).stdout)
            except KernelError as e:
                raise UpstreamError(f"could not read the rules kube-proxy wrote in {self.ns}: {e}") from e
        return "".join(out)


def klog_time(line: str, now: float | None = None) -> float | None:
    """The Unix time of a klog line (its header has month, day and local time, no year: the year that puts it
    nearest `now`), or None when the line has no klog header."""
    found = KLOG_TIME.match(line)
    if found is None:
        return None
    month, day, hour, minute, second, micro = (int(g) for g in found.groups())
    now = time.time() if now is None else now
    year = time.localtime(now).tm_year
    stamps = [time.mktime((y, month, day, hour, minute, second, 0, 0, -1)) + micro / 1e6
              for y in (year - 1, year, year + 1)]
    return min(stamps, key=lambda t: abs(t - now))


def clean_up(ns: str) -> None:
    """Remove every rule kube-proxy wrote in namespace `ns` (`kube-proxy --cleanup`, all modes)."""
    path = binary("kube-proxy")
    if path is None:
        raise UpstreamError(f"the real kube-proxy is not built: {BUILD_HINT}")
    done = run_in(ns, [path, "--cleanup"], timeout=START_TIMEOUT)
    if done.returncode != 0:
        raise UpstreamError(f"kube-proxy --cleanup in {ns} failed ({done.returncode}): {done.stdout}{done.stderr}")


#: The jumps kube-proxy makes on the kubelet's behalf (`iptablesKubeletJumpChains` in proxier.go): chain, target.
#: `kube-proxy --cleanup` leaves them, as it must on a real node, where the kubelet owns them too.
KUBELET_JUMPS = (("INPUT", "KUBE-FIREWALL"), ("OUTPUT", "KUBE-FIREWALL"))


def remove_kubelet_jumps(ns: str) -> None:
    """Remove, in namespace `ns`, the jumps and chain kube-proxy made for the kubelet (iptables filter table), so
    that a kube-proxy started there again writes its jumps in the order a first start does: it prepends every jump
    it does not find, and a jump left behind would stay below the ones prepended after it. In a node namespace of
    the `netns` backend nothing else makes them."""
    for chain, target in KUBELET_JUMPS:
        for _ in range(10):           # a jump can be there more than once; stop when none is left
            if run_in(ns, ["iptables", "-w", "-t", "filter", "-D", chain, "-j", target]).returncode != 0:
                break
    for target in sorted({target for _, target in KUBELET_JUMPS}):
        run_in(ns, ["iptables", "-w", "-t", "filter", "-F", target])
        run_in(ns, ["iptables", "-w", "-t", "filter", "-X", target])


def ensure_service_cidr(cluster: Any, cidrs: tuple[str, ...] = ("10.96.0.0/12",)) -> dict:
    """The `kubernetes` ServiceCIDR the API server of a real cluster creates at start (kube-proxy watches it)."""
    from labsupport.apiserver.events import unseeded
    with cluster.lock, unseeded(cluster.store):
        found = cluster.store.find("ServiceCIDR", None, "kubernetes")
        if found is not None:
            return found
        created = cluster.create({"apiVersion": "networking.k8s.io/v1", "kind": "ServiceCIDR",
                                  "metadata": {"name": "kubernetes"}, "spec": {"cidrs": list(cidrs)}})
        created = dict(created, status={"conditions": [{
            "type": "Ready", "status": "True", "reason": "", "message": "Kubernetes Service CIDR is ready",
            "lastTransitionTime": created["metadata"]["creationTimestamp"]}]})
        return cluster.replace_status(created)
