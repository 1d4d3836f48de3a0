"""Fixes strixwizard does not automate: their plans say what to do, and carry no steps.

A manual fix plans an instruction for every node where a check naming it fails
or warns, so `strixwizard fix` lists everything that stands between the site
and a working cluster, automated or not.
"""

from __future__ import annotations

from collections.abc import Iterator

from strixwizard.fixing.context import PlanContext, PlanFn
from strixwizard.fixing.model import Plan
from strixwizard.model import Status

HOW: dict[str, str] = {
    "rocm.upgrade": "install ROCm 7.2 or newer (AMD's repository, or TheRock nightlies); packages "
    "are the distribution's business, strixwizard does not install them",
    "rccl.gfx1151": "install RCCL >= 2.28.3 (ROCm/rocm-systems PR #3415) or a gfx1151 build "
    "(e.g. kyuz0's gfx1151-rccl), or run vLLM in a container that has one",
    "rdma.load_driver": "`modprobe irdma` (E810) or `modprobe mlx5_ib` (ConnectX), list it in "
    "/etc/modules-load.d/, and install rdma-core (libibverbs, rdma-core utilities)",
    "net.fabric_address": "give the RDMA interface its fabric_address from site.yaml, e.g. "
    "`nmcli connection modify IF ipv4.method manual ipv4.addresses ADDR/PREFIX` then "
    "`nmcli connection up IF` (the prefix is yours to choose)",
}


def manual(fix_id: str) -> PlanFn:
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
                            f"not automated: {HOW[fix_id]} ({check.id}: {finding.observed})",))

    return plan


MANUAL: dict[str, PlanFn] = {fid: manual(fid) for fid in HOW}
