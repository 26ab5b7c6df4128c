"""Preflight messages when docker, kind or kubectl are missing or too old — fake tools on a temp PATH."""
from __future__ import annotations

import os
import stat
import sys

import pytest

from labsupport.kind import preflight
from labsupport.kind.runner import RecordingRunner

DAEMON_DOWN = ("Cannot connect to the Docker daemon at unix:///var/run/docker.sock. "
               "Is the docker daemon running?")


def _tool(directory, name, script):
    path = directory / name
    path.write_text("#!/bin/sh\n" + script + "\n")
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return path


@pytest.fixture(autouse=True)
def private_folders(tmp_path, monkeypatch):
    """`clean` looks for labs' kubeconfig folders in the temporary folders and for copies in the state folder: here
    they are the test's own, so no test touches this machine's."""
    import tempfile
    (tmp_path / "tmp").mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    monkeypatch.setenv("LABSUPPORT_STATE_DIR", str(tmp_path / "state"))


@pytest.fixture
def bin_dir(tmp_path, monkeypatch):
    """An empty PATH of fake tools; the pinned kubectl next to Python hidden."""
    tools = tmp_path / "bin"
    tools.mkdir()
    monkeypatch.setenv("PATH", str(tools))
    monkeypatch.setattr(sys, "executable", str(tmp_path / "python"))
    monkeypatch.setattr(preflight, "kernel_problem", lambda mode: None)
    return tools


def _good_docker(d):
    _tool(d, "docker", 'case "$*" in *OperatingSystem*) echo "Ubuntu 24.04 LTS";; *) echo 28.2.2;; esac')


def test_everything_missing(bin_dir):
    found = preflight.problems("nftables")
    assert len(found) == 3
    assert found[0].startswith("Docker is not installed: install Docker Engine")
    assert found[1].startswith("kind is not installed: install kind v0.33.0 (`go install sigs.k8s.io/kind@v0.33.0`")
    assert "or run `make kind-images`, which builds kind and every image of the lab's cluster" in found[1]
    assert found[2].startswith("kubectl is not installed: reinstall the project")


def test_doctor_suggests_make_kind_images_where_no_node_image_was_built(bin_dir):
    _good_docker(bin_dir)
    _tool(bin_dir, "kind", "echo kind v0.33.0 go1.26")
    runner = RecordingRunner()
    runner.answer(["docker", "image", "inspect"], returncode=1, stderr="No such image")
    notes = preflight.notes(runner=runner)
    assert any(n.startswith("no node image built here (labsupport/kind-node:v1.37.2)") and "`make kind-images`" in n
               for n in notes), notes
    runner = RecordingRunner()
    runner.answer(["docker", "image", "inspect"], stdout="sha256:abc\n")
    assert not any("make kind-images" in n for n in preflight.notes(runner=runner))


def test_docker_daemon_unreachable(bin_dir):
    _tool(bin_dir, "docker", f'echo "{DAEMON_DOWN}" >&2; exit 1')
    message = preflight.docker_problem()
    assert message.startswith("the Docker daemon is not reachable (Cannot connect to the Docker daemon")
    assert "start Docker" in message and "`docker info`" in message


def test_docker_client_only_prints_nothing_for_server(bin_dir):
    _tool(bin_dir, "docker", "exit 0")
    assert preflight.docker_problem().startswith("the Docker daemon is not reachable: start Docker")


@pytest.mark.parametrize("version, mode, ok", [
    ("kind v0.22.0 go1.20.13 linux/amd64", "nftables", False),
    ("kind v0.22.0 go1.20.13 linux/amd64", "iptables", True),
    ("kind v0.23.0 go1.21.10 linux/amd64", "nftables", True),
    ("kind v0.19.0 go1.20.4 linux/amd64", "ipvs", False),
    ("kind v0.33.0 go1.25.1 linux/amd64", "nftables", True),
])
def test_kind_version_per_mode(bin_dir, version, mode, ok):
    _good_docker(bin_dir)
    _tool(bin_dir, "kind", f'echo "{version}"')
    _tool(bin_dir, "kubectl", "exit 0")
    # the kernel's own IPVS problem, where this host has one, is another test's subject
    found = [p for p in preflight.problems(mode) if p != preflight.ipvs_problem(mode)]
    if ok:
        assert found == []
    else:
        (message,) = found
        assert message.startswith(f"kind v{version.split()[1][1:]} is too old for kube-proxy mode {mode}")
        assert "install kind v0.33.0" in message


