"""Intel E810 (ice + irdma): RoCE v2 or iWARP, firmware LLDP, one PFC traffic class.

Device ids from drivers/net/ethernet/intel/ice/ice_devids.h; rules from the
kernel's ice.rst, Intel's irdma README and kyuz0's E810 RoCE guide (research
domain notes §1b, §2, §3).
"""

from __future__ import annotations

from strixwizard.vendors.base import Firmware, Model, Note, Qos, RoceSwitch, Vendor

E810 = Vendor(
    family="e810",
    name="Intel E810",
    short="E810",
    pci_vendor=0x8086,
    models=(
        Model(0x1591, "E810-C backplane", 100), Model(0x1592, "E810-C QSFP", 100),
        Model(0x1593, "E810-C SFP", 25), Model(0x1599, "E810-XXV backplane", 25),
        Model(0x159A, "E810-XXV QSFP", 25), Model(0x159B, "E810-XXV SFP", 25),
    ),
    model_prefix="Intel",
    netdev_drivers=("ice", "i40e"),  # i40e: X722, whose RDMA is irdma as well
    rdma_driver="irdma",
    qos=Qos(trust="dscp-app-entry", max_pfc_tcs=1, fw_lldp_flag="fw-lldp-agent",
            ecn_unknown="/sys/kernel/config/irdma/{device} does not exist (a read-only probe does "
            "not create it); DCQCN is off by default on irdma"),
    # NVMs before the 4.x line had DCB/RDMA defects; kyuz0's guide runs 4.91
    firmware=Firmware(minimum=(4, 0), expected="E810 NVM 4.x or newer",
                      advice="Update the NVM with Intel's nvmupdate64e; older NVMs mishandle "
                      "DCB and RDMA."),
    roce_switch=RoceSwitch(devlink_param="enable_roce", other_param="enable_iwarp",
                           module="irdma", module_option="roce_ena=1",
                           doc="https://docs.kernel.org/networking/devlink/ice.html"),
    notes=(
        Note("In-tree ice/irdma come up in RoCE v2; Intel's out-of-tree irdma defaults to iWARP "
             "(`options irdma roce_ena=1`).", "Intel irdma README; ice/irdma merge, Nov 2021"),
        Note("Firmware DCBX is always willing and overrides PFC/ETS set from Linux: "
             "`ethtool --set-priv-flags IF fw-lldp-agent off` (per port, persistent).",
             "kernel Documentation/networking/device_drivers/ethernet/intel/ice.rst"),
        Note("At most 4 traffic classes and one PFC-enabled traffic class.", "Intel irdma README"),
        Note("No `dcb apptrust`: the port switches to L3 DSCP QoS as soon as a DSCP APP entry "
             "exists; L3 mode is incompatible with firmware LLDP.", "Intel irdma README"),
        Note("irdma's GID table is RoCE v2 only: the IPv4 entry is usually index 1.",
             "kyuz0-vllm rdma_cluster/setup_guide.md"),
        Note("NCCL detects RoCE by lid == 0; some releases raise ncclSystemError on E810.",
             "NVIDIA/nccl #622"),
    ),
)
