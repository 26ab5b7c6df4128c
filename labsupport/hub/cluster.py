"""`labsupport class cluster`: a class on one shared Kubernetes cluster, a namespace and an account per student.

For every student of a roster it makes, idempotently (server-side apply): a Namespace `lab-ID` labelled with the
class and for Pod Security `restricted`, a ServiceAccount `student`, the Role `lab-student` whose rules are the
student role's (`labsupport.remote.role.role_rules`, the same table the graded cluster's policy reads), a
RoleBinding, a ResourceQuota and a LimitRange sized for the lessons (`SIZING`), the namespace's NetworkPolicies and a
binding to read the nodes (`labsupport.hub.guards`); then a bounded token for the account (TokenRequest) and a
kubeconfig whose context's namespace is the student's, for `Lab(backend="kube", kubeconfig=…)`. Before any of it,
the cluster-wide guards are made and the cluster is asked whether it enforces them (`guards.missing_guards`): where
one does not hold, no class is made. `delete_class` removes every namespace and binding of the class, and the
kubeconfigs it wrote.

The objects are plain data, built apart from the client that sends them:

>>> [o["kind"] for o in student_objects("alice", "demo")][:6]
['Namespace', 'ServiceAccount', 'Role', 'RoleBinding', 'ResourceQuota', 'LimitRange']
>>> student_objects("alice", "demo")[0]["metadata"]["labels"]["labsupport.dev/class"]
'demo'
"""
from __future__ import annotations

import base64
import ipaddress
import json
import os
import pathlib
import re
import time
from dataclasses import dataclass
from typing import Any, Iterable
from urllib.parse import urlsplit

import yaml

from labsupport.errors import LabError
from labsupport.hub import guards
from labsupport.i18n import tr
from labsupport.remote.role import role_rules
from labsupport.shape import ClusterConfig

#: Every student namespace is `lab-` and the student id (KubeSpawner's `user_namespace_template = "lab-{username}"`).
NAMESPACE_PREFIX = "lab-"
#: The student's ServiceAccount in their namespace (KubeSpawner's `service_account`).
ACCOUNT = "student"
#: The Role and RoleBinding in each student namespace.
ROLE = "lab-student"
MANAGED_BY = ("app.kubernetes.io/managed-by", "labsupport")
#: The label naming the class a namespace belongs to: `--delete` finds the class's namespaces by it.
CLASS_LABEL = "labsupport.dev/class"
#: The label naming the student a namespace belongs to.
STUDENT_LABEL = guards.STUDENT_LABEL
#: The pod network a class's NetworkPolicies tell apart from the outside, unless the cluster says another.
DEFAULT_POD_CIDRS = (ClusterConfig.pod_cidr,)
FIELD_MANAGER = "labsupport-class"
DEFAULT_CLASS = "services-lab"
#: A class name is a label value (and short enough to read in `kubectl get ns -L`).
CLASS_NAME = re.compile(r"^[a-z0-9]([a-z0-9.-]{0,61}[a-z0-9])?$")
#: The shortest token the API server issues (TokenRequest's expirationSeconds minimum).
MIN_TOKEN_SECONDS = 600
#: The file in `--out` listing the class and the students whose kubeconfigs were written there.
INDEX = "labsupport-class.json"
_DURATION = re.compile(r"^(\d+)([mhd])$")
_UNIT_SECONDS = {"m": 60, "h": 3600, "d": 86400}


class ClassClusterError(LabError):
    """A shared-cluster class cannot be made or removed: a bad option, an unreachable cluster, missing rights."""


@dataclass(frozen=True)
class Sizing:
    """What one student namespace may use: its ResourceQuota, and the LimitRange defaults each container gets.

    The lessons' largest namespace is lesson 07's: 12 replicas, a client pod and a throwaway dnsutils pod, with
    room for a rollout's surge and pods still terminating. Requests are what the scheduler reserves, so they are
    set near what the lessons' containers use (docs/classroom.md, measured); limits cap a runaway container. The
    quota's totals hold `pods` containers at the LimitRange's defaults, so the pod count is what runs out first."""

    pods: int = 30
    services: int = 15
    node_ports: int = 6
    load_balancers: int = 4
    config_maps: int = 20
    requests_cpu: str = "500m"
    requests_memory: str = "512Mi"
    limits_cpu: str = "8"
    limits_memory: str = "4Gi"
    default_request_cpu: str = "5m"
    default_request_memory: str = "8Mi"
    default_limit_cpu: str = "250m"
    default_limit_memory: str = "128Mi"
    max_cpu: str = "1"
    max_memory: str = "512Mi"


SIZING = Sizing()


