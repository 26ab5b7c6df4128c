"""Routes on this host to a kind cluster's pod ranges, each via its node, for a program here that must reach pods by
address: JupyterHub and its proxy reaching a KubeSpawner pod, the pod's replies coming back (nothing masquerades
them on the lab's network).

Every route carries the routing protocol number `ROUTE_PROTOCOL` (`ip route … proto 203`), the label by which
`stray_routes` finds them and `labsupport clean` removes what a killed run left:

>>> route_argv("add", PodRoute("10.250.1.0/24", "172.30.0.3"))
['ip', 'route', 'replace', '10.250.1.0/24', 'via', '172.30.0.3', 'proto', '203']
"""
from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from typing import Iterator

from labsupport.errors import BackendUnavailable
from labsupport.kind.runner import CommandRunner

#: The routing protocol number of the routes made here (unassigned in iproute2's rt_protos).
ROUTE_PROTOCOL = 203


@dataclass(frozen=True)
class PodRoute:
    """One node's pod range and the node's address, as `kubectl get node -o yaml` shows them (spec.podCIDR and the
    InternalIP address)."""

    cidr: str
    via: str


def pod_routes(nodes: list[dict]) -> list[PodRoute]:
    """The route to every node's pod range, from Node objects."""
    routes = []
    for node in nodes:
        cidr = (node.get("spec") or {}).get("podCIDR")
        address = next((a["address"] for a in (node.get("status") or {}).get("addresses") or []
                        if a.get("type") == "InternalIP"), None)
        if cidr and address:
            routes.append(PodRoute(cidr, address))
    return routes


def route_argv(action: str, route: PodRoute) -> list[str]:
    """The `ip route` command that adds (replacing one to the same range) or deletes `route`."""
    verb = {"add": "replace", "delete": "del"}[action]
    return ["ip", "route", verb, route.cidr, "via", route.via, "proto", str(ROUTE_PROTOCOL)]


@contextmanager
def routed(routes: list[PodRoute], runner: CommandRunner | None = None) -> Iterator[list[PodRoute]]:
    """The routes added for the `with` block and deleted after it, whatever happened inside."""
    runner = runner or CommandRunner()
    added = []
    try:
        for route in routes:
            done = runner.run(route_argv("add", route), timeout=30)
            if not done.ok:
                raise BackendUnavailable(f"`{' '.join(route_argv('add', route))}` failed: "
                                         f"{(done.stderr or done.stdout).strip()} (adding routes needs root)")
            added.append(route)
        yield added
    finally:
        for route in added:
            runner.run(route_argv("delete", route), timeout=30)


def stray_routes(runner: CommandRunner | None = None) -> list[str]:
    """The destinations of routes made here still on the host (`ip -4 route show proto 203`)."""
    runner = runner or CommandRunner()
    if runner.which("ip") is None:
        return []
    done = runner.run(["ip", "-4", "route", "show", "proto", str(ROUTE_PROTOCOL)], timeout=30)
    return [line.split()[0] for line in done.stdout.splitlines() if line.strip()] if done.ok else []


def clean_routes(runner: CommandRunner | None = None) -> list[str]:
    """Delete every route made here that a killed run left; say what went."""
    runner = runner or CommandRunner()
    done = []
    for destination in stray_routes(runner):
        if runner.run(["ip", "route", "del", destination, "proto", str(ROUTE_PROTOCOL)], timeout=30).ok:
            done.append(f"removed the host's route to {destination}")
    return done


__all__ = ["ROUTE_PROTOCOL", "PodRoute", "pod_routes", "route_argv", "routed", "stray_routes", "clean_routes"]
