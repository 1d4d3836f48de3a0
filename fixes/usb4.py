"""usb4.tcp_reordering: TCP's reordering tolerance raised for a balance-rr bond of USB4 links."""

from __future__ import annotations

from collections.abc import Iterator

from fixes.declare import fix
from fixes.steps import file_step, write_step
from strixwizard.facts import NodeFacts
from strixwizard.facts.bond import PUBLISHED_TCP_REORDERING, TCP_REORDERING_PATH
from strixwizard.fixing.context import PlanContext
from strixwizard.fixing.model import Plan, Step
from strixwizard.vendors.usb4net import BOND_SOURCE

SYSCTL_FILE = "/etc/sysctl.d/90-strixwizard-tcp-reordering.conf"
SYSCTL_CONTENT = (
    "# Written by strixwizard (fix usb4.tcp_reordering): a balance-rr bond of USB4 links\n"
    f"# reorders one flow's segments; TCP must tolerate it ({BOND_SOURCE})\n"
    f"net.ipv4.tcp_reordering = {PUBLISHED_TCP_REORDERING}\n")


def runtime_step(current: int) -> Step:
    """net.ipv4.tcp_reordering set now: its /proc/sys file (of the node's network namespace)."""
    wanted = str(PUBLISHED_TCP_REORDERING)
    return write_step(TCP_REORDERING_PATH, f"set net.ipv4.tcp_reordering to {wanted}",
                      str(current), wanted)


def reordering_steps(node: NodeFacts, current: int, persist: bool) -> list[Step]:
    """Set net.ipv4.tcp_reordering now and, with `persist`, in sysctl.d."""
    wanted = str(PUBLISHED_TCP_REORDERING)
    steps = [runtime_step(current)]
    if persist:
        before = node.persistence.file(SYSCTL_FILE)
        if before != SYSCTL_CONTENT:
            steps.append(file_step(SYSCTL_FILE, f"net.ipv4.tcp_reordering = {wanted} at boot "
                                   "(systemd-sysctl reads /etc/sysctl.d)", before, SYSCTL_CONTENT,
                                   persistence="sysctl.d"))
    return steps


@fix("usb4.tcp_reordering",
     summary=f"Set net.ipv4.tcp_reordering to {PUBLISHED_TCP_REORDERING} on nodes with a "
     "balance-rr bond of thunderbolt-net links, now and in /etc/sysctl.d",
     reversible=True, reboot=False, writes=(TCP_REORDERING_PATH, SYSCTL_FILE),
     persists=f"{SYSCTL_FILE}, applied at boot by systemd-sysctl (or `sysctl --system`)")
def plan_tcp_reordering(ctx: PlanContext) -> Iterator[Plan]:
    """Raises TCP's reordering tolerance where a balance-rr bond spreads flows over USB4 cables;
    a higher value than the published one is left alone."""
    for node in ctx.nodes:
        bonds = [b for b in node.bonds if b.thunderbolt_slaves and b.round_robin]
        if not bonds:
            continue
        names = ", ".join(b.name for b in bonds)
        current = node.tcp_reordering
        if current is None:
            yield Plan("usb4.tcp_reordering", node.name, node.name, notes=(
                f"net.ipv4.tcp_reordering unknown (not captured) on {node.name} ({names}): "
                "not planned",))
            continue
        if current >= PUBLISHED_TCP_REORDERING:
            continue
        persistence = (f"{SYSCTL_FILE} is read at boot" if ctx.persist
                       else "runtime only (--runtime-only): back to the old value at reboot")
        yield Plan("usb4.tcp_reordering", node.name, f"{node.name}:{bonds[0].name}",
                   tuple(reordering_steps(node, current, ctx.persist)),
                   (f"applies to new TCP connections; restart the jobs using {names}",),
                   persistence)
