"""`make kind-images`: everything a kind cluster of the lab needs, built here, offline (no container registry).

Steps, each skipped when its output is up to date:
  1. a Docker engine (started when none answers, leaving the host's firewall alone: labsupport/kind/engine.py)
  2. Go programs from their modules (kind-images/go/*): kind, the Kubernetes binaries and agnhost (k8s.io/kubernetes
     at the release upstream/go.mod pins), etcd, crictl, the pause program and the echo server; CoreDNS is
     `make upstream`'s, from the project's pinned module; kube-router (only its NetworkPolicy firewall), the
     cluster's NetworkPolicy enforcement
  3. the base image `labsupport/debian:bookworm`: debootstrap --variant=minbase with packages.txt, docker import
  4. the images kubeadm and the lessons ask for, under their names (images/*.Dockerfile)
  5. the node image `labsupport/kind-node:<release>` assembled as kind's node-image builder would: the node file
     system (node/Dockerfile), every image imported into the node's containerd, committed
  6. a student's server for KubeSpawner, `labsupport/singleuser:local` (images/singleuser.Dockerfile): Debian's
     Python, JupyterHub at the release this Python has, and this project from its source, rebuilt when any of them
     changed

Run it with the project's Python: `python kind-images/build.py [--only STEP]`. Outputs go to .kind/ (binaries,
the root file system) and to the Docker engine (images).
"""
from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

from labsupport.kind import images as lab_images  # noqa: E402
from labsupport.kind.engine import ensure_network, start_engine  # noqa: E402

OUT = ROOT / ".kind"
BIN = OUT / "bin"
GO = shutil.which("go") or "/usr/local/go/bin/go"
SUITE = "bookworm"
MIRROR = os.environ.get("LABSUPPORT_DEBIAN_MIRROR", "http://deb.debian.org/debian")
KUBE = lab_images.KUBERNETES_VERSION
KUBE_LDFLAGS = (f"-s -w -X k8s.io/component-base/version.gitVersion={KUBE} -X k8s.io/component-base/version.gitMajor=1 "
                f"-X k8s.io/component-base/version.gitMinor={KUBE.split('.')[1]} "
                "-X k8s.io/component-base/version.gitTreeState=clean")

# module folder → (packages to build, extra go build flags)
GO_PROGRAMS = {
    "kind": (["sigs.k8s.io/kind"], []),
    "crictl": (["sigs.k8s.io/cri-tools/cmd/crictl"], []),
    "etcd": (["go.etcd.io/etcd/server/v3"], []),
    "programs": (["./pause", "./echoserver"], []),
    "kube-router": (["github.com/cloudnativelabs/kube-router/v2/cmd/kube-router"],
                    ["-ldflags", f"-s -w -X github.com/cloudnativelabs/kube-router/v2/pkg/version.Version="
                                 f"{lab_images.KUBE_ROUTER_VERSION}"]),
    "kubernetes": ([f"k8s.io/kubernetes/cmd/{c}" for c in (
        "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kube-proxy", "kubeadm", "kubectl", "kubelet")]
        + ["k8s.io/kubernetes/test/images/agnhost"], ["-ldflags", KUBE_LDFLAGS]),
}
# the binary name Go gives each package above, where it differs from the last path element
GO_NAMES = {"go.etcd.io/etcd/server/v3": "server"}

STARTED = time.monotonic()


def say(text: str) -> None:
    """One progress line, with the time since the build started."""
    took = int(time.monotonic() - STARTED)
    print(f"[kind-images {took // 60:2d}:{took % 60:02d}] {text}", flush=True)


def run(argv: list[str], *, cwd: Path | None = None, env: dict | None = None, quiet: bool = False,
        stdin=None) -> subprocess.CompletedProcess:
    """Run a command; on failure print its output and stop the build."""
    done = subprocess.run(argv, cwd=cwd, env=env, stdin=stdin, capture_output=True, text=True)
    if done.returncode != 0:
        sys.stderr.write(done.stdout + done.stderr)
        raise SystemExit(f"kind-images: `{' '.join(argv)}` failed with exit code {done.returncode}")
    if not quiet and done.stdout.strip():
        print(done.stdout.rstrip())
    return done