def test_kind_that_prints_no_version(bin_dir):
    _tool(bin_dir, "kind", "echo oops; exit 2")
    assert preflight.kind_problem("iptables").startswith("`kind version` failed or printed no version")


def test_pinned_kubectl_next_to_python_counts(bin_dir, tmp_path):
    _tool(tmp_path, "kubectl", "exit 0")
    assert preflight.kubectl_problem() is None


def test_old_kind_is_a_note_not_a_problem(bin_dir):
    _good_docker(bin_dir)
    _tool(bin_dir, "kind", 'echo "kind v0.27.0 go1.23.6 linux/amd64"')
    _tool(bin_dir, "kubectl", "exit 0")
    assert preflight.problems("nftables") == []
    (note,) = [n for n in preflight.notes("iptables") if n.startswith("kind v0.27.0")]
    assert "v0.33.0" in note and "best-effort" in note


def test_docker_desktop_note(bin_dir):
    _tool(bin_dir, "docker", 'case "$*" in *OperatingSystem*) echo "Docker Desktop";; *) echo 28.2.2;; esac')
    (note,) = [n for n in preflight.notes() if n.startswith("Docker Desktop")]
    assert "cannot be reached from this host" in note and "localhost" in note and "30080" in note


def test_kernel_too_old_for_nftables():
    message = preflight.kernel_problem("nftables", release="5.10.0-28-amd64", system="Linux")
    assert message.startswith("kube-proxy's nftables mode needs Linux 5.13 or newer")
    assert preflight.kernel_problem("iptables", release="5.10.0", system="Linux") is None
    assert preflight.kernel_problem("nftables", release="6.8.0", system="Linux") is None
    assert preflight.kernel_problem("nftables", release="5.10.0", system="Darwin") is None


def test_parse_version():
    assert preflight.parse_version("kind v0.33.0 go1.25.1 linux/amd64") == (0, 33, 0)
    assert preflight.parse_version("kind v0.24.0-alpha+4b4f5f5 go1.22") == (0, 24, 0)
    assert preflight.parse_version("nothing") is None


def test_clean_deletes_only_prefixed_clusters(tmp_path, monkeypatch):
    monkeypatch.setenv("LABSUPPORT_STATE_DIR", str(tmp_path))
    (tmp_path / "tmp" / "labsupport-lab-999999999-x").mkdir()
    runner = RecordingRunner()
    runner.answer(["kind", "get", "clusters"], stdout="kind\nlabsupport\nlabsupport-ipvs\nlabsupportish\n")
    runner.answer(["docker", "ps"], stdout="abc123\n")
    runner.answer(["docker", "rm", "-f", "labsupport-client"], stdout="labsupport-client\n")
    done = preflight.clean(runner)
    deletes = [c for c in runner.commands() if c.startswith("kind delete")]
    assert deletes == [
        f"kind delete cluster --name labsupport --kubeconfig {tmp_path}/kind-labsupport.kubeconfig",
        f"kind delete cluster --name labsupport-ipvs --kubeconfig {tmp_path}/kind-labsupport-ipvs.kubeconfig"]
    assert "docker ps -aq --filter label=dev.labsupport.client" in runner.commands()
    assert "docker rm -f abc123" in runner.commands()
    assert not (tmp_path / "tmp" / "labsupport-lab-999999999-x").exists(), "a killed lab's kubeconfig folder"
    assert done.pop(0).endswith("labsupport-lab-999999999-x (a lab's kubeconfig; its process 999999999 is gone)")
    assert done == ["removed container labsupport-client", "deleted kind cluster labsupport",
                    "deleted kind cluster labsupport-ipvs", "removed 1 client container(s)"]


def test_delete_cluster_removes_its_kubeconfig(tmp_path, monkeypatch):
    monkeypatch.setenv("LABSUPPORT_STATE_DIR", str(tmp_path))
    path = preflight.kubeconfig_file("labsupport")
    path.write_text("apiVersion: v1\n")
    runner = RecordingRunner()
    assert preflight.delete_cluster("labsupport", runner) == ["deleted kind cluster labsupport"]
    assert not path.exists()
    assert runner.commands()[0] == "docker rm -f labsupport-client"


