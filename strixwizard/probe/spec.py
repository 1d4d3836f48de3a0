"""What a capture collects: the files, symlinks and commands the facts read.

The same spec drives a local `capture` and the one-exec SSH collection, so a
node seen over SSH, from a snapshot or locally answers the same questions. A
test runs every fact against the snapshots and asserts each path it touched is
covered here; add a pattern when you add a fact that reads something new.

Patterns are `glob` patterns on absolute paths. A command may carry `each`:
`"netdev"` or `"rdmadev"`, meaning "once per entry of /sys/class/net" (or of
/sys/class/infiniband), with `{netdev}`/`{rdmadev}` replaced in its argv.
"""

from __future__ import annotations

from typing import TypedDict

from strixwizard.facts.rocm import RCCL_LIBRARIES, rccl_argv


class CommandSpec(TypedDict, total=False):
    argv: list[str]
    each: str


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
)

_CNP_COUNTERS = ("cnpSent", "cnpHandled", "RxECNMrkd", "np_cnp_sent", "rp_cnp_handled",
                 "np_ecn_marked_roce_packets")
_NET_ATTRS = ("mtu", "operstate", "carrier", "speed", "address", "type", "ifindex")
_IB_ATTRS = ("node_type", "fw_ver", "node_guid", "hca_type", "parent")
_IB_PORT_ATTRS = ("state", "phys_state", "link_layer", "rate", "lid", "sm_lid")
_TB_ATTRS = ("uevent", "generation", "device_name", "vendor_name", "rx_speed", "rx_lanes",
             "tx_speed", "tx_lanes")

SPEC: CollectionSpec = {
    "files": [
        # node identity
        "/proc/cpuinfo",
        "/proc/meminfo",
        "/proc/cmdline",
        "/proc/sys/kernel/osrelease",
        "/proc/sys/kernel/hostname",
        "/etc/os-release",
        # PCI devices (GPU, NICs, USB4 routers)
        *(f"/sys/bus/pci/devices/*/{attr}" for attr in _PCI_ATTRS),
        # the GPU as ROCm sees it (KFD topology) and its memory pools
        "/sys/class/kfd/kfd/topology/nodes/*/name",
        "/sys/class/kfd/kfd/topology/nodes/*/properties",
        "/sys/class/drm/card*/device/mem_info_gtt_total",
        "/sys/class/drm/card*/device/mem_info_vram_total",
        "/sys/module/ttm/parameters/pages_limit",
        "/sys/module/amdgpu/parameters/gttsize",
        # ROCm and the locked-memory limit of the collecting process (see facts/limits.py)
        "/opt/rocm/.info/version",
        "/proc/self/limits",
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
        # persistence: init, networkd state, strixwizard's own files (see facts/persistence.py)
        "/proc/1/comm",
        "/run/systemd/netif/links/*",
        "/etc/systemd/system/*strixwizard*",
        "/etc/security/limits.d/*strixwizard*",
        "/etc/modprobe.d/*strixwizard*",
        "/etc/strixwizard/*strixwizard*",
        "/etc/systemd/network/*.network.d/*strixwizard*",
        # USB4 / Thunderbolt
        *(f"/sys/bus/thunderbolt/devices/*/{attr}" for attr in _TB_ATTRS),
    ],
    "links": [
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
    "commands": [
        {"argv": ["ip", "-j", "addr", "show"]},
        {"argv": ["ethtool", "-i", "{netdev}"], "each": "netdev"},
        {"argv": ["ethtool", "-a", "{netdev}"], "each": "netdev"},
        {"argv": ["ethtool", "--show-priv-flags", "{netdev}"], "each": "netdev"},
        {"argv": ["dcb", "-j", "pfc", "show", "dev", "{netdev}"], "each": "netdev"},
        {"argv": ["dcb", "-j", "ets", "show", "dev", "{netdev}"], "each": "netdev"},
        {"argv": ["dcb", "-j", "app", "show", "dev", "{netdev}"], "each": "netdev"},
        {"argv": ["dcb", "-j", "apptrust", "show", "dev", "{netdev}"], "each": "netdev"},
        {"argv": ["devlink", "-j", "dev", "param", "show"]},
        # persistence: which interfaces NetworkManager manages; the boot entry's cmdline
        {"argv": ["nmcli", "-t", "-f", "DEVICE,TYPE,STATE,CONNECTION", "device", "status"]},
        {"argv": ["grubby", "--info=DEFAULT"]},
        # active_mtu is not in sysfs; the verbs query reports it
        {"argv": ["ibv_devinfo"]},
        # RCCL's gfx targets: see facts/rocm.py for why this argv and what it can tell
        *(CommandSpec(argv=list(rccl_argv(lib))) for lib in RCCL_LIBRARIES),
    ],
}
