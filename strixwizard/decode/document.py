"""The "decode" object of the test report, from the model, the bandwidth and the collective
times the run streamed (see the package docstring for its shape). Pure."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from strixwizard.decode.collectives import CollectivePoint, curves
from strixwizard.decode.predict import ASSUMPTIONS, NODE_MEMORY_SOURCE, Prediction, predict
from strixwizard.decode.shapes import ModelShape
from strixwizard.live.results import Measurement

KIND = "decode"


def points_of(results: Iterable[Measurement]) -> list[CollectivePoint]:
    """The all-reduce times carried by the run's decode measurements."""
    points = []
    for m in results:
        if m.kind != KIND:
            continue
        for item in m.detail.get("collectives", []):
            points.append(CollectivePoint.from_json(item))
    return points


def model_json(shape: ModelShape) -> dict[str, Any]:
    return {"name": shape.name, "layers": shape.layers, "hidden": shape.hidden,
            "dtype_bytes": shape.dtype_bytes, "active_params_b": round(shape.active_params / 1e9, 6),
            "total_params_b": round(shape.total_params / 1e9, 6),
            "weight_bytes_per_token": round(shape.weight_bytes_per_token),
            "weight_bytes_total": round(shape.weight_bytes_total),
            "moe": {"experts": shape.experts, "experts_per_token": shape.experts_per_token}
            if shape.moe else None,
            "source": shape.source}


@dataclass
class DecodeRun:
    """What one `test decode` predicts for: the model, the sizes, TP sizes and bandwidth."""

    shape: ModelShape
    batches: list[int]
    tps: list[int]
    bandwidth_gbps: float
    bandwidth_source: str
    notes: list[str] = field(default_factory=list)

    @property
    def messages(self) -> list[int]:
        return [self.shape.message_bytes(b) for b in self.batches]

    def runnable_tps(self, nodes: int | None) -> list[int]:
        """The TP sizes asked for that the site can run: one rank per node (a Strix Halo has one
        GPU), so none above its node count (None: not known, every size asked for)."""
        return [tp for tp in self.tps if nodes is None or tp <= nodes]

    def predictions(self, points: Sequence[CollectivePoint], nodes: int | None = None) -> list[Prediction]:
        return predict(self.shape, curves(points), self.runnable_tps(nodes), self.batches,
                       self.bandwidth_gbps)

    def document(self, results: Iterable[Measurement], nodes: int | None = None) -> dict[str, Any]:
        from strixwizard.decode.calibrate import measured_tok_s

        results = list(results)
        return self.document_of(points_of(results), measured_tok_s(results), nodes)

    def document_of(self, points: Sequence[CollectivePoint], measured_tok_s: float | None = None,
                    nodes: int | None = None) -> dict[str, Any]:
        """The decode object; `nodes`: the site's node count, which bounds every prediction (TP
        sizes above it are left out, said in a note), the advice's included."""
        from strixwizard.decode.advise import fabric_advice

        notes = list(self.notes)
        dropped = [tp for tp in self.tps if tp not in self.runnable_tps(nodes)]
        if dropped:
            notes.append(f"TP={', '.join(map(str, dropped))} left out: the site has {nodes} node(s), "
                         "one rank per node")
        nodes = nodes if nodes is not None else max(self.tps, default=2)
        bound = self.shape.weight_bytes_per_token / (self.bandwidth_gbps * 1e9)
        calibration = None if measured_tok_s is None else {
            "tok_s": round(measured_tok_s, 4), "bandwidth_bound_tok_s": round(1 / bound, 4),
            "note": "measured on one node with llama-server (test decode --calibrate); the advice "
                    "uses it as the compute term, the bandwidth bound is beside it"}
        return {
            "model": model_json(self.shape),
            "batches": self.batches,
            "message_bytes": self.messages,
            "mem_bandwidth_gbps": self.bandwidth_gbps,
            "mem_bandwidth_source": self.bandwidth_source,
            "node_memory": NODE_MEMORY_SOURCE,
            "collectives": [p.to_json() for p in points],
            "predictions": [p.to_json() for p in self.predictions(points, nodes)],
            "assumptions": list(ASSUMPTIONS),
            "notes": notes,
            "calibration": calibration,
            "advice": fabric_advice(self.shape, points, nodes, self.bandwidth_gbps, measured_tok_s),
        }
