"""The images of a kind cluster built on this machine (`make kind-images`), by the names kubeadm and the lessons use.

Where a registry is reachable the kind backend uses kind's own node image (`config.NODE_IMAGE`); where this
machine built `NODE_IMAGE` here, that one is used, with kind's default CNI replaced by the lab's own
(kind-images/node/default-cni.yaml), kube-router's NetworkPolicy firewall beside it, and every image below already
inside the node.
"""
from __future__ import annotations

from labsupport.kind.config import CLIENT_IMAGE, LESSON_IMAGES
from labsupport.kind.runner import CommandRunner

KUBERNETES_VERSION = "v1.37.2"
BASE_IMAGE = "labsupport/debian:bookworm"
NODE_IMAGE = f"labsupport/kind-node:{KUBERNETES_VERSION}"
CNI_IMAGE = "labsupport/kind-cni:v1"
#: The release of kube-router whose NetworkPolicy firewall enforces the cluster's NetworkPolicies (its Go module; the
#: module proxy offers this one).
KUBE_ROUTER_VERSION = "v2.1.0"
#: kube-router run with only its firewall (`--run-firewall`, no routing or service proxy), as a DaemonSet beside the
#: lab's CNI (kind-images/node/default-cni.yaml).
NETWORK_POLICY_IMAGE = f"labsupport/kube-router:{KUBE_ROUTER_VERSION}"
#: A student's server for JupyterHub's KubeSpawner (kind-images/images/singleuser.Dockerfile): loaded into a cluster
#: when a test spawns one (`kind load docker-image`), not part of the node image, whose content it would change
#: with every edit of the project.
SINGLEUSER_IMAGE = "labsupport/singleuser:local"

# what `kubeadm config images list --kubernetes-version v1.37.2` names
CONTROL_PLANE = {
    "kube-apiserver": f"registry.k8s.io/kube-apiserver:{KUBERNETES_VERSION}",
    "kube-controller-manager": f"registry.k8s.io/kube-controller-manager:{KUBERNETES_VERSION}",
    "kube-scheduler": f"registry.k8s.io/kube-scheduler:{KUBERNETES_VERSION}",
    "kube-proxy": f"registry.k8s.io/kube-proxy:{KUBERNETES_VERSION}",
    "etcd": "registry.k8s.io/etcd:3.7.0-0",
    "coredns": "registry.k8s.io/coredns/coredns:v1.14.6",
    "pause": "registry.k8s.io/pause:3.10.2",
}

# kind-images/images/<file>.Dockerfile → the tags it is built under (the lessons' names, any tag they use)
LESSON_IMAGE_TAGS = {
    "nginx": ("nginx:1.27", "nginx:1.28"),
    "busybox": ("busybox:1.36",),
    "agnhost": ("registry.k8s.io/e2e-test-images/agnhost:2.53",),
    "echoserver": ("registry.k8s.io/echoserver:1.10",),
    "dnsutils": ("registry.k8s.io/e2e-test-images/jessie-dnsutils:1.7",),
    "curl": (CLIENT_IMAGE,),
}


def lesson_images() -> tuple[str, ...]:
    """Every workload image the lessons run, as built here."""
    built = tuple(tag for tags in LESSON_IMAGE_TAGS.values() for tag in tags if tag != CLIENT_IMAGE)
    return tuple(dict.fromkeys((*LESSON_IMAGES, *built)))


def node_preload() -> list[str]:
    """The images imported into the node's containerd: the control plane, the CNI daemon, the NetworkPolicy firewall,
    the lessons' images."""
    return [*CONTROL_PLANE.values(), CNI_IMAGE, NETWORK_POLICY_IMAGE, *lesson_images()]


def local_node_image(runner: CommandRunner | None = None) -> str | None:
    """The node image `make kind-images` built, when this machine's Docker has it."""
    runner = runner or CommandRunner()
    if runner.which("docker") is None:
        return None
    found = runner.run(["docker", "image", "inspect", "--format", "{{.Id}}", NODE_IMAGE], timeout=60)
    return NODE_IMAGE if found.ok and found.stdout.strip() else None
