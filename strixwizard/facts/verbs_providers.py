"""What the verbs library makes of each RDMA device: its QP limit, the providers libibverbs
could not load, and the USB4 host interface (NHI) a USB4 verbs device sits on.

- `max_qp` is printed by `ibv_devinfo -v` only (the device attribute of `ibv_query_device`);
  a read any user may make (rdma-core's udev rules open /dev/infiniband/uverbs* to all).
- libibverbs says on stderr, and only there, when it skips a provider or a device
  (rdma-core): `libibverbs: Warning: couldn't load driver 'LIB': DLERROR`
  (libibverbs/dynamic_driver.c `load_driver`; LIB is `lib<name>-rdmav<ABI>.so`, the provider
  ABI this libibverbs wants, so a provider built for another rdma-core is not found at all), and
  `libibverbs: Warning: Driver NAME does not support the kernel ABI of N (supports M to K) for
  device PATH` (libibverbs/init.c `match_device`); older ones also say `no userspace
  device-specific driver found for PATH` of a device no provider claimed. The collector keeps
  the stderr of
  `ibv_devinfo`; these lines are read from it.
- The NHI's generation from its PCI id: Linux drivers/thunderbolt/nhi.h names Intel's
  `PCI_DEVICE_ID_INTEL_BARLOW_RIDGE_HOST_80G_NHI 0x5781` (USB4 v2, 80 Gb/s) and
  `..._HOST_40G_NHI 0x5784`; AMD's NHIs are matched by class only (nhi.c `nhi_ids`: "Any USB4
  compliant host", PCI_CLASS_SERIAL_USB_USB4 0x0c0340), and the Strix Halo's (1022:158d,
  1022:158e) is a USB4 40 Gb/s host (Geramy/OdinLink-Five#31). Any other id: not known here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from strixwizard.facts.outputs import command_output
from strixwizard.facts.pci import PciDevice
from strixwizard.facts.rdma import IBV_DEVINFO
from strixwizard.facts.source import run
from strixwizard.probe import Probe

NHI_SOURCE = "https://github.com/torvalds/linux/blob/master/drivers/thunderbolt/nhi.h"
AMD_USB4_SOURCE = "https://github.com/Geramy/OdinLink-Five/issues/31"
#: (vendor, device) -> (USB4 version, Gb/s per direction, where it is said).
NHI_GENERATIONS: dict[tuple[int, int], tuple[int, int, str]] = {
    (0x8086, 0x5781): (2, 80, f"Intel Barlow Ridge host 80G NHI ({NHI_SOURCE})"),
    (0x8086, 0x5784): (1, 40, f"Intel Barlow Ridge host 40G NHI ({NHI_SOURCE})"),
    (0x1022, 0x158D): (1, 40, f"AMD Strix Halo USB4 host router ({AMD_USB4_SOURCE})"),
    (0x1022, 0x158E): (1, 40, f"AMD Strix Halo USB4 host router ({AMD_USB4_SOURCE})"),
}


@dataclass(frozen=True)
class NhiGeneration:
    usb4_version: int
    gbps: int
    said: str


def nhi_generation(device: PciDevice | None) -> NhiGeneration | None:
    """The USB4 version of an NHI by its PCI id; None when its id is not in the table."""
    if device is None:
        return None
    known = NHI_GENERATIONS.get((device.vendor, device.device))
    return NhiGeneration(*known) if known else None


def parse_device_limits(text: str) -> dict[str, int | None]:
    """`ibv_devinfo -v` → device name → `max_qp` (None when the block has no such line)."""
    limits: dict[str, int | None] = {}
    device: str | None = None
    for raw in text.splitlines():
        key, sep, value = raw.strip().partition(":")
        if not sep:
            continue
        key, value = key.strip(), value.strip()
        if key == "hca_id":
            device = value
            limits[device] = None
        elif key == "max_qp" and device is not None:
            if not value.isdigit():
                raise ValueError(f"max_qp of {device} is not a number: {value!r}")
            limits[device] = int(value)
    if not limits and "No IB devices found" not in text and text.strip():
        raise ValueError("no hca_id block in `ibv_devinfo -v` output")
    return limits


DEVINFO_VERBOSE = command_output("ibv_devinfo.verbose", ("ibv_devinfo", "-v"), parse_device_limits)

_COULD_NOT_LOAD = re.compile(
    r"^libibverbs: Warning: couldn't load driver '(?P<library>[^']+)'(?::\s*(?P<why>.*))?$")
_KERNEL_ABI = re.compile(
    r"^libibverbs: Warning: Driver (?P<driver>\S+) does not support the kernel ABI of (?P<abi>\d+) "
    r"\(supports (?P<low>\d+) to (?P<high>\d+)\) for device (?P<path>\S+)$")
_NO_PROVIDER = re.compile(
    r"^libibverbs: Warning: no userspace device-specific driver found for (?P<path>\S+)$")
_PROVIDER_ABI = re.compile(r"-rdmav(\d+)\.so$")


@dataclass(frozen=True)
class ProviderWarning:
    """One line libibverbs printed when it skipped a provider or a device."""

    line: str
    kind: str  # "load" (a provider not loaded), "kernel_abi", "no_provider" (a device unclaimed)
    provider: str | None  # "usb4_rdma" of libusb4_rdma-rdmav59.so, or the driver's name
    wanted_abi: int | None = None  # the provider ABI this libibverbs looks for (rdmavN)
    device_path: str | None = None  # the device the kernel-ABI and no-provider warnings name


def parse_provider_warnings(stderr: str) -> tuple[ProviderWarning, ...]:
    """The libibverbs warnings of a verbs program's stderr, in order; other lines are skipped."""
    found = []
    for raw in stderr.splitlines():
        line = raw.strip()
        if (load := _COULD_NOT_LOAD.match(line)) is not None:
            library = load["library"].rsplit("/", 1)[-1]
            abi = _PROVIDER_ABI.search(library)
            name = _PROVIDER_ABI.sub("", library).removeprefix("lib").removesuffix(".so")
            found.append(ProviderWarning(line, "load", name, int(abi.group(1)) if abi else None))
        elif (kernel := _KERNEL_ABI.match(line)) is not None:
            found.append(ProviderWarning(line, "kernel_abi", kernel["driver"],
                                         device_path=kernel["path"]))
        elif (unclaimed := _NO_PROVIDER.match(line)) is not None:
            found.append(ProviderWarning(line, "no_provider", None, device_path=unclaimed["path"]))
    return tuple(found)


@dataclass(frozen=True)
class VerbsView:
    """What libibverbs made of the node's devices (None: not captured or not understood)."""

    max_qp: dict[str, int | None] | None  # the devices `ibv_devinfo -v` listed
    warnings: tuple[ProviderWarning, ...]
    why_unknown: str = ""


def verbs_view(probe: Probe) -> VerbsView:
    plain = run(probe, IBV_DEVINFO.argv)
    warnings = parse_provider_warnings(plain.stderr) if plain is not None else ()
    verbose = run(probe, DEVINFO_VERBOSE.argv)
    if verbose is None:
        return VerbsView(None, warnings, "`ibv_devinfo -v` was not captured (a snapshot older than it)")
    if not verbose.ok and "No IB devices found" not in verbose.stdout + verbose.stderr:
        return VerbsView(None, warnings or parse_provider_warnings(verbose.stderr),
                         f"`ibv_devinfo -v` failed (exit {verbose.rc})")
    try:
        limits = DEVINFO_VERBOSE.parse(verbose.stdout)
    except ValueError as error:
        return VerbsView(None, warnings, f"`ibv_devinfo -v` output not understood: {error}")
    return VerbsView(limits, warnings or parse_provider_warnings(verbose.stderr))
