"""The demo site's nodes: two Strix Halo boxes with Intel E810 NICs joined back to back.

Faults left in for the wizard to find (each is a real, common one):
- node-b boots without `amdgpu.gttsize`/`ttm.pages_limit`, so its iGPU may map
  only half of RAM and big models will not load.
"""

from __future__ import annotations

from strixwizard.demo.builder import FakeNode

TUNED_CMDLINE = "iommu=pt amdgpu.gttsize=126976 ttm.pages_limit=32505856"
MEM_TOTAL_KB = 131533192


def strix_halo_node(hostname: str, tuned_gtt: bool = True) -> FakeNode:
    node = FakeNode(hostname)
    node.cpu()
    node.memory(MEM_TOTAL_KB)
    node.kernel(cmdline_extra=TUNED_CMDLINE if tuned_gtt else "iommu=pt")
    gtt = 126976 * 1024**2 if tuned_gtt else (MEM_TOTAL_KB * 1024 // 2) // 4096 * 4096
    node.igpu(gtt_bytes=gtt)
    return node


def demo_nodes() -> dict[str, FakeNode]:
    return {
        "node-a": strix_halo_node("strix-a"),
        "node-b": strix_halo_node("strix-b", tuned_gtt=False),
    }
