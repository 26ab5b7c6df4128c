"""What the kubelet gives every container when it starts: /etc/resolv.conf, /etc/hosts, the hostname and the
environment (the container's own `env`, then the Service variables of the pod's namespace, docker-link style).

Pure functions of the pod, its IP and the Services that exist at that moment, so a test can ask what a pod
started at a given time sees.
"""
from __future__ import annotations

import ipaddress
from dataclasses import dataclass

#: The file the kubelet writes ahead of a pod's own entries in /etc/hosts.
HOSTS_HEADER = "# Kubernetes-managed hosts file.\n"
HOSTS_LOCAL = ("127.0.0.1\tlocalhost\n"
               "::1\tlocalhost ip6-localhost ip6-loopback\n"
               "fe00::0\tip6-localnet\n"
               "fe00::0\tip6-mcastprefix\n"
               "fe00::1\tip6-allnodes\n"
               "fe00::2\tip6-allrouters\n")
#: A node's own resolver (what `dnsPolicy: Default` and host-network pods get): kind's Docker network gateway.
NODE_RESOLV_CONF = "nameserver 172.18.0.1\noptions ndots:0\n"
#: The kubelet's limits on what it writes into resolv.conf.
MAX_SEARCH = 32
MAX_NAMESERVERS = 3
#: The default master Service a kubelet always exposes, whatever the pod's namespace.
MASTER_NAMESPACE = "default"
MASTER_SERVICE = "kubernetes"


@dataclass(frozen=True)
class ClusterDNS:
    """The cluster's DNS as the kubelet is configured with it (`--cluster-dns`, `--cluster-domain`)."""

    server: str = "10.96.0.10"
    domain: str = "cluster.local"


def hostname(pod: dict) -> str:
    """The pod's hostname: spec.hostname or its name (at most 63 characters); the FQDN with setHostnameAsFQDN."""
    spec = pod.get("spec") or {}
    name = (spec.get("hostname") or pod["metadata"]["name"])[:63].rstrip("-.")
    return name


def fqdn(pod: dict, dns: ClusterDNS = ClusterDNS()) -> str | None:
    """`<hostname>.<subdomain>.<ns>.svc.<domain>` when the pod names a subdomain, else None."""
    spec = pod.get("spec") or {}
    sub = spec.get("subdomain")
    if not sub:
        return None
    return f"{hostname(pod)}.{sub}.{pod['metadata'].get('namespace', 'default')}.svc.{dns.domain}"


def hosts_file(pod: dict, ip: str | None, dns: ClusterDNS = ClusterDNS(), node_hosts: str | None = None) -> str:
    """/etc/hosts as the kubelet writes it: localhost lines, the pod's own address and names, then hostAliases."""
    spec = pod.get("spec") or {}
    if spec.get("hostNetwork"):
        return node_hosts if node_hosts is not None else HOSTS_LOCAL
    text = HOSTS_HEADER + HOSTS_LOCAL
    name = hostname(pod)
    full = fqdn(pod, dns)
    for address in ([ip] if ip else []):
        text += f"{address}\t{full}\t{name}\n" if full else f"{address}\t{name}\n"
    aliases = spec.get("hostAliases") or []
    if aliases:
        text += "\n# Entries added by HostAliases.\n"
        for alias in aliases:
            text += f"{alias.get('ip', '')}\t" + "\t".join(alias.get("hostnames") or []) + "\n"
    return text


def resolv_conf(pod: dict, dns: ClusterDNS = ClusterDNS(), node_resolv: str = NODE_RESOLV_CONF) -> str:
    """/etc/resolv.conf as the kubelet writes it for the pod's dnsPolicy and dnsConfig."""
    spec = pod.get("spec") or {}
    namespace = pod["metadata"].get("namespace", "default")
    policy = spec.get("dnsPolicy") or "ClusterFirst"
    if policy == "ClusterFirst" and spec.get("hostNetwork"):
        policy = "Default"
    servers: list[str] = []
    search: list[str] = []
    options: list[str] = []
    if policy in ("ClusterFirst", "ClusterFirstWithHostNet"):
        servers = [dns.server]
        search = [f"{namespace}.svc.{dns.domain}", f"svc.{dns.domain}", dns.domain]
        options = ["ndots:5"]
    elif policy == "Default":
        for line in node_resolv.splitlines():
            words = line.split()
            if words and words[0] == "nameserver":
                servers += words[1:2]
            elif words and words[0] in ("search", "domain"):
                search = words[1:]
            elif words and words[0] == "options":
                options = words[1:]
    config = spec.get("dnsConfig") or {}
    servers = _merged(servers, config.get("nameservers") or [])[:MAX_NAMESERVERS]
    search = _merged(search, config.get("searches") or [])[:MAX_SEARCH]
    options = _merged_options(options, config.get("options") or [])
    lines = []
    if search:
        lines.append("search " + " ".join(search))
    lines += [f"nameserver {s}" for s in servers]
    if options:
        lines.append("options " + " ".join(options))
    return "".join(line + "\n" for line in lines)


