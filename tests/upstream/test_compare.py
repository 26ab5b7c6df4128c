"""The comparison itself (pure: runs without Go or root): what it ignores and what it must not."""
from __future__ import annotations

import time

import pytest

from labsupport.upstream.compare import canonical_iptables, canonical_nft, first_differences
from labsupport.upstream.kube_proxy import UpstreamError, configuration, parse_metrics
from labsupport.upstream.binaries import missing_upstream_requirements

DUMP = """*nat
:PREROUTING ACCEPT [12:720]
:KUBE-SERVICES - [0:0]
:KUBE-PROXY-CANARY - [0:0]
[3:180] -A PREROUTING -m comment --comment "kubernetes service portals" -j KUBE-SERVICES
-A PREROUTING -j DOCKER
-A KUBE-SERVICES -d 10.96.0.2/32 -p tcp -m comment --comment "ns/b cluster IP" -m tcp --dport 80 -j KUBE-SVC-B
-A KUBE-SERVICES -d 10.96.0.1/32 -p tcp -m comment --comment "ns/a cluster IP" -m tcp --dport 80 -j KUBE-SVC-A
-A KUBE-SERVICES -m comment --comment "kubernetes service nodeports; NOTE: this must be the last rule in this chain" -j KUBE-NODEPORTS
COMMIT
"""


def test_iptables_canonical_form_drops_counters_canaries_and_foreign_rules_and_groups_services():
    text = canonical_iptables(DUMP)
    assert "[" not in text and "CANARY" not in text and "DOCKER" not in text
    lines = text.splitlines()
    assert lines.index(next(l for l in lines if '"ns/a' in l)) < lines.index(next(l for l in lines if '"ns/b' in l))
    services = [l for l in lines if l.startswith("-A KUBE-SERVICES")]
    assert services[-1].endswith("-j KUBE-NODEPORTS")


def test_a_changed_rule_is_a_difference():
    other = DUMP.replace("--dport 80 -j KUBE-SVC-A", "--dport 81 -j KUBE-SVC-A")
    diff = first_differences(canonical_iptables(DUMP), canonical_iptables(other))
    assert "--dport 81" in diff and "--dport 80 -j KUBE-SVC-A" in diff


def test_nft_canonical_form_sorts_objects_and_elements_but_keeps_rules_in_order():
    a = ("table ip kube-proxy {\n\tset b {\n\t\ttype ipv4_addr\n\t\telements = { 10.0.0.2, 10.0.0.1 }\n\t}\n"
         "\tchain a {\n\t\tip daddr 10.0.0.1 counter packets 4 bytes 240 drop # handle 7\n\t\taccept\n\t}\n}\n")
    b = ("table ip kube-proxy {\n\tchain a {\n\t\tip daddr 10.0.0.1 drop\n\t\taccept\n\t}\n"
         "\tset b {\n\t\ttype ipv4_addr\n\t\telements = { 10.0.0.1, 10.0.0.2 }\n\t}\n}\n")
    assert canonical_nft(a) == canonical_nft(b)
    swapped = b.replace("\t\tip daddr 10.0.0.1 drop\n\t\taccept\n", "\t\taccept\n\t\tip daddr 10.0.0.1 drop\n")
    assert canonical_nft(swapped) != canonical_nft(b)


def test_configuration_comes_from_the_config_map_adapted_to_a_namespace():
    config_map = {"data": {"config.conf": "mode: ipvs\nclusterCIDR: 10.244.0.0/16\nconntrack: {maxPerCore: 32768}\n"}}
    config = configuration(config_map, "lab-worker", "iptables", "/k/kubeconfig")
    assert config["mode"] == "iptables" and config["hostnameOverride"] == "lab-worker"
    assert config["clusterCIDR"] == "10.244.0.0/16"
    assert config["conntrack"]["maxPerCore"] == 0
    assert config["clientConnection"]["contentType"] == "application/json"
    assert config["clientConnection"]["kubeconfig"] == "/k/kubeconfig"


def test_metrics_parse_with_labels():
    m = parse_metrics('# HELP x\nkubeproxy_sync_proxy_rules_last_timestamp_seconds{ip_family="IPv4"} 1.5e+09\n')
    assert m['kubeproxy_sync_proxy_rules_last_timestamp_seconds{ip_family="IPv4"}'] == 1.5e9


