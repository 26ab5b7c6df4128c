"""ClusterIP and NodePort allocation, as the API server's service registry does it, all-or-nothing."""
from __future__ import annotations

import copy
import ipaddress
import random
from dataclasses import dataclass, field

from labsupport.errors import FieldError, InternalError, Invalid, LabError
from labsupport.model.defaults import prepare_service_update

ERR_FULL = "range is full"
ERR_ALLOCATED_IP = "provided IP is already allocated"
ERR_ALLOCATED_PORT = "provided port is already allocated"


def cluster_ip_static_band(size: int) -> int:
    """Size of the ClusterIP band kept for user-chosen IPs: `min(max(16, size/16), 256)` (0 for tiny ranges)."""
    if size < 16:
        return 0
    return min(max(16, size // 16), 256)


def node_port_static_band(size: int) -> int:
    """Size of the NodePort band kept for user-chosen ports: `min(max(16, size/32), 128)` (0 for tiny ranges)."""
    if size < 16:
        return 0
    return min(max(16, size // 32), 128)


class RangeError(LabError):
    """A bitmap range refused a request; the text is upstream's (`provided port is already allocated`)."""


@dataclass
class _Bitmap:
    """Offsets 0..size-1, with a static band [0, band) allocated last when choosing automatically."""

    size: int
    band: int
    owners: dict[int, str] = field(default_factory=dict)

    def take(self, offset: int, owner: str, already: str) -> None:
        if offset in self.owners:
            raise RangeError(already)
        self.owners[offset] = owner

    def take_next(self, owner: str, rng: random.Random) -> int:
        # Upstream scans from a random start in the dynamic band, then (only when it is full) the static band.
        for lo, hi in ((self.band, self.size), (0, self.band)):
            span = hi - lo
            if span <= 0:
                continue
            start = rng.randrange(span)
            for i in range(span):
                offset = lo + (start + i) % span
                if offset not in self.owners:
                    self.owners[offset] = owner
                    return offset
        raise RangeError(ERR_FULL)

    def free(self, offset: int) -> None:
        self.owners.pop(offset, None)

    def copy(self) -> "_Bitmap":
        return _Bitmap(self.size, self.band, dict(self.owners))


def _key(service: dict) -> str:
    meta = service.get("metadata") or {}
    return f"{meta.get('namespace') or 'default'}/{meta.get('name', '')}"


def _needs_cluster_ip(spec: dict) -> bool:
    return spec.get("type", "ClusterIP") != "ExternalName" and spec.get("clusterIP") != "None"


def _needs_node_ports(spec: dict) -> bool:
    svc_type = spec.get("type", "ClusterIP")
    if svc_type == "NodePort":
        return True
    if svc_type == "LoadBalancer":
        return spec.get("allocateLoadBalancerNodePorts", True) is not False
    return False


def _may_have_node_ports(spec: dict) -> bool:
    return spec.get("type", "ClusterIP") in ("NodePort", "LoadBalancer")


def _needs_health_check(spec: dict) -> bool:
    return spec.get("type") == "LoadBalancer" and spec.get("externalTrafficPolicy") == "Local"


def _node_ports(spec: dict) -> list[int]:
    return [p["nodePort"] for p in spec.get("ports") or [] if p.get("nodePort")]


class ServiceAllocator:
    """Hands out ClusterIPs from the service CIDR and NodePorts from the node-port range, like kube-apiserver."""

    def __init__(self, service_cidr: str = "10.96.0.0/12", node_port_range: tuple[int, int] = (30000, 32767),
                 rng: random.Random | None = None):
        self.network = ipaddress.ip_network(service_cidr)
        self.service_cidr = str(self.network)
        full = self.network.num_addresses
        # Neither the network address nor (IPv4) the broadcast address is ever handed out.
        size = full - 2 if self.network.version == 4 else min(full, 65536) - 1
        self._ip_base = int(self.network.network_address) + 1
        self._ips = _Bitmap(max(size, 0), cluster_ip_static_band(full))
        self.node_port_range = (int(node_port_range[0]), int(node_port_range[1]))
        port_size = self.node_port_range[1] - self.node_port_range[0] + 1
        self._ports = _Bitmap(port_size, node_port_static_band(port_size))
        self.rng = rng if rng is not None else random.Random(0)

    # --- public API ---------------------------------------------------------------------------------------------

    def allocate(self, service: dict, old: dict | None = None) -> dict:
        """A new Service with clusterIP(s), nodePorts and healthCheckNodePort filled in; `old` for an update.

        On an update the Service is first prepared as the registry does (`prepare_service_update`: values the
        client left out are carried over, fields of a former type dropped), and what it no longer uses is released.
        Raises Invalid / InternalError with the API server's messages, and then nothing is allocated or released.
        """
        svc = prepare_service_update(service, old) if old is not None else copy.deepcopy(service)
        spec = svc.setdefault("spec", {})
        old_spec = (old or {}).get("spec") or {}
        ips, ports = self._ips.copy(), self._ports.copy()
        owner = _key(svc)
        name = (svc.get("metadata") or {}).get("name", "")
        self._allocate_cluster_ip(spec, old_spec, ips, owner, name)
        self._allocate_node_ports(spec, old_spec, ports, owner, name, old is not None)
        self._allocate_health_check(spec, old_spec, ports, owner, name, old is not None)
        self._ips, self._ports = ips, ports
        return svc

    def release(self, service: dict) -> None:
        """Give back everything a Service holds (its clusterIP, nodePorts and healthCheckNodePort)."""
        spec = service.get("spec") or {}
        owner = _key(service)
        for ip in spec.get("clusterIPs") or ([spec["clusterIP"]] if spec.get("clusterIP") else []):
            offset = self._ip_offset(ip)
            if offset is not None and self._ips.owners.get(offset) == owner:
                self._ips.free(offset)
        for port in _node_ports(spec) + ([spec["healthCheckNodePort"]] if spec.get("healthCheckNodePort") else []):
            offset = self._port_offset(port)
            if offset is not None and self._ports.owners.get(offset) == owner:
                self._ports.free(offset)

    def copy(self) -> "ServiceAllocator":
        """An independent allocator with the same state and random sequence (for dry runs)."""
        twin = ServiceAllocator.__new__(ServiceAllocator)
        twin.__dict__.update(self.__dict__)
        twin._ips, twin._ports = self._ips.copy(), self._ports.copy()
        twin.rng = random.Random()
        twin.rng.setstate(self.rng.getstate())
        return twin

    def used(self) -> dict:
        """How full both ranges are: sizes, used/free counts, and use of the static and dynamic bands."""
        def info(bitmap: _Bitmap) -> dict:
            static = sum(1 for o in bitmap.owners if o < bitmap.band)
            return {"size": bitmap.size, "used": len(bitmap.owners), "free": bitmap.size - len(bitmap.owners),
                    "static_band": bitmap.band, "static_used": static, "dynamic_used": len(bitmap.owners) - static}
        low, high = self.node_port_range
        return {"clusterIPs": {"cidr": self.service_cidr, **info(self._ips)},
                "nodePorts": {"range": f"{low}-{high}", **info(self._ports)}}

    def ip_owner(self, ip: str) -> str | None:
        """`namespace/name` of the Service holding this ClusterIP, or None."""
        offset = self._ip_offset(ip)
        return None if offset is None else self._ips.owners.get(offset)

    def port_owner(self, port: int) -> str | None:
        """`namespace/name` of the Service holding this NodePort (or health-check port), or None."""
        offset = self._port_offset(port)
        return None if offset is None else self._ports.owners.get(offset)

    # --- helpers ------------------------------------------------------------------------------------------------

    def _ip_offset(self, ip: str) -> int | None:
        try:
            addr = ipaddress.ip_address(ip)
        except ValueError:
            return None
        if addr.version != self.network.version:
            return None
        offset = int(addr) - self._ip_base
        return offset if 0 <= offset < self._ips.size else None

    def _port_offset(self, port: int) -> int | None:
        offset = int(port) - self.node_port_range[0]
        return offset if 0 <= offset < self._ports.size else None

    def _ports_text(self) -> str:
        return f"{self.node_port_range[0]}-{self.node_port_range[1]}"

    def _allocate_cluster_ip(self, spec: dict, old_spec: dict, ips: _Bitmap, owner: str, name: str) -> None:
        old_ip = old_spec.get("clusterIP") if _needs_cluster_ip(old_spec) else None
        if not _needs_cluster_ip(spec):
            if spec.get("type") == "ExternalName":
                spec.pop("clusterIP", None)
                spec.pop("clusterIPs", None)
            elif spec.get("clusterIP") == "None":
                spec["clusterIPs"] = ["None"]
            if old_ip:
                self._free_ip(ips, old_ip, owner)
            return
        wanted = spec.get("clusterIP") or (spec.get("clusterIPs") or [""])[0]
        if wanted and old_ip == wanted:
            spec["clusterIP"] = wanted
            spec["clusterIPs"] = list(spec.get("clusterIPs") or [wanted])
            return
        if wanted:
            spec["clusterIPs"] = list(spec.get("clusterIPs") or [wanted])
            offset = self._ip_offset(wanted)
            try:
                if offset is None:
                    raise RangeError(f"provided IP is not in the valid range. The range of valid IPs is "
                                     f"{self.service_cidr}")
                ips.take(offset, owner, ERR_ALLOCATED_IP)
            except RangeError as err:
                raise Invalid("Service", name, [FieldError.invalid(
                    "spec.clusterIPs", spec["clusterIPs"], f"failed to allocate IP {wanted}: {err}")]) from err
        else:
            try:
                offset = ips.take_next(owner, self.rng)
            except RangeError as err:
                raise InternalError(f"failed to allocate a serviceIP: {err}", kind="services", name=name) from err
            wanted = str(ipaddress.ip_address(self._ip_base + offset))
            spec["clusterIPs"] = [wanted]
        spec["clusterIP"] = wanted
        if old_ip and old_ip != wanted:
            self._free_ip(ips, old_ip, owner)

    def _free_ip(self, ips: _Bitmap, ip: str, owner: str) -> None:
        offset = self._ip_offset(ip)
        if offset is not None and ips.owners.get(offset) == owner:
            ips.free(offset)

    def _free_port(self, ports: _Bitmap, port: int, owner: str) -> None:
        offset = self._port_offset(port)
        if offset is not None and ports.owners.get(offset) == owner:
            ports.free(offset)

    def _take_port(self, ports: _Bitmap, port: int, owner: str) -> None:
        offset = self._port_offset(port)
        if offset is None:
            raise RangeError(f"provided port is not in the valid range. The range of valid ports is "
                             f"{self._ports_text()}")
        ports.take(offset, owner, ERR_ALLOCATED_PORT)

    def _next_port(self, ports: _Bitmap, owner: str) -> int:
        return self.node_port_range[0] + ports.take_next(owner, self.rng)

    def _allocate_node_ports(self, spec: dict, old_spec: dict, ports: _Bitmap, owner: str, name: str,
                             update: bool) -> None:
        old_numbers = _node_ports(old_spec) if _may_have_node_ports(old_spec) else []
        service_ports = spec.get("ports") or []
        if not _may_have_node_ports(spec):
            # Leaving NodePort/LoadBalancer: the node ports carried over from the old object are dropped.
            for port in service_ports:
                if port.get("nodePort") and port["nodePort"] in old_numbers:
                    del port["nodePort"]
        elif not update or not old_numbers:
            self._init_node_ports(service_ports, _needs_node_ports(spec), ports, owner, name)
        else:
            taken: set[int] = set()
            for i, port in enumerate(service_ports):
                wanted = port.get("nodePort") or 0
                if not wanted and not _needs_node_ports(spec):
                    continue
                if wanted:
                    if wanted not in old_numbers and wanted not in taken:
                        self._claim(ports, wanted, owner, name, i)
                        taken.add(wanted)
                else:
                    port["nodePort"] = self._claim_next(ports, owner, name)
        new_numbers = set(_node_ports(spec)) if _may_have_node_ports(spec) else set()
        hcnp = old_spec.get("healthCheckNodePort")
        for number in old_numbers:
            if number not in new_numbers and number != hcnp:
                self._free_port(ports, number, owner)

    def _init_node_ports(self, service_ports: list[dict], allocate_missing: bool, ports: _Bitmap, owner: str,
                         name: str) -> None:
        by_port: dict[int, int] = {}
        for i, port in enumerate(service_ports):
            if not port.get("nodePort") and not allocate_missing:
                continue
            assigned = by_port.get(port.get("port"), 0)
            if not assigned:
                # The same port number under another protocol shares one node port.
                requested = next((p["nodePort"] for p in service_ports
                                  if p.get("port") == port.get("port") and p.get("nodePort")), 0)
                if requested:
                    self._claim(ports, requested, owner, name, i)
                    port["nodePort"] = requested
                else:
                    port["nodePort"] = self._claim_next(ports, owner, name)
                by_port[port.get("port")] = port["nodePort"]
            elif port.get("nodePort", 0) != assigned:
                if not port.get("nodePort"):
                    port["nodePort"] = assigned
                else:
                    self._claim(ports, port["nodePort"], owner, name, i)

    def _claim(self, ports: _Bitmap, number: int, owner: str, name: str, index: int) -> None:
        try:
            self._take_port(ports, number, owner)
        except RangeError as err:
            raise Invalid("Service", name, [FieldError.invalid(f"spec.ports[{index}].nodePort", number,
                                                               str(err))]) from err

    def _claim_next(self, ports: _Bitmap, owner: str, name: str) -> int:
        try:
            return self._next_port(ports, owner)
        except RangeError as err:
            raise InternalError(f"failed to allocate a nodePort: {err}", kind="services", name=name) from err

    def _allocate_health_check(self, spec: dict, old_spec: dict, ports: _Bitmap, owner: str, name: str,
                               update: bool) -> None:
        old_hcnp = old_spec.get("healthCheckNodePort") if _needs_health_check(old_spec) else 0
        if not _needs_health_check(spec):
            if old_hcnp:
                self._free_port(ports, old_hcnp, owner)
                if spec.get("healthCheckNodePort") == old_hcnp:
                    del spec["healthCheckNodePort"]
            return
        wanted = spec.get("healthCheckNodePort") or 0
        if update and old_hcnp:
            if wanted != old_hcnp:
                raise Invalid("Service", name, [FieldError.invalid(
                    "spec.healthCheckNodePort", wanted,
                    "cannot change healthCheckNodePort on loadBalancer service with externalTraffic=Local during "
                    "update")])
            return
        if wanted:
            try:
                self._take_port(ports, wanted, owner)
            except RangeError as err:
                raise InternalError(f"failed to allocate requested HealthCheck NodePort {wanted}: {err}",
                                    kind="services", name=name) from err
        else:
            try:
                spec["healthCheckNodePort"] = self._next_port(ports, owner)
            except RangeError as err:
                raise InternalError(f"failed to allocate a HealthCheck NodePort 0: {err}", kind="services",
                                    name=name) from err