def namespace_of(student_id: str) -> str:
    """The namespace of a student."""
    return NAMESPACE_PREFIX + student_id


def class_selector(class_name: str) -> str:
    """The label selector of a class's namespaces."""
    return f"{MANAGED_BY[0]}={MANAGED_BY[1]},{CLASS_LABEL}={class_name}"


def check_class_name(class_name: str) -> str:
    """The class name, refused unless it can be a label value."""
    if not CLASS_NAME.match(class_name or ""):
        raise ClassClusterError(tr("--class {name!r}: a class name must be a label value: lower-case letters, "
                                   "digits, '.' and '-', starting and ending with a letter or digit, at most 63 "
                                   "characters", name=class_name))
    return class_name


def parse_duration(text: str) -> int:
    """Seconds of a token lifetime such as `90m`, `12h` or `7d` (at least 10 minutes, as the API server wants)."""
    match = _DURATION.match(str(text).strip())
    if not match:
        raise ClassClusterError(tr("--token-expiry {value!r}: give a number and a unit, m, h or d (90m, 12h, 7d)",
                                   value=text))
    seconds = int(match.group(1)) * _UNIT_SECONDS[match.group(2)]
    if seconds < MIN_TOKEN_SECONDS:
        raise ClassClusterError(tr("--token-expiry {value}: the API server issues tokens for 10 minutes (10m) or "
                                   "more", value=text))
    return seconds


def class_labels(class_name: str, student_id: str | None = None) -> dict[str, str]:
    """The labels of what a class makes: managed by labsupport, the class, and the student it is for."""
    return {MANAGED_BY[0]: MANAGED_BY[1], CLASS_LABEL: class_name,
            **({STUDENT_LABEL: student_id} if student_id is not None else {})}


def student_objects(student_id: str, class_name: str, sizing: Sizing = SIZING, *,
                    pod_cidrs: Iterable[str] = DEFAULT_POD_CIDRS, load_balancer_ips: str | None = None) -> list[dict]:
    """What one student gets, in the order they are made: Namespace (enforcing Pod Security `restricted`; with the
    addresses its LoadBalancer Services may ask for, when it has some), ServiceAccount, Role, RoleBinding,
    ResourceQuota, LimitRange, its NetworkPolicies, and the ClusterRoleBinding that lets the account read nodes."""
    ns = namespace_of(student_id)
    labels = class_labels(class_name, student_id)

    def meta(name: str, namespaced: bool = True) -> dict:
        return {"name": name, **({"namespace": ns} if namespaced else {}), "labels": dict(labels)}

    namespace = meta(ns, namespaced=False)
    namespace["labels"].update(guards.pod_security_labels())
    if load_balancer_ips:
        namespace["annotations"] = {guards.LOAD_BALANCER_IPS: load_balancer_ips}
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": namespace},
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": meta(ACCOUNT)},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": meta(ROLE),
         "rules": role_rules()},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": meta(ROLE),
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": ROLE},
         "subjects": [{"kind": "ServiceAccount", "name": ACCOUNT, "namespace": ns}]},
        {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": meta("lab-quota"),
         "spec": {"hard": {"pods": str(sizing.pods), "services": str(sizing.services),
                           "services.nodeports": str(sizing.node_ports),
                           "services.loadbalancers": str(sizing.load_balancers),
                           "configmaps": str(sizing.config_maps),
                           "requests.cpu": sizing.requests_cpu, "requests.memory": sizing.requests_memory,
                           "limits.cpu": sizing.limits_cpu, "limits.memory": sizing.limits_memory}}},
        {"apiVersion": "v1", "kind": "LimitRange", "metadata": meta("lab-limits"),
         "spec": {"limits": [{"type": "Container",
                              "defaultRequest": {"cpu": sizing.default_request_cpu,
                                                 "memory": sizing.default_request_memory},
                              "default": {"cpu": sizing.default_limit_cpu, "memory": sizing.default_limit_memory},
                              "max": {"cpu": sizing.max_cpu, "memory": sizing.max_memory}}]}},
        *guards.network_policies(ns, labels, pod_cidrs),
        guards.node_binding(ns, ACCOUNT, labels),
    ]


def student_kubeconfig(student_id: str, cluster: dict, token: str, context_name: str = "lab") -> dict:
    """A kubeconfig for one student: the cluster entry of the admin's (server and CA), the student's token, and a
    context whose namespace is theirs."""
    user = f"{ACCOUNT}@{namespace_of(student_id)}"
    return {"apiVersion": "v1", "kind": "Config", "current-context": context_name,
            "clusters": [{"name": context_name, "cluster": cluster}],
            "users": [{"name": user, "user": {"token": token}}],
            "contexts": [{"name": context_name, "context": {"cluster": context_name, "user": user,
                                                            "namespace": namespace_of(student_id)}}],
            "preferences": {}}


