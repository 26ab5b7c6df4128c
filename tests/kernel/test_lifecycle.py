"""Setting up and tearing down: preflight messages, close, a killed run cleaned by `labsupport clean`,
mode switches, kube-proxy stopped and started, and readiness probes as real requests."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

import pytest

from labsupport.control.kubelet import PROBE_USER_AGENT
from labsupport.errors import BackendUnavailable
from labsupport.testing import require_kernel

from .conftest import TOOLS, make_lab
from .manifests import WEB, ready

pytestmark = pytest.mark.kernel


def test_ipvs_is_refused_naming_sim():
    from labsupport import Lab
    with pytest.raises(BackendUnavailable) as err:
        Lab(backend="netns", proxy_mode="ipvs")
    assert "IPVS is not in this kernel" in str(err.value)
    assert 'backend="sim"' in str(err.value)


def test_preflight_says_root_is_missing(monkeypatch):
    from labsupport.netns import machine as kernel
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    assert any("root" in p for p in kernel.problems())
    with pytest.raises(BackendUnavailable, match="needs root"):
        kernel.preflight("nftables")


def test_lab_says_root_is_missing(monkeypatch):
    from labsupport import Lab
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    with pytest.raises(BackendUnavailable) as err:
        Lab(backend="netns")
    assert "needs root" in str(err.value) and 'Lab(backend="sim")' in str(err.value)


def test_preflight_says_linux_is_missing(monkeypatch):
    from labsupport.netns import machine as kernel
    monkeypatch.setattr(kernel.platform, "system", lambda: "Darwin")
    (problem,) = kernel.problems()
    assert "Linux" in problem and "Darwin" in problem


def test_doctor_problems_empty_here():
    require_kernel(*TOOLS)
    from labsupport.netns import machine as kernel
    assert kernel.problems() == []


def _links_in(ns: str) -> list[str]:
    out = subprocess.run(["ip", "-n", ns, "-o", "link"], capture_output=True, text=True).stdout
    return [line.split(":")[1].strip().split("@")[0] for line in out.splitlines()]


def test_close_removes_everything():
    lab = make_lab("nftables")
    network = lab._backend.network
    names = network.namespaces()
    try:
        assert len(names) >= 8
        node_ns = network.topology.node_ns["lab-worker"]
        links = _links_in(node_ns)
        assert "lsk-cni0" in links and "eth0" in links
        assert any(link.startswith("lskn") for link in _links_in(network.topology.net_ns))
        assert os.path.exists(f"/etc/netns/{network.topology.dns_ns}/resolv.conf")
    finally:
        lab.close()
    listing = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert not any(n in listing for n in names)
    assert not os.path.exists(f"/etc/netns/{network.topology.dns_ns}")


CHILD = textwrap.dedent("""
    import sys, time
    from labsupport import Lab
    lab = Lab(backend="netns", proxy_mode=sys.argv[1])
    lab.apply({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
               "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
                        "template": {"metadata": {"labels": {"app": "web"}},
                                     "spec": {"containers": [{"name": "nginx", "image": "nginx"}]}}}})
    lab.advance(10)
    lab.curl("http://172.18.0.3:1/")
    print("ready", flush=True)
    time.sleep(600)
""")


@pytest.mark.parametrize("mode", ["iptables", "nftables"])
def test_killed_run_is_cleaned(mode):
    require_kernel(*TOOLS)
    from labsupport.netns.machine import clean
    from labsupport.netns.namespaces import ETC_NETNS, list_namespaces, root_links
    child = subprocess.Popen([sys.executable, "-c", CHILD, mode], stdout=subprocess.PIPE, text=True,
                             cwd=os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    try:
        line = child.stdout.readline()
        assert line.strip() == "ready"
        stem = f"lsk-{child.pid}-"
        left = list_namespaces(stem)
        assert any("-pod-default-web-" in n for n in left) and any("-node-" in n for n in left)
        rules = subprocess.run(["ip", "netns", "exec", next(n for n in left if n.endswith("node-lab-worker")),
                                "nft" if mode == "nftables" else "iptables-save"] +
                               (["list", "ruleset"] if mode == "nftables" else []),
                               capture_output=True, text=True).stdout
        assert "kube-proxy" in rules or "KUBE-SERVICES" in rules
        kept = clean()
        assert not any(stem in entry for entry in kept), "a live run must be kept"
        assert list_namespaces(stem) == left
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    removed = clean()
    assert any(stem in entry for entry in removed)
    assert list_namespaces(stem) == []
    if os.path.isdir(ETC_NETNS):
        assert not [e for e in os.listdir(ETC_NETNS) if e.startswith(stem)]
    assert root_links() == []


def test_mode_switch_and_kube_proxy_restart():
    lab = make_lab("iptables")
    try:
        lab.apply(WEB)
        lab.wait(lambda l: ready(l, "web") == 3, timeout=120)
        network = lab._backend.network
        ip = lab.get("svc", "web")["spec"]["clusterIP"]
        assert lab.curl(f"http://{ip}/", source="node/lab-worker").status == 200
        lab.set_proxy_mode("nftables")
        saved = network.kernel_rules("lab-worker")
        assert "table ip kube-proxy" in saved and ip in saved
        iptables = subprocess.run(["ip", "netns", "exec", network.topology.node_ns["lab-worker"], "iptables-save"],
                                  capture_output=True, text=True).stdout
        assert "KUBE-SERVICES" not in iptables
        assert lab.curl(f"http://{ip}/", source="node/lab-worker").status == 200
        # kube-proxy stopped: the kernel keeps the last rules; a new Service gets none until it starts again.
        lab.stop_kube_proxy("lab-worker")
        lab.apply(WEB.replace("name: web}", "name: web2}").replace("app: web}", "app: web2}"))
        ip2 = lab.get("svc", "web2")["spec"]["clusterIP"]
        assert lab.curl(f"http://{ip}/", source="node/lab-worker").status == 200
        assert lab.curl(f"http://{ip2}/", source="node/lab-worker").timed_out
        lab.start_kube_proxy("lab-worker")
        assert lab.curl(f"http://{ip2}/", source="node/lab-worker").status == 200
        lab.set_proxy_mode("iptables")
        gone = subprocess.run(["ip", "netns", "exec", network.topology.node_ns["lab-worker"], "nft", "list", "tables"],
                              capture_output=True, text=True).stdout
        assert "kube-proxy" not in gone
        assert ip2 in network.kernel_rules("lab-worker")
        assert lab.curl(f"http://{ip2}/", source="node/lab-worker").status == 200
    finally:
        lab.close()


PROBED = """
apiVersion: v1
kind: Pod
metadata: {name: probed, labels: {app: probed}}
spec:
  containers:
  - name: nginx
    image: nginx
    readinessProbe:
      httpGet: {path: %s, port: 80}
      periodSeconds: 2
