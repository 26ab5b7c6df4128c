"""What a fresh cluster holds: namespaces, nodes, the `kubernetes` Service, CoreDNS and kube-proxy — like kind's."""
from __future__ import annotations

import ipaddress
from typing import TYPE_CHECKING, Callable

import yaml

from labsupport.control.version import K8S_VERSION
from labsupport.shape import DNS_IP, node_plan

if TYPE_CHECKING:
    from labsupport.control.context import ControllerContext
    from labsupport.control.kubelet import Kubelet

ZONE_LABEL = "topology.kubernetes.io/zone"
CONTROL_PLANE_TAINT = {"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}
COREDNS_IMAGE = "registry.k8s.io/coredns/coredns:v1.12.1"
KUBE_PROXY_IMAGE = f"registry.k8s.io/kube-proxy:{K8S_VERSION}"

COREFILE = """.:53 {
    errors
    health {
       lameduck 5s
    }
    ready
    kubernetes cluster.local in-addr.arpa ip6.arpa {
       pods insecure
       fallthrough in-addr.arpa ip6.arpa
       ttl 30
    }
    prometheus :9153
    forward . /etc/resolv.conf {
       max_concurrent 1000
    }
    cache 30 {
       disable success cluster.local
       disable denial cluster.local
    }
    loop
    reload
    loadbalance
}
"""


def kube_proxy_configuration(mode: str, cluster_cidr: str) -> dict:
    """The KubeProxyConfiguration kubeadm writes into the kube-proxy ConfigMap."""
    return {
        "apiVersion": "kubeproxy.config.k8s.io/v1alpha1", "kind": "KubeProxyConfiguration",
        "bindAddress": "0.0.0.0", "bindAddressHardFail": False,
        "clientConnection": {"acceptContentTypes": "", "burst": 0, "contentType": "", "kubeconfig":
                             "/var/lib/kube-proxy/kubeconfig.conf", "qps": 0},
        "clusterCIDR": cluster_cidr, "configSyncPeriod": "0s",
        "conntrack": {"maxPerCore": 0, "min": None, "tcpCloseWaitTimeout": None, "tcpEstablishedTimeout": None},
        "detectLocalMode": "", "enableProfiling": False, "healthzBindAddress": "", "hostnameOverride": "",
        "iptables": {"localhostNodePorts": None, "masqueradeAll": False, "masqueradeBit": None,
                     "minSyncPeriod": "1s", "syncPeriod": "0s"},
        "ipvs": {"excludeCIDRs": None, "minSyncPeriod": "0s", "scheduler": "", "strictARP": False,
                 "syncPeriod": "0s", "tcpFinTimeout": "0s", "tcpTimeout": "0s", "udpTimeout": "0s"},
        "metricsBindAddress": "", "mode": mode,
        "nftables": {"masqueradeAll": False, "masqueradeBit": None, "minSyncPeriod": "0s", "syncPeriod": "0s"},
        "nodePortAddresses": None, "oomScoreAdj": None, "portRange": "", "showHiddenMetricsForVersion": "",
        "winkernel": {"enableDSR": False, "forwardHealthCheckVip": False, "networkName": "", "rootHnsEndpointName": "",
                      "sourceVip": ""},
    }


def node_object(cluster: "ControllerContext", name: str, ip: str, pod_cidr: str, zone: str, control_plane: bool) -> dict:
    """A Node as kind registers it."""
    labels = {"beta.kubernetes.io/arch": "amd64", "beta.kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
              "kubernetes.io/hostname": name, "kubernetes.io/os": "linux", ZONE_LABEL: zone,
              "topology.kubernetes.io/region": zone.rsplit("-", 1)[0]}
    if control_plane:
        labels["node-role.kubernetes.io/control-plane"] = ""
        labels["node.kubernetes.io/exclude-from-external-load-balancers"] = ""
    labels.update(cluster.config.extra_node_labels.get(name, {}))
    now = cluster.timestamp()
    capacity = {"cpu": "2", "ephemeral-storage": "263112772Ki", "hugepages-2Mi": "0", "memory": "24533452Ki",
                "pods": str(cluster.config.max_pods)}
    conditions = [
        ("MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
        ("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
        ("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
        ("Ready", "True", "KubeletReady", "kubelet is posting ready status"),
    ]
    node = {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": labels,
                     "annotations": {"node.alpha.kubernetes.io/ttl": "0",
                                     "volumes.kubernetes.io/controller-managed-attach-detach": "true"}},
        "spec": {"podCIDR": pod_cidr, "podCIDRs": [pod_cidr], "providerID": f"kind://docker/{cluster.config.name}/{name}"},
        "status": {
            "addresses": [{"type": "InternalIP", "address": ip}, {"type": "Hostname", "address": name}],
            "allocatable": dict(capacity), "capacity": capacity,
            "conditions": [{"type": t, "status": s, "reason": r, "message": m, "lastHeartbeatTime": now,
                            "lastTransitionTime": now} for t, s, r, m in conditions],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "nodeInfo": {"architecture": "amd64", "bootID": cluster.store.new_uid(),
                         "containerRuntimeVersion": "containerd://2.1.3", "kernelVersion": "6.18.0",
                         "kubeProxyVersion": "", "kubeletVersion": K8S_VERSION, "machineID": "%032x" %
                         cluster.rng.getrandbits(128), "operatingSystem": "linux",
                         "osImage": "Debian GNU/Linux 12 (bookworm)", "systemUUID": cluster.store.new_uid()},
        },
    }
    if control_plane:
        node["spec"]["taints"] = [dict(CONTROL_PLANE_TAINT)]
    return node


def bootstrap(cluster: "ControllerContext", kubelet: "Kubelet", *, settle: Callable[[], None],
              advance: Callable[[float], None]) -> None:
    """Create the objects every fresh cluster has, then let the system pods come up."""
    store = cluster.store
    for ns in ("default", "kube-node-lease", "kube-public", "kube-system"):
        store.create({"apiVersion": "v1", "kind": "Namespace",
                      "metadata": {"name": ns, "labels": {"kubernetes.io/metadata.name": ns}},
                      "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"}})
    for name, ip, cidr, zone, cp in node_plan(cluster.config):
        node = store.create(node_object(cluster, name, ip, cidr, zone, cp))
        kubelet.add_node(node)
    cp_ip = cluster.node_ip(store.list("Node")[0])
    cluster.create({"apiVersion": "v1", "kind": "Service",
                    "metadata": {"name": "kubernetes", "namespace": "default",
                                 "labels": {"component": "apiserver", "provider": "kubernetes"}},
                    "spec": {"clusterIP": str(ipaddress.ip_network(cluster.config.service_cidr).network_address + 1),
                             "ports": [{"name": "https", "port": 443, "protocol": "TCP", "targetPort": 6443}]}})
    store.create({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
                  "metadata": {"name": "kubernetes", "namespace": "default",
                               "labels": {"kubernetes.io/service-name": "kubernetes",
                                          "endpointslice.kubernetes.io/managed-by": "endpointslicemirroring-controller.k8s.io"}},
                  "addressType": "IPv4",
                  "endpoints": [{"addresses": [cp_ip], "conditions": {"ready": True, "serving": True,
                                                                       "terminating": False}}],
                  "ports": [{"name": "https", "port": 6443, "protocol": "TCP"}]})
    store.create({"apiVersion": "v1", "kind": "Endpoints",
                  "metadata": {"name": "kubernetes", "namespace": "default",
                               "labels": {"endpointslice.kubernetes.io/skip-mirror": "true"}},
                  "subsets": [{"addresses": [{"ip": cp_ip}], "ports": [{"name": "https", "port": 6443,
                                                                         "protocol": "TCP"}]}]})
    if not cluster.config.system_pods:
        settle()
        return
    tolerations = [{"key": "CriticalAddonsOnly", "operator": "Exists"},
                   {"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}]
    store.create({"apiVersion": "v1", "kind": "ConfigMap",
                  "metadata": {"name": "coredns", "namespace": "kube-system"}, "data": {"Corefile": COREFILE}})
    cluster.create({"apiVersion": "v1", "kind": "Service",
                    "metadata": {"name": "kube-dns", "namespace": "kube-system",
                                 "labels": {"k8s-app": "kube-dns", "kubernetes.io/cluster-service": "true",
                                            "kubernetes.io/name": "CoreDNS"},
                                 "annotations": {"prometheus.io/port": "9153", "prometheus.io/scrape": "true"}},
                    "spec": {"clusterIP": DNS_IP, "selector": {"k8s-app": "kube-dns"},
                             "ports": [{"name": "dns", "port": 53, "protocol": "UDP", "targetPort": 53},
                                       {"name": "dns-tcp", "port": 53, "protocol": "TCP", "targetPort": 53},
                                       {"name": "metrics", "port": 9153, "protocol": "TCP", "targetPort": 9153}]}})
    cluster.create({"apiVersion": "apps/v1", "kind": "Deployment",
                    "metadata": {"name": "coredns", "namespace": "kube-system", "labels": {"k8s-app": "kube-dns"}},
                    "spec": {"replicas": 2, "selector": {"matchLabels": {"k8s-app": "kube-dns"}},
                             "strategy": {"type": "RollingUpdate",
                                          "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": 1}},
                             "template": {"metadata": {"labels": {"k8s-app": "kube-dns"}},
                                          "spec": {"priorityClassName": "system-cluster-critical",
                                                   "tolerations": tolerations,
                                                   "containers": [{
                                                       "name": "coredns", "image": COREDNS_IMAGE,
                                                       "args": ["-conf", "/etc/coredns/Corefile"],
                                                       "ports": [{"name": "dns", "containerPort": 53, "protocol": "UDP"},
                                                                 {"name": "dns-tcp", "containerPort": 53,
                                                                  "protocol": "TCP"},
                                                                 {"name": "metrics", "containerPort": 9153,
                                                                  "protocol": "TCP"},
                                                                 {"name": "liveness-probe", "containerPort": 8080,
                                                                  "protocol": "TCP"},
                                                                 {"name": "readiness-probe", "containerPort": 8181,
                                                                  "protocol": "TCP"}],
                                                       "livenessProbe": {"httpGet": {"path": "/health",
                                                                                     "port": "liveness-probe"},
                                                                         "initialDelaySeconds": 60, "timeoutSeconds": 5,
                                                                         "failureThreshold": 5},
                                                       "readinessProbe": {"httpGet": {"path": "/ready",
                                                                                      "port": "readiness-probe"}}}],
                                                   "dnsPolicy": "Default"}}}})
    store.create({"apiVersion": "v1", "kind": "ConfigMap",
                  "metadata": {"name": "kube-proxy", "namespace": "kube-system", "labels": {"app": "kube-proxy"}},
                  "data": {"config.conf": yaml.safe_dump(kube_proxy_configuration(cluster.config.proxy_mode,
                                                                                  cluster.config.pod_cidr),
                                                         sort_keys=False),
                           "kubeconfig.conf": KUBE_PROXY_KUBECONFIG}})
    cluster.create({"apiVersion": "apps/v1", "kind": "DaemonSet",
                    "metadata": {"name": "kube-proxy", "namespace": "kube-system", "labels": {"k8s-app": "kube-proxy"}},
                    "spec": {"selector": {"matchLabels": {"k8s-app": "kube-proxy"}},
                             "template": {"metadata": {"labels": {"k8s-app": "kube-proxy"}},
                                          "spec": {"hostNetwork": True, "priorityClassName": "system-node-critical",
                                                   "affinity": {"nodeAffinity": {
                                                       "requiredDuringSchedulingIgnoredDuringExecution": {
                                                           "nodeSelectorTerms": [{"matchExpressions": [{
                                                               "key": "labsupport.dev/kube-proxy-stopped",
                                                               "operator": "DoesNotExist"}]}]}}},
                                                   "serviceAccountName": "kube-proxy",
                                                   "nodeSelector": {"kubernetes.io/os": "linux"},
                                                   "tolerations": [{"operator": "Exists"}],
                                                   "containers": [{
                                                       "name": "kube-proxy", "image": KUBE_PROXY_IMAGE,
                                                       "command": ["/usr/local/bin/kube-proxy",
                                                                   "--config=/var/lib/kube-proxy/config.conf",
                                                                   "--hostname-override=$(NODE_NAME)"],
                                                       "securityContext": {"privileged": True}}]}}}})
    for component, image in (("etcd", "registry.k8s.io/etcd:3.6.4-0"),
                              ("kube-apiserver", f"registry.k8s.io/kube-apiserver:{K8S_VERSION}"),
                              ("kube-controller-manager", f"registry.k8s.io/kube-controller-manager:{K8S_VERSION}"),
                              ("kube-scheduler", f"registry.k8s.io/kube-scheduler:{K8S_VERSION}")):
        cp = store.list("Node")[0]
        if "node-role.kubernetes.io/control-plane" not in cp["metadata"]["labels"]:
            break
        cluster.create({"apiVersion": "v1", "kind": "Pod",
                        "metadata": {"name": f"{component}-{cp['metadata']['name']}", "namespace": "kube-system",
                                     "labels": {"component": component, "tier": "control-plane"},
                                     "ownerReferences": [{"apiVersion": "v1", "kind": "Node",
                                                          "name": cp["metadata"]["name"], "uid": cp["metadata"]["uid"],
                                                          "controller": True}]},
                        "spec": {"nodeName": cp["metadata"]["name"], "hostNetwork": True,
                                 "priorityClassName": "system-node-critical",
                                 "tolerations": [{"operator": "Exists", "effect": "NoExecute"}],
                                 "containers": [{"name": component, "image": image}]}})
    advance(5)


KUBE_PROXY_KUBECONFIG = """apiVersion: v1
kind: Config
clusters:
- cluster:
    certificate-authority: /var/run/secrets/kubernetes.io/serviceaccount/ca.crt
    server: https://lab-control-plane:6443
  name: default
contexts:
- context:
    cluster: default
    namespace: default
    user: default
  name: default
current-context: default
users:
- name: default
  user:
    tokenFile: /var/run/secrets/kubernetes.io/serviceaccount/token
"""
