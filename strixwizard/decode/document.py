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
            "dtype_bytes": shape.dtype_bytes, "active_params_b": round(shape.active_params / 1e9, 3),
            "total_params_b": round(shape.total_params / 1e9, 3),
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

    def predictions(self, points: Sequence[CollectivePoint]) -> list[Prediction]:
        return predict(self.shape, curves(points), self.tps, self.batches, self.bandwidth_gbps)

    def document(self, results: Iterable[Measurement]) -> dict[str, Any]:
        return self.document_of(points_of(results))

    def document_of(self, points: Sequence[CollectivePoint]) -> dict[str, Any]:
        from strixwizard.decode.advise import fabric_advice

        nodes = max(self.tps, default=2)
        return {
            "model": model_json(self.shape),
            "batches": self.batches,
            "message_bytes": self.messages,
            "mem_bandwidth_gbps": self.bandwidth_gbps,
            "mem_bandwidth_source": self.bandwidth_source,
            "node_memory": NODE_MEMORY_SOURCE,
            "collectives": [p.to_json() for p in points],
            "predictions": [p.to_json() for p in self.predictions(points)],
            "assumptions": list(ASSUMPTIONS),
            "notes": list(self.notes),
            "advice": fabric_advice(self.shape, points, nodes, self.bandwidth_gbps),
        }
