"""`rdma -j link show`: the kernel's own list of RDMA links, a cross-check of sysfs.

iproute2's rdma/link.c (`link_one_show`) prints one JSON object per port: `ifindex`,
`ifname` (the RDMA device), `port`, `state` ("ACTIVE", "DOWN", ...), `physical_state`
("LINK_UP", "DISABLED", ...) and, when the port's netdev is visible in the caller's network
namespace, `netdev` and `netdev_index` (a container without that netdev prints none).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from strixwizard.facts.outputs import Output, command_output


@dataclass(frozen=True)
class RdmaLink:
    """One line of `rdma link`: a port, its states and its interface."""

    device: str
    port: int
    state: str | None
    physical_state: str | None
    netdev: str | None  # None: not visible from where rdma ran (a container) or none bound

    @property
    def name(self) -> str:
        return f"{self.device}/{self.port}"


def parse_rdma_link(text: str) -> tuple[RdmaLink, ...]:
    try:
        data = json.loads(text)
    except ValueError as error:
        raise ValueError(f"not JSON: {error}") from None
    if not isinstance(data, list) or not all(isinstance(e, dict) for e in data):
        raise ValueError("not a JSON list of links")
    links = []
    for entry in data:
        device, port = entry.get("ifname"), entry.get("port")
        if not isinstance(device, str) or not isinstance(port, int):
            raise ValueError(f"a link without ifname and port: {entry!r}"[:120])
        netdev = entry.get("netdev")
        links.append(RdmaLink(device, port, entry.get("state"), entry.get("physical_state"),
                              netdev if isinstance(netdev, str) and netdev else None))
    return tuple(links)


RDMA_LINK: Output[tuple[RdmaLink, ...]] = command_output(
    "rdma.link", ("rdma", "-j", "link", "show"), parse_rdma_link)