def test_no_kind_nothing_to_clean(bin_dir):
    assert preflight.clean() == []
    assert preflight.list_clusters() == []


def test_this_machine_never_raises():
    found = preflight.problems("nftables")
    assert isinstance(found, list) and all(isinstance(p, str) and p for p in found)


def test_lab_clusters_by_prefix():
    runner = RecordingRunner()
    runner.answer(["kind", "get", "clusters"], stdout="kind\nlabsupport\nlabsupport-ipvs\nlabsupportish\n")
    assert preflight.lab_clusters(runner) == ["labsupport", "labsupport-ipvs"]


@pytest.mark.parametrize("present,expected", [
    ((), False),
    (("proc/net/ip_vs",), True),
    (("sys/module/ip_vs/",), True),
    (("lib/modules/6.1.0-test/kernel/net/netfilter/ipvs/ip_vs.ko.xz",), True),
    (("lib/modules/5.10.0-other/kernel/net/netfilter/ipvs/ip_vs.ko",), False),   # another kernel's module
    (("lib/modules/6.1.0-test/kernel/net/netfilter/nf_tables.ko",), False),
])
def test_ipvs_is_found_built_in_loaded_or_as_a_module(tmp_path, present, expected):
    for path in present:
        target = tmp_path / path
        if path.endswith("/"):
            target.mkdir(parents=True)
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text("")
    assert preflight.ipvs_in_kernel("6.1.0-test", str(tmp_path)) is expected
    problem = preflight.ipvs_problem("ipvs", "6.1.0-test", "Linux", str(tmp_path))
    assert (problem is None) is expected
    if problem:
        assert "6.1.0-test" in problem and 'Lab(backend="sim", proxy_mode="ipvs")' in problem
    assert preflight.ipvs_problem("nftables", "6.1.0-test", "Linux", str(tmp_path)) is None
    assert preflight.ipvs_problem("ipvs", "6.1.0-test", "Darwin", str(tmp_path)) is None


def test_clean_only_some_parts_leaves_the_others_alone(monkeypatch):
    """`labsupport clean --only class` (what the classroom tier runs) touches no kind cluster and no engine."""
    from labsupport import doctor
    from labsupport.kind import engine
    touched = []
    monkeypatch.setattr(preflight, "clean", lambda: touched.append("kind") or [])
    monkeypatch.setattr(engine, "stop_engine", lambda: touched.append("engine") or [])
    monkeypatch.setattr(doctor, "class_clean", lambda: ["deleted the accounts"])
    assert doctor.clean(("class",)) == ["deleted the accounts"] and touched == []
    with pytest.raises(ValueError, match="nothing called nope"):
        doctor.clean(("nope",))


def test_clean_removes_the_kubeconfig_copies_labs_left(tmp_path, monkeypatch):
    """A lab's private kubeconfig goes with the lab; one a killed process left, and the copies older releases kept
    in the state folder (students' tokens in them), go with `labsupport clean`."""
    state = tmp_path / "state"
    monkeypatch.setenv("LABSUPPORT_STATE_DIR", str(state))
    run = tmp_path / "run"
    run.mkdir()
    dead = run / "labsupport-lab-999999999-ab12"
    alive = run / f"labsupport-lab-{os.getpid()}-cd34"
    other = run / "labsupport-lab-notapid"
    for folder in (dead, alive, other):
        folder.mkdir()
        (folder / "kubeconfig").write_text("token")
    state.mkdir()
    for name in ("kube-lab-lab-alice.kubeconfig", "kind-kind-labsupport-test-lesson-05.kubeconfig",
                 "kind-labsupport-test.kubeconfig"):
        (state / name).write_text("x")
    done = preflight.clean_kubeconfigs([run])
    assert not dead.exists() and alive.exists() and other.exists()
    assert sorted(p.name for p in state.iterdir()) == ["kind-labsupport-test.kubeconfig"], \
        "a kind cluster's own kubeconfig stays: labsupport down removes it with its cluster"
    assert len(done) == 3 and "its process 999999999 is gone" in done[0]
