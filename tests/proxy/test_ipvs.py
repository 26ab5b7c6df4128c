"""IPVS mode: virtual servers, schedulers, persistence, ipsets and the remaining iptables rules."""
from __future__ import annotations

from labsupport.proxy import render
from labsupport.proxy.ipvs import ipvs_state

from .fixtures import GOLDEN_CONFIG, node, scenario, two_services


def test_ipvsadm_output_shape():
    services, slices = two_services()
    text = render("ipvs", services, slices, node(), GOLDEN_CONFIG)
    lines = text.splitlines()
    assert lines[0] == "# ipvsadm -Ln"
    assert lines[1] == "IP Virtual Server version 1.2.1 (size=4096)"
    assert lines[2] == "Prot LocalAddress:Port Scheduler Flags"
    assert lines[3] == "  -> RemoteAddress:Port           Forward Weight ActiveConn InActConn"
    assert "TCP  172.30.0.41:80 rr" in lines
    assert "  -> 10.0.1.1:80                  Masq    1      0          0" in lines
    assert "# ipset list" in lines and "# iptables-save" in lines
    assert "172.30.0.41,tcp:80" in lines


def test_scheduler_persistence_and_virtual_servers_per_address():
    services, slices = scenario("affinity")
    state = ipvs_state(services, slices, node(), {"clusterCIDR": "10.0.0.0/8", "ipvs": {"scheduler": "lc"}})
    vs = state.find("172.30.0.41", 80)
    assert vs.scheduler == "lc" and vs.persistent == 10800 and len(vs.real_servers) == 2
    assert "TCP  172.30.0.41:80 lc persistent 10800" in state.ipvsadm()


def test_local_policy_nodeport_and_load_balancer():
    services, slices = scenario("local")
    state = ipvs_state(services, slices, node("node1"), GOLDEN_CONFIG)
    assert [rs.address for rs in state.find("192.168.0.2", 30080).real_servers] == ["10.0.1.1:80"]
    assert [rs.address for rs in state.find("5.6.7.8", 80).real_servers] == ["10.0.1.1:80"]
    assert len(state.find("172.30.0.41", 80).real_servers) == 2
    assert state.ipsets["KUBE-NODE-PORT-LOCAL-TCP"] == ["30080"]
    assert state.ipsets["KUBE-LOAD-BALANCER-LOCAL"] == ["5.6.7.8,tcp:80"]
    assert state.ipsets["KUBE-LOOP-BACK"] == ["10.0.1.1,tcp:80,10.0.1.1"]
    assert "5.6.7.8" in state.dummy_addresses
    assert "--match-set KUBE-CLUSTER-IP dst,dst -j KUBE-MARK-MASQ" in state.iptables()


def test_no_endpoints_keeps_an_empty_virtual_server():
    services, slices = scenario("noendpoints")
    state = ipvs_state(services, slices, node(), GOLDEN_CONFIG)
    assert state.find("172.30.0.41", 80).real_servers == ()


def test_ipvs_delta_after_one_endpoint_change():
    from labsupport.proxy.ipvs import ipvs_delta

    from .fixtures import endpoint, endpointslice
    services, slices = two_services()
    before = ipvs_state(services, slices, node(), GOLDEN_CONFIG)
    moved = endpointslice("ns1", "svc1", [endpoint("10.0.1.9")], [{"name": "p80", "port": 80, "protocol": "TCP"}])
    after = ipvs_state(services, [moved, slices[1]], node(), GOLDEN_CONFIG)
    assert ipvs_delta(before, after).splitlines() == ["-d -t 172.30.0.41:80 -r 10.0.1.1:80",
                                                      "-a -t 172.30.0.41:80 -r 10.0.1.9:80 -m -w 1"]
    assert ipvs_delta(None, before).startswith("-A -t 172.30.0.41:80 -s rr")
