"""Which kube-proxy release the renderers write: the rules that changed between releases, decided in one place."""
from __future__ import annotations

import re

from labsupport.control.version import K8S_VERSION
from labsupport.errors import LabError

#: The release whose kube-proxy the renderers write unless told otherwise: the one the embedded cluster reports.
RELEASE = K8S_VERSION
#: From this minor release on, an nftables Service chain DNATs through one `numgen … map` (an endpoint chain only
#: with session affinity), masquerade marks are set inline and hairpin traffic is found through
#: `@hairpin-connections`; before it every endpoint had a chain, reached through `numgen … vmap`, and marks went
#: through `mark-for-masquerade`.
DNAT_MAPS_SINCE = 36
#: From this minor release on, iptables and IPVS mode always write `MASQUERADE --random-fully`; before it only
#: where the node's iptables offered it (every iptables since 1.6.2; upstream's unit tests fake one without it).
RANDOM_FULLY_SINCE = 37


class UnknownRelease(LabError, ValueError):
    """A kube-proxy release that is not written as `v1.N` or `1.N` (a patch number may follow)."""


def minor(release: str) -> int:
    """The minor number of a release: 37 for "v1.37.2", "1.37" or "v1.37"."""
    found = re.fullmatch(r"v?1\.(\d+)(?:\.\d+)?", str(release).strip())
    if not found:
        raise UnknownRelease(f"release {release!r} is not a Kubernetes release: write it as 'v1.37', '1.35' or "
                             f"'v1.37.2'")
    return int(found.group(1))


def dnat_maps(release: str) -> bool:
    """Whether kube-proxy of `release` writes the nftables DNAT-map layout."""
    return minor(release) >= DNAT_MAPS_SINCE


def masquerade_random_fully(release: str, offered: bool | None = None) -> bool:
    """Whether kube-proxy of `release` writes `MASQUERADE --random-fully` (`offered`: whether the node's iptables
    has it, where the release asks; unknown counts as not offered, as in upstream's unit tests)."""
    return minor(release) >= RANDOM_FULLY_SINCE or bool(offered)
