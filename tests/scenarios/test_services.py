"""Where connections really go, through the Lab, in every kube-proxy mode: the lesson's claims as tests."""
from __future__ import annotations

from collections import Counter

import pytest
from scipy.stats import chisquare

from labsupport import Lab
from tests.conftest import ready_addresses

MODES = ("iptables", "nftables", "ipvs")

NETEXEC = """
apiVersion: apps/v1
kind: Deployment
metadata: {{name: echo}}
spec:
  replicas: {replicas}
  selector: {{matchLabels: {{app: echo}}}}
  template:
    metadata: {{labels: {{app: echo}}}}
    spec:
      {node_selector}
      containers:
      - name: netexec
        image: registry.k8s.io/e2e-test-images/agnhost:2.53
        args: [netexec, --http-port=8080]
        ports: [{{containerPort: 8080, name: http}}]
---
apiVersion: v1
kind: Service
metadata: {{name: echo}}
spec:
  type: {type}
  selector: {{app: echo}}
  {extra}
  ports: [{{port: 80, targetPort: {target}, {node_port}}}]
"""


def echo(lab: Lab, *, replicas=3, type_="ClusterIP", extra="", target="http", node_port="",
         node_selector="") -> dict:
    """Deploy agnhost netexec behind a Service and wait until every replica is an endpoint."""
    lab.apply(NETEXEC.format(replicas=replicas, type=type_, extra=extra, target=target, node_port=node_port,
                             node_selector=node_selector))
    lab.wait(lambda l: ready_addresses(l, "echo") == replicas)
    return lab.get("svc", "echo")


def pod_source(lab: Lab, node: str | None = None) -> str:
    """A client pod (busybox sleeping) on a given node."""
    name = f"client-{node or 'any'}"
    spec = {"containers": [{"name": "c", "image": "busybox:1.36", "command": ["sleep", "3600"]}]}
    if node:
        spec["nodeName"] = node
    lab.apply({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec})
    lab.wait(lambda l: l.get("pod", name)["status"].get("phase") == "Running")
    return f"pod/{name}"


@pytest.fixture(params=MODES)
def mode_lab(request):
    with Lab(seed=0, proxy_mode=request.param) as lab:
        yield lab


def test_clusterip_reaches_every_endpoint_uniformly(mode_lab):
    echo(mode_lab)
    src = pod_source(mode_lab)
    hits = Counter(mode_lab.curl("http://echo/hostname", source=src).body for _ in range(3000))
    assert len(hits) == 3
    if mode_lab.proxy_mode == "ipvs":
        # IPVS's default scheduler is round-robin: exactly even.
        assert set(hits.values()) == {1000}
    else:
        assert chisquare(list(hits.values())).pvalue > 0.01


def test_from_pod_the_app_sees_the_pod_ip_without_snat(mode_lab):
    echo(mode_lab)
    src = pod_source(mode_lab)
    pod_ip = mode_lab.get("pod", src.split("/")[1])["status"]["podIP"]
    result = mode_lab.curl("http://echo/clientip", source=src)
    assert result.status == 200
    assert result.body.split(":")[0] == pod_ip == result.client_ip


def test_dns_name_and_clusterip_both_work(mode_lab):
    svc = echo(mode_lab)
    src = pod_source(mode_lab)
    assert mode_lab.curl("http://echo.default.svc.cluster.local/hostname", source=src).ok
    assert mode_lab.curl(f"http://{svc['spec']['clusterIP']}/hostname", source=src).ok


def test_clusterip_is_not_reachable_from_outside(mode_lab):
    svc = echo(mode_lab)
    result = mode_lab.curl(f"http://{svc['spec']['clusterIP']}/", source="client")
    assert result.timed_out


def test_nothing_listens_on_a_clusterip_port_the_service_does_not_serve(mode_lab):
    svc = echo(mode_lab)
    result = mode_lab.curl(f"http://{svc['spec']['clusterIP']}:8080/", source="node/lab-worker")
    assert not result.ok


