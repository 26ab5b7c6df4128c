"""The guards of a class on one shared cluster, as data, and the checks that a cluster enforces them.

Nothing a student does in their namespace reaches outside it:

* **Pod Security `restricted`**, enforced by the API server on every student namespace (`pod_security_labels`): no
  privileged, hostPath, hostNetwork or hostPID pod, nothing as root, no privilege escalation, every capability
  dropped, seccomp `RuntimeDefault`.
* **The restricted values by default** (`POD_DEFAULTS`, a MutatingAdmissionPolicy, GA in Kubernetes 1.36): a pod that
  says nothing of them gets them, so the lessons' manifests stay what they teach (a Deployment, a Service) and
  `kubectl run` works; a pod that asks for something else keeps it and is refused by Pod Security, with its message.
  It also sets `net.ipv4.ip_unprivileged_port_start=0` (a namespaced, safe sysctl) where the pod sets no sysctl, so a
  server that runs as non-root still listens on port 80.
* **No traffic hijack** (`SERVICE_RULES`, a ValidatingAdmissionPolicy): no `spec.externalIPs` (CVE-2020-8554), and a
  `spec.loadBalancerIP` only inside the namespace's own allocation (`LOAD_BALANCER_IPS`, a CIDR the class gives it).
* **Isolation** (`network_policies`): by default nothing in and nothing out; in from the namespace itself and from
  outside the pod network (NodePort and LoadBalancer traffic, the kubelet's probes), out to the namespace and to DNS.
  The student's server (KubeSpawner's pod, `SERVER_LABEL`) also reaches out of the cluster (the API server, the hub)
  and the cluster's own services, and is reached by them; a pod of another student never.
* **Nodes read-only** (`NODE_READER`), so the NodePort exercises have an address to curl.

`missing_guards` asks a cluster, by server-side dry runs in a namespace labelled as a student's, whether each guard
holds; `labsupport class cluster` refuses to make a class where one does not.

>>> sorted(pod_security_labels())
['pod-security.kubernetes.io/enforce', 'pod-security.kubernetes.io/enforce-version']
>>> [p["metadata"]["name"] for p in network_policies("lab-alice", {}, ["10.244.0.0/16"])]
['lab-default-deny', 'lab-allow-same-namespace', 'lab-allow-dns', 'lab-allow-from-outside', 'lab-allow-student-server']
"""
from __future__ import annotations

import ipaddress
import time
from dataclasses import dataclass
from typing import Callable, Iterable

from labsupport.i18n import tr
from labsupport.kind.loadbalancer import NAMESPACE_BLOCK

#: The label every student namespace carries (its value: the student id); the policies' bindings select it.
STUDENT_LABEL = "labsupport.dev/student"
#: The namespace annotation holding the addresses (a CIDR) a student's Services get (the kind load balancer) and may
#: ask for as `spec.loadBalancerIP`.
LOAD_BALANCER_IPS = NAMESPACE_BLOCK
#: The label KubeSpawner puts on a student's server pod.
SERVER_LABEL = ("component", "singleuser-server")
#: Pod Security's namespace labels.
PSS_ENFORCE = "pod-security.kubernetes.io/enforce"
PSS_LEVEL = "restricted"
#: The cluster-scoped objects every class shares (made or updated by each `class cluster`).
POD_DEFAULTS = "labsupport-student-pod-defaults"
SERVICE_RULES = "labsupport-student-services"
NODE_READER = "labsupport-student-node-reader"
#: The addresses pods may never reach from a student's server: link-local, where clouds serve node credentials.
LINK_LOCAL = "169.254.0.0/16"
#: The sysctl that opens ports below 1024 to a server that does not run as root (namespaced, safe).
UNPRIVILEGED_PORTS = "net.ipv4.ip_unprivileged_port_start"

#: The guards, by the name `--allow-missing-guard` takes.
GUARDS = ("pod-security", "pod-defaults", "service-addresses", "network-policy")
#: DaemonSets (by name or image) that enforce NetworkPolicy: the CNIs and agents a cluster commonly runs.
POLICY_ENFORCERS = ("kube-router", "calico-node", "cilium", "antrea-agent", "weave-net", "canal",
                    "kube-network-policies", "azure-npm", "anetd", "aws-network-policy-agent", "kube-ovn",
                    "romana", "ovnkube-node")