def test_missing_binaries_are_named_with_the_build_command(tmp_path, monkeypatch):
    monkeypatch.setenv("LABSUPPORT_UPSTREAM_BIN", str(tmp_path))
    problems = missing_upstream_requirements("kube-proxy")
    assert any("kube-proxy" in p and "make upstream" in p for p in problems)


def test_log_scan_flags_list_and_watch_trouble_only():
    from labsupport.upstream.kube_proxy import LOG_PROBLEMS
    bad = ['E1204 reflector.go:227] "Failed to watch" err="failed to list *v1.ServiceCIDR: the server could not '
           'find the requested resource" type="*v1.ServiceCIDR"',
           'E1204 event_broadcaster.go:270] "Server rejected event (will not retry!)" err="the server could not find '
           'the requested resource"',
           'W1204 reflector.go:561] watch of *v1.EndpointSlice ended with: an error on the server']
    fine = ['E1204 proxier.go:1285] "Failed to list existing sets" err="receiveAckAware: netlink receive: no such '
            'file or directory" ipFamily="IPv4"',
            'E1204 metrics_linux.go:67] "failed to collect nfacct counter" err="object not found"',
            'I1204 reflector.go:507] "Caches populated" type="*v1.Service"']
    assert all(LOG_PROBLEMS.search(line) for line in bad)
    assert not any(LOG_PROBLEMS.search(line) for line in fine)


def test_a_sync_that_started_and_did_not_end_is_running(tmp_path):
    # While a sync runs, the last write can postdate the last change with nothing pending: the log tells.
    from types import SimpleNamespace
    from labsupport.upstream.kube_proxy import UpstreamKubeProxy
    log = tmp_path / "kube-proxy.log"
    kube_proxy = UpstreamKubeProxy("ns", "node", {}, "kubeconfig")
    kube_proxy.dir, kube_proxy.process = str(tmp_path), SimpleNamespace(log_path=str(log))
    start = 'I1204 20:28:16.785045 6314 proxier.go:655] "Syncing iptables rules" ipFamily="IPv4" fullSync=true\n'
    end = 'I1204 20:28:16.885045 6314 proxier.go:649] "SyncProxyRules complete" ipFamily="IPv4" elapsed="100ms"\n'
    log.write_text(start + end + start)
    assert kube_proxy.syncs_running() == 1
    with log.open("a") as fh:
        fh.write(end[:30])               # half a line: not counted yet
    assert kube_proxy.syncs_running() == 1
    with log.open("a") as fh:
        fh.write(end[30:])
    assert kube_proxy.syncs_running() == 0
    with pytest.raises(UpstreamError, match="--v=2"):
        UpstreamKubeProxy("ns", "node", {}, "kubeconfig", verbosity=1)



def sync_started(family: str = "IPv4") -> str:
    """The line kube-proxy logs when a sync begins."""
    return f'I1205 21:29:13.902658 9153 proxier.go:1206] "Syncing nftables rules" ipFamily="{family}"\n'


def sync_ended(family: str = "IPv4") -> str:
    """The line kube-proxy logs when a sync ends."""
    return f'I1205 21:29:13.954978 9153 proxier.go:1200] "SyncProxyRules complete" ipFamily="{family}"\n'


def zone_taken(family: str = "IPv4", labels: str = '{"topology.kubernetes.io/zone":"ru-central1-a"}') -> str:
    """The line a proxier logs (at --v=4) when it takes its Node's topology labels."""
    return (f'I1205 21:29:13.803247 9153 proxier.go:909] "Updated proxier node topology labels" '
            f'ipFamily="{family}" labels={labels}\n')


NO_ZONE = ('I1205 21:52:53.846432 3564 topology.go:209] "Ignoring same-zone topology hints for service since node is '
           'missing label" service="10.101.212.1:82/TCP" label="topology.kubernetes.io/zone"\n')