def test_nodeport_answers_on_every_node_even_without_a_pod(mode_lab):
    svc = echo(mode_lab, replicas=1, type_="NodePort", node_port="nodePort: 30080",
               node_selector="nodeSelector: {kubernetes.io/hostname: lab-worker}")
    assert svc["spec"]["ports"][0]["nodePort"] == 30080
    for node in mode_lab.get("nodes"):
        ip = node["status"]["addresses"][0]["address"]
        result = mode_lab.curl(f"http://{ip}:30080/hostname", source="client")
        assert result.status == 200, (node["metadata"]["name"], result.error)


def test_external_traffic_policy_cluster_snats_to_a_node_ip(mode_lab):
    echo(mode_lab, replicas=1, type_="NodePort", node_port="nodePort: 30080",
         node_selector="nodeSelector: {kubernetes.io/hostname: lab-worker}")
    node_ips = {n["status"]["addresses"][0]["address"] for n in mode_lab.get("nodes")}
    result = mode_lab.curl("http://172.18.0.4:30080/clientip", source="client")
    assert result.status == 200
    assert result.body.split(":")[0] in node_ips
    assert result.client_ip != "172.18.0.100"


def test_external_traffic_policy_local_keeps_the_client_ip_and_drops_elsewhere(mode_lab):
    echo(mode_lab, replicas=1, type_="NodePort", node_port="nodePort: 30080", extra="externalTrafficPolicy: Local",
         node_selector="nodeSelector: {kubernetes.io/hostname: lab-worker}")
    here = mode_lab.curl("http://172.18.0.3:30080/clientip", source="client")
    assert here.status == 200 and here.body.split(":")[0] == "172.18.0.100"
    elsewhere = mode_lab.curl("http://172.18.0.4:30080/clientip", source="client")
    if mode_lab.proxy_mode == "ipvs":
        assert not elsewhere.ok
    else:
        assert elsewhere.timed_out


def test_load_balancer_with_local_only_sends_to_nodes_that_pass_the_health_check(mode_lab):
    svc = echo(mode_lab, replicas=1, type_="LoadBalancer", extra="externalTrafficPolicy: Local",
               node_selector="nodeSelector: {kubernetes.io/hostname: lab-worker2}")
    lb_ip = svc["status"]["loadBalancer"]["ingress"][0]["ip"]
    hc = svc["spec"]["healthCheckNodePort"]
    assert mode_lab.curl(f"http://172.18.0.4:{hc}/", source="client").status == 200
    assert mode_lab.curl(f"http://172.18.0.3:{hc}/", source="client").status == 503
    results = [mode_lab.curl(f"http://{lb_ip}/clientip", source="client") for _ in range(20)]
    assert all(r.status == 200 and r.node == "lab-worker2" for r in results)
    assert all(r.body.startswith("172.18.0.100:") for r in results)


def test_session_affinity_client_ip_sticks_until_the_timeout(mode_lab):
    echo(mode_lab, extra="sessionAffinity: ClientIP\n  sessionAffinityConfig: {clientIP: {timeoutSeconds: 60}}")
    src = pod_source(mode_lab, "lab-worker")
    first = {mode_lab.curl("http://echo/hostname", source=src).body for _ in range(30)}
    assert len(first) == 1
    mode_lab.advance(120)
    later = {mode_lab.curl("http://echo/hostname", source=src).body for _ in range(60)}
    assert len(later) == 1


def test_no_endpoints_is_refused_at_once(mode_lab):
    echo(mode_lab)
    mode_lab.scale("echo", 0)
    mode_lab.advance(40)
    src = pod_source(mode_lab)
    result = mode_lab.curl("http://echo/", source=src)
    assert result.refused, result.error
    assert "Couldn't connect to server" in result.error


def test_target_port_mismatch_resolves_but_is_refused(mode_lab):
    echo(mode_lab, target="9999")
    src = pod_source(mode_lab)
    assert mode_lab.nslookup("echo").addresses
    result = mode_lab.curl("http://echo/", source=src)
    assert result.refused


def test_headless_service_has_no_rules(mode_lab):
    echo(mode_lab, extra="clusterIP: None")
    assert "default/echo" not in mode_lab.proxy_rules()


