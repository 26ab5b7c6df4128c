"""The `sim` backend: the embedded control plane with a data plane that interprets kube-proxy's rules."""
