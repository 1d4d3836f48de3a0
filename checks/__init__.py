"""The registry of checks. A check exists for the engine only once it is listed in `ALL`."""

from __future__ import annotations

from checks import node
from strixwizard.checking import Check

ALL: tuple[Check, ...] = (
    node.cpu_is_strix_halo,
    node.igpu_visible_to_rocm,
    node.gtt_sized_for_models,
)

BY_ID: dict[str, Check] = {check.id: check for check in ALL}