#: How long a new admission policy may take before the API server applies it (its informers' delay).
POLICY_SETTLE_SECONDS = 20.0

_ALL = '["ALL"]'
_RUNTIME_DEFAULT = '"RuntimeDefault"'
_STUDENT_NAMESPACES = {"matchExpressions": [{"key": STUDENT_LABEL, "operator": "Exists"}]}
_OTHER_NAMESPACES = {"matchExpressions": [{"key": STUDENT_LABEL, "operator": "DoesNotExist"}]}


def pod_security_labels() -> dict[str, str]:
    """The namespace labels that make the API server enforce Pod Security `restricted` there (the newest version of
    the standard the server knows)."""
    return {PSS_ENFORCE: PSS_LEVEL, PSS_ENFORCE + "-version": "latest"}


def _has(path: str) -> str:
    """A CEL test that every step of `path` (`object.spec.securityContext.runAsNonRoot`) is set."""
    parts = path.split(".")
    return " && ".join(f"has({'.'.join(parts[:i + 1])})" for i in range(1, len(parts)))


def _default(path: str, value: str) -> str:
    """A CEL expression: the field at `path` when set, else `value`."""
    return f"({_has(path)} ? {path} : {value})"


#: A container that runs privileged or adds CAP_SYS_ADMIN escalates whatever it says: the API server refuses it with
#: `allowPrivilegeEscalation: false`, so it is not defaulted there (Pod Security then refuses it with its reasons).
_ESCALATES = ("(has(c.securityContext) && ((has(c.securityContext.privileged) && c.securityContext.privileged) || "
              "(has(c.securityContext.capabilities) && has(c.securityContext.capabilities.add) && "
              "c.securityContext.capabilities.add.exists(a, a == 'SYS_ADMIN' || a == 'CAP_SYS_ADMIN'))))")


def _container_defaults(field: str, var: str) -> str:
    """The ApplyConfiguration of one container list (`containers`, `initContainers`): each container keeps what it
    says and gets `allowPrivilegeEscalation: false` where it says nothing (true where it runs privileged or adds
    CAP_SYS_ADMIN, which escalate anyway)."""
    kind = f"Object.spec.{field}"
    return (f"{var}.map(c, {kind}{{name: c.name, securityContext: {kind}.securityContext{{"
            f"allowPrivilegeEscalation: {_default('c.securityContext.allowPrivilegeEscalation', _ESCALATES)}}}}})")


def _capabilities_patch(field: str) -> str:
    """JSON patches dropping every capability of each container of a list that says nothing of what it drops (the
    list `drop` is atomic, which an ApplyConfiguration may not set): the whole `capabilities` where there is none,
    else only its `drop`, so a capability the pod adds stays for Pod Security to judge."""
    var = f"object.spec.{field}"
    path = f'"/spec/{field}/" + string(i) + "/securityContext/capabilities'
    kind = f"Object.spec.{field}.securityContext.capabilities"
    whole = (f"{var}.transformList(i, c, !has(c.securityContext.capabilities), "
             f'JSONPatch{{op: "add", path: {path}", value: {kind}{{drop: {_ALL}}}}})')
    drop = (f"{var}.transformList(i, c, has(c.securityContext.capabilities) && "
            f"!has(c.securityContext.capabilities.drop), "
            f'JSONPatch{{op: "add", path: {path}/drop", value: {_ALL}}})')
    return f"{whole} + {drop}"


