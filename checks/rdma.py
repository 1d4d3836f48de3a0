"""RDMA ports on the fabric: up, with a RoCE v2 IPv4 GID, a 4096 active MTU and RoCE v2 for rdma_cm."""

from __future__ import annotations

from collections.abc import Iterator

from checks.scope import RDMA_PORTS, RDMA_PORTS_IN_USE, ROCE_PORTS, ROCE_PORTS_IN_USE, HardwarePort
from strixwizard.checking.declare import failed, node_check, passed, skipped, verdict, warned
from strixwizard.facts import NodeFacts
from strixwizard.model import Finding
from strixwizard.site import Site
from strixwizard.topology import in_use
from strixwizard.vendors import infiniband

#: A netdev MTU that leaves room for RoCE v2 headers around a 4096-byte RDMA payload.
ROCE_4096_NETDEV_MTU = 4200


@node_check("rdma.port_active", per=RDMA_PORTS)
def port_active(node: NodeFacts, site: Site, on: HardwarePort) -> Iterator[Finding]:
    """Reads ports/N/state and phys_state; unused ports (no address, no link) are skipped."""
    port = on.port
    observed = f"{port.state or '?'} / {port.phys_state or '?'}"
    expected = "ACTIVE / LinkUp"
    if port.is_active and port.phys_state == "LinkUp":
        yield passed(on.entity, observed=observed, expected=expected)
    elif not in_use(on.fabric) and not port.is_active:
        yield skipped(on.entity, f"{observed}: port not in use (no IPv4 address)")
    elif port.state == "INIT" and port.phys_state == "LinkUp" and not port.is_ethernet:
        yield failed(on.entity, observed=observed, expected=expected,
                     detail=infiniband.SUBNET_MANAGER)
    else:
        yield failed(on.entity, observed=observed, expected=expected,
                     detail="Check the cable, the peer's port and `ip link set "
                     f"{on.netdev} up`.")


@node_check("rdma.roce_v2_gid", per=ROCE_PORTS)
def roce_v2_gid(node: NodeFacts, site: Site, on: HardwarePort) -> Iterator[Finding]:
    """Finds the "RoCE v2" GID with value ::ffff:a.b.c.d on the port's netdev, and names its index."""
    port = on.port
    if on.device.is_iwarp:
        yield skipped(on.entity, "iWARP device: no RoCE GIDs")
        return
    gid = port.roce_v2_ipv4_gid(on.netdev)
    if gid is not None:
        yield passed(on.entity, observed=f"GID index {gid.index} = ::ffff:{gid.ipv4} RoCE v2",
                     expected="a RoCE v2 IPv4-mapped GID")
    elif on.fabric.netdev.addresses is None:
        yield skipped(on.entity, "addresses not captured (`ip -j addr show`), GID table "
                      "has no RoCE v2 IPv4 entry")
    elif not on.fabric.netdev.ipv4:
        if not port.is_active:
            yield skipped(on.entity, "port not in use (down, no IPv4 address)")
            return
        yield failed(on.entity, observed="no IPv4 address on the netdev, so no IPv4 GID",
                     expected="a RoCE v2 IPv4-mapped GID",
                     detail=f"Give {on.netdev} its fabric address (site.yaml "
                     "fabric_address).")
    else:
        types = sorted({g.type or "?" for g in port.gids})
        yield failed(on.entity, observed=f"GID types present: {', '.join(types) or 'none'}",
                     expected="a RoCE v2 IPv4-mapped GID",
                     detail="The device offers no RoCE v2 GID for the address; on E810 enable "
                     "RoCE (not iWARP), on ConnectX-3 only the Pro supports RoCE v2.")


@node_check("rdma.active_mtu", per=RDMA_PORTS_IN_USE)
def active_mtu(node: NodeFacts, site: Site, on: HardwarePort) -> Iterator[Finding]:
    """Uses active_mtu from ibv_devinfo; when not captured, judges only a netdev MTU that is too small."""
    port = on.port
    mtu = on.fabric.netdev.mtu
    roce = port.is_ethernet
    observed = (f"active_mtu {port.active_mtu or '?'}"
                + (f", {on.netdev} MTU {mtu or '?'}" if roce else ""))
    expected = "active_mtu 4096" + (f", netdev MTU >= {ROCE_4096_NETDEV_MTU}" if roce else "")
    if port.active_mtu is None:
        if roce and mtu is not None and mtu < ROCE_4096_NETDEV_MTU:
            yield warned(on.entity, observed=observed, expected=expected,
                         detail=f"Raise the MTU of {on.netdev} to 9000 on both ends.")
        else:
            yield skipped(on.entity, "active_mtu unknown: `ibv_devinfo` was not captured")
    elif roce and port.active_mtu < 4096 and mtu is not None and mtu >= ROCE_4096_NETDEV_MTU:
        yield warned(on.entity, observed=observed, expected=expected,
                     detail=path_mtu_below_netdev(on.netdev, port.active_mtu, mtu, port.max_mtu),
                     fixable=False)
    else:
        fix = (f"Raise the MTU of {on.netdev} to 9000 on both ends of the link."
               if roce else infiniband.PORT_MTU)
        yield verdict(port.active_mtu >= 4096, on.entity, observed, expected, fix)


