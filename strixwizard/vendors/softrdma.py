"""Software RDMA: rxe (Soft-RoCE) and siw (soft iWARP) over any netdev. Verbs, not speed.

Figures from the Hellas blog's one-way `ib_write_lat` measurements (research
domain notes §1a, §1f).
"""

from __future__ import annotations

from strixwizard.vendors.base import Note, Vendor

#: Soft-RoCE bound to a thunderbolt-net interface.
OVER_THUNDERBOLT = ("Soft-RoCE over thunderbolt-net measured ~65 µs one-way, slower than plain TCP "
                    "tuned for latency; use a hardware RDMA NIC.")
#: Soft RDMA on any other netdev.
IN_CPU = ("Software RDMA runs in the kernel's CPU path (~28 µs on 2.5 GbE); keep it out of "
          "NCCL_IB_HCA.")

SOFT_RDMA = Vendor(
    family="softrdma",
    name="software RDMA (rxe/siw)",
    short="soft RDMA",
    rdma_driver="rdma_rxe",
    hardware_rdma=False,
    rdma_kinds=("rxe", "siw"),
    notes=(
        Note(IN_CPU, "blog.hellas.ai/blog/thunderbolt-ibverbs"),
        Note(OVER_THUNDERBOLT, "blog.hellas.ai/blog/thunderbolt-ibverbs"),
        Note("`rdma link add rxe0 type rxe netdev IF` makes a Soft-RoCE device on any netdev; rxe "
             "is RoCE v2 only.", "rdma-core; ibv_devinfo -v on rxe"),
    ),
)
