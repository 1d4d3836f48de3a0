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
from strixwizard.live.results import TOK_S, Measurement
from strixwizard.model import Status
from strixwizard.onnode import llama_calibrate
from strixwizard.readback import Range, ReadBackError, integer, number

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
    return calibration_of(host.name, pair, settings, process.stdout, process.status, process.stderr)


#: llama-server's time per token, ms: the inverse of the range `advise --measured-tok-s` takes
#: (0.01 to 100000 tok/s), so what is stored is what advise would take as a flag.
MS_PER_TOKEN = Range(1e3 / TOK_S.high, 1e3 / TOK_S.low, "ms per token")


def calibration_of(node: str, pair: tuple[str, str], settings: CalibrationSettings, stdout: str,
                   exit_status: int | None, stderr: str) -> Measurement:
    """The verdict on what the node's calibration printed: its `predicted_per_token_ms` typed,
    finite and within the flag's range, else an ERROR that says what the node gave."""
    where = f"{node}: llama-server on 127.0.0.1 with {settings.model}"
    events = output_of(stdout, "{")
    result = next((e for e in events if e.get("event") == "result"), None)
    if result is None or "predicted_per_token_ms" not in result:
        said = next((str(e.get("error")) for e in events if e.get("event") == "error"), None)
        status = Status.SKIP if exit_status == 127 else Status.ERROR
        why = said or (stderr.strip().splitlines() or ["no output"])[-1]
        return Measurement(KIND, "none", TOOL, pair, status, f"{node}: no calibration: {why}",
                           unit=UNIT, path=where)
    try:
        ms = number(result["predicted_per_token_ms"], "predicted_per_token_ms", MS_PER_TOKEN)
        tokens = result.get("predicted_n")
        count = None if tokens is None else integer(tokens, "predicted_n", Range(0, 1e9))
    except ReadBackError as error:
        return Measurement(KIND, "none", TOOL, pair, Status.ERROR,
                           f"{node}: llama-server's timing is not a figure: {error}", unit=UNIT,
                           path=where)
    tok_s = 1e3 / ms
    return Measurement(KIND, "none", TOOL, pair, Status.PASS,
                       f"{node}: {tok_s:.2f} tok/s measured on one node ({ms:.2f} ms per token, "
                       f"{count} tokens, llama-server's own timing)",
                       figure=round(ms, 4), unit=UNIT, threshold="measured (no threshold)", path=where,
                       detail={"tok_s": round(tok_s, 4), "predicted_n": count,
                               "model": settings.model, "node": node})


def measured_tok_s(results: Iterable[Measurement]) -> float | None:
    """The calibration of a run, if it measured one."""
    for m in results:
        if m.kind == KIND and m.status is Status.PASS and m.detail.get("tok_s"):
            return float(m.detail["tok_s"])
    return None
