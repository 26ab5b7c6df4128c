"""The Docker engine the kind backend starts where none answers: it leaves the host's firewall and sysctls alone,
and it copes with a root that lacks CAP_SYS_RESOURCE (the runc wrapper, the nodes' containerd patch)."""
from __future__ import annotations

import json
import os
import pathlib
import shutil
import subprocess
import sys
import time

import pytest
import yaml

from labsupport.kind import engine
from labsupport.kind.runner import RecordingRunner
from labsupport.kind.config import OOM_PATCH, cluster_config, config_problems

FULL = "CapBnd:\t000001ffffffffff\n"
NO_SYS_RESOURCE = "CapBnd:\t000001fffeffffff\n"


def test_the_missing_capability_is_detected():
    assert engine.lacks_sys_resource(NO_SYS_RESOURCE) is True
    assert engine.lacks_sys_resource(FULL) is False
    assert engine.bounding_capabilities(NO_SYS_RESOURCE) == 0x1fffeffffff


def test_engine_touches_no_host_rule_and_wraps_runc_only_when_told():
    argv = engine.engine_argv(None)
    for flag in ("--iptables=false", "--ip6tables=false", "--ip-masq=false", "--ip-forward=false", "--bridge=none"):
        assert flag in argv
    assert "--default-runtime" not in argv
    wrapped = engine.engine_argv("/x/runc-wrapper")
    assert wrapped[wrapped.index("--default-runtime") + 1] == engine.WRAPPER_RUNTIME
    assert f"{engine.WRAPPER_RUNTIME}=/x/runc-wrapper" in wrapped


def test_the_kind_subnet_is_none_of_the_embedded_clusters():
    import ipaddress
    from labsupport.shape import ClusterConfig
    ours = ipaddress.ip_network(engine.KIND_SUBNET)
    for used in (ClusterConfig.node_network, ClusterConfig.pod_cidr, ClusterConfig.service_cidr):
        assert not ours.overlaps(ipaddress.ip_network(used)), used


def _spec(caps: list[str]) -> dict:
    return {"process": {"capabilities": {k: list(caps) for k in ("bounding", "effective", "permitted")}}}


def test_runc_wrapper_drops_the_capability_then_runs_runc(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps(_spec(["CAP_NET_ADMIN", "CAP_SYS_RESOURCE"])))
    fake = tmp_path / "runc"
    fake.write_text("#!/bin/sh\necho \"$@\" > \"$(dirname \"$0\")/argv\"\n")
    fake.chmod(0o755)
    wrapper = pathlib.Path(engine.__file__).with_name("runc_wrapper.py")
    env = {**os.environ, "LABSUPPORT_REAL_RUNC": str(fake)}
    subprocess.run([sys.executable, str(wrapper), "--root", "/run/x", "create", "--bundle", str(tmp_path), "c1"],
                   check=True, env=env)
    caps = json.loads((tmp_path / "config.json").read_text())["process"]["capabilities"]
    assert caps == {k: ["CAP_NET_ADMIN"] for k in ("bounding", "effective", "permitted")}
    assert (tmp_path / "argv").read_text().split() == ["--root", "/run/x", "create", "--bundle", str(tmp_path), "c1"]
    process = tmp_path / "process.json"
    process.write_text(json.dumps(_spec(["CAP_SYS_RESOURCE", "CAP_CHOWN"])["process"]))
    subprocess.run([sys.executable, str(wrapper), "exec", "--process", str(process), "c1"], check=True, env=env)
    assert json.loads(process.read_text())["capabilities"]["bounding"] == ["CAP_CHOWN"]


def test_config_carries_the_host_fixes_only_when_asked():
    plain = cluster_config("nftables")
    assert "containerdConfigPatches" not in plain and len(plain["kubeadmConfigPatches"]) == 1
    fixed = cluster_config("nftables", cgroup_v1=True, restrict_oom_score_adj=True)
    assert config_problems(fixed) == []
    assert yaml.safe_load(fixed["kubeadmConfigPatches"][1]) == {"kind": "KubeletConfiguration",
                                                                "failCgroupV1": False}
    assert fixed["containerdConfigPatches"] == [OOM_PATCH] and "restrict_oom_score_adj = true" in OOM_PATCH


