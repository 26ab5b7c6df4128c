"""The real kube-proxy and CoreDNS, built from their Go modules (`make upstream`), run against the embedded API
server inside network namespaces: the oracle the renderers and the DNS model are compared with."""
from labsupport.upstream.binaries import binary, missing_upstream_requirements
from labsupport.upstream.kube_proxy import UpstreamKubeProxy

__all__ = ["UpstreamKubeProxy", "binary", "missing_upstream_requirements"]
