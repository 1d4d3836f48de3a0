"""What the VM lab recorded once (tests/data/vm/: snapshots of two soft-RoCE VMs), replayed
where no VM runs: a site file whose nodes are those snapshots."""

from __future__ import annotations

from pathlib import Path

DATA = Path(__file__).resolve().parents[1] / "data" / "vm"
SNAPSHOT = DATA / "vm0.tar.gz"


def replay_site(path: Path, allow_soft_rdma: bool) -> Path:
    """A site file at `path` replaying vm0 and vm1 with their fabric addresses."""
    lines = ["site: vm-replay", f"allow_soft_rdma: {str(allow_soft_rdma).lower()}", "nodes:"]
    for index, name in enumerate(("vm0", "vm1")):
        lines += [
            f"  - name: {name}",
            f"    snapshot: {DATA / name}.tar.gz",
            f"    fabric_address: 192.168.77.{index + 1}",
        ]
    path.write_text("\n".join(lines) + "\n")
    return path