def newest(paths: list[Path]) -> float:
    """The newest modification time among files (folders walked)."""
    times = [0.0]
    for path in paths:
        if path.is_dir():
            times += [p.stat().st_mtime for p in path.rglob("*") if p.is_file()]
        elif path.exists():
            times.append(path.stat().st_mtime)
    return max(times)


def go_build(module: str) -> None:
    """Build one module folder's programs into .kind/bin, streaming a count of compiled packages."""
    packages, flags = GO_PROGRAMS[module]
    folder = HERE / "go" / module
    changed = newest([folder])
    stale = {p: BIN / (GO_NAMES.get(p) or p.rstrip("/").rsplit("/", 1)[-1]) for p in packages}
    stale = {p: o for p, o in stale.items() if not o.exists() or o.stat().st_mtime < changed}
    if not stale:
        say(f"go: {module} is up to date")
        return
    packages, outputs = list(stale), list(stale.values())
    say(f"go: building {', '.join(o.name for o in outputs)} (module folder kind-images/go/{module})")
    BIN.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "CGO_ENABLED": "0", "GOFLAGS": os.environ.get("GOFLAGS", "-buildvcs=false")}
    with tempfile.TemporaryDirectory(prefix="kind-images-go-") as tmp:
        argv = [GO, "build", "-v", "-trimpath", *flags, "-o", tmp + "/", *packages]
        proc = subprocess.Popen(argv, cwd=folder, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True)
        count, last, lines = 0, time.monotonic(), []
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line)
            count += 1
            if time.monotonic() - last > 30:
                say(f"go: {module}: {count} packages compiled so far (now {line.strip()})")
                last = time.monotonic()
        if proc.wait() != 0:
            sys.stderr.write("".join(lines[-40:]))
            raise SystemExit(f"kind-images: go build in kind-images/go/{module} failed")
        for out in outputs:
            shutil.move(os.path.join(tmp, out.name), out)
    say(f"go: {module} done ({count} packages compiled)")


def install_kind() -> None:
    """kind next to the project's Python, where the kind backend finds it (like the pinned kubectl)."""
    target = Path(sys.executable).parent / "kind"
    if not target.exists() or target.stat().st_mtime < (BIN / "kind").stat().st_mtime:
        shutil.copy2(BIN / "kind", target)
    say(f"go: kind is {target}")


def image_label(image: str, label: str) -> str | None:
    """A label of a local image, or None when the image (or the label) is missing."""
    done = subprocess.run(["docker", "image", "inspect", "-f", f'{{{{index .Config.Labels "{label}"}}}}', image],
                          capture_output=True, text=True)
    value = done.stdout.strip()
    return value if done.returncode == 0 and value and value != "<no value>" else None


def image_id(image: str) -> str:
    """A local image's id."""
    return run(["docker", "image", "inspect", "-f", "{{.Id}}", image], quiet=True).stdout.strip()


def packages() -> list[str]:
    """The Debian packages of the base file system."""
    return [line.strip() for line in (HERE / "packages.txt").read_text().splitlines()
            if line.strip() and not line.startswith("#")]