"""


def test_readiness_probes_are_real_requests():
    lab = make_lab("nftables")
    try:
        lab.apply(PROBED % "/")
        lab.apply((PROBED % "/missing").replace("name: probed,", "name: unready,"))
        lab.advance(20)
        good = lab.get("pod", "probed")["status"]["containerStatuses"][0]["ready"]
        bad = lab.get("pod", "unready")["status"]["containerStatuses"][0]["ready"]
        assert (good, bad) == (True, False)
        logs = lab.logs("probed")
        assert PROBE_USER_AGENT in logs and "10.244." in logs
    finally:
        lab.close()


def test_a_failed_load_is_repaired_by_a_full_reload(monkeypatch):
    from labsupport.netns import rules as kernel
    from labsupport.netns.namespaces import KernelError
    lab = make_lab("nftables")
    try:
        lab.apply(WEB)
        lab.wait(lambda l: ready(l, "web") == 3, timeout=120)
        real = kernel.run_in
        broken = {"left": 1}

        def flaky(ns, argv, **kw):
            if argv[:2] == ["nft", "-f"] and broken["left"]:
                broken["left"] -= 1
                raise KernelError("nft -f failed (injected)")
            return real(ns, argv, **kw)
        monkeypatch.setattr(kernel, "run_in", flaky)
        lab.apply(WEB.replace("name: web}", "name: web2}").replace("app: web}", "app: web2}"))
        lab.wait(lambda l: ready(l, "web2") == 3, timeout=120)
        try:
            lab._backend.network.refresh()
        except KernelError:
            pass                                  # the failure hit this refresh, not the background one
        assert broken["left"] == 0
        monkeypatch.setattr(kernel, "run_in", real)
        ip2 = lab.get("svc", "web2")["spec"]["clusterIP"]
        for node in lab._backend.network.topology.node_ns:
            assert lab.curl(f"http://{ip2}/", source=f"node/{node}").status == 200, node
    finally:
        lab.close()


def test_clean_stops_programs_a_killed_run_started_in_its_namespaces():
    """A run killed while the real kube-proxy (here: a stand-in) runs in its namespace leaves the program behind;
    `labsupport clean` stops it, and leaves a live run's programs alone."""
    require_kernel("ip")
    from labsupport.netns.machine import clean
    from labsupport.netns.namespaces import create_namespace, new_run_id, ns_name, release_run_id, remove_namespace
    run = new_run_id()
    ns = ns_name(run, "orphan")
    create_namespace(ns)
    child = textwrap.dedent(f"""
        import os, sys, time
        sys.path.insert(0, {os.getcwd()!r})
        from labsupport.upstream.process import NamespacedProcess
        p = NamespacedProcess({ns!r}, ["sleep", "600"], os.devnull)
        for _ in range(500):      # until `ip netns exec` has become the program (a loaded machine is slow to)
            with open(f"/proc/{{p.popen.pid}}/comm") as fh:
                if fh.read().strip() == "sleep":
                    break
            time.sleep(0.01)
        print(p.popen.pid, flush=True)
        os._exit(0)          # killed: nothing stops the program it started
    """)
    mine = None
    try:
        out = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True, check=True, timeout=60)
        orphan = int(out.stdout.split()[0])
        from labsupport.upstream.process import NamespacedProcess
        mine = NamespacedProcess(ns, ["sleep", "600"], os.devnull)       # owned by this live process
        assert os.path.exists(f"/proc/{orphan}")
        report = clean()
        assert any(f"pid {orphan}" in line and "sleep" in line for line in report), report
        assert not _running(orphan)
        assert mine.poll() is None, "clean stopped a program of a live run"
    finally:
        if mine is not None:
            mine.stop()
        remove_namespace(ns)
        release_run_id(run)


def _running(pid: int) -> bool:
    """Whether `pid` exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(") ")[1].split()[0] != "Z"
    except OSError:
        return False