def test_keep_alive_stays_on_its_pod_after_a_scale_up(mode_lab):
    echo(mode_lab, replicas=1)
    src = pod_source(mode_lab)
    conn = mode_lab.connect("http://echo/hostname", source=src)
    first = conn.first.body
    mode_lab.scale("echo", 3)
    mode_lab.wait(lambda l: ready_addresses(l, "echo") == 3)
    assert {conn.request().body for _ in range(50)} == {first}
    fresh = Counter(mode_lab.curl("http://echo/hostname", source=src).body for _ in range(300))
    assert len(fresh) == 3
    conn.close()


def test_prefer_close_keeps_traffic_in_zone_and_falls_back(mode_lab):
    echo(mode_lab, extra="trafficDistribution: PreferClose")
    zone_a = next(p for p in mode_lab.get("pods", selector="app=echo") if p["spec"]["nodeName"] == "lab-worker")
    src = pod_source(mode_lab, "lab-worker")
    hosts = {mode_lab.curl("http://echo/hostname", source=src).body for _ in range(50)}
    assert hosts == {zone_a["metadata"]["name"]}
    mode_lab.delete("pod", zone_a["metadata"]["name"], grace_period=0)
    mode_lab.advance(0.1)
    hosts = {mode_lab.curl("http://echo/hostname", source=src).body for _ in range(50)}
    assert len(hosts) == 2 and zone_a["metadata"]["name"] not in hosts


def test_trace_tells_the_story_of_one_packet(lab):
    svc = echo(lab)
    src = pod_source(lab, "lab-worker")
    trace = lab.trace("http://echo/hostname", source=src)
    text = trace.text()
    assert f"DNAT {svc['spec']['clusterIP']}:80 ->" in text
    assert "KUBE-SERVICES" in text and "KUBE-SVC-" in text and "KUBE-SEP-" in text
    assert trace.result.ok


def test_a_nodes_own_connection_says_why_its_masquerade_changes_nothing(lab):
    """From a node to a ClusterIP whose pod runs elsewhere: kube-proxy masquerades it (it comes from no pod), and the
    node's address is already the one masquerading gives, so the trace's SNAT reads `x -> x`: it says why."""
    svc = echo(lab, replicas=1)
    pod = lab.get("pods", selector="app=echo")[0]
    other = next(n for n in ("lab-worker", "lab-worker2", "lab-worker3") if n != pod["spec"]["nodeName"])
    trace = lab.trace(f"http://{svc['spec']['clusterIP']}/hostname", source=f"node/{other}")
    (snat,) = [r for r in trace.rewrites if r.startswith("SNAT")]
    before, after = snat.split()[1], snat.split()[3]
    assert before == after and trace.result.ok, snat
    assert "comes from the node itself, which already has the address it would get, so nothing changes" in snat


# --- kube-proxy's life -----------------------------------------------------------------------------------

def test_mode_switch_goes_through_the_configmap_and_cleans_up(lab):
    echo(lab)
    assert lab.proxy_mode == "iptables"
    assert lab.proxy_rules().startswith("*filter") or "*nat" in lab.proxy_rules()
    lab.set_proxy_mode("nftables")
    assert lab.proxy_mode == "nftables"
    rules = lab.proxy_rules()
    assert "table ip kube-proxy" in rules and "KUBE-SVC-" not in rules
    cm = lab.get("cm", "kube-proxy", namespace="kube-system")
    assert "mode: nftables" in cm["data"]["config.conf"]
    src = pod_source(lab)
    assert lab.curl("http://echo/hostname", source=src).ok


