"""The registry of fixes, in the order their plans run on a node.

Each fix is declared next to its plan function (`fixes.declare.fix`, or
`fixes.manual.manual_fix` for one strixwizard does not automate), with what a
user needs to judge it before running it: a summary, whether it can be undone,
and whether it needs a reboot. `ALL` and `BY_ID` (the metadata checks name and
doctor shows) are derived from `FIXES`, so they cannot drift from the plans.
"""

from __future__ import annotations

from fixes import lossless, manual, net, platform, rdma, usb4
from strixwizard.fixing.context import Fix
from strixwizard.model import FixRef

FIXES: tuple[Fix, ...] = (
    rdma.plan_enable_roce,
    lossless.plan_fw_lldp_off,
    net.plan_mtu,
    usb4.plan_tcp_reordering,
    lossless.plan_pfc,
    lossless.plan_pause_off,
    lossless.plan_trust_dscp,
    rdma.plan_roce_v2_default,
    platform.plan_memlock,
    platform.plan_iommu_pt,
    platform.plan_gtt_size,
    manual.rocm_upgrade,
    manual.rccl_gfx1151,
    manual.rdma_load_driver,
    manual.net_fabric_address,
)

ALL: tuple[FixRef, ...] = tuple(f.ref for f in FIXES)
BY_ID: dict[str, FixRef] = {fix.id: fix for fix in ALL}
PLANS: dict[str, Fix] = {fix.id: fix for fix in FIXES}