# --- the host, with a real engine ---------------------------------------------------------------------------------
def host_state() -> dict[str, str]:
    """What a Docker engine could change on the host: its netfilter rules, the bridge and forwarding sysctls."""
    state = {"iptables": subprocess.run(["iptables-save"], capture_output=True, text=True).stdout,
             "nft": subprocess.run(["nft", "list", "ruleset"], capture_output=True, text=True).stdout}
    for path in sorted(pathlib.Path("/proc/sys/net/bridge").glob("*")) + [pathlib.Path("/proc/sys/net/ipv4/ip_forward")]:
        state[str(path)] = path.read_text().strip()
    return state


def strip_counters(text: str) -> str:
    return "\n".join(line for line in text.splitlines() if not line.startswith("#"))


@pytest.mark.kind
def test_engine_and_its_containers_leave_the_host_as_it_was():
    """With the engine this project starts running (started here when none ran) and a container on the kind
    network, the host's iptables and nft rules and its bridge/forwarding sysctls are what they were before — so
    the netns, upstream and sandbox tiers run the same whether dockerd ran before them or not."""
    from labsupport.kind import images
    from labsupport.testing import missing_kernel_requirements, require
    from tests.kind.conftest import require_kind_tier
    require_kind_tier()
    require(missing_kernel_requirements("iptables-save", "nft", "dockerd", "docker"), "kind")
    before = host_state() if not engine.engine_answers() else None
    started = engine.start_engine(log=lambda text: None)
    engine.ensure_network()
    require([] if images.local_node_image() else ["the node image (`make kind-images`)"], "kind")
    name = f"labsupport-host-check-{os.getpid()}"
    try:
        subprocess.run(["docker", "run", "-d", "--name", name, "--network", engine.KIND_NETWORK, "--entrypoint",
                        "sleep", images.NODE_IMAGE, "60"],
                       check=True, capture_output=True)
        after = host_state()
    finally:
        subprocess.run(["docker", "rm", "-f", name], capture_output=True)
    assert "DOCKER" not in after["iptables"] and "FORWARD DROP" not in after["iptables"]
    assert "docker" not in after["nft"].lower() and "DOCKER" not in after["nft"]
    if before is not None:
        assert {k: strip_counters(v) for k, v in after.items()} == {k: strip_counters(v) for k, v in before.items()}
    assert started is None or engine.started_pid() == started
    assert shutil.which("dockerd")


def test_stop_engine_stops_the_recorded_dockerd_and_nothing_else(tmp_path, monkeypatch):
    monkeypatch.setenv("LABSUPPORT_STATE_DIR", str(tmp_path))
    fake = tmp_path / "dockerd"
    shutil.copy(shutil.which("sleep"), fake)
    other = subprocess.Popen([shutil.which("sleep"), "60"])
    engine_proc = subprocess.Popen([str(fake), "60"])
    try:
        engine.pid_file().write_text(f"{other.pid}\n")
        assert engine.started_pid() is None and engine.stop_engine() == []
        assert other.poll() is None, "a pid that is not a dockerd is left alone"
        engine.pid_file().write_text(f"{engine_proc.pid}\n")
        deadline = time.monotonic() + 10   # until the child has exec'd into "dockerd"
        while engine.started_pid() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert engine.started_pid() == engine_proc.pid
        runner = RecordingRunner()
        assert engine.stop_engine(runner=runner) == [f"stopped the Docker engine this project started (pid {engine_proc.pid})"]
        assert engine_proc.wait(timeout=10) is not None and not engine.pid_file().exists()
        assert runner.commands() == ["docker network rm kind"], "the kind network's bridge goes first"
    finally:
        for proc in (other, engine_proc):
            proc.kill()
            proc.wait()


def test_the_netns_mounts_a_stopped_engine_leaves_are_found_and_nothing_else():
    mounts = ("nsfs /run/docker/netns/default nsfs rw 0 0\n"
              "nsfs /run/docker/netns/4f1c2a nsfs rw 0 0\n"
              "nsfs /run/netns/labsupport-a1 nsfs rw 0 0\n"
              "tmpfs /run/docker/netns tmpfs rw 0 0\n"
              "proc /proc proc rw 0 0\n")
    assert engine.leftover_netns_mounts(mounts) == ["/run/docker/netns/default", "/run/docker/netns/4f1c2a"]
    assert engine.leftover_netns_mounts("") == []