def test_stopped_kube_proxy_keeps_old_rules_and_learns_nothing_new(lab):
    echo(lab, replicas=1)
    src = pod_source(lab, "lab-worker")
    before = lab.proxy_rules("lab-worker")
    lab.stop_kube_proxy("lab-worker")
    assert not [p for p in lab.get("pods", namespace="kube-system", selector="k8s-app=kube-proxy")
                if p["spec"]["nodeName"] == "lab-worker" and not p["metadata"].get("deletionTimestamp")]
    assert lab.curl("http://echo/hostname", source=src).ok
    lab.apply({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "late"},
               "spec": {"selector": {"app": "echo"}, "ports": [{"port": 80, "targetPort": 8080}]}})
    assert lab.proxy_rules("lab-worker") == before
    assert "default/late" in lab.proxy_rules("lab-worker2")
    # lab-worker has no rule for the new ClusterIP: in iptables mode the packet goes out untouched, to nowhere.
    assert lab.curl("http://late/hostname", source=src).timed_out
    lab.start_kube_proxy("lab-worker")
    assert "default/late" in lab.proxy_rules("lab-worker")
    assert lab.curl("http://late/hostname", source=src).ok


def test_ipvs_shows_virtual_servers(lab):
    echo(lab)
    lab.set_proxy_mode("ipvs")
    rules = lab.proxy_rules()
    svc = lab.get("svc", "echo")
    assert f"TCP  {svc['spec']['clusterIP']}:80 rr" in rules
    assert "KUBE-CLUSTER-IP" in rules


def test_conntrack_shows_an_open_connection(lab):
    echo(lab, replicas=1)
    src = pod_source(lab, "lab-worker")
    conn = lab.connect("http://echo/hostname", source=src)
    entries = lab.conntrack("lab-worker")
    svc_ip = lab.get("svc", "echo")["spec"]["clusterIP"]
    assert any(f"dst={svc_ip}" in e and "ESTABLISHED" in e for e in entries)
    conn.close()
    assert not any(f"dst={svc_ip}" in e and "ESTABLISHED" in e for e in lab.conntrack("lab-worker"))


def test_a_pod_reaches_a_node_port_on_another_node(mode_lab):
    echo(mode_lab, replicas=1, type_="NodePort", node_port="nodePort: 30080",
         node_selector="nodeSelector: {kubernetes.io/hostname: lab-worker3}")
    src = pod_source(mode_lab, "lab-worker")
    result = mode_lab.curl("http://172.18.0.4:30080/hostname", source=src)
    assert result.status == 200, result.error
    assert result.node == "lab-worker3"
    nodes_seen = [h.where for h in result.hops if h.what.startswith("netfilter")]
    assert nodes_seen[:2] == ["lab-worker", "lab-worker2"]


def test_a_finished_curl_stays_in_conntrack_as_time_wait_for_120_seconds(mode_lab):
    echo(mode_lab, replicas=1)
    src = pod_source(mode_lab)
    node = mode_lab.get("pod", src.split("/")[-1])["spec"]["nodeName"]
    vip = mode_lab.get("svc", "echo")["spec"]["clusterIP"]
    assert mode_lab.curl("http://echo/hostname", source=src).ok
    [line] = [line for line in mode_lab.conntrack(node) if f"dst={vip} " in line]
    assert line.split()[2:4] == ["120", "TIME_WAIT"], line
    mode_lab.advance(119)
    assert [line for line in mode_lab.conntrack(node) if f"dst={vip} " in line]
    mode_lab.advance(1)
    assert not [line for line in mode_lab.conntrack(node) if f"dst={vip} " in line]


def test_an_unanswered_curl_stays_in_conntrack_as_syn_sent(mode_lab):
    echo(mode_lab, replicas=1)
    src = pod_source(mode_lab)
    node = mode_lab.get("pod", src.split("/")[-1])["spec"]["nodeName"]
    vip = mode_lab.get("svc", "echo")["spec"]["clusterIP"]
    result = mode_lab.curl(f"http://{vip}:8081/", source=src)     # a port the Service does not serve
    entries = [line for line in mode_lab.conntrack(node) if f"dst={vip} " in line and "dport=8081" in line]
    if mode_lab.proxy_mode == "iptables":       # routed nowhere: the SYN is never answered
        assert result.exit_code == 28
        [line] = entries
        assert line.split()[2:4] == ["120", "SYN_SENT"] and "[UNREPLIED]" in line and "[ASSURED]" not in line
    else:                                       # nftables and IPVS reject it at once: nothing is tracked
        assert result.exit_code == 7 and entries == []
