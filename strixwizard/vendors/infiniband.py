"""InfiniBand ports (ConnectX-3 and newer HCAs in IB mode): a subnet manager, SM-set MTU, no DCB.

From kyuz0's InfiniBand guide and the kernel's IB ABI (research domain notes
§1c, §4.9).
"""

from __future__ import annotations

from strixwizard.vendors.base import Note, Vendor

#: What to do about a port that stays INIT: it has link, but nobody assigned it a LID.
SUBNET_MANAGER = ("InfiniBand port stuck in INIT: no subnet manager. Run `systemctl enable --now "
                  "opensm` on exactly one node.")
#: Who sets the port MTU on InfiniBand.
PORT_MTU = "The IB port MTU is set by the subnet manager (opensm partitions)."

INFINIBAND = Vendor(
    family="infiniband",
    name="InfiniBand",
    short="IB",
    link_layer="InfiniBand",
    transports=("infiniband",),
    site_mtu=False,  # the SM sets the port MTU; IPoIB's netdev MTU follows its mode
    notes=(
        Note(SUBNET_MANAGER, "kyuz0-vllm rdma_cluster/setup_guide_infiniband.md"),
        Note(PORT_MTU),
        Note("No PFC/DCB on InfiniBand: the link layer is lossless by credit flow control."),
        Note("Tested on ConnectX-3 (mlx4) with IPoIB in datagram mode, MTU 2044; ib_write_lat "
             "about 1.1 µs.", "Strix Halo wiki, Clustering with RDMA"),
    ),
)
