"""Time the all-reduce at a model's decode sizes between two nodes: RCCL's `all_reduce_perf`
(with the NET/IB transport proof of `test rccl`) and our TCP ping-pong at half each size
(the 2-rank ring estimate). Each transport is one `Measurement` of kind "decode" whose
detail carries the times per size ("collectives"); `document` turns them into predictions.

A run with RCCL absent says so (skip) and keeps the TCP estimate; on an RDMA link it
measures the 2-rank ring all-reduce's own traffic over verbs (the pyverbs program's
`allreduce` pattern: both ranks RDMA-write half the message at once, twice) at every decode
size, labelled measured, and without pyverbs estimates it from `ib_write_lat` at the same
half sizes, labelled so. On the demo the RDMA all-reduce is replayed from a recording
(labelled "recorded") and the TCP one is estimated from the same recording's round trip.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from strixwizard.decode.calibrate import CalibrationSettings, calibrate
from strixwizard.decode.collectives import (
    ESTIMATED,
    MEASURED,
    RCCL_SOCKET_ESTIMATE,
    RDMA,
    RECORDED,
    TCP,
    USB4,
    CollectivePoint,
    from_pingpong,
)
from strixwizard.decode.document import KIND
from strixwizard.decode.links import TcpPath
from strixwizard.live.hosts import Host, HostError
from strixwizard.live.native import verbs_run
from strixwizard.live.perftest import PerftestSettings, rdma_test
from strixwizard.live.plan import PairPlan, RdmaEnd
from strixwizard.live.rccl import TOOL as RCCL_TOOL
from strixwizard.live.rccl import RcclSettings, rccl_measurement, rccl_test
from strixwizard.live.results import REPLAYED, Measurement, stats_from_samples
from strixwizard.live.tcp import TOOL as TCP_TOOL
from strixwizard.live.tcp import TcpRunError, TcpSettings, pingpong_stats
from strixwizard.model import Status
from strixwizard.onnode import pingpong
from strixwizard.site import Thresholds

RECORDING = Path(__file__).resolve().parent.parent / "demo" / "recordings" / "all_reduce_perf_decode.txt"
UNIT = "µs all-reduce"
VERBS_ALLREDUCE = "strixwizard verbs all-reduce"
#: exchanges before the timed ones at each size, within its time bound (`seconds_per_size`,
#: 1 s): few, so a slow pair still times some (a TCG VM takes ms per round trip; 500 warm-up
#: round trips there left none timed)
WARMUP = 50
#: how long a verbs server may take to listen: importing pyverbs took over 10 s (the ping-pong's
#: bound) in a TCG VM on busy cores; only a failure waits this long
VERBS_START_S = 30.0


@dataclass(frozen=True)
class DecodeSettings:
    sizes: tuple[int, ...]  # all-reduce message sizes (bytes per rank), smallest first
    primary: int  # the batch-1 message: the figure of each measurement
    seconds_per_size: float = 1.0  # time bound of each ping-pong
    round_trips: int = 5000
    launcher: str = "mpirun"
    rccl_timeout: float = 60.0
    rdma_iterations: int = 1000  # ib_write_lat -n, per size, when RCCL is absent
    calibration: CalibrationSettings | None = None  # --calibrate: one node's measured speed

    @property
    def ping_sizes(self) -> list[int]:
        """Half of every size, up to the ping-pong's largest message (1 MiB); the all-reduce at
        larger sizes is extrapolated from the largest ones."""
        return sorted({max(1, s // 2) for s in self.sizes if s // 2 <= pingpong.MAX_SIZE})


def _figure(points: Sequence[CollectivePoint], size: int) -> float | None:
    exact = next((p for p in points if p.size_bytes == size), None)
    return exact.allreduce_us if exact else None


def _detail(points: Sequence[CollectivePoint], **extra: object) -> dict[str, object]:
    return {"collectives": [p.to_json() for p in points], **extra}


def tcp_decode(client: Host, server: Host, pair: tuple[str, str], address: str, path: str,
               settings: DecodeSettings, transport: str = TCP, note: str = "") -> Measurement:
    """Our ping-pong at half of every decode size; the 2-rank all-reduce estimated from it."""
    one_way: dict[int, float] = {}
    try:
        for size in settings.ping_sizes:
            stats, _ = pingpong_stats(client, server, address, TcpSettings(
                size=size, round_trips=settings.round_trips, warmup=min(WARMUP, settings.round_trips),
                seconds=settings.seconds_per_size, references=False))
            if stats.median_us is None:
                raise TcpRunError(f"the ping-pong at {size} B measured no round trip")
            one_way[size] = stats.median_us
    except (TcpRunError, HostError) as error:
        return Measurement(KIND, "tcp", TCP_TOOL, pair, Status.ERROR, f"{transport}: {error}", path=path,
                           unit=UNIT, detail=_detail([]))
    beyond = [s for s in settings.sizes if s // 2 > pingpong.MAX_SIZE]
    if beyond:
        note = "; ".join(n for n in (note, f"sizes above {2 * pingpong.MAX_SIZE} B extrapolated") if n)
    points = from_pingpong(transport, one_way, TCP_TOOL,
                           "2 x one-way ping-pong at half the size (ring on 2 ranks)"
                           + (f"; {note}" if note else ""))
    figure = _figure(points, settings.primary)
    at = f"{figure:.1f} µs at {settings.primary} B" if figure is not None else f"{len(points)} sizes"
    return Measurement(KIND, "tcp", TCP_TOOL, pair, Status.PASS,
                       f"{transport} all-reduce estimated from the ping-pong: {at} "
                       "(no RCCL overhead: a lower bound)", figure=figure, unit=UNIT,
                       threshold="timed at the decode sizes", path=path,
                       detail=_detail(points, decode_transport=transport, ping_sizes=sorted(one_way),
                                      note=note or None))


def _rccl_points(m: Measurement, source: str, sizes: Sequence[int]) -> list[CollectivePoint]:
    times = m.detail.get("in_place_us") or {}
    transport = RDMA if m.detail.get("transport") == "NET/IB" else "rccl-socket"
    low, high = min(sizes), max(sizes)
    chosen = {int(s): float(t) for s, t in times.items()}
    window = {s: t for s, t in chosen.items() if low / 2 <= s <= high * 2}
    return [CollectivePoint(transport, s, t, source, RCCL_TOOL, "in-place time, 2 ranks")
            for s, t in sorted((window or chosen).items())]


def _from_rccl(m: Measurement, source: str, settings: DecodeSettings, rdma_link: bool) -> Measurement:
    points = _rccl_points(m, source, settings.sizes)
    status, summary = m.status, m.summary
    if not rdma_link and m.detail.get("transport") == "NET/Socket" and m.status is Status.FAIL:
        status, summary = Status.PASS, f"RCCL over NET/Socket (the link has no RDMA): {summary}"
    figure = _figure(points, settings.primary)
    return Measurement(KIND, m.transport, RCCL_TOOL, m.pair, status, summary, figure=figure, unit=UNIT,
                       threshold=m.threshold, path=m.path, source=m.source,
                       detail=_detail(points, rccl={k: v for k, v in m.detail.items()
                                                    if k not in ("in_place_us",)}))


def rccl_decode(head: Host, launch_hosts: Sequence[str], pair: tuple[str, str], ends: Sequence[RdmaEnd],
                settings: DecodeSettings, rdma_link: bool = True) -> Measurement:
    """`all_reduce_perf -b MIN -e MAX -f 2` across the pair; RCCL absent is a skip that says so."""
    rccl = RcclSettings(launcher=settings.launcher, min_bytes=str(min(settings.sizes)),
                        max_bytes=str(max(settings.sizes)), timeout=settings.rccl_timeout)
    m = rccl_test(head, launch_hosts, pair, ends, rccl)
    if m.status is Status.ERROR and "is not installed" in m.summary:
        return Measurement(KIND, "rdma", RCCL_TOOL, pair, Status.SKIP,
                           f"RCCL absent ({m.summary}): the all-reduce over RCCL is not measured; "
                           "the TCP all-reduce is estimated from the ping-pong", path=m.path, unit=UNIT,
                           detail=_detail([]))
    return _from_rccl(m, MEASURED, settings, rdma_link)


def rdma_pingpong_decode(client: Host, server: Host, plan: PairPlan, settings: DecodeSettings
                         ) -> Measurement:
    """RCCL absent on an RDMA link: `ib_write_lat -s` at half of every decode size, and the
    2-rank all-reduce estimated from it (no RCCL overhead: a lower bound of RCCL over RDMA)."""
    tool = "ib_write_lat"
    assert plan.rdma is not None
    one_way: dict[int, float] = {}
    for size in settings.ping_sizes:
        m = rdma_test(tool, client, server, plan.rdma, Thresholds(),
                      PerftestSettings(size=size, iterations=settings.rdma_iterations))
        if m.latency is None or m.latency.median_us is None or int(m.detail.get("size_bytes", -1)) != size:
            status = Status.SKIP if "is not installed" in m.summary else Status.ERROR
            return Measurement(KIND, "rdma", tool, plan.pair, status,
                               f"no RDMA estimate either: {m.summary}", path=m.path, unit=UNIT,
                               detail=_detail([]))
        one_way[size] = m.latency.median_us
    software = ("; software RDMA (rxe/siw): tests the setup, not production speed"
                if plan.software_rdma else "")
    points = from_pingpong(RDMA, one_way, tool, "2 x one-way ib_write_lat at half the size (ring on 2 "
                           "ranks); RCCL absent, its overhead not included" + software)
    figure = _figure(points, settings.primary)
    at = f"{figure:.1f} µs at {settings.primary} B" if figure is not None else f"{len(points)} sizes"
    return Measurement(KIND, "rdma", tool, plan.pair, Status.PASS,
                       f"RDMA all-reduce estimated from ib_write_lat: {at} (no RCCL overhead: a lower "
                       "bound)", figure=figure, unit=UNIT, threshold="timed at the decode sizes",
                       path=f"{plan.rdma[0].label} -> {plan.rdma[1].label}",
                       detail=_detail(points, ping_sizes=sorted(one_way)))


def rdma_verbs_decode(client: Host, server: Host, plan: PairPlan, settings: DecodeSettings
                      ) -> Measurement:
    """RCCL absent on an RDMA link: the 2-rank ring all-reduce's traffic over real verbs at
    every decode size, each a median of whole all-reduces (measured; no RCCL overhead and no
    sums, so a lower bound of RCCL over RDMA)."""
    assert plan.rdma is not None
    ends = (plan.rdma[0], plan.rdma[1])
    software = ("; software RDMA (rxe/siw): tests the setup, not production speed"
                if plan.software_rdma else "")
    note = ("2-rank ring all-reduce over RDMA writes (reduce-scatter, all-gather: half the "
            "message each way at once, twice); RCCL absent, its overhead and the sums not "
            "included" + software)
    points: list[CollectivePoint] = []
    for half in settings.ping_sizes:
        got = verbs_run(client, server, ends, TcpSettings(
            size=half, round_trips=settings.round_trips, warmup=min(WARMUP, settings.round_trips),
            seconds=settings.seconds_per_size, references=False, start_timeout=VERBS_START_S),
            "allreduce")
        median = None if isinstance(got, str) else stats_from_samples(ns / 1000.0 for ns in got).median_us
        if median is None:
            return Measurement(KIND, "rdma", VERBS_ALLREDUCE, plan.pair, Status.SKIP,
                               f"the RDMA all-reduce over verbs was not measured at {2 * half} B: "
                               f"{got}", path=f"{plan.rdma[0].label} -> {plan.rdma[1].label}",
                               unit=UNIT, detail=_detail([]))
        points.append(CollectivePoint(RDMA, 2 * half, median, MEASURED, VERBS_ALLREDUCE, note))
    figure = _figure(points, settings.primary)
    at = f"{figure:.1f} µs at {settings.primary} B" if figure is not None else f"{len(points)} sizes"
    return Measurement(KIND, "rdma", VERBS_ALLREDUCE, plan.pair, Status.PASS,
                       f"RDMA all-reduce measured over verbs: {at} (no RCCL overhead: a lower bound)"
                       + software, figure=figure, unit=UNIT, threshold="timed at the decode sizes",
                       path=f"{plan.rdma[0].label} -> {plan.rdma[1].label}",
                       detail=_detail(points, ping_sizes=[p.size_bytes // 2 for p in points]))


def decode_pair(hosts: dict[str, Host], plan: PairPlan, addresses: dict[str, str],
                settings: DecodeSettings, other_paths: Sequence[TcpPath] = ()) -> Iterator[Measurement]:
    """TCP over the plan's link (and over USB4 networking beside it), then RCCL across the pair."""
    client, server = hosts[plan.a], hosts[plan.b]
    if settings.calibration is not None:
        yield calibrate(client, plan.pair, settings.calibration)
    transport = USB4 if plan.transport == "thunderbolt-net" else TCP
    note = "" if plan.over_fabric else "over the management network: the nodes share no fabric link"
    yield tcp_decode(client, server, plan.pair, plan.tcp_address, plan.tcp_path, settings, transport, note)
    for other in other_paths:
        yield tcp_decode(client, server, plan.pair, other.address, other.path, settings, other.transport)
    launch = [addresses.get(n, n) for n in plan.pair]
    rccl = rccl_decode(client, launch, plan.pair, list(plan.rdma or ()), settings,
                       rdma_link=plan.rdma is not None)
    yield rccl
    if rccl.status is Status.SKIP and plan.rdma is not None:
        verbs = rdma_verbs_decode(client, server, plan, settings)
        yield verbs
        if verbs.status is not Status.PASS:  # no pyverbs there: estimated from ib_write_lat
            yield rdma_pingpong_decode(client, server, plan, settings)


