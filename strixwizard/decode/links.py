"""The other TCP paths between a pair that `test decode` times besides the plan's: USB4
networking (thunderbolt-net) beside an RDMA NIC, so its TCP all-reduce estimate sits next to
the NIC's. Pure (a discovery in, addresses out)."""

from __future__ import annotations

from dataclasses import dataclass

from strixwizard.decode.collectives import USB4
from strixwizard.discovery import Discovery
from strixwizard.live.plan import PairPlan


@dataclass(frozen=True)
class TcpPath:
    transport: str
    address: str  # the far end's address on that link (the ping-pong server listens there)
    path: str


def usb4_paths(found: Discovery, plan: PairPlan) -> list[TcpPath]:
    """USB4 networking links between the pair other than the one the plan already times."""
    facts = found.facts_by_name
    known = [facts[name] for name in plan.pair if name in facts]
    if len(known) != 2:
        return []
    out = []
    for link in found.topology.links_from(plan.a, plan.b):
        if link.transport != "thunderbolt-net":
            continue
        near, far = link.a, link.b
        if far.ipv4 is None:
            continue
        path = f"{near.label} -> {far.label} {far.ipv4.address}"
        if far.ipv4.address != plan.tcp_address:
            out.append(TcpPath(USB4, far.ipv4.address, path))
    return out