#: A 4x DGX Spark TP4 run measured prefill about 40 % below the published figures for the same
#: profile, on a fabric that "runs RoCE MTU 1024" (the author's only lead, not investigated).
MTU_1024_COST_SOURCE = "https://github.com/0xSero/local-ai-registry/pull/55"
#: NVIDIA: a port MTU of 4200 gives active_mtu 4096.
MTU_4200_SOURCE = "https://enterprise-support.nvidia.com/s/article/mtu-considerations-for-roce-based-applications"


def path_mtu_below_netdev(netdev: str, active: int, mtu: int, max_mtu: int | None) -> str:
    """The named finding: the RoCE path MTU below 4096 while the netdev allows 4096."""
    if max_mtu is not None and max_mtu < 4096:
        cure = (f"The port's max_mtu is {max_mtu}: the NIC or its firmware caps it; a NIC (or a "
                "firmware setting) that allows 4096 is the cure.")
    else:
        cure = (f"The port did not follow the netdev: set the MTU again (`ip link set dev {netdev} "
                f"mtu {mtu}`; a port MTU of 4200 gives active_mtu 4096, {MTU_4200_SOURCE}), "
                "restart the RDMA programs and read `ibv_devinfo | grep active_mtu` on both ends.")
    return (f"RoCE path MTU {active} under a {mtu}-byte {netdev}: every RDMA message goes in "
            f"{active}-byte packets, 4x the packets of 4096. llama.cpp's RDMA transport takes the "
            "port's active_mtu as its path MTU (its log: `RDMA activated: ... mtu=1024`), as RCCL "
            "and perftest do. Measured cost: a 4x DGX Spark run at RoCE MTU 1024 prefilled about "
            f"40 % below the published figures for the same profile ({MTU_1024_COST_SOURCE}; the "
            f"author's only lead). {cure}")


@node_check("rdma.roce_v2_default", per=ROCE_PORTS_IN_USE)
def roce_v2_default(node: NodeFacts, site: Site, on: HardwarePort) -> Iterator[Finding]:
    """Reads configfs rdma_cm/<dev>/ports/<n>/default_roce_mode, which exists only once created."""
    port = on.port
    mode = port.default_roce_mode
    if mode is None:
        yield skipped(
            on.entity,
            f"unknown: /sys/kernel/config/rdma_cm/{port.device} does not exist (a read-only probe "
            "does not create it); the kernel default is RoCE v2 when the device supports it",
        )
        return
    attr = f"/sys/kernel/config/rdma_cm/{port.device}/ports/{port.number}"
    tos = node.persistence.roce_tos.get(f"{port.device}/{port.number}")
    dscp = site.fabric.roce_dscp
    observed = mode.strip() + (f", ToS {tos} (DSCP {tos >> 2})" if tos is not None else "")
    expected = f"RoCE v2, ToS DSCP {dscp} (priority {site.fabric.pfc_priority})"
    if mode.strip().lower() != "roce v2":
        yield failed(on.entity, observed=observed, expected=expected,
                     detail=f"echo 'RoCE v2' > {attr}/default_roce_mode")
    elif tos is not None and tos >> 2 != dscp:
        # the ToS byte is DSCP << 2 | ECN: its low two bits (ECT(0) in 106) do not matter here
        yield warned(on.entity, observed=observed, expected=expected,
                     detail=f"rdma_cm programs (rping, perftest -R, NFS/iSER over RDMA) send "
                     f"RoCE at DSCP {tos >> 2}, outside the lossless priority "
                     f"{site.fabric.pfc_priority}: `echo {dscp << 2} > {attr}/default_roce_tos` "
                     f"(DSCP {dscp}; {(dscp << 2) | 2} adds ECT(0) and is as good). RCCL sets its "
                     "own traffic class (NCCL_IB_TC).")
    else:
        yield passed(on.entity, observed=observed, expected=expected)