def write_private(path: pathlib.Path, text: str) -> None:
    """Write a file only its owner may read (0600), whatever its mode was."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.fchmod(fd, 0o600)
        os.write(fd, text.encode())
    finally:
        os.close(fd)


def admin_cluster_entry(kubeconfig: str, context: str | None = None) -> tuple[str, dict]:
    """The context chosen in the admin's kubeconfig and its cluster entry, with a CA file inlined so a student's
    kubeconfig stands alone."""
    try:
        doc = yaml.safe_load(pathlib.Path(kubeconfig).read_text()) or {}
    except (OSError, yaml.YAMLError) as e:
        raise ClassClusterError(tr("cannot read the kubeconfig {path}: {error}", path=kubeconfig, error=e)) from e
    name = context or doc.get("current-context")
    entry = next((c for c in doc.get("contexts") or [] if c.get("name") == name), None)
    if entry is None:
        raise ClassClusterError(tr("the kubeconfig {path} has no context {context!r} (its contexts: {known})",
                                   path=kubeconfig, context=name,
                                   known=", ".join(c.get("name", "") for c in doc.get("contexts") or []) or tr("none")))
    cluster_name = (entry.get("context") or {}).get("cluster")
    cluster = next((dict(c.get("cluster") or {}) for c in doc.get("clusters") or [] if c.get("name") == cluster_name),
                   None)
    if not cluster or not cluster.get("server"):
        raise ClassClusterError(tr("the kubeconfig {path}: context {context!r} names the cluster {cluster!r}, which "
                                   "has no server", path=kubeconfig, context=name, cluster=cluster_name))
    ca_file = cluster.pop("certificate-authority", None)
    if ca_file:
        ca_path = pathlib.Path(ca_file)
        if not ca_path.is_absolute():
            ca_path = pathlib.Path(kubeconfig).resolve().parent / ca_path
        try:
            cluster["certificate-authority-data"] = base64.b64encode(ca_path.read_bytes()).decode()
        except OSError as e:
            raise ClassClusterError(tr("cannot read the cluster's CA {path} named in {kubeconfig}: {error}",
                                       path=ca_path, kubeconfig=kubeconfig, error=e)) from e
    return name, cluster


@dataclass(frozen=True)
class Resource:
    """Where an object of one kind lives in the API."""

    group_version: str
    plural: str
    namespaced: bool

    def path(self, namespace: str | None, name: str | None = None) -> str:
        """The object's (or the collection's) URL path."""
        base = f"/apis/{self.group_version}" if "/" in self.group_version else f"/api/{self.group_version}"
        if self.namespaced:
            base += f"/namespaces/{namespace}"
        return base + f"/{self.plural}" + (f"/{name}" if name else "")


#: The kinds a class is made of.
RESOURCES = {
    "Namespace": Resource("v1", "namespaces", False),
    "ServiceAccount": Resource("v1", "serviceaccounts", True),
    "Role": Resource("rbac.authorization.k8s.io/v1", "roles", True),
    "RoleBinding": Resource("rbac.authorization.k8s.io/v1", "rolebindings", True),
    "ResourceQuota": Resource("v1", "resourcequotas", True),
    "LimitRange": Resource("v1", "limitranges", True),
    "NetworkPolicy": Resource("networking.k8s.io/v1", "networkpolicies", True),
    "ClusterRole": Resource("rbac.authorization.k8s.io/v1", "clusterroles", False),
    "ClusterRoleBinding": Resource("rbac.authorization.k8s.io/v1", "clusterrolebindings", False),
    "MutatingAdmissionPolicy": Resource("admissionregistration.k8s.io/v1", "mutatingadmissionpolicies", False),
    "MutatingAdmissionPolicyBinding": Resource("admissionregistration.k8s.io/v1",
                                               "mutatingadmissionpolicybindings", False),
    "ValidatingAdmissionPolicy": Resource("admissionregistration.k8s.io/v1", "validatingadmissionpolicies", False),
    "ValidatingAdmissionPolicyBinding": Resource("admissionregistration.k8s.io/v1",
                                                 "validatingadmissionpolicybindings", False),
}
#: What the admin's account must be allowed, asked of the API server before anything is made.
ADMIN_RIGHTS = (("create", "", "namespaces"), ("patch", "", "namespaces"), ("delete", "", "namespaces"),
                ("patch", "", "serviceaccounts"), ("create", "", "serviceaccounts/token"),
                ("patch", "rbac.authorization.k8s.io", "roles"), ("patch", "rbac.authorization.k8s.io", "rolebindings"),
                ("patch", "", "resourcequotas"), ("patch", "", "limitranges"),
                ("patch", "networking.k8s.io", "networkpolicies"),
                ("patch", "rbac.authorization.k8s.io", "clusterroles"),
                ("patch", "rbac.authorization.k8s.io", "clusterrolebindings"),
                ("delete", "rbac.authorization.k8s.io", "clusterrolebindings"),
                ("patch", "admissionregistration.k8s.io", "mutatingadmissionpolicies"),
                ("patch", "admissionregistration.k8s.io", "validatingadmissionpolicies"))


class ClusterClient:
    """The few API requests a class needs, as the admin's kubeconfig allows them."""

    def __init__(self, kubeconfig: str, context: str | None = None, request_timeout: float = 30):
        from kubernetes import config as kconfig
        self.kubeconfig = kubeconfig
        self.request_timeout = request_timeout
        try:
            self.api = kconfig.new_client_from_config(config_file=kubeconfig, context=context, persist_config=False)
        except (kconfig.ConfigException, OSError, TypeError, ValueError) as e:
            raise ClassClusterError(tr("cannot load the kubeconfig {path}: {error}", path=kubeconfig,
                                       error=e)) from e
        self.host = self.api.configuration.host

    def request(self, method: str, path: str, body: Any = None, *, query: Iterable[tuple[str, str]] = (),
                content_type: str = "application/json", allow: tuple[int, ...] = ()) -> tuple[int, dict]:
        """One request: its status and JSON answer. A status outside 2xx and `allow` raises ClassClusterError
        naming the request and the server's message (403: the rights the admin's account lacks)."""
        headers = {"Accept": "application/json", **({"Content-Type": content_type} if body is not None else {})}
        method_, url, headers, body_, _ = self.api.param_serialize(
            method, path, query_params=list(query), header_params=headers, body=body, auth_settings=["BearerToken"])
        try:
            response = self.api.call_api(method_, url, headers, body_, _request_timeout=self.request_timeout)
        except Exception as e:  # urllib3 raises many kinds; all mean the server is out of reach
            raise ClassClusterError(tr("cannot reach the Kubernetes API server at {host} (kubeconfig {path}): "
                                       "{error}. Is the cluster running, and is the kubeconfig current?",
                                       host=self.host, path=self.kubeconfig, error=e)) from e
        data = response.read()
        try:
            answer = json.loads(data) if data else {}
        except ValueError:
            answer = {"message": data.decode(errors="replace")[:300]}
        if 200 <= response.status < 300 or response.status in allow:
            return response.status, answer
        message = answer.get("message") if isinstance(answer, dict) else None
        if response.status == 401:
            raise ClassClusterError(tr("the API server at {host} does not accept the credentials of {path} (401 "
                                       "Unauthorized): is the kubeconfig's token or certificate current?",
                                       host=self.host, path=self.kubeconfig))
        if response.status == 403:
            raise ClassClusterError(tr("{method} {url} was refused (403): {message}. `labsupport class cluster` "
                                       "needs an administrator's kubeconfig (cluster-admin)", method=method,
                                       url=path, message=message or "forbidden"))
        raise ClassClusterError(tr("{method} {url} failed ({code}): {message}", method=method, url=path,
                                   code=response.status, message=message or answer))

    def missing_rights(self) -> list[str]:
        """The admin rights (`ADMIN_RIGHTS`) the kubeconfig's account does not have, as `verb resource`."""
        missing = []
        for verb, group, resource in ADMIN_RIGHTS:
            plural, _, sub = resource.partition("/")
            review = {"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
                      "spec": {"resourceAttributes": {"verb": verb, "group": group, "resource": plural,
                                                      **({"subresource": sub} if sub else {})}}}
            _, answer = self.request("POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", review)
            if not (answer.get("status") or {}).get("allowed"):
                missing.append(f"{verb} {resource}" + (f".{group}" if group else ""))
        return missing

    def get(self, kind: str, name: str, namespace: str | None = None) -> dict | None:
        """One object, or None when there is none."""
        status, answer = self.request("GET", RESOURCES[kind].path(namespace, name), allow=(404,))
        return None if status == 404 else answer

    def apply(self, obj: dict) -> dict:
        """Create or update one object by server-side apply (the same request every time: idempotent)."""
        meta = obj["metadata"]
        path = RESOURCES[obj["kind"]].path(meta.get("namespace"), meta["name"])
        return self.request("PATCH", path, obj, content_type="application/apply-patch+yaml",
                            query=[("fieldManager", FIELD_MANAGER), ("force", "true")])[1]

    def token(self, namespace: str, account: str, seconds: int) -> tuple[str, str]:
        """A bound token of the account (TokenRequest) and the time it expires, as the server says."""
        body = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                "spec": {"expirationSeconds": seconds}}
        _, answer = self.request("POST", f"/api/v1/namespaces/{namespace}/serviceaccounts/{account}/token", body)
        status = answer.get("status") or {}
        return status.get("token", ""), status.get("expirationTimestamp", "")

    def names(self, kind: str, selector: str, namespace: str | None = None) -> list[str]:
        """The names of the objects of a kind a label selector picks."""
        _, answer = self.request("GET", RESOURCES[kind].path(namespace), query=[("labelSelector", selector)])
        return sorted(item["metadata"]["name"] for item in answer.get("items") or [])

    def namespaces(self, selector: str) -> list[str]:
        """The names of the namespaces a label selector picks."""
        return self.names("Namespace", selector)

    def delete(self, kind: str, name: str, namespace: str | None = None) -> None:
        """Delete one object; one already gone is fine."""
        self.request("DELETE", RESOURCES[kind].path(namespace, name), allow=(404,))

    def delete_namespace(self, name: str) -> None:
        """Delete a namespace (and so everything in it); a namespace already gone is fine."""
        self.delete("Namespace", name)

    def pod_cidrs(self) -> list[str]:
        """The cluster's pod network, as kube-proxy's configuration or the nodes say it (empty when neither does)."""
        status, cm = self.request("GET", "/api/v1/namespaces/kube-system/configmaps/kube-proxy", allow=(404,))
        try:
            config = yaml.safe_load(((cm.get("data") or {}).get("config.conf") or "")) if status != 404 else None
        except yaml.YAMLError:
            config = None
        _, nodes = self.request("GET", "/api/v1/nodes")
        return guards.pod_cidrs_of(config if isinstance(config, dict) else None, nodes.get("items") or [])

    def api_endpoints(self) -> list[str]:
        """Where the API server itself listens (`https://ADDRESS:PORT`), as the `kubernetes` Service's
        EndpointSlices in `default` say."""
        _, answer = self.request("GET", "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices",
                                 query=[("labelSelector", "kubernetes.io/service-name=kubernetes")])
        found = []
        for item in answer.get("items") or []:
            port = next((p.get("port") for p in item.get("ports") or [] if p.get("port")), 443)
            for endpoint in item.get("endpoints") or []:
                for address in endpoint.get("addresses") or []:
                    host = f"[{address}]" if ":" in address else address
                    found.append(f"https://{host}:{port}")
        return found