def recorded_tcp_decode(pair: tuple[str, str], settings: DecodeSettings) -> Measurement:
    """The demo's TCP all-reduce: RCCL over sockets on the recording's link, estimated from its
    recorded round trip (meta.json's `tcp_baseline`) plus what RCCL's NET/Socket adds over a TCP
    round trip (`advise.RCCL_OVER_RTT_US`, published by wkljohn); flat over the decode sizes
    (small messages: the round trips, not the wire, set the time)."""
    from strixwizard.decode.advise import RCCL_OVER_RTT_US
    from strixwizard.live.demo import recorded_ends, tcp_baseline

    base = tcp_baseline()
    round_trip = float(base["round_trip_us"])
    overhead = RCCL_OVER_RTT_US[TCP]
    time_us = round_trip + overhead
    how = (f"the recorded {round_trip:g} µs round trip + {overhead:g} µs RCCL NET/Socket (wkljohn)")
    note = (f"estimated: the recorded {round_trip:g} µs round trip over the same E810 link "
            f"({base['source']}) + {overhead:g} µs, what RCCL over NET/Socket adds over a TCP round "
            "trip (wkljohn: 286 µs on a 130 µs link)")
    points = [CollectivePoint(TCP, size, time_us, ESTIMATED, RCCL_SOCKET_ESTIMATE, how)
              for size in settings.sizes]
    ends = recorded_ends()
    path = (f"{ends[0].node}:{ends[0].netdev} -> {ends[1].node}:{ends[1].netdev}, kernel IP stack "
            "(the recording's link)")
    return Measurement(KIND, "tcp", RCCL_SOCKET_ESTIMATE, pair, Status.PASS,
                       f"tcp all-reduce estimated from the recorded round trip: {time_us:.1f} µs at "
                       f"{settings.primary} B (RCCL over sockets)", figure=time_us, unit=UNIT,
                       threshold="timed at the decode sizes", path=path, source=REPLAYED,
                       detail=_detail(points, decode_transport=TCP, note=note,
                                      recording="demo/recordings/meta.json (tcp_baseline)"))


def demo_decode(pair: tuple[str, str], settings: DecodeSettings) -> Iterator[Measurement]:
    """The demo: the recorded RCCL all-reduce over RDMA beside the TCP all-reduce estimated from
    the same recording (never this machine's loopback beside a recording)."""
    from strixwizard.live.demo import recorded_ends

    if settings.calibration is not None:
        from strixwizard.decode.calibrate import KIND as CALIBRATION
        from strixwizard.decode.calibrate import TOOL as LLAMA_SERVER

        yield Measurement(CALIBRATION, "none", LLAMA_SERVER, pair, Status.SKIP,
                          "demo: no calibration (the demo nodes are snapshots, nothing runs a model)",
                          unit="ms/token")
    yield recorded_tcp_decode(pair, settings)
    ends = recorded_ends()
    expected = sorted({f"{e.device}:{e.port}" for e in ends})
    replay = rccl_measurement((ends[0].node, ends[1].node), RECORDING.read_text(encoding="utf-8"),
                              expected, f"{ends[0].label} -> {ends[1].label}", source=REPLAYED,
                              detail={"recording": "demo/recordings/all_reduce_perf_decode.txt"})
    yield _from_rccl(replay, RECORDED, settings, rdma_link=True)
