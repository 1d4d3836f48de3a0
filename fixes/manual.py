"""Fixes strixwizard does not automate: their plans say what to do, and carry no steps.

A manual fix plans an instruction for every node where a check naming it fails
or warns, so `strixwizard fix` lists everything that stands between the site
and a working cluster, automated or not.
"""

from __future__ import annotations

from collections.abc import Iterator

from strixwizard.fixing.context import Fix, PlanContext, PlanFn
from strixwizard.fixing.model import Plan
from strixwizard.model import FixRef, Status
from strixwizard.vendors import rdma_nic_families


def instruct(fix_id: str, how: str) -> PlanFn:
    def plan(ctx: PlanContext) -> Iterator[Plan]:
        from checks import ALL

        for check in ALL:
            if check.fix != fix_id or check.scope != "node":
                continue
            for node in ctx.nodes:
                try:
                    findings = list(check.fn(node, ctx.site))
                except Exception:  # a broken check is the doctor's to report
                    continue
                for finding in findings:
                    if finding.status in (Status.FAIL, Status.WARN):
                        yield Plan(fix_id, node.name, finding.entity, notes=(
                            f"not automated: {how} ({check.id}: {finding.observed})",))

    plan.__doc__ = f"Not automated: {how}."  # what `strixwizard explain` says it does
    return plan


def manual_fix(fix_id: str, *, summary: str, reversible: bool, reboot: bool, how: str) -> Fix:
    """A fix whose plans carry the instruction `how` for every node a check names it on."""
    return Fix(FixRef(fix_id, summary, reversible, reboot), instruct(fix_id, how), automated=False)


rocm_upgrade = manual_fix(
    "rocm.upgrade",
    summary="Install ROCm 7.2 or newer (AMD repository or TheRock), the first with working "
    "gfx1151 support",
    reversible=False,
    reboot=False,
    how="install ROCm 7.2 or newer (AMD's repository, or TheRock nightlies); packages are the "
    "distribution's business, strixwizard does not install them",
)

rccl_gfx1151 = manual_fix(
    "rccl.gfx1151",
    summary="Install an RCCL built with gfx1151 code objects (RCCL >= 2.28.3)",
    reversible=True,
    reboot=False,
    how="install RCCL >= 2.28.3 (ROCm/rocm-systems PR #3415) or a gfx1151 build (e.g. the "
    "gfx1151-rccl branch of https://github.com/kyuz0/rocm-systems), or run vLLM in a container that has one",
)

_RDMA_NICS = rdma_nic_families()
rdma_load_driver = manual_fix(
    "rdma.load_driver",
    summary="Load the NIC's RDMA driver now and at boot ("
    + ", ".join(f"{v.rdma_driver} for {v.short}" for v in _RDMA_NICS) + ") and install rdma-core",
    reversible=True,
    reboot=False,
    how=" or ".join(f"`modprobe {v.rdma_driver}` ({v.short})" for v in _RDMA_NICS)
    + ", list it in /etc/modules-load.d/, and install rdma-core (libibverbs, rdma-core utilities)",
)

net_fabric_address = manual_fix(
    "net.fabric_address",
    summary="Assign the node's fabric_address from site.yaml to its RDMA interface "
    "persistently (NetworkManager)",
    reversible=True,
    reboot=False,
    how="give the RDMA interface its fabric_address from site.yaml, e.g. `nmcli connection modify "
    "IF ipv4.method manual ipv4.addresses ADDR/PREFIX` then `nmcli connection up IF` (the prefix "
    "is yours to choose)",
)
