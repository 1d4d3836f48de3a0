"""The decode model: predicted tokens per second for TP = 1 … N over each transport. Pure.

Per decode step of `batch` sequences on TP ranks::

    t_comm = 2 · L · t_allreduce(batch x hidden x dtype_bytes, TP ranks)
    t_comp = weight bytes read in the step / (TP · memory bandwidth per node)
    tokens/s = batch / (t_comm + t_comp)

At large batches a step stops being bound by memory: t_comp is never taken below the matrix
work, 2 · active parameters · batch FLOPs / (TP · measured TFLOPS).

Left out on purpose (each makes real decode slower than predicted): kernel efficiency below
the measured bandwidth, KV-cache reads (they grow with the context), the head/sampling and
launch overheads, and any overlap of communication with compute (which would make it faster).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from strixwizard.decode.bandwidth import COMPUTE_TFLOPS
from strixwizard.decode.collectives import ESTIMATED, AllReduceCurve
from strixwizard.decode.shapes import ModelShape

#: The GPU memory pool of one node, for "does it fit": amdgpu.gttsize=126976 MiB (124 GiB), the
#: value of kyuz0's Strix Halo setup guide (amd-strix-halo-vllm-toolboxes rdma_cluster/setup_guide.md).
NODE_MEMORY_BYTES = 126976 * 2**20
NODE_MEMORY_SOURCE = "124 GiB GPU pool per node (amdgpu.gttsize=126976, kyuz0's setup guide)"
SINGLE_NODE = "single node"

ASSUMPTIONS = (
    "t_comm = 2 · layers · t_allreduce(batch x hidden x dtype bytes); t_comp = weight bytes read "
    "per step / (TP x memory bandwidth); tokens/s = batch / (t_comm + t_comp)",
    "MoE: active experts for compute (uniform routing at batch > 1), every layer for communication",
    "t_comp is at least the matrix work: 2 x active parameters x batch FLOPs / (TP x 36.9 TFLOPS "
    "measured with hipBLASLt); attention FLOPs left out",
    "not modelled: KV-cache reads (grow with context), kernel efficiency below the measured "
    "bandwidth, launch/sampling overheads, overlap of communication and compute",
    "TP > 2 from a 2-rank measurement: ring all-reduce, (n - 1) x t2(2m / n) from a ping-pong; "
    "from RCCL, its floor once (a cost per collective) plus the rest x 2(n - 1) / n",
    "TCP all-reduce estimated from our ping-pong: no RCCL overhead, so a lower bound of RCCL "
    "over sockets (NET/Socket adds tens of µs)",
)


@dataclass(frozen=True)
class Prediction:
    transport: str
    tp: int
    batch: int
    tokens_per_s: float
    t_comm_ms: float
    t_comp_ms: float
    source: str
    fits: bool
    note: str = ""

    @property
    def comm_share(self) -> float:
        total = self.t_comm_ms + self.t_comp_ms
        return self.t_comm_ms / total if total > 0 else 0.0

    def to_json(self) -> dict[str, object]:
        return {"transport": self.transport, "tp": self.tp, "batch": self.batch,
                "tokens_per_s": round(self.tokens_per_s, 3), "t_comm_ms": round(self.t_comm_ms, 4),
                "t_comp_ms": round(self.t_comp_ms, 4), "comm_share": round(self.comm_share, 4),
                "source": self.source, "fits": self.fits, "note": self.note}


def compute_ms(shape: ModelShape, tp: int, batch: int, bandwidth_gbps: float,
               tflops: float = COMPUTE_TFLOPS) -> float:
    """The step's compute time on each of `tp` ranks: reading its weights, or the matrix work
    when the batch is large enough for that to take longer."""
    memory = shape.step_weight_bytes(batch) / (tp * bandwidth_gbps * 1e9)
    matrix = 2 * shape.active_params * batch / (tp * tflops * 1e12)
    return max(memory, matrix) * 1e3


def fits(shape: ModelShape, tp: int) -> bool:
    return shape.weight_bytes_total / tp <= NODE_MEMORY_BYTES


def _source(curve: AllReduceCurve, size: int, tp: int) -> tuple[str, str]:
    if tp > 2:
        return ESTIMATED, f"ring over {tp} ranks extrapolated from the 2-rank {curve.transport} times"
    exact = curve.exact(size)
    if exact is not None:
        return exact.source, ""
    if curve.points and size > curve.points[-1].size_bytes:
        return curve.source, f"extrapolated beyond the largest {curve.transport} size timed"
    return curve.source, f"interpolated between the {curve.transport} sizes timed"


def predict_tp(shape: ModelShape, curve: AllReduceCurve, tp: int, batch: int,
               bandwidth_gbps: float) -> Prediction:
    t_comp = compute_ms(shape, tp, batch, bandwidth_gbps)
    fit = fits(shape, tp)
    note = "" if fit else f"does not fit: {shape.weight_bytes_total / tp / 2**30:.0f} GiB of weights per node"
    if tp == 1:
        return Prediction(curve.transport, 1, batch, batch / t_comp * 1e3, 0.0, t_comp, ESTIMATED,
                          fit, note or "one node: no communication")
    size = shape.message_bytes(batch)
    t_comm = 2 * shape.layers * curve.ranks(size, tp) / 1e3
    source, how = _source(curve, size, tp)
    return Prediction(curve.transport, tp, batch, batch / (t_comm + t_comp) * 1e3, t_comm, t_comp,
                      source, fit, "; ".join(n for n in (how, note) if n))


def predict(shape: ModelShape, curves: Sequence[AllReduceCurve], tps: Sequence[int],
            batches: Sequence[int], bandwidth_gbps: float) -> list[Prediction]:
    return [predict_tp(shape, curve, tp, batch, bandwidth_gbps)
            for curve in curves if curve.points for batch in batches for tp in tps]


def predict_layer_split(shape: ModelShape, nodes: int, hop_us: float, bandwidth_gbps: float,
                        transport: str, source: str) -> Prediction:
    """llama.cpp RPC `-sm layer` (pipeline, not TP), one sequence: each token runs through
    every node's layers in turn, so the weights are read at one node's speed; it adds one
    activation hand-over per node boundary and back (`hop_us` each)."""
    t_comp = compute_ms(shape, 1, 1, bandwidth_gbps)
    t_comm = 2 * (nodes - 1) * hop_us / 1e3 if nodes > 1 else 0.0
    return Prediction(transport, nodes, 1, 1e3 / (t_comm + t_comp), t_comm, t_comp, source,
                      fits(shape, nodes), "layer split (pipeline): weights read one node at a time")
