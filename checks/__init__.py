"""The registry of checks. A check exists for the engine only once it is listed in `ALL`
and has its entry (title, severity, fix, explain text) in `checks/catalog.yaml`."""

from __future__ import annotations

from checks import counters, family, links, llama, lossless, nic, node, platform, rdma, usb4, versions
from strixwizard.checking.declare import Check

ALL: tuple[Check, ...] = (
    # node
    node.cpu_is_strix_halo,
    node.igpu_visible_to_rocm,
    node.gtt_sized_for_models,
    platform.ttm_limit,
    platform.rocm_version,
    platform.rccl_has_gfx1151,
    platform.iommu,
    platform.memlock_unlimited,
    versions.rdma_core_version,
    versions.linux_firmware,
    versions.kernel_known_good,
    # NICs and RDMA ports
    nic.rdma_capable,
    nic.nic_driver,
    nic.pcie_link,
    versions.nic_firmware_known_good,
    rdma.port_active,
    rdma.roce_v2_gid,
    rdma.active_mtu,
    rdma.roce_v2_default,
    # lossless RoCE, and the rules a NIC family declares (vendors/)
    lossless.flow_control,
    lossless.pause_and_pfc,
    lossless.pfc_priority,
    lossless.trust,
    lossless.ecn_congestion,
    family.roce_enabled,
    family.fw_lldp_off,
    family.one_pfc_tc,
    # fabric health counters, and rdma link against sysfs
    counters.fabric_counters,
    counters.rdma_link_cross_check,
    # USB4 / Thunderbolt
    usb4.soft_rdma,
    usb4.rdma_provider,
    usb4.link_rate,
    usb4.bond_reordering,
    # links (both ends) and the site
    links.transport,
    links.same_link_layer,
    links.same_mtu,
    links.same_speed,
    links.same_pfc,
    links.same_trust,
    links.same_roce_version,
    links.rdma_path,
    # llama.cpp RPC: the build on each node and across the site
    llama.rpc_rdma,
    llama.rpc_cache,
    llama.gpu_backend,
    llama.same_build,
)

BY_ID: dict[str, Check] = {check.id: check for check in ALL}
