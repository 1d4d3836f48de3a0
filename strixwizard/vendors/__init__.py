"""The NIC families strixwizard knows, one module each, and lookups that never fail.

Each module declares a `Vendor` (see `base`): PCI ids, netdev and RDMA
drivers, QoS/trust rules and notes with their sources. Checks and fixes ask a
vendor for a rule instead of comparing family names, so a new family is a new
module listed in `ALL`. A lookup that finds nothing answers `GENERIC`.
"""

from __future__ import annotations

from strixwizard.vendors import connectx, e810, infiniband, other, softrdma, usb4net
from strixwizard.vendors.base import GENERIC, Firmware, Model, Note, Qos, RoceSwitch, Vendor

__all__ = ["ALL", "GENERIC", "Firmware", "Model", "Note", "Qos", "RoceSwitch", "Vendor",
           "by_driver", "by_family", "by_link_layer", "by_pci", "by_rdma_kind", "by_transport",
           "identify", "rdma_driver_of", "rdma_nic_families"]

#: Every known family, most specific first (a PCI id is matched in this order).
ALL: tuple[Vendor, ...] = (
    e810.E810,
    connectx.CONNECTX3,
    connectx.CONNECTX,
    infiniband.INFINIBAND,
    usb4net.USB4NET,
    softrdma.SOFT_RDMA,
    other.BROADCOM,
    other.QLOGIC,
)


def _registered() -> tuple[Vendor, ...]:
    # read at call time, so a family added to ALL (or patched in by a test) is seen everywhere
    import strixwizard.vendors as registry

    return registry.ALL


def by_family(family: str | None) -> Vendor:
    return next((v for v in _registered() if v.family == family), GENERIC)


def identify(vendor: int, device: int) -> tuple[Vendor, str, int | None]:
    """The family of a PCI id, with the model name and nominal speed (GENERIC when unknown)."""
    for candidate in _registered():
        found = candidate.identify(vendor, device)
        if found is not None:
            return candidate, found[0], found[1]
    return GENERIC, f"network controller {vendor:04x}:{device:04x}", None


def by_pci(vendor: int, device: int) -> Vendor:
    return identify(vendor, device)[0]


def by_driver(driver: str | None) -> Vendor:
    """The family whose netdev or RDMA driver this is."""
    return next((v for v in _registered() if driver and (
        driver in v.netdev_drivers or driver == v.rdma_driver)), GENERIC)


def by_link_layer(link_layer: str | None) -> Vendor:
    wanted = (link_layer or "").lower()
    return next((v for v in _registered() if v.link_layer and v.link_layer.lower() == wanted),
                GENERIC)


def by_transport(transport: str) -> Vendor:
    """The family a link transport belongs to ("thunderbolt-net", "infiniband"), else GENERIC."""
    return next((v for v in _registered() if transport in v.transports), GENERIC)


def by_rdma_kind(kind: str) -> Vendor:
    return next((v for v in _registered() if kind in v.rdma_kinds), GENERIC)


def rdma_nic_families() -> tuple[Vendor, ...]:
    """The families that are hardware RDMA NICs (what a node without any should add)."""
    return tuple(v for v in _registered() if v.is_rdma_nic)


def rdma_driver_of(pci_driver: str | None) -> str | None:
    """The RDMA driver that serves a PCI function bound to `pci_driver` (itself when unknown)."""
    vendor = next((v for v in _registered() if pci_driver in v.netdev_drivers), None)
    return vendor.rdma_driver if vendor is not None and vendor.rdma_driver else pci_driver
