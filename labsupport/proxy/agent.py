"""The per-node kube-proxy as a plain object: feed it Services and EndpointSlices, get back what it writes.

No threads and no I/O: a simulated data plane reads `.rules`, a real-kernel backend feeds each sync's
`text` to `iptables-restore` / `nft -f`, and both see the same thing.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from labsupport.errors import UnknownProxyMode
from labsupport.shape import PROXY_MODES
from labsupport.proxy.rule_count import count_rules
from labsupport.proxy.iptables import FILTER_CHAINS_FIXED, NAT_CHAINS_FIXED, build_tables, dump
from labsupport.proxy.iptables import cleanup_commands as iptables_cleanup
from labsupport.proxy.ipvs import IPSET_TYPES, IpvsState, ipvs_state
from labsupport.proxy.nftables import NftablesSyncer
from labsupport.proxy.release import RELEASE, masquerade_random_fully
from labsupport.proxy.nftables import cleanup_commands as nft_cleanup
from labsupport.proxy.topology import (NodeInfo, ProxyConfig, paused_gc, service_ports, slice_endpoints,
                                       slice_service_key)


@dataclass(frozen=True)
class SyncResult:
    """What one sync did.

    applied: False when kube-proxy is stopped (nothing was written).
    changed: whether the rules differ from before this sync.
    tool: how a real node applies `text`: "iptables-restore --noflush", "nft -f", "ipvs" (text sections) or "".
    text: iptables: the restore input (the full dump the first time; then the fixed chains, the changed chains
    and a flush/delete of stale chains, restored with --noflush so built-in jumps and unchanged chains stay);
    nftables: only the delta transaction; ipvs: the full IPVS text.
    """

    mode: str
    applied: bool
    changed: bool
    tool: str
    text: str
    message: str = ""


@dataclass(frozen=True)
class ModeSwitch:
    """The result of switching proxy mode: the old mode's cleanup and the new mode's first full rules."""

    old_mode: str
    new_mode: str
    cleanup: str          # iptables-restore input (iptables), nft input (nftables) or shell commands (ipvs)
    cleanup_tool: str     # "iptables-restore --noflush" | "nft -f" | "sh"
    first_sync: SyncResult | None


_TOOLS = {"iptables": "iptables-restore --noflush", "nftables": "nft -f", "ipvs": "ipvs"}


class KubeProxy:
    """kube-proxy on one node, in one mode, as pure data."""

    def __init__(self, node: dict, mode: str = "iptables", config: dict | None = None, *,
                 service_cidrs: Iterable[str] = ("10.96.0.0/12",), nfacct: bool = False) -> None:
        if mode not in PROXY_MODES:
            raise UnknownProxyMode(mode, PROXY_MODES)
        self._node = node
        self.node_info = NodeInfo.from_node(node)
        self._config = config
        self._reconfigured = False
        self.service_cidrs = tuple(service_cidrs)
        self.nfacct = nfacct
        self.mode = mode
        self.running = True
        self.syncs = 0
        self._services: dict[tuple[str, str], dict] = {}
        self._slices: dict[tuple[str, str], dict] = {}
        self._seen_inputs = False
        self._reset_mode_state()

    def _reset_mode_state(self) -> None:
        self._rules = ""
        self._tables: tuple[dict, dict] | None = None
        self._ipvs: IpvsState | None = None
        self._nft: NftablesSyncer | None = None
        self._reconfigured = False
        if self.mode == "nftables":
            self._nft = NftablesSyncer(self.node, self.config, service_cidrs=self.service_cidrs)

    @property
    def node(self) -> dict:
        """The Node object this kube-proxy runs on (setting it takes effect at the next sync)."""
        return self._node

    @node.setter
    def node(self, node: dict) -> None:
        info = NodeInfo.from_node(node)
        self._node = node
        if info != self.node_info:
            self.node_info = info
            self._reconfigured = True

    @property
    def config(self) -> dict | None:
        """The KubeProxyConfiguration dict (setting it takes effect at the next sync)."""
        return self._config

    @config.setter
    def config(self, config: dict | None) -> None:
        if any(ProxyConfig.from_dict(config, section) != ProxyConfig.from_dict(self._config, section)
               for section in ("iptables", "nftables")):
            self._reconfigured = True
        self._config = config

    @property
    def name(self) -> str:
        """The node's name."""
        return self.node_info.name

    @property
    def rules(self) -> str:
        """The complete rule set now in force on the node, as the mode's own tool shows it."""
        if self.mode == "nftables" and self._nft is not None and self._nft.written:
            return self._nft.rules
        return self._rules

    @property
    def rules_with_jumps(self) -> str:
        """iptables mode: the dump including the built-in chains' jump rules (what `iptables-save` shows)."""
        if self.mode != "iptables" or self._tables is None:
            return self.rules
        return dump(*self._tables, with_jumps=True)

    @property
    def ipvs(self) -> IpvsState | None:
        """IPVS mode: the virtual servers, ipsets and iptables rules as data (None in other modes)."""
        return self._ipvs

    @property
    def rule_count(self) -> int:
        """The rules in the node's output, as `labsupport.proxy.rule_count` defines them for every view."""
        return count_rules(self.mode, self.rules)

    def sync(self, services: Iterable[dict], endpointslices: Iterable[dict]) -> SyncResult:
        """Render the rules for this state of the cluster and report what a real kube-proxy would write."""
        self._services = {_key(o): o for o in services}
        self._slices = {_key(o): o for o in endpointslices}
        self._seen_inputs = True
        if not self.running:
            return SyncResult(self.mode, False, False, "", "",
                              "kube-proxy is stopped: the kernel keeps the last rules, new changes are not applied")
        return self._sync()

    def update(self, services: Iterable[dict] = (), endpointslices: Iterable[dict] = (),
               deleted_services: Iterable[tuple[str, str]] = (),
               deleted_slices: Iterable[tuple[str, str]] = ()) -> SyncResult:
        """Apply only changed objects (nftables computes the delta in O(changes); other modes re-render)."""
        services, endpointslices = list(services), list(endpointslices)
        deleted_services, deleted_slices = list(deleted_services), list(deleted_slices)
        _merge(self._services, services, deleted_services)
        _merge(self._slices, endpointslices, deleted_slices)
        self._seen_inputs = True
        if not self.running:
            return SyncResult(self.mode, False, False, "", "",
                              "kube-proxy is stopped: the kernel keeps the last rules, new changes are not applied")
        if self.mode == "nftables" and self._nft is not None and self._nft.written and not self._reconfigured:
            delta = self._nft.update(services, endpointslices, deleted_services, deleted_slices)
            self.syncs += 1
            return SyncResult(self.mode, True, bool(delta), "nft -f", delta)
        return self._sync()

    def _sync(self) -> SyncResult:
        self.syncs += 1
        prefix = ""
        if self._reconfigured:
            self._reconfigured = False
            if self.mode == "nftables" and self._nft is not None and self._nft.written:
                prefix = nft_cleanup()      # new node IPs or config: rebuild the table from scratch
            if self.mode == "nftables":
                self._nft = NftablesSyncer(self._node, self._config, service_cidrs=self.service_cidrs)
        if self.mode == "nftables":
            assert self._nft is not None
            text = prefix + self._nft.sync(self._services.values(), self._slices.values())
            return SyncResult(self.mode, True, bool(text), "nft -f", text)
        with paused_gc():
            if self.mode == "iptables":
                old_tables = self._tables
                self._tables = build_tables(self._services.values(), self._slices.values(), self.node_info,
                                            ProxyConfig.from_dict(self.config), self.nfacct,
                                            masquerade_random_fully(RELEASE))
                full = dump(*self._tables)
                changed = full != self._rules
                self._rules = full
                return SyncResult(self.mode, True, changed, _TOOLS[self.mode],
                                  _restore_input(old_tables, self._tables))
            else:
                self._ipvs = ipvs_state(self._services.values(), self._slices.values(), self.node, self.config,
                                        nfacct=self.nfacct)
                text = self._ipvs.text()
        changed = text != self._rules
        self._rules = text
        return SyncResult(self.mode, True, changed, _TOOLS[self.mode], text)

    def health_check(self, port: int) -> tuple[int, dict] | None:
        """What kube-proxy's health-check server answers on healthCheckNodePort `port`: (HTTP status, JSON body).

        200 when this node has local ready endpoints for the Service, else 503; None when no Service uses the port.
        """
        for svc in self._services.values():
            ports = service_ports(svc)
            if not ports or not any(p.health_check_node_port == port for p in ports):
                continue
            key = ports[0].service_key
            slices = [s for s in self._slices.values() if slice_service_key(s) == key]
            local = set()
            for eps in slice_endpoints(slices).values():
                local.update(e.ip for e in eps if e.ready and e.node_name and e.node_name == self.name)
            body = {"service": {"namespace": key[0], "name": key[1]}, "localEndpoints": len(local),
                    "serviceProxyHealthy": True}
            return (200 if local else 503), body
        return None

    def stop(self) -> None:
        """Stop kube-proxy: the rules stay in the kernel as they are; syncs become no-ops."""
        self.running = False

    def start(self) -> SyncResult | None:
        """Start kube-proxy again and sync to the latest state it was given (None if it never saw any)."""
        self.running = True
        if not self._seen_inputs:
            return None
        return self._sync()

    def cleanup(self) -> tuple[str, str]:
        """(tool, text) that removes everything this mode installed, as `kube-proxy --cleanup` would."""
        if self.mode == "nftables":
            return "nft -f", nft_cleanup()
        if self.mode == "iptables":
            return "iptables-restore --noflush", iptables_cleanup(self._tables)
        return "sh", ipvs_cleanup(self._ipvs)

    def set_mode(self, mode: str) -> ModeSwitch:
        """Switch proxy mode: clean up the old mode's rules and render the new mode from scratch."""
        if mode not in PROXY_MODES:
            raise UnknownProxyMode(mode, PROXY_MODES)
        tool, text = self.cleanup()
        old = self.mode
        self.mode = mode
        self._reset_mode_state()
        first = self._sync() if self._seen_inputs and self.running else None
        return ModeSwitch(old, mode, text, tool, first)


