"""USB4/Thunderbolt networking: thunderbolt-net (TCP only) and the experimental USB4 verbs.

From the kernel's admin-guide/thunderbolt.rst and hellas-ai/thunderbolt-ibverbs
(research domain notes §1f, §2).
"""

from __future__ import annotations

from strixwizard.vendors.base import Note, Vendor

#: Why thunderbolt-net is not an RDMA path.
TCP_ONLY = ("USB4/Thunderbolt networking is TCP only: no RDMA verbs, tens of µs instead of ~5 µs. "
            "Keep it for management; put RCCL on a RoCE/InfiniBand NIC link.")
#: What the experimental USB4 verbs are worth.
VERBS = ("Research-grade: ~7 µs one-way at best, cannot share the port with thunderbolt-net; pin "
         "NCCL_IB_HCA to an exact dev:port if you use it.")

USB4NET = Vendor(
    family="usb4net",
    name="USB4/Thunderbolt networking",
    short="USB4",
    netdev_drivers=("thunderbolt-net",),
    rdma_driver="thunderbolt_ibverbs",
    hardware_rdma=False,
    rdma_kinds=("usb4",),
    transports=("thunderbolt-net",),
    site_mtu=False,  # thunderbolt-net keeps its 65520 MTU
    notes=(
        Note(TCP_ONLY, "kernel Documentation/admin-guide/thunderbolt.rst"),
        Note(VERBS, "hellas-ai/thunderbolt-ibverbs bench/results/strix-2x40-noiommu/perftest.md"),
        Note("Idle USB4 retimers flap; 40 Gb/s needs a certified cable of 0.8 m or less."),
        Note("Interfaces are thunderbolt0, thunderbolt1...; they also carry an enx<mac> altname, so "
             "`en*` match rules can capture them.", "kernel admin-guide/thunderbolt.rst"),
    ),
)