def base_image() -> None:
    """labsupport/debian:bookworm from debootstrap --variant=minbase, unless one with these packages exists."""
    key = hashlib.sha256(f"{SUITE} {' '.join(packages())}".encode()).hexdigest()[:16]
    if image_label(lab_images.BASE_IMAGE, "dev.labsupport.packages") == key:
        say(f"base: {lab_images.BASE_IMAGE} is up to date")
        return
    if shutil.which("debootstrap") is None:
        raise SystemExit("kind-images: debootstrap is missing (Debian: apt-get install debootstrap)")
    rootfs = OUT / "rootfs"
    if rootfs.exists():
        shutil.rmtree(rootfs)
    say(f"base: debootstrap --variant=minbase {SUITE} with {len(packages())} packages (a few minutes)")
    proc = subprocess.Popen(["debootstrap", "--variant=minbase", f"--include={','.join(packages())}", SUITE,
                             str(rootfs), MIRROR], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    last, lines = time.monotonic(), []
    assert proc.stdout is not None
    for line in proc.stdout:
        lines.append(line)
        if time.monotonic() - last > 20:
            say(f"base: {line.strip()}")
            last = time.monotonic()
    if proc.wait() != 0:
        sys.stderr.write("".join(lines[-30:]))
        raise SystemExit("kind-images: debootstrap failed")
    for path in ("var/cache/apt/archives", "var/lib/apt/lists"):
        for item in (rootfs / path).glob("*"):
            if item.is_file():
                item.unlink()
    say(f"base: docker import as {lab_images.BASE_IMAGE}")
    tar = subprocess.Popen(["tar", "-C", str(rootfs), "-c", "."], stdout=subprocess.PIPE)
    run(["docker", "import", "--change", f"LABEL dev.labsupport.packages={key}", "--change",
         "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "-", lab_images.BASE_IMAGE],
        stdin=tar.stdout, quiet=True)
    tar.wait()
    shutil.rmtree(rootfs)


def docker_build(dockerfile: str, tags: list[str], files: dict[str, Path], args: dict[str, str] | None = None) -> None:
    """docker build of one of images/*.Dockerfile with the given files as its context, tagged."""
    with tempfile.TemporaryDirectory(prefix="kind-images-ctx-") as ctx:
        for name, source in files.items():
            target = Path(ctx) / name
            target.parent.mkdir(parents=True, exist_ok=True)
            if source.is_dir():
                shutil.copytree(source, target)
            else:
                shutil.copy2(source, target)
        argv = ["docker", "build", "-q", "--network", "host", "-f", str(HERE / dockerfile)]
        for key, value in (args or {}).items():
            argv += ["--build-arg", f"{key}={value}"]
        for tag in tags:
            argv += ["-t", tag]
        run(argv + [ctx], env={**os.environ, "DOCKER_BUILDKIT": "0"}, quiet=True)


def workload_images() -> None:
    """The control-plane images under kubeadm's names, the CNI daemon and the NetworkPolicy firewall, the lessons'
    images under theirs."""
    cp = lab_images.CONTROL_PLANE
    for name in ("kube-apiserver", "kube-controller-manager", "kube-scheduler"):
        say(f"image: {cp[name]}")
        docker_build("images/control-plane.Dockerfile", [cp[name]], {name: BIN / name},
                     {"BINARY": name, "ENTRY": f"/usr/local/bin/{name}"})
    say(f"image: {cp['etcd']}")
    docker_build("images/control-plane.Dockerfile", [cp["etcd"]], {"etcd": BIN / "server"},
                 {"BINARY": "etcd", "ENTRY": "/usr/local/bin/etcd"})
    say(f"image: {cp['kube-proxy']}")
    docker_build("images/kube-proxy.Dockerfile", [cp["kube-proxy"]], {"kube-proxy": BIN / "kube-proxy"})
    say(f"image: {cp['coredns']}")
    docker_build("images/coredns.Dockerfile", [cp["coredns"]], {"coredns": ROOT / ".upstream" / "bin" / "coredns"})
    say(f"image: {cp['pause']}")
    docker_build("images/pause.Dockerfile", [cp["pause"]], {"pause": BIN / "pause"})
    say(f"image: {lab_images.CNI_IMAGE}")
    docker_build("images/cni.Dockerfile", [lab_images.CNI_IMAGE],
                 {"kubectl": BIN / "kubectl", "labsupport-cni": HERE / "node" / "labsupport-cni"})
    say(f"image: {lab_images.NETWORK_POLICY_IMAGE}")
    docker_build("images/kube-router.Dockerfile", [lab_images.NETWORK_POLICY_IMAGE],
                 {"kube-router": BIN / "kube-router"})
    files = {"agnhost": {"agnhost": BIN / "agnhost"}, "echoserver": {"echoserver": BIN / "echoserver"}}
    for dockerfile, tags in lab_images.LESSON_IMAGE_TAGS.items():
        say(f"image: {', '.join(tags)}")
        docker_build(f"images/{dockerfile}.Dockerfile", list(tags), files.get(dockerfile, {}))


def kind_files() -> Path:
    """kind's node files (images/base/files) from the sigs.k8s.io/kind module, as the kind build uses them."""
    done = run([GO, "list", "-m", "-f", "{{.Dir}}", "sigs.k8s.io/kind"], cwd=HERE / "go" / "kind", quiet=True)
    return Path(done.stdout.strip()) / "images" / "base" / "files"


def node_image() -> None:
    """The node image: node/Dockerfile, then every image imported into its containerd, committed."""
    base = "labsupport/kind-node-base:" + KUBE
    say(f"node: file system {base}")
    files = {"kind-files": kind_files(), "default-cni.yaml": HERE / "node" / "default-cni.yaml"}
    files.update({name: BIN / name for name in ("kubeadm", "kubelet", "kubectl", "crictl")})
    with tempfile.TemporaryDirectory() as tmp:
        version = Path(tmp) / "version"
        version.write_text(KUBE + "\n")
        files["version"] = version
        docker_build("node/Dockerfile", [base], files)
    preload = lab_images.node_preload()
    key = hashlib.sha256(" ".join([image_id(base)] + [image_id(i) for i in preload]).encode()).hexdigest()[:16]
    if image_label(lab_images.NODE_IMAGE, "dev.labsupport.content") == key:
        say(f"node: {lab_images.NODE_IMAGE} is up to date")
        return
    name = f"labsupport-node-build-{os.getpid()}"
    say(f"node: importing {len(preload)} images into the node's containerd")
    run(["docker", "run", "-d", "--name", name, "--privileged", "--entrypoint", "sleep", base, "infinity"], quiet=True)
    try:
        run(["docker", "exec", "-d", name, "containerd"], quiet=True)
        deadline = time.monotonic() + 60
        while subprocess.run(["docker", "exec", name, "ctr", "version"], capture_output=True).returncode != 0:
            if time.monotonic() > deadline:
                raise SystemExit("kind-images: containerd in the node build container did not start")
            time.sleep(0.5)
        save = subprocess.Popen(["docker", "save", *preload], stdout=subprocess.PIPE)
        run(["docker", "exec", "-i", name, "ctr", "--namespace=k8s.io", "images", "import", "--all-platforms",
             "--no-unpack", "--digests", "-"], stdin=save.stdout, quiet=True)
        if save.wait() != 0:
            raise SystemExit("kind-images: docker save of the images to preload failed")
        listed = run(["docker", "exec", name, "ctr", "--namespace=k8s.io", "images", "list", "-q"], quiet=True).stdout
        say(f"node: the node's containerd holds {len(listed.split())} image references")
        run(["docker", "exec", name, "pkill", "containerd"], quiet=True)
        time.sleep(1)
        say(f"node: committing {lab_images.NODE_IMAGE}")
        run(["docker", "commit", "--change", f"LABEL dev.labsupport.content={key}",
             "--change", 'ENTRYPOINT ["/usr/local/bin/entrypoint", "/sbin/init"]', "--change", "CMD []",
             name, lab_images.NODE_IMAGE], quiet=True)
    finally:
        subprocess.run(["docker", "rm", "-f", name], capture_output=True)


def singleuser_context() -> dict[str, bytes]:
    """The single-user image's build context: requirements.txt (the project's dependencies and JupyterHub, pinned
    at the releases this venv has, so the hub and the servers it spawns speak one protocol and run the same code)
    and the project's files under project/."""
    import re
    from importlib.metadata import requires, version
    names = [re.match(r"[A-Za-z0-9._-]+", r).group(0) for r in requires("labsupport") or [] if "extra ==" not in r]
    requirements = [f"{name}=={version(name)}" for name in [*names, "jupyterhub"]]
    files = {"requirements.txt": ("\n".join(requirements) + "\n").encode()}
    sources = [ROOT / "pyproject.toml", ROOT / "README.md",
               *sorted(p for p in (ROOT / "labsupport").rglob("*")
                       if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc")]
    for source in sources:
        files["project/" + source.relative_to(ROOT).as_posix()] = source.read_bytes()
    return files


#: Debian's bundle of the certificate authorities this machine trusts
SYSTEM_AUTHORITIES = "/etc/ssl/certs/ca-certificates.crt"


def pip_authorities() -> bytes:
    """The certificate authorities this machine's pip is told to trust (PIP_CERT, else SSL_CERT_FILE, else Debian's
    system bundle, which holds a local authority added with update-ca-certificates), for the image's pip where a
    proxy re-signs PyPI's certificates; empty when there is none."""
    for path in (os.environ.get("PIP_CERT"), os.environ.get("SSL_CERT_FILE"), SYSTEM_AUTHORITIES):
        if path and Path(path).is_file():
            return Path(path).read_bytes()
    return b""


def singleuser_image() -> None:
    """labsupport/singleuser:local, unless one built from this Dockerfile, base image and context exists."""
    from importlib.metadata import PackageNotFoundError
    dockerfile = HERE / "images" / "singleuser.Dockerfile"
    try:
        context = singleuser_context()
    except PackageNotFoundError as e:
        say(f"singleuser: skipped, {e.name} is not installed for this Python (make .venv/.installed installs it)")
        return
    digest = hashlib.sha256(dockerfile.read_bytes() + image_id(lab_images.BASE_IMAGE).encode())
    for name in sorted(context):
        digest.update(b"\0" + name.encode() + b"\0" + context[name])
    key = digest.hexdigest()[:16]
    image = lab_images.SINGLEUSER_IMAGE
    if image_label(image, "dev.labsupport.content") == key:
        say(f"singleuser: {image} is up to date")
        return
    say(f"singleuser: building {image} (Debian's Python, JupyterHub, JupyterLab and this project from PyPI and "
        "the source; a few minutes the first time)")
    with tempfile.TemporaryDirectory(prefix="kind-images-singleuser-") as tmp:
        for name, data in context.items():
            target = Path(tmp) / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        (Path(tmp) / "pip-ca.pem").write_bytes(pip_authorities())
        run(["nice", "-n", "19", "docker", "build", "-q", "--network", "host", "--label",
             f"dev.labsupport.content={key}", "-f", str(dockerfile), "-t", image, tmp],
            env={**os.environ, "DOCKER_BUILDKIT": "0"}, quiet=True)


def engine() -> None:
    """A Docker engine that answers, and the kind network on the lab's subnet."""
    pid = start_engine(log=lambda text: say("engine: " + text))
    if pid:
        say(f"engine: dockerd started (pid {pid})")
    say(f"engine: network kind on {ensure_network()}")


def coredns() -> None:
    """CoreDNS from the project's pinned module (`make upstream`)."""
    run(["make", "--no-print-directory", "upstream"], cwd=ROOT, quiet=True)


STEPS = {"engine": engine, "go": lambda: [go_build(m) for m in GO_PROGRAMS] and install_kind(), "coredns": coredns,
         "base": base_image, "images": workload_images, "node": node_image, "singleuser": singleuser_image}


#: Steps a whole build goes on without: nothing a cluster needs waits on them (the single-user image needs PyPI,
#: and only the KubeSpawner test uses it, building it itself when it is missing).
OPTIONAL = ("singleuser",)


def timed(step: str) -> None:
    """Run one step and say how long it took."""
    began = time.monotonic()
    STEPS[step]()
    say(f"step {step} took {time.monotonic() - began:.0f} s")


def main(argv: list[str] | None = None) -> int:
    """Run every step, or only the named ones."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", action="append", choices=list(STEPS), help="run only this step (repeatable)")
    args = parser.parse_args(argv)
    chosen = [step for step in STEPS if not args.only or step in args.only]
    # debootstrap waits on the network and the disk, the Go builds on the CPU: run the base beside them
    beside = None
    if "base" in chosen and "go" in chosen:
        import threading
        failed: list[BaseException] = []

        def base_beside() -> None:
            try:
                timed("base")
            except BaseException as e:  # noqa: BLE001 - re-raised in the main thread below
                failed.append(e)

        beside = threading.Thread(target=base_beside)
    for step in chosen:
        if step == "base" and beside is not None:
            continue
        if step == "go" and beside is not None:
            beside.start()
        if step == "images" and beside is not None:
            beside.join()
            if failed:
                raise failed[0]
        if step in OPTIONAL and not args.only:
            try:
                timed(step)
            except SystemExit as e:
                say(f"{step}: not built ({e}); the cluster's images are, and `build.py --only {step}` tries again")
            continue
        timed(step)
    if beside is not None and beside.is_alive():
        beside.join()
        if failed:
            raise failed[0]
    say("done")
    return 0


if __name__ == "__main__":
    sys.exit(main())
