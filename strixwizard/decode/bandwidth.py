"""Memory bandwidth per node, the divisor of the compute time. Pure.

Strix Halo (Ryzen AI Max 385/390/395) has a 256-bit LPDDR5X-8000 bus: 8000 MT/s x 32 bytes
= 256 GB/s theoretical. What a GPU kernel reaches is lower: `rocm_bandwidth_test` measures
about 212 GB/s peak on a Ryzen AI Max+ 395 (llm-tracker.info's Strix Halo notes, in line with
other Strix Halo systems). The default is that measured figure; `--mem-bandwidth GBPS`
overrides it (a figure measured on your own nodes is better still).
"""

from __future__ import annotations

from strixwizard.errors import UsageError

#: Matrix throughput, for large batches where a step stops being bound by memory: 36.9 BF16
#: TFLOPS measured with hipBLASLt (mamf-finder) on the Radeon 8060S, of 59.4 theoretical.
COMPUTE_TFLOPS = 36.9
COMPUTE_SOURCE = ("measured: mamf-finder with hipBLASLt 36.9 BF16 TFLOPS on the Radeon 8060S, of 59.4 "
                  "theoretical (https://llm-tracker.info/_TOORG/Strix-Halo)")

THEORETICAL_GBPS = 256.0
THEORETICAL_SOURCE = ("256-bit LPDDR5X-8000: 8000 MT/s x 32 B = 256 GB/s theoretical "
                      "(AMD Ryzen AI Max+ 395 specifications, https://www.amd.com/en/products/processors/"
                      "laptop/ryzen/ai-300-series/amd-ryzen-ai-max-plus-395.html)")
MEASURED_GBPS = 212.0
MEASURED_SOURCE = ("measured: rocm_bandwidth_test peak ≈212 GB/s on a Ryzen AI Max+ 395 with 128 GB "
                   "LPDDR5X-8000 (https://llm-tracker.info/_TOORG/Strix-Halo); theoretical 256 GB/s")


def mem_bandwidth(override: float | None) -> tuple[float, str]:
    """The bandwidth in GB/s and where it comes from."""
    if override is None:
        return MEASURED_GBPS, MEASURED_SOURCE
    if not 1.0 <= override <= 10000.0:
        raise UsageError(f"--mem-bandwidth {override:g}: give GB/s between 1 and 10000")
    return override, f"--mem-bandwidth {override:g} GB/s (given by the user)"
