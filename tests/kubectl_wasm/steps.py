"""A lesson's kubectl steps, taken the same way by CPython with the native kubectl and by Pyodide with kubectl.wasm
(this module imports nothing but labsupport, so it runs in both)."""
from __future__ import annotations

import json
import os
import tempfile

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
      containers: [{name: nginx, image: nginx:1.27, ports: [{containerPort: 80}]}]
---
apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  selector: {app: web}
  ports: [{port: 80, targetPort: 80}]
"""
CONFIGMAP = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\ndata: {greeting: hello}\n"


def take(lab) -> list[dict]:
    """The steps, on a fresh lab; what each kubectl printed and its exit code."""
    runs: list[dict] = []

    def kubectl(command: str, **options) -> None:
        result = lab.kubectl(command, show=False, **options)
        runs.append({"command": command, "stdout": result.stdout, "stderr": result.stderr,
                     "code": result.returncode})

    lab.apply(WEB)
    lab.wait(lambda l: sum(1 for p in l.get("pods", selector="app=web") if p["status"].get("podIP")) == 3)
    kubectl("get pods -o wide")
    kubectl("get endpointslices -l kubernetes.io/service-name=web")
    kubectl("get endpoints web")
    victim = lab.get("pods", selector="app=web")[0]["metadata"]["name"]
    kubectl(f"delete pod {victim} --wait=false")
    kubectl("get pods -l app=web -o wide")
    kubectl("apply -f -", input=CONFIGMAP)
    kubectl("get configmap settings -o yaml")
    here = os.getcwd()
    os.chdir(tempfile.mkdtemp())
    try:
        with open("second.yaml", "w") as f:
            f.write(CONFIGMAP.replace("settings", "second"))
        kubectl("apply -f second.yaml")
    finally:
        os.chdir(here)
    kubectl("run dnsutils --image=registry.k8s.io/e2e-test-images/jessie-dnsutils:1.7 --restart=Never -- nslookup web")
    kubectl("explain service.spec.type")
    kubectl("get pods -l app=web -w", events=4, timeout=60)
    kubectl("gte pods")
    return runs


def take_as_json(lab) -> str:
    """`take`, as JSON (what the Pyodide side hands back)."""
    return json.dumps(take(lab))
