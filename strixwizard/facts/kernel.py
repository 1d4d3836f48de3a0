"""Kernel release, command line and distribution."""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

from strixwizard.probe import Probe


@dataclass(frozen=True)
class KernelInfo:
    release: str | None  # "6.18.5-200.fc43.x86_64"
    cmdline: tuple[str, ...]  # words of /proc/cmdline
    os_name: str | None  # PRETTY_NAME from /etc/os-release

    @property
    def version(self) -> tuple[int, ...] | None:
        """(6, 18, 5) from the release string."""
        if not self.release:
            return None
        match = re.match(r"(\d+)\.(\d+)(?:\.(\d+))?", self.release)
        if not match:
            return None
        return tuple(int(part) for part in match.groups() if part is not None)

    def param(self, name: str) -> str | None:
        """Value of the last `name=value` on the command line ('' for a bare flag)."""
        found = None
        for word in self.cmdline:
            key, sep, value = word.partition("=")
            if key == name:
                found = value if sep else ""
        return found


def parse_os_release(text: str) -> dict[str, str]:
    fields: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep and key.strip() and not key.startswith("#"):
            try:
                words = shlex.split(value)
            except ValueError:
                words = [value]
            fields[key.strip()] = " ".join(words)
    return fields


def kernel_info(probe: Probe) -> KernelInfo:
    release = probe.read("/proc/sys/kernel/osrelease")
    cmdline = probe.read("/proc/cmdline") or ""
    os_release = parse_os_release(probe.read("/etc/os-release") or "")
    return KernelInfo(
        release=release.strip() if release else None,
        cmdline=tuple(cmdline.split()),
        os_name=os_release.get("PRETTY_NAME"),
    )