def _restore_input(old: tuple[dict, dict] | None, new: tuple[dict, dict]) -> str:
    """What kube-proxy feeds `iptables-restore --noflush`: everything on the first sync; afterwards the fixed
    chains, the chains whose rules changed, and a flush and delete for each chain that went stale."""
    if old is None:
        return dump(*new)
    fixed = (set(FILTER_CHAINS_FIXED), set(NAT_CHAINS_FIXED))
    subsets = []
    for i in (0, 1):
        subsets.append({c: rules for c, rules in new[i].items() if c in fixed[i] or old[i].get(c) != rules})
    text = dump(subsets[0], subsets[1])
    out = []
    table = 0
    for line in text.splitlines():
        if line.startswith("*"):
            table = 0 if line == "*filter" else 1
        elif line == "COMMIT":
            stale = sorted(c for c in old[table] if c not in new[table])
            out.extend(f"-F {c}" for c in stale)
            out.extend(f"-X {c}" for c in stale)
        out.append(line)
    return "\n".join(out) + "\n"


def _key(obj: dict) -> tuple[str, str]:
    meta = obj.get("metadata") or {}
    return (meta.get("namespace") or "default", meta.get("name") or "")


def _merge(index: dict[tuple[str, str], dict], upserts: list[dict], deletions: list[tuple[str, str]]) -> None:
    for obj in upserts:
        index[_key(obj)] = obj
    for key in deletions:
        index.pop(tuple(key), None)


def ipvs_cleanup(state: IpvsState | None) -> str:
    """Shell commands that undo IPVS mode: virtual servers, kube-ipvs0, iptables chains, then the ipsets."""
    lines = ["ipvsadm -C", "ip link del kube-ipvs0"]
    if state is not None:
        for table, chains in (("nat", state.nat_chains), ("filter", state.filter_chains)):
            lines += [f"iptables -t {table} -F {c}" for c in chains]
            lines += [f"iptables -t {table} -X {c}" for c in chains]
    lines += [f"ipset destroy {name}" for name in sorted(IPSET_TYPES)]
    return "\n".join(lines) + "\n"
