"""Node platform: memlock limits (a limits.d file) and kernel command-line items.

Kernel command-line changes are planned with `grubby` (Fedora/RHEL) and take
effect at the next boot only: they are steps marked `reboot`, applied only when
the user asks for them explicitly (`--with-reboot-steps`), never silently.
Where the node has no grubby, the plan says what to edit by hand.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

from fixes.declare import fix
from fixes.steps import file_step
from strixwizard.facts import NodeFacts
from strixwizard.facts.memory import GIB, PAGE_BYTES
from strixwizard.facts.persistence import GRUBBY_INFO, LIMITS_DIR
from strixwizard.fixing.context import PlanContext
from strixwizard.fixing.model import Kind, Plan, Read, Step

LIMITS_FILE = f"{LIMITS_DIR}/90-strixwizard-memlock.conf"
LIMITS_CONTENT = (
    "# Written by strixwizard (fix limits.memlock): RDMA pins every registered buffer.\n"
    "# pam_limits reads this for new sessions; `*` does not cover root, hence the root lines.\n"
    "*    soft memlock unlimited\n"
    "*    hard memlock unlimited\n"
    "root soft memlock unlimited\n"
    "root hard memlock unlimited\n"
)


@fix("limits.memlock",
     summary=f"Set memlock unlimited for all users and root in {LIMITS_FILE} (new sessions pick "
     "it up)",
     reversible=True, reboot=False, writes=(LIMITS_FILE,),
     persists="a limits.d file is itself persistent; pam_limits applies it to new sessions")
def plan_memlock(ctx: PlanContext) -> Iterator[Plan]:
    """memlock unlimited for login sessions; services and containers are told what to set."""
    for node in ctx.nodes:
        limit = node.memlock
        if limit is None or limit.unlimited:
            continue
        notes = ("services need LimitMEMLOCK=infinity in their unit (systemd ignores limits.d), "
                 "containers --ulimit memlock=-1; not automated",
                 "takes effect for new login sessions (pam_limits), not for running processes")
        current = node.persistence.file(LIMITS_FILE)
        if current == LIMITS_CONTENT:
            yield Plan("limits.memlock", node.name, node.name, notes=(
                f"{LIMITS_FILE} is already in place but the probing session still has a "
                "limited memlock: is pam_limits used by sshd (UsePAM yes)?", *notes))
            continue
        step = file_step(LIMITS_FILE, "memlock unlimited for all users (limits.d)", current,
                         LIMITS_CONTENT, persistence="limits.d")
        yield Plan("limits.memlock", node.name, node.name, (step,), notes,
                   persistence=f"{LIMITS_FILE} is itself persistent")


_BOOT_ENTRIES = ("grubby writes the parameter into every boot entry; it takes effect at the next "
                 "boot, and only with --with-reboot-steps (without grubby the plan says what to "
                 "edit by hand)")


def _cmdline_step(name: str, value: str, current: str | None) -> Step:
    args = f"{name}={value}"
    undo = (("grubby", "--update-kernel=ALL", f"--remove-args={name}") if current is None else
            ("grubby", "--update-kernel=ALL", f"--args={name}={current}"))
    return Step(
        kind=Kind.CMDLINE, target="kernel command line", summary=f"add {args} to the kernel "
        "command line of every boot entry (grubby)",
        read=Read("command", argv=GRUBBY_INFO, parse=f"grubby.arg:{name}"), before=current,
        after=value, argv=("grubby", "--update-kernel=ALL", f"--args={args}"), undo_argv=undo,
        reboot=True, persistence="bootloader",
    )


def _cmdline_plan(node: NodeFacts, fix_id: str, params: dict[str, str]) -> Plan | None:
    grubby = node.persistence.grubby_args
    words = " ".join(f"{k}={v}" for k, v in params.items())
    if grubby is None:
        return Plan(fix_id, node.name, node.name, notes=(
            f"not automated (no grubby on this node): add `{words}` to GRUB_CMDLINE_LINUX in "
            "/etc/default/grub and run `update-grub` (Debian/Ubuntu) or `grub2-mkconfig -o "
            "/boot/grub2/grub.cfg`; with systemd-boot edit /etc/kernel/cmdline; then reboot",))
    current = {word.partition("=")[0]: word.partition("=")[2] for word in grubby.split()}
    steps = [_cmdline_step(k, v, current.get(k)) for k, v in params.items() if current.get(k) != v]
    if not steps:
        return Plan(fix_id, node.name, node.name, notes=(
            f"`{words}` is already on the default boot entry: reboot to use it",))
    return Plan(fix_id, node.name, node.name, tuple(steps), notes=(
        "needs a reboot; applied only with --with-reboot-steps, and the reboot is yours to do",),
        persistence="boot loader entries (grubby)")


@fix("kernel.iommu_pt",
     summary="Add iommu=pt to the kernel command line (IOMMU passthrough for host DMA)",
     reversible=True, reboot=True, persists=_BOOT_ENTRIES)
def plan_iommu_pt(ctx: PlanContext) -> Iterator[Plan]:
    """iommu=pt on the kernel command line when the IOMMU translates DMA."""
    for node in ctx.nodes:
        mode = node.iommu
        if mode is None or mode.mode != "translated":
            continue
        plan = _cmdline_plan(node, "kernel.iommu_pt", {"iommu": "pt"})
        if plan is not None:
            yield plan


def gtt_target_gib(total_bytes: int) -> int:
    """GTT / TTM size to ask for: all of RAM but one GiB plus the fraction (124 GiB of 128 GB)."""
    return max(math.floor(total_bytes / GIB) - 1, 1)


@fix("kernel.gtt_size",
     summary="Raise ttm.pages_limit (and amdgpu.gttsize) on the kernel command line so the iGPU "
     "can map most of RAM",
     reversible=True, reboot=True, persists=_BOOT_ENTRIES)
def plan_gtt_size(ctx: PlanContext) -> Iterator[Plan]:
    """ttm.pages_limit and amdgpu.gttsize sized to RAM when the iGPU may map too little."""
    for node in ctx.nodes:
        memory = node.memory
        if memory.total_bytes is None or (memory.gtt_bytes is None and memory.ttm_pages_limit is None):
            continue
        wanted = ctx.site.thresholds.gtt_min_fraction * memory.total_bytes
        small_gtt = memory.gtt_bytes is not None and memory.gtt_bytes < wanted
        ttm_cap = (memory.ttm_pages_limit is not None
                   and memory.ttm_pages_limit * PAGE_BYTES < min(memory.gtt_bytes or wanted, wanted))
        if not (small_gtt or ttm_cap):
            continue
        gib = gtt_target_gib(memory.total_bytes)
        plan = _cmdline_plan(node, "kernel.gtt_size", {
            "ttm.pages_limit": str(gib * GIB // PAGE_BYTES), "amdgpu.gttsize": str(gib * 1024)})
        if plan is not None:
            yield plan
