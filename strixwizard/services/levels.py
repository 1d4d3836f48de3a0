"""Run levels, as DCGM has them (`dcgmi diag -r quick|medium|long`: "quick deployment checks,
normally lasting seconds", "medium validation, approximately two minutes", "long …
approximately 15 minutes",
https://docs.nvidia.com/datacenter/dcgm/latest/reference/command-line-reference/dcgmi/dcgmi-diag.html):
how much `doctor` reads and how long `test` measures. The CLI and the wizard read the same
table; the durations beside each level were measured (docs/doctor.md "Run levels",
`benchmarks/levels.py`)."""

from __future__ import annotations

from dataclasses import dataclass

DOCTOR_LEVELS = ("quick", "full")
MEASURE_LEVELS = ("quick", "medium", "long")


@dataclass(frozen=True)
class DoctorLevel:
    """A doctor run level: what it leaves out to read less."""

    name: str
    #: Checks this level leaves out, and the collected command outputs only they read (so a
    #: node over SSH is not asked for them either).
    leaves_out: tuple[str, ...]
    outputs: tuple[str, ...]
    what: str


@dataclass(frozen=True)
class MeasurementLevel:
    """A test run level: how long and how much each measurement runs."""

    name: str
    seconds: float  # the time bound of each timed loop (--seconds)
    references: bool  # sockperf/qperf beside our own ping-pong
    soak_bytes: int  # `test soak`: bytes each way at most (--bytes)
    samples: float  # times the medium level's sample counts (TCP round trips, perftest -n)
    what: str


DOCTOR: dict[str, DoctorLevel] = {
    "quick": DoctorLevel(
        "quick", ("node.rdma_core_version", "node.linux_firmware", "node.rccl_gfx1151"),
        ("packages.rpm", "packages.dpkg", "rocm.rccl_grep"),
        "every check but the installed-package versions (rpm/dpkg queries) and RCCL's gfx1151 "
        "code objects (a grep through the whole librccl); 1.4 s for two lab nodes over SSH"),
    "full": DoctorLevel("full", (), (), "every check (the default); 2.5 s for two lab nodes"),
}

MEASURE: dict[str, MeasurementLevel] = {
    "quick": MeasurementLevel("quick", 1.0, False, 64 << 20, 0.1,
                       "2,000 TCP round trips and 100 ib_write_lat iterations, at most 1 s per "
                       "timed loop, no sockperf/qperf references, soak up to 64 MiB; `test "
                       "latency` 3.5 s for a lab pair over SSH"),
    "medium": MeasurementLevel("medium", 5.0, True, 1 << 30, 1.0,
                        "20,000 round trips, 1,000 iterations, at most 5 s per loop, with the "
                        "sockperf/qperf references, soak up to 1 GiB (the default); 15 s"),
    "long": MeasurementLevel("long", 60.0, True, 16 << 30, 10.0,
                      "200,000 round trips, 10,000 iterations, at most 60 s per loop, with the "
                      "references, soak up to 16 GiB; 29 s"),
}
