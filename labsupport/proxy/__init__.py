"""kube-proxy as pure functions: given Services, EndpointSlices and a Node, the rules a real node would hold."""
from __future__ import annotations

from typing import Iterable

from labsupport.errors import UnknownProxyMode
from labsupport.proxy.agent import KubeProxy, ModeSwitch, SyncResult
from labsupport.proxy.release import RELEASE
from labsupport.shape import PROXY_MODES


def render(mode: str, services: Iterable[dict], endpointslices: Iterable[dict], node: dict,
           config: dict | None = None, *, service_cidrs: Iterable[str] = ("10.96.0.0/12",),
           nfacct: bool = False, release: str = RELEASE) -> str:
    """The rules kube-proxy on `node` writes in `mode`: an iptables-save dump, an `nft -f` transaction or IPVS text.

    `release` ("v1.35", "1.37.2", …) is the kube-proxy release to write as (default: the release the embedded
    cluster reports); `labsupport.proxy.release` says what changes between releases."""
    if mode == "iptables":
        from labsupport.proxy.iptables import render_iptables
        return render_iptables(services, endpointslices, node, config, nfacct=nfacct, release=release)
    if mode == "nftables":
        from labsupport.proxy.nftables import render_nftables
        return render_nftables(services, endpointslices, node, config, service_cidrs=service_cidrs, release=release)
    if mode == "ipvs":
        from labsupport.proxy.ipvs import render_ipvs
        return render_ipvs(services, endpointslices, node, config, nfacct=nfacct, release=release)
    raise UnknownProxyMode(mode, PROXY_MODES)


__all__ = ["render", "KubeProxy", "ModeSwitch", "SyncResult"]
