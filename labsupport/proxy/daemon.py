"""kube-proxy as the DaemonSet runs it: one agent per node, started and stopped with its pod.

Each agent reads `mode` from the KubeProxyConfiguration in the `kube-proxy` ConfigMap when its pod starts,
watches Services and EndpointSlices, and renders the node's rules. A node whose kube-proxy pod is gone keeps
its last rules (the kernel keeps forwarding) and gets no new ones. Rendering is lazy: an agent syncs when its
rules are looked at, which is indistinguishable from syncing after every change.
"""
from __future__ import annotations

import json
from typing import TYPE_CHECKING, Callable

import yaml

from labsupport.proxy.agent import KubeProxy
from labsupport.results import ProxyStatus

if TYPE_CHECKING:
    from labsupport.control.cluster import Cluster

KUBE_PROXY_LABEL = ("k8s-app", "kube-proxy")
MODE_FALLBACK = "iptables"


def read_configuration(cluster: "Cluster") -> dict:
    """The KubeProxyConfiguration from the kube-proxy ConfigMap ({} when missing or unreadable)."""
    cm = cluster.store.find("ConfigMap", "kube-system", "kube-proxy")
    if cm is None:
        return {}
    try:
        config = yaml.safe_load((cm.get("data") or {}).get("config.conf", "")) or {}
    except yaml.YAMLError:
        return {}
    return _drop_nulls(config) if isinstance(config, dict) else {}


def _drop_nulls(value):
    """kubeadm writes unset fields as null; kube-proxy's defaulting treats them as absent."""
    if isinstance(value, dict):
        return {k: _drop_nulls(v) for k, v in value.items() if v is not None}
    return value


class KubeProxyDaemons:
    """Every node's kube-proxy, driven by the cluster's watch events."""

    def __init__(self, cluster: "Cluster"):
        self.cluster = cluster
        self.agents: dict[str, KubeProxy] = {}
        self.running: dict[str, bool] = {}
        self.dirty: set[str] = set()
        self.listeners: list[Callable[[str, KubeProxy, object], None]] = []
        self.syncs = 0
        self._counts: dict[str, tuple[str, int]] = {}
        cluster.store.subscribe(self._on_event)
        for pod in cluster.store.list("Pod", "kube-system"):
            self._pod_changed(pod)

    # --- events --------------------------------------------------------------------------------------------
    def _on_event(self, event) -> None:
        if event.kind in ("Service", "EndpointSlice"):
            self.dirty.update(self.agents)
        elif event.kind == "Pod" and event.object["metadata"].get("namespace") == "kube-system":
            labels = event.object["metadata"].get("labels") or {}
            if labels.get(KUBE_PROXY_LABEL[0]) == KUBE_PROXY_LABEL[1]:
                self._pod_changed(event.object, deleted=event.type == "DELETED")

    def _pod_changed(self, pod: dict, deleted: bool = False) -> None:
        labels = pod["metadata"].get("labels") or {}
        if labels.get(KUBE_PROXY_LABEL[0]) != KUBE_PROXY_LABEL[1]:
            return
        node = pod["spec"].get("nodeName")
        if not node:
            return
        alive = (not deleted and not pod["metadata"].get("deletionTimestamp")
                 and pod.get("status", {}).get("phase") == "Running")
        if alive and not self.running.get(node):
            self._start(node)
        elif not alive and self.running.get(node) and self._pods_on(node, exclude=pod["metadata"]["uid"]) == 0:
            self._stop(node)

    def _pods_on(self, node: str, exclude: str) -> int:
        count = 0
        for p in self.cluster.store.list("Pod", "kube-system"):
            if (p["metadata"].get("labels") or {}).get(KUBE_PROXY_LABEL[0]) == KUBE_PROXY_LABEL[1] and \
                    p["spec"].get("nodeName") == node and p["metadata"]["uid"] != exclude and \
                    not p["metadata"].get("deletionTimestamp") and p.get("status", {}).get("phase") == "Running":
                count += 1
        return count

    def _start(self, node_name: str) -> None:
        node = self.cluster.store.find("Node", None, node_name)
        if node is None:
            return
        config = read_configuration(self.cluster)
        mode = config.get("mode") or MODE_FALLBACK
        agent = self.agents.get(node_name)
        if agent is None:
            agent = KubeProxy(node, mode, config)
            self.agents[node_name] = agent
        else:
            agent.node = node
            agent.config = config
            if agent.mode != mode:
                cleanup = agent.set_mode(mode)
                self._notify(node_name, agent, ("cleanup", cleanup))
            restarted = agent.start()
            if restarted is not None:
                self._notify(node_name, agent, ("sync", restarted))
        self.running[node_name] = True
        self.dirty.add(node_name)
        self.sync(node_name)

    def _stop(self, node_name: str) -> None:
        if node_name in self.dirty:
            self.sync(node_name)
        self.running[node_name] = False
        agent = self.agents.get(node_name)
        if agent is not None:
            agent.stop()

    # --- reading -------------------------------------------------------------------------------------------
    def sync(self, node_name: str) -> None:
        """Bring one running agent's rules up to date with the cluster."""
        agent = self.agents.get(node_name)
        if agent is None or not self.running.get(node_name):
            self.dirty.discard(node_name)
            return
        self.dirty.discard(node_name)
        store = self.cluster.store
        result = agent.sync(store.list("Service"), store.list("EndpointSlice"))
        self.syncs += 1
        self._notify(node_name, agent, ("sync", result))

    def sync_all(self) -> None:
        """Sync every dirty, running agent."""
        for node in sorted(self.dirty):
            self.sync(node)

    def agent(self, node_name: str) -> KubeProxy:
        """The node's kube-proxy, synced if it runs."""
        if node_name in self.dirty:
            self.sync(node_name)
        agent = self.agents.get(node_name)
        if agent is None:
            raise KeyError(f"no kube-proxy has ever run on node {node_name!r}")
        return agent

    def status(self, *, rule_counts: bool = True) -> dict[str, ProxyStatus]:
        """What the picture shows of every node's kube-proxy. No sync is forced: the count is the last one the
        agent wrote (a real node lags a little behind the API) and `pending` says a sync is due."""
        return {name: ProxyStatus(mode=agent.mode, running=bool(self.running.get(name)),
                                  rules=self._rule_count(name, agent) if rule_counts else None,
                                  pending=name in self.dirty)
                for name, agent in list(self.agents.items())}

    def _rule_count(self, node_name: str, agent: KubeProxy) -> int:
        """The agent's rule count, computed once per rule text it wrote."""
        rules = agent.rules
        cached = self._counts.get(node_name)
        if cached is None or cached[0] is not rules:
            cached = (rules, agent.rule_count)
            self._counts[node_name] = cached
        return cached[1]

    def rules(self, node_name: str) -> str:
        """The node's current rule text in its mode."""
        return self.agent(node_name).rules

    def mode(self, node_name: str) -> str:
        """The mode the node's kube-proxy runs in."""
        return self.agent(node_name).mode

    def health_check(self, node_name: str, port: int) -> tuple[int, str] | None:
        """What the node's kube-proxy health-check server answers on healthCheckNodePort `port`: (status, JSON
        body) — 200 with local ready endpoints, 503 without — or None when nothing listens (no such Service, or
        kube-proxy is not running there, so a load balancer's check fails)."""
        if not self.running.get(node_name):
            return None
        answer = self.agent(node_name).health_check(port)
        if answer is None:
            return None
        code, body = answer
        return code, json.dumps(body)

    def _notify(self, node_name: str, agent: KubeProxy, change: object) -> None:
        for listener in self.listeners:
            listener(node_name, agent, change)
