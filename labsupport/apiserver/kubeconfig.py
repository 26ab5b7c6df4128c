"""The kubeconfig an embedded API server hands its clients: one cluster, one bearer-token user, one context in
`default`, written readable by its owner only. The HTTPS server names its address and CA, the in-process one (a
browser tab) its `.invalid` URL."""
from __future__ import annotations

import os

import yaml


def write_kubeconfig(path: str, cluster: dict, token: str) -> None:
    """Write the kubeconfig for `cluster` (its `server`, and a `certificate-authority-data` where there is TLS)."""
    config = {
        "apiVersion": "v1", "kind": "Config", "preferences": {},
        "clusters": [{"name": "labsupport", "cluster": cluster}],
        "users": [{"name": "labsupport", "user": {"token": token}}],
        "contexts": [{"name": "labsupport", "context": {"cluster": "labsupport", "user": "labsupport",
                                                         "namespace": "default"}}],
        "current-context": "labsupport",
    }
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        yaml.safe_dump(config, f, sort_keys=False)
