"""ROCm version and whether the installed RCCL carries gfx1151 code objects.

Version: `/opt/rocm/.info/version` ("7.2.0-43"), written by AMD's rocm-core
package. Distribution ROCm (Fedora's /usr/lib64 packages) has no such file;
its version then reads as unknown.

RCCL: checks cannot read a 500 MB library, so the collector captures cheap
evidence with one argv command (no shell):

    grep -a -o -E 'amdgcn-amd-amdhsa--gfx\\w+|CCOB' <librccl.so.1>

Uncompressed offload bundles name each target in plain text
(`hipv4-amdgcn-amd-amdhsa--gfx1151`), so the output lists the GPU targets the
library was built for. Compressed bundles (clang `--offload-compress`, magic
`CCOB`) hide the targets inside zstd data: when only `CCOB` markers are seen,
the answer is "unknown", never "no". grep exits 1 on no match and 2 when the
file is missing; both are told apart.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from strixwizard.facts.outputs import Output, command_output, file_output, read_output, stripped
from strixwizard.facts.source import run
from strixwizard.probe import RC_NOT_FOUND, Probe

ROCM_VERSION_FILE = "/opt/rocm/.info/version"
RCCL_LIBRARIES = ("/opt/rocm/lib/librccl.so.1", "/usr/lib64/librccl.so.1")
RCCL_PATTERN = r"amdgcn-amd-amdhsa--gfx\w+|CCOB"  # no [ ] * ?: argv stays glob-free


@dataclass(frozen=True)
class RcclInfo:
    """The RCCL library found and the GPU targets it was built for."""

    library: str | None  # the library examined; None when none was found
    targets: tuple[str, ...]  # gfx targets seen in plain-text bundle ids
    compressed: bool  # compressed bundles seen (their targets are not visible)
    note: str  # why the answer is unknown, when it is

    @property
    def has_gfx1151(self) -> bool | None:
        """True/False when the evidence says so, None when it cannot tell."""
        if "gfx1151" in self.targets:
            return True
        if self.library is None or self.compressed or not self.targets:
            return None
        return False


@dataclass(frozen=True)
class RocmInfo:
    """The installed ROCm version and its RCCL."""

    version_text: str | None  # "7.2.0-43"
    rccl: RcclInfo

    @property
    def version(self) -> tuple[int, ...] | None:
        match = re.match(r"(\d+)\.(\d+)(?:\.(\d+))?", self.version_text or "")
        return tuple(int(p) for p in match.groups() if p is not None) if match else None


def parse_rccl_grep(text: str) -> tuple[tuple[str, ...], bool]:
    targets: set[str] = set()
    compressed = False
    for line in text.splitlines():
        line = line.strip()
        if line == "CCOB":
            compressed = True
        elif line.startswith("amdgcn-amd-amdhsa--"):
            targets.add(line.removeprefix("amdgcn-amd-amdhsa--"))
    return tuple(sorted(targets)), compressed


ROCM_VERSION = file_output("rocm.version", ROCM_VERSION_FILE, stripped)
RCCL_GREP: Output[tuple[tuple[str, ...], bool]] = command_output(
    "rocm.rccl_grep", ("grep", "-a", "-o", "-E", RCCL_PATTERN, "{library}"), parse_rccl_grep,
    over={"library": RCCL_LIBRARIES})


def rccl_argv(library: str) -> tuple[str, ...]:
    return RCCL_GREP.command(library=library)


def rccl_info(probe: Probe) -> RcclInfo:
    notes = []
    for library in RCCL_LIBRARIES:
        argv = rccl_argv(library)
        result = run(probe, argv)
        if result is None:
            notes.append(f"`{' '.join(argv)}` was not captured")
            continue
        if result.rc == RC_NOT_FOUND:
            return RcclInfo(None, (), False, "grep is not installed on the node")
        if result.rc == 2:  # the library does not exist (or cannot be read)
            continue
        targets, compressed = RCCL_GREP.parse(result.stdout)
        note = ""
        if compressed and "gfx1151" not in targets:
            note = "the library uses compressed code objects; their targets cannot be listed"
        elif not targets:
            note = "no code-object bundle ids found in the library"
        return RcclInfo(library, targets, compressed, note)
    if notes:
        return RcclInfo(None, (), False, "; ".join(notes))
    return RcclInfo(None, (), False, "no librccl.so.1 in " + " or ".join(RCCL_LIBRARIES))


def rocm_info(probe: Probe) -> RocmInfo:
    return RocmInfo(version_text=read_output(probe, ROCM_VERSION), rccl=rccl_info(probe))
