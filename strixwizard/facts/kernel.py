"""Kernel release, command line and distribution."""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass

from strixwizard.facts.outputs import file_output, read_output, stripped
from strixwizard.probe import Probe


@dataclass(frozen=True)
class KernelInfo:
    """The running kernel, its command line, and the OS it belongs to."""

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
        return cmdline_param(self.cmdline, name)


def cmdline_param(words: Sequence[str], name: str) -> str | None:
    """Value of the last `name=value` among kernel command-line words ('' for a bare flag)."""
    found = None
    for word in words:
        key, sep, value = word.partition("=")
        if key == name:
            found = value if sep else ""
    return found


def parse_cmdline(text: str) -> tuple[str, ...]:
    return tuple(text.split())


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


RELEASE = file_output("kernel.osrelease", "/proc/sys/kernel/osrelease", stripped)
CMDLINE = file_output("kernel.cmdline", "/proc/cmdline", parse_cmdline)
OS_RELEASE = file_output("os-release", "/etc/os-release", parse_os_release)


def kernel_info(probe: Probe) -> KernelInfo:
    os_release = read_output(probe, OS_RELEASE) or {}
    return KernelInfo(
        release=read_output(probe, RELEASE),
        cmdline=read_output(probe, CMDLINE) or (),
        os_name=os_release.get("PRETTY_NAME"),
    )
