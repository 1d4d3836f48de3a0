"""llama.cpp in the VM lab: the RDMA build staged into the VMs' shares, `deploy --stack llama-rpc`
over them, and what the tests read back in a VM (logs, processes, the GID table)."""

from __future__ import annotations

import contextlib
import ipaddress
import os
import shutil
from pathlib import Path
from typing import Any

from tests.support.cli import CliResult, run_cli
from tests.support.llama_parts import write_tiny_model
from tests.support.vmlab import RDMA_DEVICE, Vm, VmLab

PROGRAMS = ("ggml-rpc-server", "llama-server")
#: each VM's share (its vmN/ folder here, read-only there): the VM's /root and /tmp are its own
BIN_DIR = "/vmlab/bin"
MODEL = "/vmlab/tiny.gguf"
RUN_DIR = "/var/lib/strixwizard/llama"
TARGET = "/etc/strixwizard"
CLI_TIMEOUT = 900.0
HEALTH_TIMEOUT_S = 180.0
SSH_DEADLINE = 400.0  # per node: TCG VMs on 2 busy cores collect in 1-4 minutes


def stage_llama(lab: VmLab, rdma_bin: Path) -> None:
    """The binaries into each VM's share (`/vmlab/bin`), the tiny model into the head's."""
    for vm in lab.vms:
        dest = vm.dir / "bin"
        dest.mkdir(exist_ok=True)
        for name in PROGRAMS:
            with contextlib.suppress(FileNotFoundError):
                (dest / name).unlink()
            try:
                os.link(rdma_bin / name, dest / name)
            except OSError:
                shutil.copy2(rdma_bin / name, dest / name)
    write_tiny_model(lab.vms[0].dir / "tiny.gguf")


def sh(lab: VmLab, vm: Vm, script: str, timeout: float = 60) -> str:
    """`script` in the VM's shell; its output, the exit code asserted."""
    done = lab.run(vm, script, timeout=timeout)
    assert done.returncode == 0, f"{vm.name}: {script}: {done.stderr}"
    return done.stdout


def running(lab: VmLab, vm: Vm, program: str) -> bool:
    """pgrep inside the VM's own kernel: a read, no signal."""
    return lab.run(vm, "pgrep", "-x", program, timeout=30).returncode == 0


def roce_v2_gid_index(lab: VmLab, vm: Vm) -> int:
    """The RoCE v2 GID of the VM's fabric address, read from sysfs here (not by strixwizard)."""
    base = f"/sys/class/infiniband/{RDMA_DEVICE}/ports/1"
    out = sh(lab, vm, f"for i in $(seq 0 15); do echo $i $(cat {base}/gids/$i)"
                      f" $(cat {base}/gid_attrs/types/$i 2>/dev/null); done")
    for line in out.splitlines():
        index, gid, *kind = line.split()
        mapped = ipaddress.IPv6Address(gid).ipv4_mapped
        if " ".join(kind) == "RoCE v2" and str(mapped) == vm.fabric_addr:
            return int(index)
    raise AssertionError(f"{vm.name}: no RoCE v2 GID for {vm.fabric_addr}: {out}")


def deploy(site: Path, tmp: Path, *args: str) -> CliResult:
    """`deploy --stack llama-rpc --allow-soft-rdma` of the staged build, journals under `tmp`."""
    return run_cli("deploy", "--site", str(site), "--stack", "llama-rpc", "--allow-soft-rdma",
                   "--llama-bin-dir", BIN_DIR, "--journal-dir", str(tmp / "journal"), *args,
                   env={"XDG_STATE_HOME": str(tmp / "state")}, timeout=CLI_TIMEOUT)


def checks_of(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The smoke test's checks of a deploy document, by id."""
    return {c["id"]: c for c in (doc.get("smoke") or {}).get("checks", [])}
