"""The registry of fixes that checks name.

A fix here is declared with what a user needs to judge it before running it:
a summary, whether it can be undone, and whether it needs a reboot. Plans
(before → after steps) are produced by the fix engine (`strixwizard fix`).
"""

from __future__ import annotations

from strixwizard.model import FixRef

ALL: tuple[FixRef, ...] = (
    FixRef(
        id="kernel.gtt_size",
        summary="Raise ttm.pages_limit (and amdgpu.gttsize) on the kernel command line so the "
        "iGPU can map most of RAM",
        reversible=True,
        reboot=True,
    ),
    FixRef(
        id="kernel.iommu_pt",
        summary="Add iommu=pt to the kernel command line (IOMMU passthrough for host DMA)",
        reversible=True,
        reboot=True,
    ),
    FixRef(
        id="limits.memlock",
        summary="Set memlock unlimited for all users in /etc/security/limits.d/strixwizard.conf "
        "(new sessions pick it up)",
        reversible=True,
        reboot=False,
    ),
    FixRef(
        id="rocm.upgrade",
        summary="Install ROCm 7.2 or newer (AMD repository or TheRock), the first with working "
        "gfx1151 support",
        reversible=False,
        reboot=False,
    ),
    FixRef(
        id="rccl.gfx1151",
        summary="Install an RCCL built with gfx1151 code objects (RCCL >= 2.28.3)",
        reversible=True,
        reboot=False,
    ),
    FixRef(
        id="rdma.load_driver",
        summary="Load the NIC's RDMA driver now and at boot (irdma for E810, mlx5_ib/mlx4_ib for "
        "ConnectX) and install rdma-core",
        reversible=True,
        reboot=False,
    ),
    FixRef(
        id="net.mtu",
        summary="Set the fabric interface MTU to the site's value (9000) persistently, on both "
        "ends of each link",
        reversible=True,
        reboot=False,
    ),
    FixRef(
        id="net.fabric_address",
        summary="Assign the node's fabric_address from site.yaml to its RDMA interface "
        "persistently (NetworkManager)",
        reversible=True,
        reboot=False,
    ),
    FixRef(
        id="rdma.roce_v2_default",
        summary="Create configfs rdma_cm/<dev> and set ports/<n>/default_roce_mode to RoCE v2",
        reversible=True,
        reboot=False,
    ),
    FixRef(
        id="e810.enable_roce",
        summary="Switch E810 irdma to RoCE: devlink enable_roce true (runtime) or irdma "
        "roce_ena=1 for Intel's out-of-tree driver",
        reversible=True,
        reboot=False,
    ),
    FixRef(
        id="e810.fw_lldp_off",
        summary="Turn off the E810 firmware LLDP agent (ethtool --set-priv-flags IF "
        "fw-lldp-agent off) so Linux owns DCB",
        reversible=True,
        reboot=False,
    ),
    FixRef(
        id="dcb.pfc",
        summary="Enable PFC on the site's priority only (dcb pfc set dev IF prio-pfc all:off "
        "P:on), on both ends of each link",
        reversible=True,
        reboot=False,
    ),
    FixRef(
        id="dcb.trust_dscp",
        summary="Trust DSCP for classification (dcb apptrust set dev IF order dscp) on both ends",
        reversible=True,
        reboot=False,
    ),
    FixRef(
        id="ethtool.pause_off",
        summary="Turn link-level pause off where PFC is used (ethtool -A IF rx off tx off)",
        reversible=True,
        reboot=False,
    ),
)

BY_ID: dict[str, FixRef] = {fix.id: fix for fix in ALL}
