"""PCI devices from /sys/bus/pci/devices."""

from __future__ import annotations

import posixpath
from dataclasses import dataclass

from strixwizard.probe import Probe

PCI_ROOT = "/sys/bus/pci/devices"


def _hex_id(text: str | None) -> int | None:
    if text is None:
        return None
    try:
        return int(text.strip(), 16)
    except ValueError:
        return None


@dataclass(frozen=True)
class PciDevice:
    """A PCI function: address, ids, class and bound driver."""

    address: str  # "0000:c2:00.0"
    vendor: int
    device: int
    pci_class: int  # 24-bit class code, e.g. 0x020000 for Ethernet
    driver: str | None

    @property
    def ids(self) -> str:
        """The familiar `vvvv:dddd` form lspci prints."""
        return f"{self.vendor:04x}:{self.device:04x}"


def pci_devices(probe: Probe) -> tuple[PciDevice, ...]:
    devices = []
    for address in probe.listdir(PCI_ROOT):
        base = f"{PCI_ROOT}/{address}"
        vendor = _hex_id(probe.read(f"{base}/vendor"))
        device = _hex_id(probe.read(f"{base}/device"))
        if vendor is None or device is None:
            continue
        link = probe.readlink(f"{base}/driver")
        devices.append(
            PciDevice(
                address=address,
                vendor=vendor,
                device=device,
                pci_class=_hex_id(probe.read(f"{base}/class")) or 0,
                driver=posixpath.basename(link) if link else None,
            )
        )
    return tuple(devices)
