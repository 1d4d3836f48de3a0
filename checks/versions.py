"""Software versions known to break RDMA inference on Strix Halo nodes (`strixwizard/known_bad.py`,
data in `strixwizard/data/known_bad.json`): rdma-core for irdma, linux-firmware, the kernel,
and NIC firmware. Every finding names the entry's source URL, so the threshold can be checked."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from checks.scope import STRIX_HALO
from strixwizard.checking.declare import failed, node_check, passed, skipped, warned
from strixwizard.facts import NodeFacts
from strixwizard.facts.packages import LINUX_FIRMWARE, RDMA_CORE
from strixwizard.known_bad import Entry, entries_for, first_match, version_tuple
from strixwizard.model import Finding
from strixwizard.site import Site


def _sources(entries: tuple[Entry, ...]) -> str:
    return "; ".join(dict.fromkeys(e.source.url for e in entries))


def _judge(component: str, entity: str, observed: str, version_text: str,
           applies: dict[str, Any]) -> Finding:
    """The finding for one installed version against the component's entries that apply."""
    entries = tuple(e for e in entries_for(component)
                    if all(applies.get(k) == v for k, v in e.applies_to.items()))
    expected = "not " + " and not ".join(e.threshold for e in entries)
    version = version_tuple(version_text)
    if version is None:
        return skipped(entity, f"{observed}: no version number to compare with the known-bad "
                       f"table (thresholds from {_sources(entries)})")
    entry = first_match(component, version, applies)
    if entry is None:
        return passed(entity, observed=observed, expected=expected,
                      detail=f"thresholds from {_sources(entries)}")
    # the source's own words stay in the data file and on the explain page; the user reads
    # what happens, what to do, and where that comes from
    detail = f"{entry.what}. {entry.advice}. Source: {entry.source.url}"
    found = failed if entry.status == "fail" else warned
    return found(entity, observed=observed, expected=f"not {entry.threshold}", detail=detail,
                 fixable=False)


def _applying(component: str, key: str) -> set[Any]:
    return {e.applies_to.get(key) for e in entries_for(component) if key in e.applies_to}


@node_check("node.rdma_core_version")
def rdma_core_version(node: NodeFacts, site: Site) -> Iterator[Finding]:
    """The host's rdma-core/libibverbs/ibverbs-providers version from rpm or dpkg-query, for
    nodes whose hardware RDMA driver has entries in the known-bad table."""
    wanted = _applying("rdma-core", "rdma_driver")
    drivers = sorted({d.driver for d in node.rdma
                      if d.is_hardware and d.driver is not None and d.driver in wanted})
    if not drivers:
        yield skipped(node.name, "no hardware RDMA device whose driver has known-bad rdma-core "
                      "releases (" + ", ".join(sorted(str(w) for w in wanted)) + ")")
        return
    installed = node.packages.first(RDMA_CORE)
    if installed is None:
        reason = node.packages.note or "none of " + ", ".join(RDMA_CORE) + " is installed"
        yield skipped(node.name, f"rdma-core version unknown: {reason} (containers bring "
                      "their own rdma-core: check the image too)")
        return
    package, version = installed
    for driver in drivers:
        yield _judge("rdma-core", node.name,
                     f"{package} {version} ({node.packages.manager}), RDMA driver {driver}",
                     version, {"rdma_driver": driver})


@node_check("node.linux_firmware", requires=(STRIX_HALO,))
def linux_firmware(node: NodeFacts, site: Site) -> Iterator[Finding]:
    """The amdgpu firmware package's release (amd-gpu-firmware, linux-firmware or
    firmware-amd-graphics) from rpm or dpkg-query."""
    installed = node.packages.first(LINUX_FIRMWARE)
    if installed is None:
        reason = node.packages.note or "none of " + ", ".join(LINUX_FIRMWARE) + " is installed"
        yield skipped(node.name, f"linux-firmware release unknown: {reason}")
        return
    package, version = installed
    yield _judge("linux-firmware", node.name, f"{package} {version} ({node.packages.manager})",
                 version, {"strix_halo": True})


@node_check("node.kernel_known_good", requires=(STRIX_HALO,))
def kernel_known_good(node: NodeFacts, site: Site) -> Iterator[Finding]:
    """The running kernel's release (/proc/sys/kernel/osrelease)."""
    release = node.kernel.release
    if release is None:
        yield skipped(node.name, "kernel release unknown (/proc/sys/kernel/osrelease not captured)")
        return
    yield _judge("kernel", node.name, f"kernel {release}", release, {"strix_halo": True})


@node_check("nic.firmware_known_good")
def nic_firmware_known_good(node: NodeFacts, site: Site) -> Iterator[Finding]:
    """`ethtool -i` firmware-version of each NIC the known-bad table has entries for (matched
    by PCI vendor and driver, from the data)."""
    judged = False
    for nic in node.nics:
        applies = {"pci_vendor": nic.pci.vendor, "driver": nic.pci.driver}
        if not any(all(applies.get(k) == v for k, v in e.applies_to.items())
                   for e in entries_for("nic-firmware")):
            continue
        judged = True
        entity = f"{node.name}/{nic.address}"
        if nic.firmware is None:
            yield skipped(entity, f"{nic.model}: firmware version unknown (ethtool -i)")
            continue
        yield _judge("nic-firmware", entity, f"{nic.model}: firmware {nic.firmware}",
                     nic.firmware, applies)
    if not judged:
        yield skipped(node.name, "no NIC the known-bad firmware table has entries for")