def _client(kubeconfig: str, context: str | None) -> ClusterClient:
    client = ClusterClient(kubeconfig, context)
    missing = client.missing_rights()
    if missing:
        raise ClassClusterError(tr("the account of {path} may not {missing}: `labsupport class cluster` needs an "
                                   "administrator's kubeconfig (cluster-admin)", path=kubeconfig,
                                   missing=", ".join(missing)))
    return client


def is_loopback(server: str) -> bool:
    """Whether a server URL names this machine only (127.0.0.0/8, ::1, localhost).

    >>> is_loopback("https://127.0.0.1:40123"), is_loopback("https://10.0.0.5:6443")
    (True, False)
    """
    host = urlsplit(server).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def student_server(admin_server: str, client: ClusterClient, server: str | None = None) -> tuple[str, str | None]:
    """The API server address the students' kubeconfigs name, and a note when it is not the admin's: `server` when
    given; else the admin's, unless that names only this machine (kind's `127.0.0.1:PORT`), in which case the
    address the API server itself listens on (the `kubernetes` Service's endpoint), which works from elsewhere."""
    if server:
        if not urlsplit(server).scheme.startswith("http") or not urlsplit(server).hostname:
            raise ClassClusterError(tr("--server {server!r}: give the API server's URL, such as "
                                       "https://203.0.113.10:6443", server=server))
        return server, None
    if not is_loopback(admin_server):
        return admin_server, None
    endpoints = client.api_endpoints()
    if endpoints:
        return endpoints[0], tr("the students' kubeconfigs name the API server at {server} (the admin's "
                                "kubeconfig names {admin}, which works on this machine only; --server chooses "
                                "another)", server=endpoints[0], admin=admin_server)
    return admin_server, tr("the students' kubeconfigs name {admin}, which works on this machine only: give --server "
                            "with an address the students reach", admin=admin_server)


