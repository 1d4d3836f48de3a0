"""Bonds (the bonding driver) and the TCP reordering tolerance a round-robin bond needs.

`/sys/class/net/BOND/bonding/mode` prints the mode's name and number ("balance-rr 0",
drivers/net/bonding/bond_sysfs.c `bonding_show_mode`), `.../bonding/slaves` the enslaved
interfaces separated by spaces (`bonding_show_slaves`; empty without slaves). Only a bond has
a `bonding` directory. `/proc/sys/net/ipv4/tcp_reordering` is per network namespace; its
default is 3 (Documentation/networking/ip-sysctl.rst).

Two USB4 cables bonded in `balance-rr` send one TCP flow's segments over both links, so they
arrive out of order; with the default tolerance TCP takes that for loss and throughput falls to
about one link. The published Strix Halo setup raises it to 127 and notes it resets at reboot
(https://github.com/wkljohn/llama.cpp-strix-halo-RCCL-RDMA, README).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from strixwizard.facts.netdev import Netdev
from strixwizard.facts.outputs import file_output, read_output
from strixwizard.probe import Probe

NET = "/sys/class/net"
TCP_REORDERING_PATH = "/proc/sys/net/ipv4/tcp_reordering"
#: The value of the published bonded-Thunderbolt setup (wkljohn README) and the kernel default.
PUBLISHED_TCP_REORDERING = 127
DEFAULT_TCP_REORDERING = 3
BOND_MODES = ("balance-rr", "active-backup", "balance-xor", "broadcast", "802.3ad", "balance-tlb",
              "balance-alb")
_MODE = re.compile(r"^(?P<name>[a-z0-9.-]+) (?P<number>[0-6])$")
_IFNAME = re.compile(r"^[^\s/]{1,15}$")


def parse_bond_mode(text: str) -> str:
    """`bonding/mode`: "balance-rr 0" → "balance-rr"."""
    match = _MODE.match(text.strip())
    if not match or match.group("name") not in BOND_MODES:
        raise ValueError(f"not a bonding mode: {text.strip()[:40]!r}")
    if BOND_MODES.index(match.group("name")) != int(match.group("number")):
        raise ValueError(f"bonding mode name and number disagree: {text.strip()!r}")
    return match.group("name")


def parse_bond_slaves(text: str) -> tuple[str, ...]:
    """`bonding/slaves`: "thunderbolt0 thunderbolt1" → the names (none for an empty bond)."""
    names = tuple(text.split())
    bad = [n for n in names if not _IFNAME.match(n)]
    if bad:
        raise ValueError(f"not an interface name: {bad[0][:40]!r}")
    return names


def parse_sysctl_int(text: str) -> int:
    """A one-number sysctl file (`/proc/sys/net/ipv4/tcp_reordering`)."""
    value = text.strip()
    if not re.fullmatch(r"\d+", value):
        raise ValueError(f"not a sysctl number: {value[:40]!r}")
    return int(value)


BOND_MODE = file_output("bonding.mode", NET + "/{netdev}/bonding/mode", parse_bond_mode)
BOND_SLAVES = file_output("bonding.slaves", NET + "/{netdev}/bonding/slaves", parse_bond_slaves)
TCP_REORDERING = file_output("sysctl.tcp_reordering", TCP_REORDERING_PATH, parse_sysctl_int)


@dataclass(frozen=True)
class Bond:
    """A bonding interface, its mode and its slaves."""

    name: str
    mode: str | None  # None: the mode file was not readable
    slaves: tuple[str, ...]
    thunderbolt_slaves: tuple[str, ...]  # the slaves that are thunderbolt-net interfaces

    @property
    def round_robin(self) -> bool:
        return self.mode == "balance-rr"


def bonds(probe: Probe, netdevs: tuple[Netdev, ...]) -> tuple[Bond, ...]:
    """Every bond among the node's interfaces (those with a `bonding` directory)."""
    thunderbolt = {n.name for n in netdevs if n.is_thunderbolt}
    found = []
    for name in sorted(probe.listdir(NET)):
        if not probe.listdir(f"{NET}/{name}/bonding"):
            continue
        slaves = read_output(probe, BOND_SLAVES, netdev=name) or ()
        found.append(Bond(name, read_output(probe, BOND_MODE, netdev=name), slaves,
                          tuple(s for s in slaves if s in thunderbolt)))
    return tuple(found)


def tcp_reordering(probe: Probe) -> int | None:
    return read_output(probe, TCP_REORDERING)