def test_a_zone_taken_after_the_last_sync_is_not_written_yet(tmp_path, monkeypatch):
    # kube-proxy takes its Node's zone from an informer of its own; its first sync can end before it takes the zone:
    # the metrics then say synced (written after queued, nothing pending) without the zone.
    from types import SimpleNamespace
    from labsupport.upstream.kube_proxy import UpstreamKubeProxy
    log = tmp_path / "kube-proxy.log"
    kube_proxy = UpstreamKubeProxy("ns", "node", {}, "kubeconfig", mode="nftables")
    kube_proxy.dir = str(tmp_path)
    kube_proxy.process = SimpleNamespace(log_path=str(log), poll=lambda: None, log=lambda: log.read_text())
    monkeypatch.setattr(kube_proxy, "sync_state", lambda: (1.0, 2.0, 0.0))

    def append(text: str) -> None:
        with log.open("a") as fh:
            fh.write(text)

    append(sync_started() + sync_ended() + sync_started("IPv6") + sync_ended("IPv6"))
    assert kube_proxy.wait_synced(0.0, timeout=1) == 2.0
    assert kube_proxy.wait_synced(0.0, timeout=1, zone="") == 2.0          # a Node without a zone: nothing to take
    with pytest.raises(UpstreamError, match="zone '' written, wanted 'ru-central1-a'"):
        kube_proxy.wait_synced(0.0, timeout=0.3, zone="ru-central1-a")
    append(zone_taken("IPv6") + zone_taken())
    assert kube_proxy.zone_written() == ("ru-central1-a", False)
    append(sync_started("IPv6") + sync_ended("IPv6") + sync_started())
    assert kube_proxy.zone_written() == ("ru-central1-a", False)          # the IPv4 sync after it still runs
    with pytest.raises(UpstreamError, match="not written yet"):
        kube_proxy.wait_synced(0.0, timeout=0.3, zone="ru-central1-a")
    append(sync_ended())
    assert kube_proxy.wait_synced(0.0, timeout=1, zone="ru-central1-a") == 2.0
    append(zone_taken(labels="{}") + sync_started() + sync_ended())      # the label taken away again
    assert kube_proxy.zone_written() == ("", True)


def test_a_start_that_lost_its_nodes_zone_says_so(tmp_path, monkeypatch):
    # v1.37 adds the proxier's topology handler to a Node informer already running, which replays the Node on a
    # goroutine of its own: handled before the proxier is registered, the zone is lost to that process for good.
    import labsupport.upstream.kube_proxy as module
    from labsupport.upstream.kube_proxy import UpstreamKubeProxy, ZoneLost
    lost = sync_started() + NO_ZONE + sync_ended()
    logs: list[str] = []
    launched: list[list[str]] = []

    class Program:
        """kube-proxy as far as start() sees it: a log written at once."""
        returncode = None

        def __init__(self, ns: str, argv: list[str], log_path: str):
            self.log_path = log_path
            launched.append(argv)
            with open(log_path, "w") as fh:
                fh.write(logs.pop(0))

        def poll(self) -> None:
            return None

        def log(self) -> str:
            with open(self.log_path) as fh:
                return fh.read()

        def stop(self) -> None:
            pass

    monkeypatch.setattr(module, "NamespacedProcess", Program)
    monkeypatch.setattr(module, "binary", lambda name: f"/upstream/{name}")
    monkeypatch.setattr(module, "ZONE_GRACE", 0.3)
    monkeypatch.setattr(UpstreamKubeProxy, "sync_state", lambda self: (1.0, 2.0, 0.0))
    config_map = {"data": {"config.conf": "mode: nftables\n"}}
    for log, zone, outcome in ((lost, "ru-central1-a", ZoneLost), (lost, "", None),
                               (zone_taken() + sync_started() + sync_ended(), "ru-central1-a", None)):
        logs.append(log)
        kube_proxy = UpstreamKubeProxy("ns", "lab-worker", config_map, "kubeconfig", mode="nftables")
        try:
            if outcome is None:
                kube_proxy.start(timeout=5, zone=zone)
                assert kube_proxy.zone_written() == (zone, True)
            else:
                with pytest.raises(ZoneLost, match="without its Node's zone 'ru-central1-a'(.|\n)*missing label"):
                    kube_proxy.start(timeout=5, zone=zone)
        finally:
            kube_proxy.remove()
    assert "--vmodule=proxier=4" in launched[0]


