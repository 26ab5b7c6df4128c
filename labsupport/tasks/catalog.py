"""What varies in each assignment: every choice keeps the task's difficulty and its lesson the same.

Each entry maps a value's name to (the default, the choices a student may draw). The default is the value the
lesson text was written with; it is what a laptop without a student identity gets.
"""
from __future__ import annotations

WORKERS = ("lab-worker", "lab-worker2", "lab-worker3")
# Ports where nothing else in the lab listens, as an app would use them.
APP_PORTS = (8080, 8000, 8081, 9376, 5000, 3000)

CATALOG: dict[str, dict[str, tuple[object, tuple]]] = {
    "01-endpointslices": {
        "service_port": (80, (80, 8000, 8080, 8888, 9000, 9090)),
        "port_name": ("http", ("http", "web", "www", "front")),
    },
    "02-dns": {
        "name_pod": ("web-0", ("web-0", "web-1", "web-2")),
        "restart_pod": ("web-1", ("web-0", "web-1", "web-2")),
    },
    "03-nodeport-source-ip": {
        "pod_node": ("lab-worker", WORKERS),
        "app_port": (8080, APP_PORTS),
    },
    "04-kube-proxy-rules": {
        "replicas": (3, (3, 4)),
        "scale_to": (5, (5, 6, 7)),
    },
    "05-troubleshooting": {
        "shop_selector": ("shpo", ("shpo", "shopp", "sohp", "shop-v2")),
        "probe_port": (8080, (8080, 8081, 81)),
        "pay_port": (8080, APP_PORTS),
        "taken_node_port": (30080, (30080, 30100, 30808, 31080, 32000)),
        "api_replicas": (3, (3, 4)),
    },
    "06-review": {
        "services": (5000, (2000, 4000, 5000, 8000, 10000)),
        "namespace": ("shop", ("shop", "billing", "media", "search", "orders")),
        "pod_number": (2, (2, 3, 4)),
    },
}