def pod_defaults_expressions() -> tuple[str, ...]:
    """The mutations of `POD_DEFAULTS`, as CEL, in order: the pod's restricted values and its containers' and init
    containers' `allowPrivilegeEscalation` (ApplyConfigurations); then, on what those made, every capability
    dropped and the unprivileged-ports sysctl, added only where the pod sets no sysctl and does not ask for the
    node's network (JSON patches)."""
    pod = ("Object{spec: Object.spec{securityContext: Object.spec.securityContext{"
           f"runAsNonRoot: {_default('object.spec.securityContext.runAsNonRoot', 'true')}, "
           "seccompProfile: Object.spec.securityContext.seccompProfile{"
           f"type: {_default('object.spec.securityContext.seccompProfile.type', _RUNTIME_DEFAULT)}"
           "}}, "
           f"containers: {_container_defaults('containers', 'object.spec.containers')}}}}}")
    init = (f"has(object.spec.initContainers) ? Object{{spec: Object.spec{{initContainers: "
            f"{_container_defaults('initContainers', 'object.spec.initContainers')}}}}} : Object{{}}")
    capabilities = (f"{_capabilities_patch('containers')} + (has(object.spec.initContainers) ? "
                    f"{_capabilities_patch('initContainers')} : [])")
    # not on a pod of the node's network: the sysctl is refused there, and Pod Security refuses such a pod anyway
    sysctl = (f"({_has('object.spec.securityContext.sysctls')}) || (has(object.spec.hostNetwork) && "
              f"object.spec.hostNetwork) ? [] : [JSONPatch{{op: \"add\", "
              f"path: \"/spec/securityContext/sysctls\", value: [Object.spec.securityContext.sysctls{{"
              f"name: \"{UNPRIVILEGED_PORTS}\", value: \"0\"}}]}}]")
    return pod, init, capabilities, sysctl


def _pods_created() -> dict:
    return {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"],
                               "resources": ["pods"]}]}


def service_validations() -> list[dict]:
    """The rules of `SERVICE_RULES`: no external IPs; a load-balancer address only inside the namespace's own."""
    annotations = "namespaceObject.metadata.annotations"
    allocation = f"{annotations}[{LOAD_BALANCER_IPS!r}]"
    return [
        {"expression": "!has(object.spec.externalIPs) || size(object.spec.externalIPs) == 0",
         "reason": "Forbidden",
         "message": "spec.externalIPs is refused in a student namespace: an external IP takes that address's traffic "
                    "for every pod and node of the cluster, a classmate's Service included (CVE-2020-8554). Use "
                    "type: NodePort or LoadBalancer"},
        {"expression": "!has(object.spec.loadBalancerIP) || object.spec.loadBalancerIP == '' || "
                       f"(isIP(object.spec.loadBalancerIP) && has({annotations}) && "
                       f"{LOAD_BALANCER_IPS!r} in {annotations} && "
                       f"cidr({allocation}).containsIP(object.spec.loadBalancerIP))",
         "reason": "Forbidden",
         "messageExpression": f"'spec.loadBalancerIP ' + object.spec.loadBalancerIP + ' is not an address of this "
                              f"namespace: ' + (has({annotations}) && {LOAD_BALANCER_IPS!r} in {annotations} ? "
                              f"'ask for one in ' + {allocation} : 'leave spec.loadBalancerIP out and the cluster "
                              "gives the Service an address') + ' (another student\\'s address would take their "
                              "traffic)'"},
    ]


def cluster_objects(labels: dict[str, str]) -> list[dict]:
    """The cluster-scoped guards every class shares, in the order they are made: the node reader ClusterRole, the
    pod defaults (MutatingAdmissionPolicy and binding), the Service rules (ValidatingAdmissionPolicy and binding)."""
    def meta(name: str) -> dict:
        return {"name": name, "labels": dict(labels)}

    group = "admissionregistration.k8s.io/v1"
    pod, init, capabilities, sysctl = pod_defaults_expressions()
    return [
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": meta(NODE_READER),
         "rules": [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list", "watch"]}]},
        {"apiVersion": group, "kind": "MutatingAdmissionPolicy", "metadata": meta(POD_DEFAULTS),
         "spec": {"failurePolicy": "Fail", "reinvocationPolicy": "IfNeeded", "matchConstraints": _pods_created(),
                  "mutations": [{"patchType": "ApplyConfiguration", "applyConfiguration": {"expression": pod}},
                                {"patchType": "ApplyConfiguration", "applyConfiguration": {"expression": init}},
                                {"patchType": "JSONPatch", "jsonPatch": {"expression": capabilities}},
                                {"patchType": "JSONPatch", "jsonPatch": {"expression": sysctl}}]}},
        {"apiVersion": group, "kind": "MutatingAdmissionPolicyBinding", "metadata": meta(POD_DEFAULTS),
         "spec": {"policyName": POD_DEFAULTS, "matchResources": {"namespaceSelector": _STUDENT_NAMESPACES}}},
        {"apiVersion": group, "kind": "ValidatingAdmissionPolicy", "metadata": meta(SERVICE_RULES),
         "spec": {"failurePolicy": "Fail",
                  "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                                                          "operations": ["CREATE", "UPDATE"],
                                                          "resources": ["services"]}]},
                  "validations": service_validations()}},
        {"apiVersion": group, "kind": "ValidatingAdmissionPolicyBinding", "metadata": meta(SERVICE_RULES),
         "spec": {"policyName": SERVICE_RULES, "validationActions": ["Deny"],
                  "matchResources": {"namespaceSelector": _STUDENT_NAMESPACES}}},
    ]


