"""`test decode --calibrate`: one node's measured decode speed of the model, the compute
term of the advice (`decode.advise`) in place of the bandwidth estimate, which stays beside it.

Runs `onnode/llama_calibrate.py` on the first node of the pair through its node session: it
starts that node's `llama-server` on 127.0.0.1 with the model, times a few tens of tokens with
llama.cpp's own timings, and stops the server. The model path is the node's (the same GGUF the
shape is read from here: put it at the same path on both). A node without `llama-server` is a
skip that says so; anything else that goes wrong is an error naming the node.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from strixwizard.live.hosts import Host, HostError, output_of
from strixwizard.live.results import Measurement
from strixwizard.model import Status
from strixwizard.onnode import llama_calibrate

KIND = "calibration"
TOOL = "llama-server"
UNIT = "ms/token"
SOURCE = Path(llama_calibrate.__file__).read_text(encoding="utf-8")


@dataclass(frozen=True)
class CalibrationSettings:
    model: str  # the GGUF on the node
    bin_dir: str | None = None  # where llama-server is on the node (default: its PATH)
    tokens: int = 32
    gpu_layers: str = "99"
    limit_s: float = 300.0  # loading a large model takes minutes

    @property
    def server(self) -> str:
        return f"{self.bin_dir.rstrip('/')}/llama-server" if self.bin_dir else "llama-server"


def calibrate(host: Host, pair: tuple[str, str], settings: CalibrationSettings) -> Measurement:
    """The measured single-node speed on `host` (the first node of `pair`)."""
    argv = [host.python, "-c", SOURCE, settings.server, settings.model, settings.gpu_layers,
            str(settings.tokens), f"{settings.limit_s:g}"]
    where = f"{host.name}: llama-server on 127.0.0.1 with {settings.model}"
    try:
        process = host.start(argv, settings.limit_s + 30, "llama-server calibration")
        try:
            process.wait(settings.limit_s + 30)
        finally:
            process.stop()
    except HostError as error:
        return Measurement(KIND, "none", TOOL, pair, Status.ERROR, f"{host.name}: {error}", unit=UNIT,
                           path=where)
    events = output_of(process.stdout, "{")
    result = next((e for e in events if e.get("event") == "result"), None)
    if result is None or not isinstance(result.get("predicted_per_token_ms"), (int, float)):
        said = next((str(e.get("error")) for e in events if e.get("event") == "error"), None)
        status = Status.SKIP if process.status == 127 else Status.ERROR
        why = said or (process.stderr.strip().splitlines() or ["no output"])[-1]
        return Measurement(KIND, "none", TOOL, pair, status, f"{host.name}: no calibration: {why}",
                           unit=UNIT, path=where)
    ms = float(str(result["predicted_per_token_ms"]))
    tok_s = 1e3 / ms if ms > 0 else 0.0
    return Measurement(KIND, "none", TOOL, pair, Status.PASS,
                       f"{host.name}: {tok_s:.2f} tok/s measured on one node ({ms:.2f} ms per token, "
                       f"{result.get('predicted_n')} tokens, llama-server's own timing)",
                       figure=round(ms, 4), unit=UNIT, threshold="measured (no threshold)", path=where,
                       detail={"tok_s": round(tok_s, 4), "predicted_n": result.get("predicted_n"),
                               "model": settings.model, "node": host.name})


def measured_tok_s(results: Iterable[Measurement]) -> float | None:
    """The calibration of a run, if it measured one."""
    for m in results:
        if m.kind == KIND and m.status is Status.PASS and m.detail.get("tok_s"):
            return float(m.detail["tok_s"])
    return None
