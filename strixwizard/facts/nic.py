"""Network adapters on the PCI bus: model, driver, firmware and PCIe link.

A NIC is any PCI function of class 02 (network). Its family, model and
nominal speed come from the vendor modules (`strixwizard.vendors`). The PCIe
link is read from sysfs `current_link_*` / `max_link_*`; "usable" bandwidth
accounts for line encoding (8b/10b up to 5 GT/s, 128b/130b from 8 GT/s).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from strixwizard.facts.ethtool import DriverInfo, driver_info
from strixwizard.facts.pci import PciDevice
from strixwizard.facts.source import read_int, read_str
from strixwizard.probe import Probe
from strixwizard.vendors import Vendor, by_family
from strixwizard.vendors import identify as identify_pci

#: Share of a PCIe link's usable bandwidth RDMA reaches (TLP headers, DLLPs, flow-control
#: credits): an E810 in a PCIe 4.0 x4 slot (63 Gb/s) tops out near 50 Gb/s (kyuz0's published
#: ib_write_bw, https://github.com/kyuz0/amd-strix-halo-vllm-toolboxes/blob/main/rdma_cluster/setup_guide.md).
PCIE_RDMA_EFFICIENCY = 0.8

#: usable Gb/s per lane for each transfer rate
_LANE_GBPS = {2.5: 2.0, 5.0: 4.0, 8.0: 7.877, 16.0: 15.754, 32.0: 31.508, 64.0: 60.5}


def parse_link_speed(text: str | None) -> float | None:
    """ "16.0 GT/s PCIe" (newer kernels), "8 GT/s" or "8.0 GT/s" (older) → GT/s."""
    match = re.match(r"\s*([\d.]+)\s*GT/s", text or "")
    return float(match.group(1)) if match else None


def lane_gbps(gts: float) -> float:
    return _LANE_GBPS.get(gts, gts * (128 / 130))


@dataclass(frozen=True)
class PcieLink:
    """A PCIe link's current and maximum speed and width."""

    speed_gts: float | None
    width: int | None
    max_speed_gts: float | None
    max_width: int | None

    @property
    def gbps(self) -> float | None:
        """Usable bandwidth per direction of the link as trained."""
        if self.speed_gts is None or not self.width:
            return None
        return lane_gbps(self.speed_gts) * self.width

    @property
    def rdma_ceiling_gbps(self) -> float | None:
        """About what RDMA reaches through the link as trained (`nic.pcie_link`'s figure)."""
        return None if self.gbps is None else self.gbps * PCIE_RDMA_EFFICIENCY

    @property
    def max_gbps(self) -> float | None:
        if self.max_speed_gts is None or not self.max_width:
            return None
        return lane_gbps(self.max_speed_gts) * self.max_width

    @property
    def downgraded(self) -> bool:
        return bool(
            (self.width and self.max_width and self.width < self.max_width)
            or (self.speed_gts and self.max_speed_gts and self.speed_gts < self.max_speed_gts)
        )

    def describe(self) -> str:
        def one(speed: float | None, width: int | None) -> str:
            return f"{speed:g} GT/s x{width}" if speed and width else "unknown"

        text = one(self.speed_gts, self.width)
        if self.downgraded:
            text += f" (card supports {one(self.max_speed_gts, self.max_width)})"
        return text


#: A PCI function address in a sysfs path ("0000:c2:00.0")
_PCI_ADDRESS = re.compile(r"^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$")


@dataclass(frozen=True)
class PcieTunnel:
    """A NIC reached through a USB4/Thunderbolt PCIe tunnel (an enclosure on a USB4 cable).

    The kernel marks every PCI device tunnelled below a USB4/Thunderbolt port `removable`
    (drivers/pci/probe.c `pci_set_removable`, `pcie_is_tunneled`:
    https://github.com/torvalds/linux/blob/master/drivers/pci/probe.c; the attribute:
    https://www.kernel.org/doc/Documentation/ABI/testing/sysfs-devices-removable). The first
    removable bridge on the device's path is the enclosure's upstream port; the port above
    it is the host's end of the tunnel. The NIC's own PCIe link (to the enclosure's bridge)
    says nothing of the tunnel, which shares the USB4 link."""

    host_port: str | None  # the host's PCIe port the tunnel leaves from
    enclosure_port: str  # the first tunnelled bridge: the enclosure's upstream port
    path: tuple[str, ...]  # PCI functions from the root port down to the NIC


def pcie_tunnel(probe: Probe, address: str) -> PcieTunnel | None:
    """The tunnel a PCI function sits behind, from its sysfs path and the `removable` marks."""
    target = probe.readlink(f"/sys/bus/pci/devices/{address}")
    path = tuple(part for part in (target or "").split("/") if _PCI_ADDRESS.match(part))
    if not path or path[-1] != address:
        return None
    marks = [read_str(probe, f"/sys/bus/pci/devices/{a}/removable") == "removable" for a in path]
    if not marks[-1]:
        return None
    first = marks.index(True)
    return PcieTunnel(path[first - 1] if first else None, path[first], path)


@dataclass(frozen=True)
class Nic:
    """A network controller on the PCI bus, its NIC family and model, and its interfaces."""

    pci: PciDevice
    family: str  # a `strixwizard.vendors` family: "e810", "connectx", "connectx3"...; "other"
    model: str
    nominal_gbps: int | None
    pcie: PcieLink | None
    netdevs: tuple[str, ...]
    driver_info: DriverInfo | None  # ethtool -i of its first netdev
    tunnel: PcieTunnel | None = None  # behind a USB4/Thunderbolt PCIe tunnel

    @property
    def address(self) -> str:
        return self.pci.address

    @property
    def vendor(self) -> Vendor:
        return by_family(self.family)

    @property
    def rdma_capable(self) -> bool:
        return self.vendor.is_rdma_nic

    @property
    def expected_driver(self) -> str | None:
        return self.vendor.netdev_driver

    @property
    def firmware(self) -> str | None:
        return self.driver_info.firmware if self.driver_info else None


def identify(pci: PciDevice) -> tuple[str, str, int | None]:
    """(family, model, nominal Gb/s) of a network PCI function."""
    vendor, model, speed = identify_pci(pci.vendor, pci.device)
    return vendor.family, model, speed


def pcie_link(probe: Probe, address: str) -> PcieLink | None:
    base = f"/sys/bus/pci/devices/{address}"
    link = PcieLink(
        speed_gts=parse_link_speed(read_str(probe, f"{base}/current_link_speed")),
        width=read_int(probe, f"{base}/current_link_width"),
        max_speed_gts=parse_link_speed(read_str(probe, f"{base}/max_link_speed")),
        max_width=read_int(probe, f"{base}/max_link_width"),
    )
    return None if link.speed_gts is None and link.width is None else link


def nics(probe: Probe, pci: tuple[PciDevice, ...], netdevs_by_pci: dict[str, tuple[str, ...]]
         ) -> tuple[Nic, ...]:
    found = []
    for device in pci:
        if device.pci_class >> 16 != 0x02:
            continue
        family, model, speed = identify(device)
        names = netdevs_by_pci.get(device.address, ())
        found.append(Nic(
            pci=device,
            family=family,
            model=model,
            nominal_gbps=speed,
            pcie=pcie_link(probe, device.address),
            netdevs=names,
            driver_info=driver_info(probe, names[0]) if names else None,
            tunnel=pcie_tunnel(probe, device.address),
        ))
    return tuple(found)