def load_balancer_allocations(existing: dict[str, str], student_ids: list[str], pool: str | None,
                              size: int) -> dict[str, str]:
    """Each student's block of load-balancer addresses: the one their namespace already has (`existing`, namespace
    → CIDR, every namespace of the cluster that has one), else the lowest free block of `size` in `pool`. No pool:
    no allocation (a student cannot ask for an address; the cluster's controller hands one out)."""
    namespaces = [namespace_of(s) for s in student_ids]
    found = {ns: existing[ns] for ns in namespaces if ns in existing}
    if pool is None:
        return found
    try:
        free = guards.load_balancer_blocks(pool, size, existing.values())
    except ValueError as e:
        raise ClassClusterError(tr("--load-balancer-pool {pool!r} is not an IPv4 CIDR: {error}", pool=pool,
                                   error=e)) from e
    wanting = [ns for ns in namespaces if ns not in found]
    if len(wanting) > len(free):
        raise ClassClusterError(tr("--load-balancer-pool {pool} has {free} free blocks of {size} addresses, and "
                                   "{wanting} students need one: give a larger pool or fewer addresses each "
                                   "(--load-balancer-ips)", pool=pool, free=len(free), size=size,
                                   wanting=len(wanting)))
    return {**found, **dict(zip(wanting, free))}


