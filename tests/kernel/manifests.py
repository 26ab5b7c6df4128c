"""Manifests the kernel tests apply: the lesson's workloads and the differential scenarios."""
from __future__ import annotations

from tests.conftest import DB_STATEFULSET

WEB = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 3
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: nginx, image: nginx:1.27, ports: [{containerPort: 80, name: http}]}]
---
apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  type: NodePort
  selector: {app: web}
  ports: [{port: 80, targetPort: 80, name: http}]
"""

DB = DB_STATEFULSET


def echo(name: str, replicas: int, policy: str = "Cluster", svc_type: str = "NodePort",
         affinity: str = "None", target_port: int = 8080) -> str:
    """agnhost netexec behind a Service of the given type, traffic policy, affinity and targetPort."""
    policy_line = f"  externalTrafficPolicy: {policy}\n" if svc_type != "ClusterIP" else ""
    return f"""
apiVersion: apps/v1
kind: Deployment
metadata: {{name: {name}}}
spec:
  replicas: {replicas}
  selector: {{matchLabels: {{app: {name}}}}}
  template:
    metadata: {{labels: {{app: {name}}}}}
    spec:
      containers:
      - name: netexec
        image: registry.k8s.io/e2e-test-images/agnhost:2.53
        args: [netexec, --http-port=8080]
        ports: [{{containerPort: 8080}}]
---
apiVersion: v1
kind: Service
metadata: {{name: {name}}}
spec:
  type: {svc_type}
{policy_line}  sessionAffinity: {affinity}
  selector: {{app: {name}}}
  ports: [{{port: 80, targetPort: {target_port}}}]
"""


def ready(lab, service: str, namespace: str = "default") -> int:
    """How many ready addresses the Service's slices list."""
    return sum(1 for s in lab.get("endpointslices", namespace=namespace,
                                  selector=f"kubernetes.io/service-name={service}")
               for e in s.get("endpoints") or [] if e.get("conditions", {}).get("ready"))


def node_ips(lab) -> dict[str, str]:
    """Node name → InternalIP."""
    return {n["metadata"]["name"]: next(a["address"] for a in n["status"]["addresses"] if a["type"] == "InternalIP")
            for n in lab.get("nodes")}


def workers(lab) -> list[str]:
    """The worker nodes' names."""
    return sorted(n["metadata"]["name"] for n in lab.get("nodes")
                  if "node-role.kubernetes.io/control-plane" not in n["metadata"]["labels"])
