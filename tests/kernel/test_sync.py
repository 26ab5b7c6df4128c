"""After every change the kernel holds exactly the chains kube-proxy rendered (stale ones deleted), both modes."""
from __future__ import annotations

import re
import subprocess

import pytest

from .conftest import make_lab
from .manifests import WEB, echo, ready

pytestmark = pytest.mark.kernel


def rendered_chains(mode: str, rules: str) -> set[str]:
    if mode == "nftables":
        return set(re.findall(r"^add chain ip kube-proxy (\S+)", rules, re.M))
    return {line[1:].split()[0] for line in rules.splitlines() if line.startswith(":KUBE-")}


def kernel_chains(mode: str, ns: str) -> set[str]:
    if mode == "nftables":
        out = subprocess.run(["ip", "netns", "exec", ns, "nft", "list", "table", "ip", "kube-proxy"],
                             capture_output=True, text=True).stdout
        return set(re.findall(r"^\tchain (\S+) \{", out, re.M))
    out = subprocess.run(["ip", "netns", "exec", ns, "iptables-save"], capture_output=True, text=True).stdout
    return {line[1:].split()[0] for line in out.splitlines() if line.startswith(":KUBE-")}


@pytest.mark.parametrize("mode", ["iptables", "nftables"])
def test_kernel_follows_every_change(mode):
    lab = make_lab(mode)
    try:
        network = lab._backend.network
        proxies = lab._backend.proxies

        def check(step: str) -> None:
            # Under the cluster's lock, as every verb runs: the keeper thread refreshes the kernel after each change
            # in the background, and between its agent's render and its load the two differ by design.
            with lab._backend.cluster.lock:
                network.refresh()
                for node, ns in network.topology.node_ns.items():
                    want = rendered_chains(mode, proxies.agent(node).rules)
                    assert kernel_chains(mode, ns) == want, (step, node)

        lab.apply(WEB)
        lab.wait(lambda l: ready(l, "web") == 3, timeout=120)
        check("web up")
        lab.scale("web", 5)
        lab.wait(lambda l: ready(l, "web") == 5, timeout=120)
        check("scaled to 5")
        lab.apply(echo("sticky", 2, svc_type="ClusterIP", affinity="ClientIP"))
        lab.wait(lambda l: ready(l, "sticky") == 2, timeout=120)
        check("affinity service")
        lab.scale("web", 1)
        lab.wait(lambda l: ready(l, "web") == 1 and len(l.get("pods", selector="app=web")) == 1, timeout=120)
        check("scaled to 1")
        lab.delete("svc", "sticky")
        check("service deleted")
        ip = lab.get("svc", "web")["spec"]["clusterIP"]
        assert lab.curl(f"http://{ip}/", source="node/lab-worker").status == 200
    finally:
        lab.close()


def test_refresh_waits_for_the_cluster_lock():
    """Whoever calls it, a refresh never runs beside a holder of the cluster's lock (the verbs, the keeper thread)."""
    import threading
    lab = make_lab("nftables")
    try:
        done = threading.Event()

        def refresh() -> None:
            lab._backend.network.refresh()
            done.set()
        with lab._backend.cluster.lock:
            worker = threading.Thread(target=refresh)
            worker.start()
            assert not done.wait(0.5), "refresh ran while another thread held the cluster's lock"
        worker.join(30)
        assert done.is_set()
    finally:
        lab.close()
