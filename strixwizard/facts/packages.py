"""Installed versions of the packages whose releases are known to break RDMA inference.

Asked of the node's package manager, one package per command (no shell, no globbing):
- rpm (Fedora, RHEL): `rpm -q PACKAGE` prints `NAME-VERSION-RELEASE.ARCH`, one line per
  installed instance; exit status 1 with "package P is not installed" otherwise;
- dpkg (Debian, Ubuntu): `dpkg-query -W PACKAGE` prints `NAME<TAB>VERSION` (NAME may carry
  `:ARCH`; VERSION may carry an `EPOCH:`; an empty VERSION means known but not installed);
  exit status 1 when dpkg never heard of it.
A node has one of the two; the other's commands answer "not installed" (status 127).

rdma-core's libirdma provider ships as `rdma-core`/`libibverbs` (rpm) or
`ibverbs-providers`/`rdma-core` (dpkg); the amdgpu firmware as `linux-firmware` (split off
as `amd-gpu-firmware` on Fedora 42+) or `firmware-amd-graphics` (Debian).
"""

from __future__ import annotations

from dataclasses import dataclass

from strixwizard.facts.outputs import Output, command_output
from strixwizard.facts.source import run, why_unknown
from strixwizard.probe import RC_NOT_FOUND, Probe

#: Packages asked for, with the names each distribution family gives them.
RDMA_CORE = ("rdma-core", "libibverbs", "ibverbs-providers")
LINUX_FIRMWARE = ("amd-gpu-firmware", "linux-firmware", "firmware-amd-graphics")
PACKAGES = RDMA_CORE + LINUX_FIRMWARE


def _strip_epoch(version: str) -> str:
    head, sep, tail = version.partition(":")
    return tail if sep and head.isdigit() else version


def parse_rpm_query(text: str) -> tuple[tuple[str, str, str], ...]:
    """`rpm -q P`: (name, version, release) per line of `NAME-VERSION-RELEASE.ARCH`."""
    found = []
    for line in text.splitlines():
        line = line.strip()
        if not line:
            continue
        if line.startswith("package ") and line.endswith(" is not installed"):
            raise ValueError(line)
        nevr, dot, arch = line.rpartition(".")
        if not dot or not arch or "-" not in nevr:
            raise ValueError(f"not NAME-VERSION-RELEASE.ARCH: {line!r}")
        name_version, _, release = nevr.rpartition("-")
        name, _, version = name_version.rpartition("-")
        if not name or not version or not release:
            raise ValueError(f"not NAME-VERSION-RELEASE.ARCH: {line!r}")
        found.append((name, _strip_epoch(version), release))
    if not found:
        raise ValueError("no package line")
    return tuple(found)


def parse_dpkg_query(text: str) -> tuple[tuple[str, str], ...]:
    """`dpkg-query -W P`: (name, version) per installed line; a known but absent package has
    an empty version and is left out."""
    found = []
    for line in text.splitlines():
        if not line.strip():
            continue
        name, tab, version = line.partition("\t")
        if not tab or not name.strip():
            raise ValueError(f"not NAME<TAB>VERSION: {line!r}")
        if version.strip():
            found.append((name.strip().partition(":")[0], _strip_epoch(version.strip())))
    return tuple(found)


RPM_QUERY: Output[tuple[tuple[str, str, str], ...]] = command_output(
    "packages.rpm", ("rpm", "-q", "{package}"), parse_rpm_query, over={"package": PACKAGES})
DPKG_QUERY: Output[tuple[tuple[str, str], ...]] = command_output(
    "packages.dpkg", ("dpkg-query", "-W", "{package}"), parse_dpkg_query,
    over={"package": PACKAGES})


@dataclass(frozen=True)
class Packages:
    """Installed versions of the packages the checks name."""

    versions: dict[str, str]  # package -> installed version (rpm: VERSION-RELEASE)
    manager: str | None  # "rpm" or "dpkg"; None when neither answered
    note: str  # why a version is unknown, when it is

    def first(self, names: tuple[str, ...]) -> tuple[str, str] | None:
        """(package, version) of the first of `names` that is installed."""
        return next(((n, self.versions[n]) for n in names if n in self.versions), None)


def packages(probe: Probe) -> Packages:
    versions: dict[str, str] = {}
    notes: list[str] = []
    managers: list[str] = []
    for manager, out in (("rpm", RPM_QUERY), ("dpkg", DPKG_QUERY)):
        answered = False
        for package in PACKAGES:
            argv = out.command(package=package)
            result = run(probe, argv)
            if result is None:
                notes.append(why_unknown(argv, result))
                continue
            if result.rc == RC_NOT_FOUND:
                break  # this package manager is not on the node
            answered = True
            if result.rc != 0:
                continue  # not installed
            try:
                lines = out.parse(result.stdout)
            except ValueError as error:
                notes.append(f"`{' '.join(argv)}` output not understood: {error}")
                continue
            for line in lines:
                versions.setdefault(package, "-".join(line[1:]))
        if answered:
            managers.append(manager)
    unique = list(dict.fromkeys(notes))
    more = f" (and {len(unique) - 1} more)" if len(unique) > 1 else ""
    note = "" if managers else (unique[0] + more if unique else
                                "neither rpm nor dpkg-query is installed on the node")
    return Packages(versions, managers[0] if managers else None, note)
