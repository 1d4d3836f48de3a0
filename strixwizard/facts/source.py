"""Small helpers every fact module uses to ask the probe: sysfs values, links, commands.

A sysfs attribute that cannot be read (absent, EINVAL on a down link) reads as
None; a command the probe holds no answer for reads as None too. The caller
decides what "unknown" means; it is never turned into a default value here.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Sequence
from dataclasses import dataclass

from strixwizard.node.command import not_installed
from strixwizard.probe import RC_NOT_FOUND, CmdResult, NotCaptured, Probe

PCI_ADDRESS = re.compile(r"^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$")
TB_DOMAIN = re.compile(r"^domain\d+$")


def read_str(probe: Probe, path: str) -> str | None:
    text = probe.read(path)
    if text is None:
        return None
    text = text.strip()
    return text or None


def read_int(probe: Probe, path: str, base: int = 10) -> int | None:
    text = read_str(probe, path)
    if text is None:
        return None
    try:
        return int(text, base)
    except ValueError:
        return None


def link_path(probe: Probe, path: str) -> str | None:
    """Absolute, normalised target of the symlink at `path` (sysfs class and device links)."""
    target = probe.readlink(path)
    if target is None:
        return None
    joined = target if target.startswith("/") else posixpath.join(posixpath.dirname(path), target)
    return posixpath.normpath(joined)


def link_name(probe: Probe, path: str) -> str | None:
    """Last component of a symlink's target: the driver name of a `driver` link."""
    target = probe.readlink(path)
    return posixpath.basename(target.rstrip("/")) if target else None


def pci_address_in(path: str | None) -> str | None:
    """The PCI function a sysfs device path sits under (the deepest one), if any."""
    if not path:
        return None
    found = None
    for part in path.split("/"):
        if PCI_ADDRESS.match(part):
            found = part
    return found


def in_thunderbolt_domain(path: str | None) -> bool:
    return bool(path) and any(TB_DOMAIN.match(part) for part in path.split("/"))  # type: ignore[union-attr]


@dataclass(frozen=True)
class ClassDevice:
    """What sits behind a sysfs class link (`/sys/class/net/IF`, `/sys/class/infiniband/DEV`)."""

    path: str | None  # the device's absolute sysfs path; None when the link was not captured

    @property
    def bus(self) -> str:
        """"thunderbolt" (a USB4/Thunderbolt XDomain service), "virtual" (software), "usb",
        "pci" or "unknown"."""
        if self.path is None:
            return "unknown"
        if in_thunderbolt_domain(self.path):
            return "thunderbolt"
        if "/devices/virtual/" in self.path:
            return "virtual"
        if "/usb" in self.path:
            return "usb"
        return "pci" if pci_address_in(self.path) else "unknown"

    @property
    def pci_function(self) -> str | None:
        """The deepest PCI function on the device's path, whatever its bus."""
        return pci_address_in(self.path)


def class_device(probe: Probe, class_link: str) -> ClassDevice:
    return ClassDevice(link_path(probe, class_link))


def run(probe: Probe, argv: Sequence[str]) -> CmdResult | None:
    """The probe's answer for `argv`, or None when it holds none (a snapshot that lacks it)."""
    try:
        return probe.run(argv)
    except NotCaptured:
        return None


def why_unknown(argv: Sequence[str], result: CmdResult | None) -> str:
    """One line saying why a command gave no usable answer."""
    command = " ".join(argv)
    if result is None:
        return f"`{command}` was not captured"
    if result.rc == RC_NOT_FOUND:  # for `sh -c '... exec PROGRAM'` the shell is not the culprit
        return not_installed(argv)
    first = (result.stderr or result.stdout).strip().splitlines()
    reason = first[0] if first else f"exit status {result.rc}"
    return f"`{command}` failed: {reason}"