def _merged(base: list[str], extra: list[str]) -> list[str]:
    out: list[str] = []
    for item in [*base, *extra]:
        if item not in out:
            out.append(item)
    return out


def _merged_options(base: list[str], extra: list[dict]) -> list[str]:
    values: dict[str, str | None] = {}
    for text in base:
        name, _, value = text.partition(":")
        values[name] = value or None
    for option in extra:
        values[option.get("name", "")] = option.get("value")
    return [name if value is None else f"{name}:{value}" for name, value in values.items() if name]


def env_name(service: str) -> str:
    """A Service name as the prefix of its variables: `my-web` → `MY_WEB`."""
    return service.upper().replace("-", "_")


def service_variables(services: list[dict], namespace: str, enable_links: bool = True) -> dict[str, str]:
    """The variables the kubelet injects for Services: every Service with a cluster IP in the pod's namespace
    (when enableServiceLinks), and the master `kubernetes` Service always."""
    chosen: dict[str, dict] = {}
    for svc in services:
        meta = svc["metadata"]
        ip = (svc.get("spec") or {}).get("clusterIP")
        if not ip or ip == "None":
            continue
        if meta.get("namespace") == MASTER_NAMESPACE and meta["name"] == MASTER_SERVICE:
            chosen.setdefault(meta["name"], svc)
        elif enable_links and meta.get("namespace") == namespace:
            chosen[meta["name"]] = svc
    out: dict[str, str] = {}
    for name in sorted(chosen):
        out.update(_one_service(chosen[name]))
    return out


def _one_service(svc: dict) -> dict[str, str]:
    prefix = env_name(svc["metadata"]["name"])
    spec = svc["spec"]
    ip = spec["clusterIP"]
    ports = spec.get("ports") or []
    out = {f"{prefix}_SERVICE_HOST": ip}
    if ports:
        out[f"{prefix}_SERVICE_PORT"] = str(ports[0]["port"])
    for port in ports:
        if port.get("name"):
            out[f"{prefix}_SERVICE_PORT_{env_name(port['name'])}"] = str(port["port"])
    host = f"[{ip}]" if ipaddress.ip_address(ip).version == 6 else ip
    for i, port in enumerate(ports):
        protocol = (port.get("protocol") or "TCP").upper()
        url = f"{protocol.lower()}://{host}:{port['port']}"
        if i == 0:
            out[f"{prefix}_PORT"] = url
        link = f"{prefix}_PORT_{port['port']}_{protocol}"
        out[link] = url
        out[f"{link}_PROTO"] = protocol.lower()
        out[f"{link}_PORT"] = str(port["port"])
        out[f"{link}_ADDR"] = ip
    return out


def container_environment(pod: dict, container: dict, services: list[dict], ip: str | None,
                          image_env: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of a container's process: the image's, HOSTNAME, the container's `env` (values and the
    pod fields it may refer to), then the Service variables the container did not set itself."""
    meta = pod["metadata"]
    out = dict(image_env or {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"})
    out["HOSTNAME"] = hostname(pod)
    fields = {"metadata.name": meta["name"], "metadata.namespace": meta.get("namespace", "default"),
              "metadata.uid": meta.get("uid", ""), "spec.nodeName": (pod.get("spec") or {}).get("nodeName", ""),
              "spec.serviceAccountName": (pod.get("spec") or {}).get("serviceAccountName", "default"),
              "status.podIP": ip or "", "status.hostIP": (pod.get("status") or {}).get("hostIP", "")}
    own: dict[str, str] = {}
    for item in container.get("env") or []:
        value = item.get("value")
        source = (item.get("valueFrom") or {}).get("fieldRef")
        if value is None and source:
            value = fields.get(source.get("fieldPath", ""), "")
        own[item["name"]] = _expand(value or "", own)
    links = (pod.get("spec") or {}).get("enableServiceLinks", True) is not False
    for key, value in service_variables(services, meta.get("namespace", "default"), links).items():
        out.setdefault(key, value)
    out.update(own)
    out.setdefault("HOME", "/root")
    return out


def _expand(value: str, defined: dict[str, str]) -> str:
    """`$(VAR)` references to variables defined earlier, as the kubelet expands them; `$$` escapes."""
    out, i = "", 0
    while i < len(value):
        if value.startswith("$$", i):
            out += "$"
            i += 2
        elif value.startswith("$(", i) and ")" in value[i:]:
            end = value.index(")", i)
            name = value[i + 2:end]
            out += defined.get(name, value[i:end + 1])
            i = end + 1
        else:
            out += value[i]
            i += 1
    return out
