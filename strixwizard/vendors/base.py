"""What a vendor module declares: how to recognise a NIC family, and the rules it plays by.

A vendor is data, not code: checks and fixes read these fields instead of
comparing family names. A field left at its default means "nothing special":
trust set with `dcb apptrust`, any number of PFC traffic classes, no firmware
agent, no vendor tool.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

TrustMode = Literal["apptrust", "dscp-app-entry"]


@dataclass(frozen=True)
class Note:
    """Something worth knowing about a vendor, and where it was read."""

    text: str
    source: str = ""


@dataclass(frozen=True)
class Model:
    """A NIC model of a family: PCI device id, name, nominal speed."""

    device: int  # PCI device id
    name: str  # "E810-C QSFP"
    gbps: int | None  # nominal port speed


@dataclass(frozen=True)
class Firmware:
    """The oldest firmware known to run RDMA well, and what to tell when it is older."""

    minimum: tuple[int, ...]
    expected: str
    advice: str


@dataclass(frozen=True)
class RoceSwitch:
    """An RDMA driver that can come up in iWARP and is switched to RoCE.

    In-tree drivers take a devlink parameter at runtime; an out-of-tree driver
    without it takes a module option (which needs a reload).
    """

    devlink_param: str
    other_param: str  # the exclusive alternative, turned off first
    module: str
    module_option: str
    doc: str = ""  # where the driver documents the devlink parameters


@dataclass(frozen=True)
class LinkTypeSwitch:
    """A VPI NIC whose ports run InfiniBand or Ethernet, set in its firmware (read at start)."""

    command: str  # with {device} (PCI address), {port}, {value}
    ethernet: str  # the value for Ethernet
    infiniband: str  # the value for InfiniBand
    apply: str  # how the firmware takes it, with {device}
    doc: str


@dataclass(frozen=True)
class Qos:
    """How the family takes lossless-RoCE settings (iproute2 `dcb` unless told otherwise)."""

    #: How the port's trust (classification) order is set and read: "apptrust" with
    #: `dcb apptrust`; "dscp-app-entry" for a driver without apptrust that classifies by DSCP
    #: (L3 mode) once a `dcb app` dscp-prio entry exists, and by PCP (L2) otherwise.
    trust: TrustMode = "apptrust"
    max_pfc_tcs: int | None = None  # how many traffic classes may have PFC (None: no limit known)
    fw_lldp_flag: str | None = None  # ethtool private flag of a firmware DCBX agent that wins
    tool: str = ""  # the vendor's own QoS tool, "mlnx_qos -i {netdev}"; "" when there is none
    tool_package: str = ""  # where that tool comes from ("MLNX_OFED")
    ecn_unknown: str = ""  # why ECN state can be unknown on a {device}; "" when it cannot

    @property
    def trust_by_dscp_entry(self) -> bool:
        return self.trust == "dscp-app-entry"

    def tool_command(self, netdev: str, args: str) -> str:
        """The vendor tool's equivalent of a `dcb` setting, or "" without a vendor tool."""
        return f"{self.tool.format(netdev=netdev)} {args}" if self.tool else ""


@dataclass(frozen=True)
class Vendor:
    """A NIC family: its models, and the rules and tools it declares."""

    family: str  # stable key: "e810", "connectx", "connectx3", "infiniband", ...
    name: str  # "Intel E810", for messages
    short: str  # "E810", for terse messages
    pci_vendor: int | None = None
    models: tuple[Model, ...] = ()
    model_prefix: str = ""  # "Intel", "NVIDIA/Mellanox"
    device_range: tuple[int, int] | None = None  # further device ids of the family, unnamed
    netdev_drivers: tuple[str, ...] = ()  # the first is the one a NIC of the family should run
    rdma_driver: str | None = None
    hardware_rdma: bool = True  # RDMA in NIC hardware (~5 µs); False for software/USB4 verbs
    rdma_kinds: tuple[str, ...] = ()  # RdmaDevice.kind values this vendor stands for
    link_layer: str | None = None  # a port link layer the vendor owns ("InfiniBand")
    transports: tuple[str, ...] = ()  # link transports (`strixwizard.topology`) it stands for
    site_mtu: bool = True  # the site's fabric MTU is set on its netdevs
    qos: Qos = Qos()
    firmware: Firmware | None = None
    roce_switch: RoceSwitch | None = None
    link_type_switch: LinkTypeSwitch | None = None
    notes: tuple[Note, ...] = ()

    @property
    def netdev_driver(self) -> str | None:
        return self.netdev_drivers[0] if self.netdev_drivers else None

    @property
    def is_rdma_nic(self) -> bool:
        """A PCI NIC family with RDMA in hardware (what `nic.rdma_capable` looks for)."""
        return self.hardware_rdma and self.rdma_driver is not None and self.pci_vendor is not None

    def identify(self, vendor: int, device: int) -> tuple[str, int | None] | None:
        """(model, nominal Gb/s) when the PCI id belongs to this family, else None."""
        if vendor != self.pci_vendor:
            return None
        for model in self.models:
            if model.device == device:
                return f"{self.model_prefix} {model.name}".strip(), model.gbps
        if self.device_range and self.device_range[0] <= device <= self.device_range[1]:
            return f"{self.model_prefix} {self.short} ({vendor:04x}:{device:04x})".strip(), None
        return None


#: What an unknown NIC family gets: no RDMA rules, no special QoS handling.
GENERIC = Vendor(family="other", name="unknown network controller", short="NIC",
                 hardware_rdma=False)
