"""Load the rendered rules into a real kernel, each case in its own fresh network namespace."""
from __future__ import annotations

import pytest

from labsupport.proxy import render
from labsupport.proxy.iptables import render_iptables
from labsupport.proxy.nftables import NftablesSyncer

from labsupport.testing import require_kernel
from tests.proxy.fixtures import GOLDEN_CONFIG, SCENARIOS, endpoint, endpointslice, node, scenario, two_services
from tests.proxy.test_iptables_overall import overall_objects


def objects(case: str) -> tuple[list[dict], list[dict]]:
    """Services and slices for a kernel case."""
    if case == "two-services":
        return two_services()
    if case == "overall":
        return overall_objects()
    return scenario(case)

pytestmark = pytest.mark.kernel
CIDRS = ("172.30.0.0/16",)


@pytest.mark.parametrize("case", ("two-services", "overall", *SCENARIOS))
def test_iptables_restore_accepts_dump(netns, case):
    require_kernel("iptables-restore", "iptables-save")
    services, slices = objects(case)
    text = render("iptables", services, slices, node(), GOLDEN_CONFIG, service_cidrs=CIDRS)
    netns.run("iptables-restore", input=text)
    saved = netns.run("iptables-save").stdout
    for line in text.splitlines():
        if line.startswith("-A KUBE-SVC-") or line.startswith("-A KUBE-SEP-"):
            chain = line.split()[1]
            assert f":{chain} - [0:0]" in saved


def test_iptables_restore_accepts_dump_with_jumps(netns):
    require_kernel("iptables-restore")
    services, slices = scenario("local")
    text = render_iptables(services, slices, node(), GOLDEN_CONFIG, with_jumps=True)
    netns.run("iptables-restore", input=text)
    saved = netns.run("iptables-save", "-t", "nat").stdout
    assert "-A PREROUTING -m comment --comment \"kubernetes service portals\" -j KUBE-SERVICES" in saved


@pytest.mark.parametrize("case", ("two-services", "overall", *SCENARIOS))
def test_nft_accepts_transaction(netns, case):
    require_kernel("nft")
    services, slices = objects(case)
    text = render("nftables", services, slices, node(), GOLDEN_CONFIG, service_cidrs=CIDRS)
    netns.run("nft", "-f", "-", input=text)
    listing = netns.run("nft", "list", "table", "ip", "kube-proxy").stdout
    assert "chain services" in listing


def test_nft_incremental_delta_applies(netns):
    require_kernel("nft")
    services, slices = scenario("affinity")
    services2, slices2 = two_services()
    services = services + services2[1:]
    slices = slices + slices2[1:]
    syncer = NftablesSyncer(node(), GOLDEN_CONFIG, service_cidrs=CIDRS)
    netns.run("nft", "-f", "-", input=syncer.sync(services, slices))
    # One endpoint replaced, one added: chains rewritten, a stale chain and affinity set removed.
    changed = endpointslice("ns1", "svc1", [endpoint("10.0.1.1", node="node1"), endpoint("10.0.3.7", node="node3"),
                                            endpoint("10.0.3.8", node="node3")],
                            [{"name": "p80", "port": 80, "protocol": "TCP"}])
    delta = syncer.update(endpointslices=[changed])
    assert "delete chain" in delta and "add chain" in delta
    netns.run("nft", "-f", "-", input=delta)
    # Service loses all endpoints: its map element moves to no-endpoint-services.
    empty = endpointslice("ns2", "svc2", [], [{"name": "p8080", "port": 8080, "protocol": "TCP"}])
    netns.run("nft", "-f", "-", input=syncer.update(endpointslices=[empty]))
    # Service deleted altogether.
    netns.run("nft", "-f", "-", input=syncer.update(deleted_services=[("ns1", "svc1")]))
    listing = netns.run("nft", "list", "table", "ip", "kube-proxy").stdout
    assert "ns1/svc1" not in listing
    assert "ns2/svc2" in listing
    # The kernel now holds exactly what loading the final state from scratch gives.
    netns.run("nft", "delete", "table", "ip", "kube-proxy")
    netns.run("nft", "-f", "-", input=syncer.rules)
    blocks = nft_blocks(listing)
    assert any(name.startswith("chain service-") for name in blocks) and blocks["map service-ips"]
    assert blocks == nft_blocks(netns.run("nft", "list", "table", "ip", "kube-proxy").stdout)


