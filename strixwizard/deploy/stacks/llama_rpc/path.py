"""The RDMA path of a deployed llama.cpp cluster, read live at smoke time. Pure but the read.

llama.cpp's RPC transport (`ggml/src/ggml-rpc/transport.cpp`, `rdma_probe`) takes the device
from `GGML_RDMA_DEV` and the GID index from `GGML_RDMA_GID` as given and falls back to TCP
without an error when they do not fit: no such device, or (seen on the VM lab's rxe) an empty
GID at the forced index, leave that side without a `RDMA probed` line, it advertises no RDMA
and the peer stays on TCP too. Each side takes its own port's active MTU as the path MTU, so
two ends whose netdev MTUs differ connect and may then fail or stall on transfers larger than
the smaller MTU (on the VM lab's rxe the tiny model's completion still went through). The logs
say *that* it fell back; this read says *why*, from what the nodes have now: for each end the
device (`/sys/class/infiniband/DEV`), the GID at the index the program was started with
(`.../ports/P/gids/N`, `.../gid_attrs/types/N`: RoCE v2 carrying the end's fabric IPv4
address) and the fabric netdev's MTU (`/sys/class/net/NETDEV/mtu`), all ends equal.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

from strixwizard.deploy.smoke import FAIL, PASS, SmokeCheck

#: argv ($1..$4): device, port, GID index ("" when none was forced), netdev. One `key=value` per line;
#: values are the kernel's own (sysfs), read with `cat`, never evaluated.
READ = r"""d=/sys/class/infiniband/$1
if [ -d "$d" ]; then echo device=present; else echo device=absent; fi
echo "state=$(cat "$d/ports/$2/state" 2>/dev/null)"
if [ -n "$3" ]; then
  echo "gid=$(cat "$d/ports/$2/gids/$3" 2>/dev/null)"
  echo "type=$(cat "$d/ports/$2/gid_attrs/types/$3" 2>/dev/null)"
fi
echo "mtu=$(cat "/sys/class/net/$4/mtu" 2>/dev/null)"
"""
_EMPTY_GID = "0000:0000:0000:0000:0000:0000:0000:0000"


@dataclass(frozen=True)
class EndPath:
    """One end (node) of the cluster as the smoke test found it."""

    node: str
    device: str
    port: int
    netdev: str
    address: str  # the fabric IPv4 address the program binds or connects from
    gid_index: int | None  # GGML_RDMA_GID the program runs with
    present: bool
    state: str
    gid: str
    gid_type: str
    mtu: int | None

    @classmethod
    def parse(cls, node: str, device: str, port: int, netdev: str, address: str,
              gid_index: int | None, text: str) -> EndPath:
        values = dict(line.partition("=")[::2] for line in text.splitlines() if "=" in line)
        mtu = values.get("mtu", "").strip()
        return cls(node, device, port, netdev, address, gid_index,
                   values.get("device") == "present", values.get("state", "").strip(),
                   values.get("gid", "").strip(), values.get("type", "").strip(),
                   int(mtu) if mtu.isdigit() else None)

    def read_argv(self) -> tuple[str, ...]:
        return ("sh", "-c", READ, "strixwizard-rdma-path", self.device, str(self.port),
                "" if self.gid_index is None else str(self.gid_index), self.netdev)

    @property
    def where(self) -> str:
        return f"/sys/class/infiniband/{self.device}/ports/{self.port}"

    def problem(self) -> str | None:
        """Why this end cannot carry llama.cpp's RDMA, or None."""
        if not self.present:
            return (f"{self.node}: RDMA device {self.device} is gone (/sys/class/infiniband/"
                    f"{self.device} absent), so ggml-rpc's GGML_RDMA_DEV={self.device} matches "
                    "nothing and that end stays on TCP: create it again (soft-RoCE: `rdma link "
                    f"add {self.device} type rxe netdev {self.netdev}`), then `strixwizard "
                    "doctor` and deploy again")
        if self.gid_index is None:
            return None
        if not self.gid or self.gid == _EMPTY_GID or not self.gid_type:
            return (f"{self.node}: GGML_RDMA_GID={self.gid_index} is a missing GID: "
                    f"{self.where}/gids/{self.gid_index} is empty (the GID table changed since "
                    "the plan: the address moved or was removed); deploy again so the index is "
                    "read from the table as it is now")
        mapped = _ipv4_of(self.gid)
        if self.gid_type != "RoCE v2":
            return (f"{self.node}: GGML_RDMA_GID={self.gid_index} is a GID of type {self.gid_type} "
                    f"({self.where}/gid_attrs/types/{self.gid_index}), not RoCE v2: the two "
                    "ends would not speak the same RoCE version")
        if mapped != self.address:
            shown = mapped or self.gid
            return (f"{self.node}: GGML_RDMA_GID={self.gid_index} is the GID of {shown} "
                    f"({self.where}/gids/{self.gid_index}), not of the fabric address "
                    f"{self.address}: deploy again so the index is read from the table")
        return None


def _ipv4_of(gid: str) -> str | None:
    try:
        mapped = ipaddress.IPv6Address(gid).ipv4_mapped
    except ValueError:
        return None
    return str(mapped) if mapped else None


def judge_path(ends: list[EndPath]) -> SmokeCheck:
    """Every end's device present, its GID index the RoCE v2 GID of its fabric address, and
    one MTU on every end's fabric netdev."""
    expected = ("on every end: the RDMA device, GGML_RDMA_GID = the RoCE v2 GID of the fabric "
                "address, one fabric MTU")
    evidence = tuple(
        f"{e.node}: {e.device} {'present' if e.present else 'absent'}"
        + (f", port {e.port} {e.state}" if e.state else "")
        + (f", GID {e.gid_index} = {e.gid or '(empty)'} {e.gid_type}".rstrip()
           if e.gid_index is not None else "")
        + f", {e.netdev} MTU {e.mtu if e.mtu is not None else '?'}" for e in ends)
    why = [p for p in (e.problem() for e in ends) if p]
    mtus = {e.node: e.mtu for e in ends if e.present}
    if len(set(mtus.values())) > 1:
        why.append("fabric MTU differs between the ends (" + ", ".join(
            f"{n} {m}" for n, m in mtus.items()) + "): each side takes its own port's active MTU "
            "as the RDMA path MTU, so the queue pairs connect and transfers larger than the smaller "
            "MTU may then fail or stall; set one MTU on every node (`strixwizard fix --only "
            "net.mtu`)")
    if why:
        return SmokeCheck("llama.rdma_path", FAIL, "; ".join(why), expected,
                          "the RDMA path is broken: " + "; ".join(why), evidence)
    return SmokeCheck("llama.rdma_path", PASS, f"{len(ends)} end(s) ready, MTU "
                      f"{next(iter(mtus.values()), '?')}", expected, "", evidence)
