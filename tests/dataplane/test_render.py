"""The model over what labsupport.proxy.render writes: the same answers in every mode."""
import random

import pytest

from labsupport import proxy
from labsupport.dataplane.model import NodeDatapath, trace_packet

NODE_IP = "192.168.0.2"
NODE = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node1"},
        "status": {"addresses": [{"type": "InternalIP", "address": NODE_IP}]}}
CONFIG = {"clusterCIDR": "10.0.0.0/8"}


def _service(name, ip, port=80, affinity=False):
    spec = {"type": "ClusterIP", "clusterIP": ip, "clusterIPs": [ip],
            "ports": [{"name": "p80", "port": port, "protocol": "TCP", "targetPort": 80}]}
    if affinity:
        spec["sessionAffinity"] = "ClientIP"
        spec["sessionAffinityConfig"] = {"clientIP": {"timeoutSeconds": 10800}}
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": "ns1"}, "spec": spec}


def _slice(name, addresses):
    return {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
            "metadata": {"name": f"{name}-abc", "namespace": "ns1", "labels": {"kubernetes.io/service-name": name}},
            "addressType": "IPv4",
            "endpoints": [{"addresses": [a], "conditions": {"ready": True}} for a in addresses],
            "ports": [{"name": "p80", "port": 80, "protocol": "TCP"}]}


@pytest.fixture(scope="module")
def rendered():
    services = [_service("svc1", "172.30.0.41"), _service("svc2", "172.30.0.42", affinity=True),
                _service("empty", "172.30.0.43")]
    slices = [_slice("svc1", ["10.0.1.1", "10.0.1.2", "10.0.1.3"]), _slice("svc2", ["10.0.2.1", "10.0.2.2"])]
    out = {}
    for mode in ("iptables", "nftables", "ipvs"):
        out[mode] = proxy.render(mode, services, slices, NODE, CONFIG, service_cidrs=("172.30.0.0/16",))
    return out


@pytest.mark.parametrize("mode", ["iptables", "nftables", "ipvs"])
@pytest.mark.parametrize("src,masq", [("10.0.0.2", False), (NODE_IP, True)])
def test_same_answer_in_every_mode(rendered, mode, src, masq):
    t = trace_packet(mode, rendered[mode], [NODE_IP], src, "172.30.0.41", 80)
    assert t.endpoints == ["10.0.1.1:80", "10.0.1.2:80", "10.0.1.3:80"]
    assert (t.masquerade, t.verdict) == (masq, "ACCEPT")


@pytest.mark.parametrize("mode", ["iptables", "nftables"])
def test_no_endpoints_rejected(rendered, mode):
    assert trace_packet(mode, rendered[mode], [NODE_IP], "10.0.0.2", "172.30.0.43", 80).verdict == "REJECT"


@pytest.mark.parametrize("mode", ["iptables", "nftables", "ipvs"])
def test_affinity_holds(rendered, mode):
    dp = NodeDatapath(mode, rendered[mode], [NODE_IP], random.Random(5))
    seen = {dp.connect("10.0.0.9", 1000 + k, "172.30.0.42", 80, now=k).endpoint for k in range(20)}
    assert len(seen) == 1


def test_incremental_nft_updates_from_the_syncer():
    from labsupport.proxy import nftables as nft
    syncer = nft.NftablesSyncer(NODE, CONFIG, service_cidrs=("172.30.0.0/16",))
    svc = _service("svc1", "172.30.0.41")
    first = syncer.sync([svc], [_slice("svc1", ["10.0.1.1", "10.0.1.2"])])
    dp = NodeDatapath("nftables", first, [NODE_IP], random.Random(0))
    held = dp.connect("10.0.0.2", 4000, "172.30.0.41", 80)
    dp.apply(syncer.update(endpointslices=[_slice("svc1", ["10.0.1.7"])]))
    assert dp.trace("10.0.0.2", "172.30.0.41", 80).endpoints == ["10.0.1.7:80"]
    assert dp.connect("10.0.0.2", 4000, "172.30.0.41", 80).endpoint == held.endpoint
    dp.apply(syncer.update(deleted_services=[("ns1", "svc1")]))
    gone = dp.trace("10.0.0.2", "172.30.0.41", 80)
    assert gone.endpoints == [] and gone.verdict == "DROP"
    # the full transaction for the final state gives the same answer as the applied deltas
    assert trace_packet("nftables", syncer.rules, [NODE_IP], "10.0.0.2", "172.30.0.41", 80).verdict == "DROP"