def nft_blocks(listing: str) -> dict[str, list[str]]:
    """`nft list table` output as {"chain X" / "set X" / "map X": sorted lines of its body}."""
    blocks: dict[str, list[str]] = {}
    current = None
    for raw in listing.splitlines():
        line = raw.strip()
        if line.startswith(("chain ", "set ", "map ")) and line.endswith("{"):
            current = line[:-1].strip()
            blocks[current] = []
        elif line == "}" and current is not None and raw.startswith("\t}"):
            current = None
        elif current is not None and line:
            blocks[current].extend(part.strip() for part in line.split(",") if part.strip())
    return {name: sorted(lines) for name, lines in blocks.items()}


def test_mode_switch_cleanup_leaves_nothing_behind(netns):
    require_kernel("iptables-restore", "iptables-save", "nft")
    from labsupport.proxy import KubeProxy
    services, slices = scenario("local")
    kp = KubeProxy(node("node1"), "iptables", GOLDEN_CONFIG)
    kp.sync(services, slices)
    netns.run("iptables-restore", input=kp.rules_with_jumps)
    switch = kp.set_mode("nftables")
    netns.run("iptables-restore", "--noflush", input=switch.cleanup)
    assert "KUBE-" not in netns.run("iptables-save").stdout
    netns.run("nft", "-f", "-", input=switch.first_sync.text)
    switch = kp.set_mode("iptables")
    netns.run("nft", "-f", "-", input=switch.cleanup)
    assert "kube-proxy" not in netns.run("nft", "list", "tables").stdout
    netns.run("iptables-restore", input=switch.first_sync.text)


@pytest.mark.parametrize("mode", ["iptables", "nftables"])
def test_nodeport_addresses_variants_load(netns, mode):
    require_kernel("iptables-restore", "nft")
    services, slices = scenario("nodeport")
    for addresses in (["0.0.0.0/0"], ["192.168.0.0/16"], ["primary"], ["127.0.0.0/8", "192.168.0.0/24"]):
        config = {"clusterCIDR": "10.0.0.0/8", "nodePortAddresses": addresses}
        text = render(mode, services, slices, node(), config, service_cidrs=CIDRS)
        if mode == "iptables":
            netns.run("iptables-restore", input=text)
        else:
            netns.run("nft", "-f", "-", input=text)
            netns.run("nft", "delete", "table", "ip", "kube-proxy")


def test_iptables_partial_restore_matches_full_render(netns):
    require_kernel("iptables-restore", "iptables-save")
    from labsupport.proxy import KubeProxy
    services, slices = overall_objects()
    kp = KubeProxy(node("test-node"), "iptables", GOLDEN_CONFIG)
    kp.sync(services, slices)
    netns.run("iptables-restore", input=kp.rules_with_jumps)
    changed = [endpointslice("ns4", "svc4", [endpoint("10.180.0.9")], [{"name": "p80", "port": 80,
                                                                        "protocol": "TCP"}])]
    partial = kp.sync(services, [s for s in slices if s["metadata"]["name"] != "svc4-abcde"] + changed)
    assert ":KUBE-SVC-XPGD46QRK7WJZT7O" not in partial.text     # an unchanged Service chain is left alone
    assert ":KUBE-SVC-4SW47YFZTEDKD3PK - [0:0]" in partial.text and "-X KUBE-SEP-UKSFD7AGPMPPLUHC" in partial.text
    netns.run("iptables-restore", "--noflush", input=partial.text)
    after_partial = kube_lines(netns.run("iptables-save").stdout)
    netns.run("iptables-restore", input=kp.rules_with_jumps)      # the same state, loaded from scratch
    assert after_partial == kube_lines(netns.run("iptables-save").stdout)


def kube_lines(saved: str) -> list[str]:
    """KUBE-* chain declarations and rules of an iptables-save dump, counters stripped, sorted."""
    return sorted(line.split(" [")[0] for line in saved.splitlines() if line.startswith((":KUBE-", "-A KUBE-")))