def node_binding(namespace: str, account: str, labels: dict[str, str]) -> dict:
    """The ClusterRoleBinding that lets a student's account read the nodes (named after their namespace)."""
    return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": f"{namespace}-nodes", "labels": dict(labels)},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": NODE_READER},
            "subjects": [{"kind": "ServiceAccount", "name": account, "namespace": namespace}]}


def network_policies(namespace: str, labels: dict[str, str], pod_cidrs: Iterable[str]) -> list[dict]:
    """A student namespace's NetworkPolicies: deny everything, then allow what the lessons need."""
    pod_cidrs = list(pod_cidrs)
    outside = {"ipBlock": {"cidr": "0.0.0.0/0", "except": pod_cidrs}}

    def policy(name: str, spec: dict) -> dict:
        return {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
                "metadata": {"name": name, "namespace": namespace, "labels": dict(labels)}, "spec": spec}

    every_pod = {}
    return [
        policy("lab-default-deny", {"podSelector": every_pod, "policyTypes": ["Ingress", "Egress"]}),
        policy("lab-allow-same-namespace", {"podSelector": every_pod, "policyTypes": ["Ingress", "Egress"],
                                            "ingress": [{"from": [{"podSelector": {}}]}],
                                            "egress": [{"to": [{"podSelector": {}}]}]}),
        policy("lab-allow-dns", {"podSelector": every_pod, "policyTypes": ["Egress"],
                                 "egress": [{"ports": [{"protocol": "UDP", "port": 53},
                                                       {"protocol": "TCP", "port": 53}]}]}),
        policy("lab-allow-from-outside", {"podSelector": every_pod, "policyTypes": ["Ingress"],
                                          "ingress": [{"from": [outside]}]}),
        policy("lab-allow-student-server", {
            "podSelector": {"matchLabels": {SERVER_LABEL[0]: SERVER_LABEL[1]}}, "policyTypes": ["Ingress", "Egress"],
            "ingress": [{"from": [{"namespaceSelector": _OTHER_NAMESPACES}]}],
            "egress": [{"to": [{"ipBlock": {"cidr": "0.0.0.0/0", "except": pod_cidrs + [LINK_LOCAL]}},
                               {"namespaceSelector": _OTHER_NAMESPACES}]}]}),
    ]


def pod_cidrs_of(kube_proxy_config: dict | None, nodes: Iterable[dict]) -> list[str]:
    """The cluster's pod network: kube-proxy's `clusterCIDR` when its configuration has one, else the nodes'
    `spec.podCIDRs` merged; empty when neither says.

    >>> pod_cidrs_of({"clusterCIDR": "10.244.0.0/16"}, [])
    ['10.244.0.0/16']
    >>> pod_cidrs_of(None, [{"spec": {"podCIDRs": ["10.1.0.0/24"]}}, {"spec": {"podCIDR": "10.1.1.0/24"}}])
    ['10.1.0.0/23']
    """
    text = (kube_proxy_config or {}).get("clusterCIDR") or ""
    found = [c.strip() for c in str(text).split(",") if c.strip() and ":" not in c]
    if found:
        return found
    ranges = []
    for node in nodes:
        spec = node.get("spec") or {}
        for cidr in spec.get("podCIDRs") or ([spec["podCIDR"]] if spec.get("podCIDR") else []):
            if ":" not in cidr:
                ranges.append(ipaddress.IPv4Network(cidr, strict=False))
    return [str(n) for n in ipaddress.collapse_addresses(ranges)]