PROBE_PREFIX = "labsupport-guard-check-"
#: The student label of the namespace a guard check makes (the guards apply there as in a student's).
PROBE_STUDENT = "guard-check"


def check_guards(client: ClusterClient, *, pod_defaults_served: bool, settle: float = guards.POLICY_SETTLE_SECONDS
                 ) -> list[guards.Missing]:
    """Ask the cluster whether it enforces every guard, in a namespace of its own labelled as a student's (deleted
    afterwards, whatever happened)."""
    import secrets
    name = PROBE_PREFIX + secrets.token_hex(3)
    labels = {MANAGED_BY[0]: MANAGED_BY[1], STUDENT_LABEL: PROBE_STUDENT, **guards.pod_security_labels()}
    client.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}})
    try:
        client.apply({"apiVersion": "v1", "kind": "ServiceAccount",
                      "metadata": {"name": guards.PROBE_ACCOUNT, "namespace": name}})
        return guards.missing_guards(client.request, name, pod_defaults_served=pod_defaults_served, settle=settle)
    finally:
        client.delete_namespace(name)


def install_guards(client: ClusterClient) -> bool:
    """Make or update the cluster-wide guards every class shares; False when the cluster serves no
    MutatingAdmissionPolicy (older than Kubernetes 1.36)."""
    served = True
    for obj in guards.cluster_objects({MANAGED_BY[0]: MANAGED_BY[1]}):
        if obj["kind"].startswith("MutatingAdmissionPolicy") and not served:
            continue
        try:
            client.apply(obj)
        except ClassClusterError as e:
            if obj["kind"] == "MutatingAdmissionPolicy" and "(404)" in str(e):
                served = False
                continue
            raise
    return served


def guarded(client: ClusterClient, allow_missing: Iterable[str] = (), *,
            settle: float = guards.POLICY_SETTLE_SECONDS) -> list[str]:
    """Install the guards and check them: a missing guard stops the class (ClassClusterError naming each and what
    it lets a student do), unless `allow_missing` names it; then it is a loud warning line."""
    allowed = set(allow_missing)
    unknown = sorted(allowed - set(guards.GUARDS))
    if unknown:
        raise ClassClusterError(tr("--allow-missing-guard {names}: no such guard (the guards: {guards})",
                                   names=", ".join(unknown), guards=", ".join(guards.GUARDS)))
    missing = check_guards(client, pod_defaults_served=install_guards(client), settle=settle)
    refused = [m for m in missing if m.guard not in allowed]
    if refused:
        raise ClassClusterError(tr("this cluster does not keep students inside their namespaces, so no class was "
                                   "made:\n  - {missing}\n(--allow-missing-guard NAME makes the class anyway, "
                                   "if you accept what that lets students do)",
                                   missing="\n  - ".join(f"{m.guard}: {m.reason}" for m in refused)))
    return [tr("WARNING: the guard {guard} is missing and you allowed it: {reason}", guard=m.guard, reason=m.reason)
            for m in missing]


