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
    ],
    "links": [
        "/sys/bus/pci/devices/*/driver",
        "/sys/class/drm/card*/device",
    ],
    "commands": [],
}