def load_balancer_blocks(pool: str, size: int, taken: Iterable[str]) -> list[str]:
    """The free blocks of `size` addresses (a CIDR each, the smallest that holds them) in `pool` (a CIDR), lowest
    first, that overlap no block in `taken`.

    >>> load_balancer_blocks("172.30.255.0/28", 4, ["172.30.255.4/30"])
    ['172.30.255.0/30', '172.30.255.8/30', '172.30.255.12/30']
    """
    network = ipaddress.IPv4Network(pool, strict=False)
    prefix = 32 - max(0, (max(1, size) - 1).bit_length())
    if prefix < network.prefixlen:
        return []
    used = [ipaddress.IPv4Network(t, strict=False) for t in taken]
    return [str(block) for block in network.subnets(new_prefix=prefix) if not any(block.overlaps(u) for u in used)]


@dataclass(frozen=True)
class Missing:
    """A guard the cluster does not enforce, and what a student could do because of it."""

    guard: str
    reason: str


Request = Callable[..., tuple[int, dict]]


def _dry_run(request: Request, method: str, path: str, body: dict) -> tuple[int, dict]:
    """A server-side dry run: the request goes through admission, nothing is stored."""
    return request(method, path, body, query=[("dryRun", "All")], allow=(400, 403, 404, 409, 422))


#: The account the probe pods name (made with the probe namespace: its `default` account may not exist yet).
PROBE_ACCOUNT = "guard-check"


def _probe_pod(name: str, **spec: object) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"serviceAccountName": PROBE_ACCOUNT, "automountServiceAccountToken": False,
                     "containers": [{"name": "probe", "image": "busybox:1.36", "command": ["sleep", "1"]}], **spec}}


def _pod_security(request: Request, namespace: str) -> str | None:
    status, answer = _dry_run(request, "POST", f"/api/v1/namespaces/{namespace}/pods",
                              _probe_pod("guard-privileged", hostPID=True, containers=[{
                                  "name": "probe", "image": "busybox:1.36", "command": ["sleep", "1"],
                                  "securityContext": {"privileged": True}}]))
    if status == 403 and "PodSecurity" in str(answer.get("message")):
        return None
    return tr("the API server admitted a privileged pod that shares the node's process namespace in a namespace "
              "labelled {label}={level}: it does not enforce Pod Security (the PodSecurity admission plugin, on by "
              "default since Kubernetes 1.25), so a student could mount a node's file system and become its root",
              label=PSS_ENFORCE, level=PSS_LEVEL)


def _pod_defaults(request: Request, namespace: str, served: bool) -> str | None:
    if not served:
        return tr("the cluster does not serve MutatingAdmissionPolicy (admissionregistration.k8s.io/v1, Kubernetes "
                  "1.36 or newer): the lessons' pods, which say nothing of their security context, would be refused "
                  "by Pod Security `restricted`")
    status, answer = _dry_run(request, "POST", f"/api/v1/namespaces/{namespace}/pods", _probe_pod("guard-defaults"))
    spec = answer.get("spec") or {}
    container = (spec.get("containers") or [{}])[0].get("securityContext") or {}
    if status in (200, 201) and (spec.get("securityContext") or {}).get("runAsNonRoot") is True \
            and container.get("allowPrivilegeEscalation") is False:
        return None
    return tr("a pod that says nothing of its security context did not get the restricted values from the "
              "MutatingAdmissionPolicy {policy} ({code}: {message}): the lessons' pods would be refused",
              policy=POD_DEFAULTS, code=status, message=str(answer.get("message") or "admitted unchanged")[:300])


