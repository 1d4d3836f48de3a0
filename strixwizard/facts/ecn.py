"""ECN / DCQCN congestion control of a RoCE port, where the driver exposes it.

- mlx5 (ConnectX): `/sys/class/net/IF/ecn/roce_np/enable/P` (notification point: the
  receiver marks and sends CNPs) and `.../roce_rp/enable/P` (reaction point: the sender
  slows down), one file per priority, "1" or "0". Both are on by default.
- irdma (E810): `/sys/kernel/config/irdma/DEV/roce_dcqcn_enable`, which exists only after
  someone created the configfs directory; DCQCN is off by default. A read-only probe never
  creates it, so without it the state is unknown.
- Counters: the port's hw_counters for CNPs and ECN-marked packets (names differ per driver).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from strixwizard.facts.source import read_int, read_str
from strixwizard.probe import Probe

#: hw_counters names: (irdma, mlx5) → what they count.
COUNTERS = {
    "cnpSent": "CNPs sent", "np_cnp_sent": "CNPs sent",
    "cnpHandled": "CNPs handled", "rp_cnp_handled": "CNPs handled",
    "RxECNMrkd": "ECN-marked received", "np_ecn_marked_roce_packets": "ECN-marked received",
}


@dataclass(frozen=True)
class Congestion:
    """What a NIC's driver exposes of ECN congestion control (DCQCN)."""

    source: str | None  # "mlx5 sysfs", "irdma configfs", or None when nothing is exposed
    notify_priorities: tuple[int, ...] | None = None  # mlx5 roce_np enabled priorities
    react_priorities: tuple[int, ...] | None = None  # mlx5 roce_rp enabled priorities
    dcqcn: bool | None = None  # irdma roce_dcqcn_enable
    counters: dict[str, int] = field(default_factory=dict)

    def enabled_on(self, priority: int) -> bool | None:
        """Is ECN-based congestion control on for this priority? None: unknown."""
        if self.source == "mlx5 sysfs":
            assert self.notify_priorities is not None and self.react_priorities is not None
            return priority in self.notify_priorities and priority in self.react_priorities
        if self.source == "irdma configfs":
            return self.dcqcn
        return None


def _enabled(probe: Probe, directory: str) -> tuple[int, ...] | None:
    names = [n for n in probe.listdir(directory) if n.isdigit()]
    if not names:
        return None
    return tuple(sorted(int(n) for n in names if read_str(probe, f"{directory}/{n}") == "1"))


def congestion(probe: Probe, netdev: str, rdma_device: str | None, port: int | None) -> Congestion:
    counters: dict[str, int] = {}
    if rdma_device is not None and port is not None:
        base = f"/sys/class/infiniband/{rdma_device}/ports/{port}/hw_counters"
        for name in COUNTERS:
            value = read_int(probe, f"{base}/{name}")
            if value is not None:
                counters[COUNTERS[name]] = value
    notify = _enabled(probe, f"/sys/class/net/{netdev}/ecn/roce_np/enable")
    react = _enabled(probe, f"/sys/class/net/{netdev}/ecn/roce_rp/enable")
    if notify is not None and react is not None:
        return Congestion("mlx5 sysfs", notify, react, None, counters)
    if rdma_device is not None:
        flag = read_str(probe, f"/sys/kernel/config/irdma/{rdma_device}/roce_dcqcn_enable")
        if flag is not None:
            return Congestion("irdma configfs", dcqcn=flag == "1", counters=counters)
    return Congestion(None, counters=counters)
