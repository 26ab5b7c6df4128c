"""The `netns` backend: a network namespace per node and pod, kube-proxy's rules in the kernel, real tools."""
