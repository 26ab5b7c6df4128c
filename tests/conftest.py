"""Shared fixtures. Tiers: pure `sim` tests need nothing; `kernel` needs root + nft/iptables; `browser` needs
Chromium; `kind` is opt-in. Under CI=true a required tier fails instead of skipping."""
from __future__ import annotations

import pytest

from labsupport import Lab
from tests import timetable


def pytest_configure(config):
    """Every run records where its time goes (`tests/timetable.py`; `.ci/run` prints the table at its end)."""
    timetable.register(config)


@pytest.fixture
def lab():
    """A fresh embedded cluster (seed 0), closed after the test."""
    with Lab(backend="sim", seed=0) as lab:
        yield lab


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
  selector: {app: web}
  ports: [{port: 80, targetPort: 80, name: http}]
"""


#: A headless Service over a StatefulSet: DNS answers with the pod IPs, and with `db-0.db…` names.
DB_STATEFULSET = """
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  serviceName: db
  replicas: 3
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec:
      containers: [{name: nginx, image: nginx:1.27, ports: [{containerPort: 80}]}]
---
apiVersion: v1
kind: Service
metadata: {name: db}
spec:
  clusterIP: None
  selector: {app: db}
  ports: [{port: 80}]
"""


@pytest.fixture
def web(lab):
    """The lesson's first exercise: 3 nginx replicas behind a ClusterIP Service, all ready."""
    lab.apply(WEB)
    lab.wait(lambda l: ready_addresses(l, "web") == 3)
    return lab


def ready_addresses(lab, service: str, namespace: str = "default") -> int:
    """How many ready addresses the Service's slices list."""
    return sum(1 for s in lab.get("endpointslices", namespace=namespace,
                                  selector=f"kubernetes.io/service-name={service}")
               for e in s.get("endpoints") or [] if e.get("conditions", {}).get("ready"))


def pytest_collection_modifyitems(config, items):
    """The kind tier runs last: its cluster then idles through no other tier, and under CI the offline images
    `.ci/run` builds beside the other tiers have the whole run to be ready (`tests/kind/conftest.py`)."""
    items.sort(key=lambda item: item.get_closest_marker("kind") is not None)
