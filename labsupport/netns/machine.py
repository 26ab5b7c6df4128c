"""What the `netns` backend needs of this machine: Linux, root, the netfilter tools; and cleaning up after killed runs."""
from __future__ import annotations

import os
import platform
import shutil

from labsupport.errors import BackendUnavailable
from labsupport.i18n import tr
from labsupport.netns.namespaces import clean as clean_namespaces
from labsupport.upstream.process import stop_orphans

TOOLS = ("ip", "nft", "iptables-restore", "iptables-save", "conntrack", "curl", "nslookup", "getent")


def problems() -> list[str]:
    """What stops the `netns` backend from running here (empty: it can run)."""
    out = []
    if platform.system() != "Linux":
        return [f"it needs Linux network namespaces; this is {platform.system()} (use the sim backend)"]
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        out.append("it needs root to create network namespaces (run as root, e.g. `sudo`, or use the sim backend)")
    missing = [t for t in TOOLS if shutil.which(t) is None]
    if missing:
        out.append("missing tools: " + ", ".join(missing) +
                   " (apt-get install iproute2 nftables iptables conntrack curl dnsutils libc-bin)")
    if not os.path.exists("/proc/self/ns/net"):
        out.append("this kernel has no network namespaces (CONFIG_NET_NS)")
    try:
        import dnslib  # noqa: F401
        import pyroute2  # noqa: F401
    except ImportError as e:
        out.append(f"the Python package {e.name} is missing (pip install pyroute2 dnslib)")
    return out


def preflight(proxy_mode: str) -> None:
    """Refuse, with the reason and the fix, when the netns backend cannot run this proxy mode here."""
    if proxy_mode == "ipvs":
        raise BackendUnavailable(tr('proxy_mode="ipvs" cannot run on the netns backend: IPVS is not in this kernel '
                                    '(CONFIG_IP_VS). Use proxy_mode="iptables" or "nftables" here, or '
                                    'Lab(backend="sim", proxy_mode="ipvs") to study IPVS on the modelled data plane.'))
    found = problems()
    if found:
        raise BackendUnavailable(tr('the netns backend cannot run here: {problems}. Lab(backend="sim") runs '
                                    "everywhere.", problems="; ".join(found)))


def clean() -> list[str]:
    """Remove what earlier runs left behind: the real kube-proxy and CoreDNS they started, namespaces, /etc/netns
    entries, links (live runs are kept)."""
    if platform.system() != "Linux" or not hasattr(os, "geteuid") or os.geteuid() != 0:
        return []
    return [*stop_orphans(), *clean_namespaces()]


__all__ = ["TOOLS", "problems", "preflight", "clean"]
