"""ipsets: `ipset list` and `ipset save` read into sets that match a packet's fields (`-m set --match-set`).

Both the iptables rules (`--match-set`) and IPVS mode (its ipset section) use them.
"""
from __future__ import annotations

from typing import Optional

from labsupport.dataplane.netfilter import Packet, RulesSyntaxError, ip_to_int, parse_cidr, proto_name


class IpSet:
    """An ipset: its type's dimensions and its members, matched against a packet's fields."""

    def __init__(self, name: str, kind: str):
        self.name = name
        self.kind = kind
        self.dims = kind.split(":", 1)[1].split(",") if ":" in kind else ["ip"]
        self.members: set = set()
        self.nets: list = []

    def add(self, member: str) -> None:
        """Add one member in `ipset` notation (`10.96.0.1,tcp:443`, `30001`, `10.0.0.0/8`)."""
        parts = member.split(",")
        if len(parts) != len(self.dims):
            raise ValueError(f"member {member!r} does not fit type {self.kind}")
        key = []
        nets = False
        for dim, part in zip(self.dims, parts):
            if dim == "ip":
                key.append(ip_to_int(part))
            elif dim == "port":
                proto, _, port = part.rpartition(":")
                key.append((proto_name(proto) if proto else "tcp", int(port)))
            elif dim == "net":
                key.append(parse_cidr(part))
                nets = True
            else:
                raise ValueError(f"unsupported ipset dimension {dim!r}")
        if nets:
            self.nets.append(tuple(key))
        else:
            self.members.add(tuple(key))

    def _values(self, pkt: Packet, dirs: list) -> list:
        out = []
        for dim, d in zip(self.dims, dirs):
            if dim in ("ip", "net"):
                out.append(pkt.src if d == "src" else pkt.dst)
            else:
                out.append((pkt.proto, pkt.sport if d == "src" else pkt.dport))
        return out

    def contains(self, pkt: Packet, dirs: list) -> bool:
        """Whether the packet's fields, taken in the `src`/`dst` directions given, are a member."""
        values = self._values(pkt, dirs)
        if tuple(values) in self.members:
            return True
        for key in self.nets:
            ok = True
            for dim, want, have in zip(self.dims, key, values):
                if dim == "net":
                    if (have & want[1]) != want[0]:
                        ok = False
                        break
                elif dim == "port" and self.kind.startswith("bitmap"):
                    if have[1] != want[1]:
                        ok = False
                        break
                elif want != have:
                    ok = False
                    break
            if ok:
                return True
        if self.kind.startswith("bitmap:port"):
            return any(values[0][1] == m[0][1] for m in self.members)
        return False


def parse_ipsets(text: str, first_line: int = 1) -> dict[str, IpSet]:
    """Parse `ipset list` output or `ipset save` (create/add lines) into sets by name."""
    sets: dict[str, IpSet] = {}
    current: Optional[IpSet] = None
    in_members = False
    pending_name = None
    for offset, line in enumerate(text.splitlines()):
        lineno = first_line + offset
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        try:
            if stripped.startswith("create "):
                words = stripped.split()
                sets[words[1]] = IpSet(words[1], words[2])
                continue
            if stripped.startswith("add "):
                words = stripped.split()
                if words[1] not in sets:
                    raise ValueError(f"ipset {words[1]!r} was never created")
                sets[words[1]].add(words[2])
                continue
            if stripped.startswith("Name:"):
                pending_name = stripped.split(":", 1)[1].strip()
                current, in_members = None, False
                continue
            if stripped.startswith("Type:"):
                if pending_name is None:
                    raise ValueError("Type: before Name:")
                current = sets[pending_name] = IpSet(pending_name, stripped.split(":", 1)[1].strip())
                continue
            if stripped.startswith("Members:"):
                in_members = True
                continue
            if ":" in stripped and not in_members:
                continue    # Revision:, Header:, Size in memory:, References:, Number of entries:
            if in_members and current is not None:
                current.add(stripped.split()[0])
                continue
        except (ValueError, KeyError, IndexError) as exc:
            raise RulesSyntaxError("ipset", lineno, line, str(exc)) from exc
        raise RulesSyntaxError("ipset", lineno, line, "not an `ipset list` or `ipset save` line")
    return sets
