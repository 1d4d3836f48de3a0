"""`advise --backend vulkan|rocm`: the llama.cpp backend as an input. Pure.

The compute constants of `advise` were fitted on Vulkan (RADV) rows, so Vulkan is the
reference and ROCm's time per token is Vulkan's times a factor that depends on what the
token reads: quantized weights (Vulkan faster by about a tenth), or BF16 weights (ROCm much
faster on an MoE, a little on a dense model). Each factor is the geometric mean of
vulkan tok/s / rocm tok/s over kyuz0's same-file, same-build, same-box pairs marked "fitted"
in tests/data/decode/published_decode.json ("backend_pairs"); the others are checks
(`python benchmarks/advise_validation.py` prints both).
"""

from __future__ import annotations

from strixwizard.decode.shapes import ModelShape
from strixwizard.errors import UsageError

VULKAN, ROCM, CPU = "vulkan", "rocm", "cpu"
BACKENDS = (VULKAN, ROCM)
QUANTIZED, BF16_MOE, BF16_DENSE = "quantized", "BF16 MoE", "BF16 dense"
#: ROCm's time per token over Vulkan's, by kind (the fit: benchmarks/advise_validation.py).
#: Quantized dense and MoE files share one factor: their pairs do not tell the two apart.
ROCM_TIME_FACTOR = {QUANTIZED: 1.075, BF16_MOE: 0.555, BF16_DENSE: 0.921}
SOURCE = ("kyuz0's same-file Vulkan RADV / ROCm 7.2.3 llama-bench pairs, llama.cpp b9187/b9193 "
          "(https://github.com/kyuz0/amd-strix-halo-toolboxes/blob/main/docs/results.json)")


def check(backend: str) -> str:
    if backend == CPU:
        raise UsageError("--backend cpu: not modelled (no published same-file CPU decode rows to fit "
                         "on Strix Halo); give vulkan or rocm")
    if backend not in BACKENDS:
        raise UsageError(f"--backend {backend}: give vulkan or rocm")
    return backend


def kind(shape: ModelShape) -> str:
    """What a token reads: BF16 when BF16 is the largest part of it, else quantized. F16 is
    not BF16 here: Vulkan on gfx1151 has F16 arithmetic but no BF16 (its device line reads
    "fp16: 1 | bf16: 0"), and lhl's F16 gpt-oss-120b file decodes at the same speed on HIP and
    Vulkan (33.58 and 33.60 tok/s, https://github.com/lhl/strix-halo-testing/blob/main/llm-bench/
    gpt-oss-120b-F16/README.md); a checkpoint's "BF16/F16" dtype counts as BF16."""
    bf16 = shape.precision.upper().startswith("BF16")
    if not bf16:
        return QUANTIZED
    return BF16_MOE if shape.moe else BF16_DENSE


def time_factor(backend: str, shape: ModelShape) -> float:
    """This backend's time per token over Vulkan's, for this model."""
    return ROCM_TIME_FACTOR[kind(shape)] if backend == ROCM else 1.0


def faster(shape: ModelShape) -> tuple[str, float, str]:
    """The faster backend for this model, by how much (tok/s ratio - 1), and why."""
    factor = ROCM_TIME_FACTOR[kind(shape)]
    name = ROCM if factor < 1 else VULKAN
    gain = (1 / factor if factor < 1 else factor) - 1
    return name, gain, (f"{name} is faster for a {kind(shape)} model by {gain:.0%} (ROCm's time per token "
                        f"is {factor:g} x Vulkan's; {SOURCE})")
