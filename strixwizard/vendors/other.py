"""RDMA NIC families known by their drivers only: no PCI table and no rules of their own yet.

They name the RDMA driver of a PCI function bound to their netdev driver; a NIC
of theirs is still identified as a generic network controller.
"""

from __future__ import annotations

from strixwizard.vendors.base import Vendor

BROADCOM = Vendor(family="bnxt", name="Broadcom NetXtreme-E", short="bnxt",
                  netdev_drivers=("bnxt_en",), rdma_driver="bnxt_re")
QLOGIC = Vendor(family="qede", name="QLogic FastLinQ", short="qede",
                netdev_drivers=("qede",), rdma_driver="qedr")
