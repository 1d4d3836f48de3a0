"""All-reduce times per message size and transport, and how they extend to other sizes and
rank counts. Pure.

A ring all-reduce over n ranks takes 2·(n - 1) steps, each sending 1/n of the message to the
next rank. So on 2 ranks it is 2 steps of half the message, which is how a TCP ping-pong at
half the size estimates it: t_allreduce(m) ≈ 2 x one-way(m / 2). And from a 2-rank curve A₂,
one step of s bytes costs A₂(2s) / 2, so n ranks cost (n - 1) · A₂(2m / n).

RCCL's own small-message time is mostly a fixed cost per collective (published: RCCL adds tens
of µs over a ~5 µs wire), not per step, so an RCCL curve keeps its floor F (the time at its
smallest size) once and scales only the rest: F + (A₂(m) - F) · 2(n - 1) / n. That leaves out
the extra wire latency of the additional steps (a few µs each on RDMA).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import pairwise

MEASURED = "measured"
ESTIMATED = "estimated"
RECORDED = "recorded"
SOURCES = (MEASURED, ESTIMATED, RECORDED)

#: The tool whose small-message time is a fixed cost per collective (see the module docstring).
RCCL_TOOL = "all_reduce_perf"
#: RCCL over sockets estimated from a link's round trip (the demo's TCP: `decode.measure`); its
#: floor is RCCL's too.
RCCL_SOCKET_ESTIMATE = "RCCL NET/Socket estimate"
RCCL_TOOLS = (RCCL_TOOL, RCCL_SOCKET_ESTIMATE)

#: Transport names of the decode report.
RDMA = "rdma"
TCP = "tcp"
USB4 = "usb4-tcp"


@dataclass(frozen=True)
class CollectivePoint:
    """One all-reduce time: 2 ranks, `size_bytes` per rank."""

    transport: str
    size_bytes: int
    allreduce_us: float
    source: str  # measured | estimated | recorded
    tool: str
    note: str = ""

    def to_json(self) -> dict[str, object]:
        return {"transport": self.transport, "size_bytes": self.size_bytes,
                "allreduce_us": round(self.allreduce_us, 3), "source": self.source,
                "tool": self.tool, "note": self.note}

    @staticmethod
    def from_json(data: dict[str, object]) -> CollectivePoint:
        return CollectivePoint(str(data["transport"]), int(str(data["size_bytes"])),
                               float(str(data["allreduce_us"])), str(data["source"]),
                               str(data.get("tool", "")), str(data.get("note", "")))


def from_pingpong(transport: str, one_way_us: dict[int, float], tool: str, note: str = ""
                  ) -> list[CollectivePoint]:
    """2-rank all-reduce estimates from one-way ping-pong medians at half the message size."""
    return [CollectivePoint(transport, 2 * size, 2 * us, ESTIMATED, tool,
                            note or f"2 x one-way {size} B ping-pong (ring on 2 ranks)")
            for size, us in sorted(one_way_us.items())]


@dataclass(frozen=True)
class AllReduceCurve:
    """The 2-rank all-reduce of one transport, as a function of the message size."""

    transport: str
    points: tuple[CollectivePoint, ...]

    @staticmethod
    def of(transport: str, points: Iterable[CollectivePoint]) -> AllReduceCurve:
        mine = sorted((p for p in points if p.transport == transport), key=lambda p: p.size_bytes)
        return AllReduceCurve(transport, tuple(mine))

    @property
    def source(self) -> str:
        return self.points[0].source if self.points else ESTIMATED

    def two_ranks(self, size: float) -> float:
        """µs at `size` bytes: linear between the points; below the smallest, its time (the
        latency floor); above the largest, the slope of the last two points continued."""
        points = self.points
        if not points:
            raise ValueError(f"no all-reduce times for {self.transport}")
        if size <= points[0].size_bytes or len(points) == 1:
            if size > points[0].size_bytes:  # one point: scale the bandwidth part conservatively
                return points[0].allreduce_us * size / points[0].size_bytes
            return points[0].allreduce_us
        for low, high in pairwise(points):
            if size <= high.size_bytes:
                share = (size - low.size_bytes) / (high.size_bytes - low.size_bytes)
                return low.allreduce_us + share * (high.allreduce_us - low.allreduce_us)
        low, high = points[-2], points[-1]
        slope = (high.allreduce_us - low.allreduce_us) / (high.size_bytes - low.size_bytes)
        return high.allreduce_us + max(slope, 0.0) * (size - high.size_bytes)

    @property
    def fixed_floor(self) -> bool:
        """RCCL's times: the floor is a cost per collective, not per ring step."""
        return bool(self.points) and all(p.tool in RCCL_TOOLS for p in self.points)

    def ranks(self, size: float, n: int) -> float:
        """µs of a ring all-reduce of `size` bytes over `n` ranks, from the 2-rank curve."""
        if n <= 1:
            return 0.0
        if n == 2:
            return self.two_ranks(size)
        if self.fixed_floor:
            floor = self.points[0].allreduce_us
            return floor + max(self.two_ranks(size) - floor, 0.0) * 2 * (n - 1) / n
        return (n - 1) * self.two_ranks(2 * size / n)

    def exact(self, size: int) -> CollectivePoint | None:
        return next((p for p in self.points if p.size_bytes == size), None)


def curves(points: Sequence[CollectivePoint]) -> list[AllReduceCurve]:
    order = list(dict.fromkeys(p.transport for p in points))
    return [AllReduceCurve.of(t, points) for t in order]


def sweep(messages: Sequence[int]) -> list[int]:
    """The sizes timed: from half the smallest decode message to twice the largest, x2 steps
    (all_reduce_perf -b MIN -e MAX -f 2 gives exactly these)."""
    low, high = max(8, min(messages) // 2), max(messages) * 2
    sizes, size = [], low
    while size <= high:
        sizes.append(size)
        size *= 2
    return sizes
