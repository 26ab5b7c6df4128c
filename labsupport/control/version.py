"""The Kubernetes version the embedded cluster reports: within kubectl's supported skew of the pinned client."""
K8S_VERSION = "v1.37.0"