def make_class(student_ids: list[str], kubeconfig: str, out: str | pathlib.Path, *, class_name: str = DEFAULT_CLASS,
               token_seconds: int = 86400, context: str | None = None, sizing: Sizing = SIZING,
               server: str | None = None, pod_cidrs: Iterable[str] | None = None,
               load_balancer_pool: str | None = None, load_balancer_ips: int | None = None,
               allow_missing: Iterable[str] = ()) -> list[str]:
    """Make (or bring up to date) every student's namespace, account, Role, limits and guards, and write each a
    kubeconfig `OUT/ID.kubeconfig` (0600) with a fresh token. Nothing is made on a cluster that does not enforce
    the guards (`guarded`). Returns what it did, a line per student after the notes."""
    check_class_name(class_name)
    folder = pathlib.Path(out)
    written = _read_index(folder, class_name)
    _, cluster = admin_cluster_entry(kubeconfig, context)
    client = _client(kubeconfig, context)
    existing_allocations: dict[str, str] = {}
    for student_id in student_ids:
        existing = client.get("Namespace", namespace_of(student_id))
        owner = ((existing or {}).get("metadata", {}).get("labels") or {}).get(CLASS_LABEL)
        if existing is not None and owner != class_name:
            raise ClassClusterError(tr("the namespace {namespace} exists and is not the class {name}'s ({label}: "
                                       "{owner}): give that student another id, or remove the namespace",
                                       namespace=namespace_of(student_id), name=class_name, label=CLASS_LABEL,
                                       owner=owner or tr("none")))
    _, listed = client.request("GET", "/api/v1/namespaces")
    for item in listed.get("items") or []:
        block = (item["metadata"].get("annotations") or {}).get(guards.LOAD_BALANCER_IPS)
        if block:
            existing_allocations[item["metadata"]["name"]] = block
    allocations = load_balancer_allocations(existing_allocations, student_ids, load_balancer_pool,
                                            load_balancer_ips or sizing.load_balancers)
    cidrs = list(pod_cidrs or []) or client.pod_cidrs()
    if not cidrs:
        raise ClassClusterError(tr("cannot tell this cluster's pod network (kube-proxy's configuration has no "
                                   "clusterCIDR and the nodes no podCIDR): give it with --pod-cidr, so the "
                                   "NetworkPolicies can tell a pod from the outside"))
    address, note = student_server(cluster["server"], client, server)
    cluster["server"] = address
    lines = guarded(client, allow_missing) + ([note] if note else [])
    folder.mkdir(parents=True, exist_ok=True)
    folder.chmod(0o700)
    for student_id in student_ids:
        ns = namespace_of(student_id)
        for obj in student_objects(student_id, class_name, sizing, pod_cidrs=cidrs,
                                   load_balancer_ips=allocations.get(ns)):
            client.apply(obj)
        token, expires = client.token(ns, ACCOUNT, token_seconds)
        path = folder / f"{student_id}.kubeconfig"
        if student_id not in written:
            written.append(student_id)
            write_private(folder / INDEX, json.dumps({"class": class_name, "students": written}, indent=1))
        write_private(path, yaml.safe_dump(student_kubeconfig(student_id, dict(cluster), token), sort_keys=False))
        lines.append(tr("{namespace}: {path} (token until {expires})", namespace=ns, path=path, expires=expires)
                     + (tr("; load-balancer addresses {block}", block=allocations[ns]) if ns in allocations else ""))
    return lines


def delete_class(kubeconfig: str, *, class_name: str = DEFAULT_CLASS, out: str | pathlib.Path | None = None,
                 context: str | None = None, timeout: float = 300) -> list[str]:
    """Delete every namespace labelled with the class (and so all in them) and the class's bindings, wait until the
    namespaces are gone, remove the kubeconfigs `make_class` wrote in `out`, and the guards every class shares
    once no student namespace is left. Returns what it did."""
    check_class_name(class_name)
    folder = pathlib.Path(out) if out is not None else None
    written = _read_index(folder, class_name) if folder is not None else []
    client = _client(kubeconfig, context)
    return remove_class(client, class_name, folder, written, timeout)