def _service_addresses(request: Request, namespace: str) -> str | None:
    service = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "guard-external-ip"},
               "spec": {"ports": [{"port": 80}], "externalIPs": ["192.0.2.10"]}}
    status, _ = _dry_run(request, "POST", f"/api/v1/namespaces/{namespace}/services", service)
    if status in (200, 201):
        return tr("the API server accepted a Service with spec.externalIPs in a student namespace: a student could "
                  "take over the traffic of any address, a classmate's ClusterIP included (CVE-2020-8554). Run the "
                  "API server with --enable-admission-plugins=…,DenyServiceExternalIPs, or let the "
                  "ValidatingAdmissionPolicy {policy} work (Kubernetes 1.30 or newer)", policy=SERVICE_RULES)
    balancer = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "guard-balancer-ip"},
                "spec": {"type": "LoadBalancer", "ports": [{"port": 80}], "loadBalancerIP": "192.0.2.11"}}
    status, _ = _dry_run(request, "POST", f"/api/v1/namespaces/{namespace}/services", balancer)
    if status in (200, 201):
        return tr("the API server accepted a LoadBalancer Service asking for an address outside the namespace's "
                  "allocation (spec.loadBalancerIP): a student could ask for a classmate's. The "
                  "ValidatingAdmissionPolicy {policy} is not in force (Kubernetes 1.30 or newer)",
                  policy=SERVICE_RULES)
    return None


def policy_enforcers(daemonsets: Iterable[dict]) -> list[str]:
    """The DaemonSets (`namespace/name`) whose name or image is one of the NetworkPolicy enforcers we know."""
    found = []
    for ds in daemonsets:
        meta = ds.get("metadata") or {}
        images = [c.get("image") or "" for c in
                  (((ds.get("spec") or {}).get("template") or {}).get("spec") or {}).get("containers") or []]
        words = [meta.get("name") or ""] + [image.rsplit("/", 1)[-1].split(":")[0] for image in images]
        if any(word == known or word.startswith(known + "-") for word in words for known in POLICY_ENFORCERS):
            found.append(f"{meta.get('namespace')}/{meta.get('name')}")
    return found


def _network_policy(request: Request) -> str | None:
    _, answer = request("GET", "/apis/apps/v1/daemonsets")
    if policy_enforcers(answer.get("items") or []):
        return None
    return tr("no DaemonSet of a NetworkPolicy enforcer runs on this cluster (looked for {known}): a student's "
              "NetworkPolicies would be stored and ignored, and every student could reach every other's pods. "
              "Install a CNI that enforces NetworkPolicy (`make kind-images`' kind clusters run kube-router's "
              "firewall)", known=", ".join(POLICY_ENFORCERS))


def missing_guards(request: Request, namespace: str, *, pod_defaults_served: bool = True,
                   settle: float = POLICY_SETTLE_SECONDS) -> list[Missing]:
    """The guards this cluster does not enforce in `namespace` (a namespace labelled as a student's), asked by dry
    runs. Admission policies made a moment ago take a few seconds to apply, so a failing dry run is asked again
    until `settle` seconds have passed."""
    checks: dict[str, Callable[[], str | None]] = {
        "pod-security": lambda: _pod_security(request, namespace),
        "pod-defaults": lambda: _pod_defaults(request, namespace, pod_defaults_served),
        "service-addresses": lambda: _service_addresses(request, namespace),
        "network-policy": lambda: _network_policy(request),
    }
    deadline = time.monotonic() + settle
    while True:
        found = [Missing(guard, reason) for guard, check in checks.items() for reason in [check()] if reason]
        settling = [m for m in found if m.guard in ("pod-defaults", "service-addresses")
                    and not (m.guard == "pod-defaults" and not pod_defaults_served)]
        if not settling or time.monotonic() >= deadline:
            return found
        time.sleep(1.0)


__all__ = ["STUDENT_LABEL", "LOAD_BALANCER_IPS", "SERVER_LABEL", "PSS_ENFORCE", "PSS_LEVEL", "POD_DEFAULTS",
           "SERVICE_RULES", "NODE_READER", "GUARDS", "POLICY_ENFORCERS", "pod_security_labels",
           "pod_defaults_expressions", "service_validations", "cluster_objects", "node_binding", "network_policies",
           "pod_cidrs_of", "load_balancer_blocks", "Missing", "policy_enforcers", "missing_guards"]
