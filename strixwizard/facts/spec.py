"""What a capture collects: the files, symlinks and commands the facts read.

The same spec drives a local `capture` and the one-exec SSH collection, so a
node seen over SSH, from a snapshot or locally answers the same questions.
Commands and parsed files come from the outputs the facts declare
(`strixwizard/facts/outputs.py`): declaring one is all it takes to collect it.
Listed here are only the plain sysfs attributes and links the facts read with
`read_str`/`read_int`/`readlink`. A test runs every fact against the snapshots
and asserts each path it touched is covered.

Patterns are `glob` patterns on absolute paths. A command may carry `each`:
`"netdev"` or `"rdmadev"`, meaning "once per entry of /sys/class/net" (or of
/sys/class/infiniband), with `{netdev}`/`{rdmadev}` replaced in its argv, and `root`:
the read needs root (on a `become: sudo` node it alone runs through sudo).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TypedDict

from strixwizard.facts import declared
from strixwizard.facts.persistence import OWNED_DIRS


class CommandSpec(TypedDict, total=False):
    argv: list[str]
    each: str
    root: bool  # the read needs root: through sudo on a `become: sudo` node


class CollectionSpec(TypedDict):
    files: list[str]
    links: list[str]
    commands: list[CommandSpec]


_PCI_ATTRS = (
    "vendor",
    "device",
    "class",
    "subsystem_vendor",
    "subsystem_device",
    "current_link_speed",
    "current_link_width",
    "max_link_speed",
    "max_link_width",
    "removable",  # "removable": tunnelled below a USB4/Thunderbolt port (facts/nic.py PcieTunnel)
)

_CNP_COUNTERS = ("cnpSent", "cnpHandled", "RxECNMrkd", "np_cnp_sent", "rp_cnp_handled",
                 "np_ecn_marked_roce_packets")
_NET_ATTRS = ("mtu", "operstate", "carrier", "speed", "address", "type", "ifindex", "mode")
_IB_ATTRS = ("node_type", "fw_ver", "node_guid", "hca_type", "parent")
_IB_PORT_ATTRS = ("state", "phys_state", "link_layer", "rate", "lid", "sm_lid")
_TB_ATTRS = ("generation", "device_name", "vendor_name", "rx_speed", "rx_lanes",
             "tx_speed", "tx_lanes")

_COLLECTED = [o for o in declared() if o.collect]

SPEC: CollectionSpec = {
    "files": [
        # node identity, kernel, memory, limits, KFD topology, ROCm, networkd, init, uevents
        *(o.spec_pattern() for o in _COLLECTED if not o.is_command),
        # PCI devices (GPU, NICs, USB4 routers)
        *(f"/sys/bus/pci/devices/*/{attr}" for attr in _PCI_ATTRS),
        # the GPU as ROCm sees it (KFD topology) and its memory pools
        "/sys/class/kfd/kfd/topology/nodes/*/name",
        "/sys/class/drm/card*/device/mem_info_gtt_total",
        "/sys/class/drm/card*/device/mem_info_vram_total",
        "/sys/module/ttm/parameters/pages_limit",
        "/sys/module/amdgpu/parameters/gttsize",
        "/proc/sys/kernel/hostname",
        # netdevs
        *(f"/sys/class/net/*/{attr}" for attr in _NET_ATTRS),
        # RDMA devices, ports, GID tables; rdma_cm configfs (read only: never created here)
        *(f"/sys/class/infiniband/*/{attr}" for attr in _IB_ATTRS),
        *(f"/sys/class/infiniband/*/ports/*/{attr}" for attr in _IB_PORT_ATTRS),
        "/sys/class/infiniband/*/ports/*/gids/*",
        "/sys/class/infiniband/*/ports/*/gid_attrs/types/*",
        "/sys/class/infiniband/*/ports/*/gid_attrs/ndevs/*",
        "/sys/kernel/config/rdma_cm/*/ports/*/default_roce_mode",
        "/sys/kernel/config/rdma_cm/*/ports/*/default_roce_tos",
        # ECN / DCQCN (facts/ecn.py): mlx5 per-priority switches, irdma configfs, counters
        "/sys/class/net/*/ecn/roce_np/enable/*",
        "/sys/class/net/*/ecn/roce_rp/enable/*",
        "/sys/kernel/config/irdma/*/roce_dcqcn_enable",
        *(f"/sys/class/infiniband/*/ports/*/hw_counters/{name}" for name in _CNP_COUNTERS),
        # strixwizard's own files (see facts/persistence.py)
        *(f"{directory}/*strixwizard*" for directory in OWNED_DIRS),
        "/etc/systemd/network/*.network.d/*strixwizard*",
        # USB4 / Thunderbolt
        *(f"/sys/bus/thunderbolt/devices/*/{attr}" for attr in _TB_ATTRS),
    ],
    "links": [
        "/sys/bus/pci/devices/*",  # the device's path from its root port (facts/nic.py PcieTunnel)
        "/sys/bus/pci/devices/*/driver",
        "/sys/class/drm/card*/device",
        "/sys/class/net/*",
        "/sys/class/net/*/device",
        "/sys/class/net/*/device/driver",
        "/sys/class/infiniband/*",
        "/sys/class/infiniband/*/device",
        "/sys/bus/thunderbolt/devices/*",
        "/etc/systemd/system/multi-user.target.wants/*strixwizard*",
    ],
    # every declared command (ip, ethtool, dcb, devlink, nmcli, grubby, ibv_devinfo, RCCL's grep)
    "commands": [CommandSpec(**c) for o in _COLLECTED if o.is_command  # type: ignore[typeddict-item]
                 for c in o.spec_commands()],
}


def spec_without(outputs: Iterable[str]) -> CollectionSpec:
    """SPEC without the commands of the named outputs (`doctor --level quick` leaves out the
    reads that cost most on a node); files and links stay as they are."""
    left_out = set(outputs)
    unknown = left_out - {o.name for o in _COLLECTED if o.is_command}
    if unknown:
        raise ValueError(f"no collected command output named {sorted(unknown)}")
    return {"files": list(SPEC["files"]), "links": list(SPEC["links"]), "commands": [
        CommandSpec(**c) for o in _COLLECTED  # type: ignore[typeddict-item]
        if o.is_command and o.name not in left_out for c in o.spec_commands()]}