def test_an_nftables_start_without_the_service_cidrs_drop_rule_says_so(tmp_path, monkeypatch):
    # The ServiceCIDR informer is not waited for before the first sync, and nftables mode writes the CIDRs' drop
    # rule only in a full sync: a first sync without them stays without it (in iptables mode there is no such rule).
    import labsupport.upstream.kube_proxy as module
    from labsupport.upstream.kube_proxy import ServiceCIDRsLost, UpstreamKubeProxy

    class Program:
        """kube-proxy as far as start() sees it: one sync, logged at once."""
        returncode = None

        def __init__(self, ns: str, argv: list[str], log_path: str):
            self.log_path = log_path
            with open(log_path, "w") as fh:
                fh.write(sync_started() + sync_ended())

        def poll(self) -> None:
            return None

        def log(self) -> str:
            with open(self.log_path) as fh:
                return fh.read()

        def stop(self) -> None:
            pass

    table = 'table ip kube-proxy {\n\tchain cluster-ips-check {\n\t\tip daddr @cluster-ips reject\n\t}\n}\n'
    with_drop = table.replace("reject\n", 'reject\n\t\tip daddr { 10.96.0.0/12 } drop comment "Drop traffic to '
                                          'unallocated ClusterIPs"\n')
    monkeypatch.setattr(module, "NamespacedProcess", Program)
    monkeypatch.setattr(module, "binary", lambda name: f"/upstream/{name}")
    monkeypatch.setattr(UpstreamKubeProxy, "sync_state", lambda self: (1.0, 2.0, 0.0))
    config_map = {"data": {"config.conf": "mode: nftables\n"}}
    for mode, written, cidrs, lost in (("nftables", table, True, True), ("nftables", with_drop, True, False),
                                       ("nftables", table, False, False), ("iptables", "", True, False)):
        kube_proxy = UpstreamKubeProxy("ns", "lab-worker", config_map, "kubeconfig", mode=mode)
        monkeypatch.setattr(kube_proxy, "rules", lambda written=written: written)
        try:
            if lost:
                with pytest.raises(ServiceCIDRsLost, match="before it had the Service CIDRs"):
                    kube_proxy.start(timeout=5, zone="", service_cidrs=cidrs)
            else:
                kube_proxy.start(timeout=5, zone="", service_cidrs=cidrs)
        finally:
            kube_proxy.remove()


def klog_line(at: float, message: str, family: str = "IPv4") -> str:
    """A kube-proxy log line stamped `at` (Unix seconds), as klog writes it: local time, no year."""
    stamp = time.strftime("%m%d %H:%M:%S", time.localtime(at)) + f".{int(round(at % 1 * 1e6)) % 1000000:06d}"
    return f'I{stamp} 6582 proxier.go:655] "{message}" ipFamily="{family}"\n'


def test_klog_times_read_back_as_unix_seconds():
    from labsupport.upstream.kube_proxy import klog_time
    at = 1796630263.649149
    assert klog_time(klog_line(at, "Syncing iptables rules"), now=at + 5) == pytest.approx(at, abs=1e-6)
    assert klog_time("no header here") is None


def test_a_change_queued_while_a_sync_ran_waits_for_the_next_sync(tmp_path, monkeypatch):
    # Seen on the real kube-proxy: a Service created while a sync was running was queued 6 ms after that sync took
    # its changes in; the sync ended after the queue time, and the pending gauges read 0 (the IPv6 proxier had set
    # them to its own count), so the metrics said written. Only the next sync, 1 s later, wrote the Service.
    from types import SimpleNamespace
    from labsupport.upstream.kube_proxy import UpstreamKubeProxy
    log = tmp_path / "kube-proxy.log"
    kube_proxy = UpstreamKubeProxy("ns", "node", {}, "kubeconfig")
    kube_proxy.dir = str(tmp_path)
    kube_proxy.process = SimpleNamespace(log_path=str(log), poll=lambda: None, log=lambda: log.read_text())
    began = time.time() - 10
    queued, ended = began + 0.006, began + 0.038
    monkeypatch.setattr(kube_proxy, "sync_state", lambda: (queued, ended, 0.0))
    log.write_text(klog_line(began, "Syncing iptables rules") + klog_line(ended, "SyncProxyRules complete")
                   + klog_line(began + 0.5, "Syncing iptables rules", "IPv6")
                   + klog_line(began + 0.6, "SyncProxyRules complete", "IPv6"))
    with pytest.raises(UpstreamError, match="did not sync"):
        kube_proxy.wait_synced(queued - 0.001, timeout=0.3)
    with log.open("a") as fh:
        fh.write(klog_line(began + 1.04, "Syncing iptables rules") + klog_line(began + 1.07, "SyncProxyRules complete"))
    assert kube_proxy.wait_synced(queued - 0.001, timeout=1) == ended
