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
)

BY_ID: dict[str, FixRef] = {fix.id: fix for fix in ALL}
