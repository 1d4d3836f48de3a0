"""NVIDIA/Mellanox ConnectX: mlx5 (ConnectX-4 and newer) and mlx4 (ConnectX-3).

Device ids from the mlx5/mlx4 PCI tables (research domain notes §2); QoS from
upstream DCB netlink, with MLNX_OFED's `mlnx_qos` as the vendor tool (§3).

Trust: mlx5 switches the port to DSCP trust when the first DSCP APP entry is added and back
to PCP when the last one goes (`mlx5e_dcbnl_ieee_setapp`/`_delapp` in
drivers/net/ethernet/mellanox/mlx5/core/en_dcbnl.c), so without `dcb apptrust` the trust
state follows from `dcb app`; `mlnx_qos -i IF`, when installed, prints it outright.
"""

from __future__ import annotations

from strixwizard.vendors.base import LinkTypeSwitch, Model, Note, Qos, Vendor

MELLANOX = 0x15B3

#: VPI cards (ConnectX-3 VPI, ConnectX-4 to 7 VPI): LINK_TYPE_P<n> is 1 = IB, 2 = ETH, set with
#: NVIDIA's MFT and read by the firmware at start.
MLXCONFIG_LINK_TYPE = LinkTypeSwitch(
    command="mlxconfig -d {device} set LINK_TYPE_P{port}={value}", ethernet="2", infiniband="1",
    apply="reboot, or `mlxfwreset -d {device} reset`",
    doc="https://docs.nvidia.com/networking/display/mftv4320/using+mlxconfig")

CONNECTX = Vendor(
    family="connectx",
    name="NVIDIA ConnectX",
    short="ConnectX",
    pci_vendor=MELLANOX,
    models=(
        Model(0x1013, "ConnectX-4", 100), Model(0x1015, "ConnectX-4 Lx", 50),
        Model(0x1017, "ConnectX-5", 100), Model(0x1019, "ConnectX-5 Ex", 100),
        Model(0x101B, "ConnectX-6", 200), Model(0x101D, "ConnectX-6 Dx", 100),
        Model(0x101F, "ConnectX-6 Lx", 50), Model(0x1021, "ConnectX-7", 400),
        Model(0x1023, "ConnectX-8", 800),
    ),
    model_prefix="NVIDIA/Mellanox",
    device_range=(0x1000, 0x10FF),
    netdev_drivers=("mlx5_core",),
    rdma_driver="mlx5_ib",
    link_type_switch=MLXCONFIG_LINK_TYPE,
    qos=Qos(trust="dscp-app-entry", tool="mlnx_qos -i {netdev}", tool_package="MLNX_OFED"),
    notes=(
        Note("mlx5 implements DCB netlink, so upstream `dcb` works; MLNX_OFED's equivalent is "
             "`mlnx_qos -i IF --trust dscp --pfc 0,0,0,1,0,0,0,0`.",
             "att/netarbiter OUTPUTSAMPLE"),
        Note("Without `dcb apptrust`, mlx5 trusts DSCP exactly while DSCP APP entries exist; "
             "`mlnx_qos -i IF` prints `Priority trust state`, and "
             "/sys/class/infiniband/DEV/tc/1/traffic_class the RoCE ToS (`Global tclass=106`).",
             "mlx5 en_dcbnl.c mlx5e_dcbnl_ieee_setapp; att/netarbiter OUTPUTSAMPLE"),
        Note("The GID table lists RoCE v1/v2 pairs: the IPv4 RoCE v2 entry is usually index 3.",
             "show_gids output"),
        Note("rdma_cm mode and ToS: `cma_roce_mode -d mlx5_0 -p 1 -m 2`, `cma_roce_tos`."),
        Note("Global pause must be off when PFC is used (`ethtool -A IF rx off tx off`).",
             "Korean RoCE guide"),
    ),
)

CONNECTX3 = Vendor(
    family="connectx3",
    name="Mellanox ConnectX-3",
    short="ConnectX-3",
    pci_vendor=MELLANOX,
    models=(Model(0x1003, "ConnectX-3", 56), Model(0x1007, "ConnectX-3 Pro", 56)),
    model_prefix="Mellanox",
    netdev_drivers=("mlx4_core",),
    rdma_driver="mlx4_ib",
    link_type_switch=MLXCONFIG_LINK_TYPE,
    notes=(
        Note("ConnectX-3 runs InfiniBand or RoCE v1; only the Pro supports RoCE v2."),
        Note("lspci names it \"MT27500 Family [ConnectX-3]\"; kyuz0's InfiniBand guide and the "
             "wiki's cluster run on it.", "kyuz0-vllm rdma_cluster/setup_guide_infiniband.md"),
    ),
)
