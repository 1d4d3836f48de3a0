"""How long and how much a measurement runs: the settings of every kind, and the rounds a
run of every pair took."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from strixwizard.live.perftest import PerftestSettings
from strixwizard.live.rccl import RcclSettings
from strixwizard.live.soak import SoakSettings
from strixwizard.live.tcp import TcpSettings
from strixwizard.site import Thresholds

if TYPE_CHECKING:
    from strixwizard.decode.document import DecodeRun
    from strixwizard.decode.measure import DecodeSettings


@dataclass
class MeasurementSettings:
    thresholds: Thresholds = field(default_factory=Thresholds)
    tcp: TcpSettings = field(default_factory=TcpSettings)
    perftest: PerftestSettings = field(default_factory=PerftestSettings)
    rccl: RcclSettings = field(default_factory=RcclSettings)
    latency_tool: str = "ib_write_lat"
    bandwidth_tool: str = "ib_write_bw"
    tcp_only: bool = False  # `--transport tcp`: the TCP baseline alone, no RDMA asked for
    soak: SoakSettings = field(default_factory=SoakSettings)
    #: `test decode`: the model, its sizes and the memory bandwidth, and how each size is timed
    #: (None: not a decode run)
    decode_run: DecodeRun | None = None
    decode: DecodeSettings | None = None
    #: A kind's own settings, by its name, for a kind that has no field above (its `configure`
    #: puts them here, its runner reads them)
    of_kind: dict[str, Any] = field(default_factory=dict)


@dataclass
class MatrixTiming:
    rounds: list[list[tuple[str, str]]] = field(default_factory=list)
    round_seconds: list[float] = field(default_factory=list)
