"""Every fix's plan function, registered explicitly, in the order plans run on a node.

`fixes.ALL` holds the metadata checks name (and `doctor` imports only that);
this module pairs each id with the function that plans it. A conformance test
asserts every id in `fixes.ALL` is here.
"""

from __future__ import annotations

from fixes import BY_ID, lossless, net, platform, rdma
from fixes.manual import MANUAL
from strixwizard.fixing.context import Fix

FIXES: tuple[Fix, ...] = (
    Fix(BY_ID["e810.enable_roce"], rdma.plan_enable_roce),
    Fix(BY_ID["e810.fw_lldp_off"], lossless.plan_fw_lldp_off),
    Fix(BY_ID["net.mtu"], net.plan_mtu),
    Fix(BY_ID["dcb.pfc"], lossless.plan_pfc),
    Fix(BY_ID["ethtool.pause_off"], lossless.plan_pause_off),
    Fix(BY_ID["dcb.trust_dscp"], lossless.plan_trust_dscp),
    Fix(BY_ID["rdma.roce_v2_default"], rdma.plan_roce_v2_default),
    Fix(BY_ID["limits.memlock"], platform.plan_memlock),
    Fix(BY_ID["kernel.iommu_pt"], platform.plan_iommu_pt),
    Fix(BY_ID["kernel.gtt_size"], platform.plan_gtt_size),
    *(Fix(BY_ID[fix_id], plan, automated=False) for fix_id, plan in MANUAL.items()),
)

PLANS: dict[str, Fix] = {fix.id: fix for fix in FIXES}
