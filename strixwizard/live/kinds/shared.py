"""Options more than one kind declares (each kind lists the ones it takes)."""

from __future__ import annotations

from strixwizard.live.kinds import Option

TRANSPORT = Option(
    ("--transport",),
    {"choices": ("all", "tcp"), "default": "all",
     "help": "latency, matrix and decode: `tcp` measures the TCP baseline alone and judges it; by "
     "default RDMA is measured too, and a run that could not measure it has no verdict (exit 2)"},
    elsewhere="{flag} tcp applies to {kinds}; {kind} measures RDMA")
NO_REFERENCES = Option(("--no-references",), {"action": "store_true",
                                              "help": "skip the sockperf/qperf references"})
LAUNCHER = Option(("--launcher",), {"default": "mpirun",
                                    "help": "MPI launcher for rccl (default mpirun)"})