def remove_class(client: ClusterClient, class_name: str, folder: pathlib.Path | None = None,
                 written: Iterable[str] = (), timeout: float = 300) -> list[str]:
    """What `delete_class` does, with a client already made (also `labsupport clean --kubeconfig`'s, for every
    class)."""
    names = client.namespaces(class_selector(class_name))
    for name in names:
        client.delete_namespace(name)
    lines = [tr("deleted the namespace {namespace}", namespace=name) for name in names]
    for binding in client.names("ClusterRoleBinding", class_selector(class_name)):
        client.delete("ClusterRoleBinding", binding)
        lines.append(tr("deleted the ClusterRoleBinding {name}", name=binding))
    deadline = time.monotonic() + timeout
    left = names
    while left and time.monotonic() < deadline:
        time.sleep(2)
        left = client.namespaces(class_selector(class_name))
    if left:
        raise ClassClusterError(tr("after {seconds} s these namespaces are still terminating: {names} (`kubectl get "
                                   "namespace NAME -o yaml` shows what holds them)", seconds=int(timeout),
                                   names=", ".join(left)))
    if folder is not None and folder.is_dir():
        students = set(written) | {name.removeprefix(NAMESPACE_PREFIX) for name in names}
        for path in [folder / f"{student}.kubeconfig" for student in sorted(students)] + [folder / INDEX]:
            if path.exists():
                path.unlink()
                lines.append(tr("removed {path}", path=path))
        if not any(folder.iterdir()):
            folder.rmdir()
    if not names:
        lines.append(tr("no namespace of the class {name} on this cluster", name=class_name))
    if not client.namespaces(f"{STUDENT_LABEL},{STUDENT_LABEL}!={PROBE_STUDENT}"):
        lines += remove_shared_guards(client)
    return lines


def clean_remote(kubeconfig: str, *, class_name: str | None = None, context: str | None = None,
                 timeout: float = 300) -> list[str]:
    """`labsupport clean --kubeconfig`: remove from a shared cluster every class this project made there (or only
    `class_name`): their namespaces, with the students' accounts and tokens, their bindings, the namespaces a guard
    check left, and the guards every class shares. The kubeconfigs written for the students stop working with
    their accounts."""
    if class_name is not None:
        check_class_name(class_name)
    client = _client(kubeconfig, context)
    _, listed = client.request("GET", "/api/v1/namespaces", query=[("labelSelector", f"{MANAGED_BY[0]}="
                                                                                     f"{MANAGED_BY[1]}")])
    classes = sorted({(item["metadata"].get("labels") or {}).get(CLASS_LABEL) for item in listed.get("items") or []}
                     - {None})
    _, bindings = client.request("GET", RESOURCES["ClusterRoleBinding"].path(None),
                                 query=[("labelSelector", f"{MANAGED_BY[0]}={MANAGED_BY[1]}")])
    classes = sorted(set(classes) | {(b["metadata"].get("labels") or {}).get(CLASS_LABEL)
                                     for b in bindings.get("items") or []} - {None})
    lines = []
    for item in listed.get("items") or []:
        if item["metadata"]["name"].startswith(PROBE_PREFIX):
            client.delete_namespace(item["metadata"]["name"])
            lines.append(tr("deleted the namespace {namespace}", namespace=item["metadata"]["name"]))
    for name in [class_name] if class_name is not None else classes:
        lines += remove_class(client, name, timeout=timeout)
    if class_name is None and not classes:
        lines += remove_shared_guards(client)
    return lines or [tr("no class of this project on the cluster of {path}", path=kubeconfig)]


def remove_shared_guards(client: ClusterClient) -> list[str]:
    """Delete the cluster-wide guards every class shares (once no class is left)."""
    lines = []
    for obj in reversed(guards.cluster_objects({})):
        status, _ = client.request("DELETE", RESOURCES[obj["kind"]].path(None, obj["metadata"]["name"]),
                                   allow=(404,))
        if status != 404:
            lines.append(tr("deleted the {kind} {name}", kind=obj["kind"], name=obj["metadata"]["name"]))
    return lines


def _read_index(folder: pathlib.Path, class_name: str) -> list[str]:
    """The students whose kubeconfigs the class wrote in this folder; a folder of another class is refused."""
    path = folder / INDEX
    if not path.exists():
        return []
    try:
        index = json.loads(path.read_text())
        owner, students = index["class"], list(index["students"])
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise ClassClusterError(tr("{path} is not a class index `labsupport class cluster` wrote: {error}",
                                   path=path, error=e)) from e
    if owner != class_name:
        raise ClassClusterError(tr("{path} holds the kubeconfigs of the class {owner}, not {name}: give another "
                                   "--out", path=folder, owner=owner, name=class_name))
    return students


__all__ = ["NAMESPACE_PREFIX", "ACCOUNT", "ROLE", "CLASS_LABEL", "STUDENT_LABEL", "DEFAULT_CLASS", "ClassClusterError",
           "Sizing", "SIZING", "namespace_of", "class_selector", "check_class_name", "parse_duration",
           "student_objects", "student_kubeconfig", "write_private", "admin_cluster_entry", "Resource", "RESOURCES",
           "ClusterClient", "INDEX", "make_class", "delete_class", "remove_class", "remove_shared_guards",
           "class_labels", "is_loopback", "student_server", "load_balancer_allocations", "check_guards",
           "install_guards", "guarded", "PROBE_PREFIX", "DEFAULT_POD_CIDRS", "clean_remote"]
