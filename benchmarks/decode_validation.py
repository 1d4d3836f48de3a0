"""Validation: the decode model against tokens/s people published for Strix Halo machines and
clusters, on the inputs they published. Prints a Markdown table: predicted vs published, the
ratio (predicted / published), the communication share, and the source of each figure.

Nothing here is fitted: every input is the published one (model, quantization, link latency
where given) or, where a setup leaves one out, a stated stand-in from another public source.
The default memory bandwidth is the model's own (212 GB/s, rocm_bandwidth_test). llama.cpp
RPC `-sm layer` is a pipeline, not tensor parallelism: it is predicted with the layer-split
variant (weights read one node at a time, one activation hand-over per node boundary and
back), which is all the model knows about it.

    python benchmarks/decode_validation.py
"""

from __future__ import annotations

import dataclasses
import sys
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from strixwizard.decode.bandwidth import MEASURED_GBPS
from strixwizard.decode.catalog import catalog, from_catalog
from strixwizard.decode.collectives import AllReduceCurve, CollectivePoint
from strixwizard.decode.predict import Prediction, compute_ms, predict_layer_split, predict_tp
from strixwizard.decode.shapes import ModelShape, shape_from_config

GIB = 2**30
VISORCRAFT = "https://github.com/visorcraft/strix-halo-llm-perf (README.md, BENCHMARKS.md)"
RPC_RDMA = "https://github.com/ggml-org/llama.cpp/pull/20590 (docs/backend/RPC-RDMA.md)"
WKLJOHN = "https://github.com/wkljohn/llama.cpp-strix-halo-RCCL-RDMA (README.md)"
ODINLINK = "https://github.com/kyuz0/amd-strix-halo-vllm-toolboxes/issues/70"
MAIKZZ = "https://github.com/maikzz32/strix-halo-vllm-cluster (docs/2026-09-07-tp2-comparison.md)"
#: One-way latencies used where a setup did not publish its own.
E810_TCP_US = 34.0  # kyuz0 setup_guide.md: 0.068 ms TCP round trip on the RoCE NIC, halved
E810_RDMA_US = 5.23  # kyuz0 setup_guide.md: ib_send_lat t_avg
TB_TCP_US = 65.0  # 4 KB TCP ping-pong p50 130 µs over thunderbolt-net (NixOS two-box notes), halved


def read_params(name: str) -> float:
    """Parameters a decode step reads (the head, not the input embedding), counted from the
    catalog's config without its quantization."""
    entry = next(e for e in catalog() if e["name"] == name)
    config = {k: v for k, v in entry["config"].items() if k != "quantization_config"}
    shape = shape_from_config(config, name, "catalog")
    return shape.weight_bytes_per_token / shape.dtype_bytes


def quantized(name: str, file_bytes: float, label: str) -> ModelShape:
    """A catalog model at a GGUF file's average bytes per parameter (file size / parameters)."""
    shape = from_catalog(name)
    per_param = file_bytes / shape.total_params
    return dataclasses.replace(shape, name=label, weight_bytes_per_token=read_params(name) * per_param,
                               weight_bytes_total=file_bytes, expert_bytes_per_token=0.0)


def published_shape(label: str, layers: int, hidden: int, read_b: float, total_b: float,
                    bits: float) -> ModelShape:
    """A model outside the catalog, from its published size: read/total parameters in billions,
    bits per weight of its quantization."""
    per_param = bits / 8
    return ModelShape(label, layers, hidden, 2, total_b * 1e9, read_b * 1e9, read_b * 1e9 * per_param,
                      total_b * 1e9 * per_param, "published sizes")


@dataclass(frozen=True)
class Case:
    setup: str
    shape: ModelShape
    mode: str  # "single", "tp", "layer"
    nodes: int
    link_us: float  # all-reduce µs (tp) or one-way hand-over µs (layer)
    link_how: str
    published: float
    source: str
    note: str

    def predict(self) -> Prediction:
        if self.mode == "single":
            t = compute_ms(self.shape, 1, 1, MEASURED_GBPS)
            return Prediction("-", 1, 1, 1e3 / t, 0.0, t, "estimated", True)
        if self.mode == "layer":
            return predict_layer_split(self.shape, self.nodes, self.link_us, MEASURED_GBPS, "-", "estimated")
        curve = AllReduceCurve("-", (CollectivePoint("-", self.shape.message_bytes(1), self.link_us,
                                                     "recorded", "published"),))
        return predict_tp(self.shape, curve, self.nodes, 1, MEASURED_GBPS)


def cases() -> list[Case]:
    coder = "Qwen3-Coder-Next 80B-A3B"
    coder_q4 = published_shape(f"{coder} Q4_K_M", 48, 2048, 3.0, 79.67, 45.17 * GIB * 8 / 79.67e9)
    coder_q8 = published_shape(f"{coder} Q8_0", 48, 2048, 3.0, 79.67, 8.5)
    coder_q6 = published_shape(f"{coder} Q6_K_XL", 48, 2048, 3.0, 79.67, 6.5625)
    qwen27 = published_shape("Qwen3.6-27B Q6_K", 64, 5120, 27.0, 27.0, 6.5625)
    llama8 = from_catalog("Llama-3.1-8B")
    hybrid = ("hybrid Gated-DeltaNet attention and 512 small experts: llama.cpp reaches far less "
              "of the bandwidth than on plain MoE")
    rpc = ("llama.cpp RPC sends tens of commands per token (graph compute, tensor get/set), "
           "not one hand-over per boundary: the per-token network cost is far above 2 one-way times")
    vulkan = "1 node, llama.cpp Vulkan, 120 W"
    return [
        Case(vulkan, quantized("Llama-3.1-70B", 39.59 * GIB, "Llama 3.1 70B Q4_K_M"),
             "single", 1, 0, "-", 5.10, VISORCRAFT, "dense: bandwidth-bound as modelled"),
        Case(vulkan, quantized("Qwen3-30B-A3B", 17.28 * GIB, "Qwen3 30B-A3B Q4_K_M"),
             "single", 1, 0, "-", 86.07, VISORCRAFT, "small MoE: per-token overheads (routing, "
             "launches) weigh more when only ~1.9 GB are read"),
        Case("1 node, llama.cpp Vulkan", quantized("Qwen3-235B-A22B", 104.72 * GIB, "Qwen3-235B-A22B Q3_K_M"),
             "single", 1, 0, "-", 17.2, VISORCRAFT,
             "MoE at low bits: kernel efficiency below the measured bandwidth"),
        Case("1 node, llama-server", quantized("gpt-oss-120b", 58.5 * GIB, "gpt-oss-120b (GGUF 58.5 GiB)"),
             "single", 1, 0, "-", 53.4, VISORCRAFT, "the file's average bytes/param overstate the "
             "MXFP4 experts actually read; serving overhead included in the published figure"),
        Case("1 node, llama.cpp Vulkan", coder_q4, "single", 1, 0, "-", 42.7, VISORCRAFT, hybrid),
        Case("2 nodes, llama.cpp RPC -sm layer, 25 GbE, TCP", coder_q8, "layer", 2, E810_TCP_US,
             f"{E810_TCP_US:g} µs one-way (kyuz0 E810 TCP, stand-in)", 30.19, RPC_RDMA, f"{hybrid}; {rpc}"),
        Case("2 nodes, llama.cpp RPC -sm layer, 25 GbE, RDMA", coder_q8, "layer", 2, E810_RDMA_US,
             f"{E810_RDMA_US:g} µs one-way (kyuz0 E810 RDMA, stand-in)", 32.16, RPC_RDMA,
             f"{hybrid}; RDMA gains +6.5 % published (≈2 ms per token), the model +0.1 %: {rpc}"),
        Case("1 node, llama.cpp AMDVLK", coder_q6, "single", 1, 0, "-", 38.65, VISORCRAFT, hybrid),
        Case("2 nodes, llama.cpp RPC, USB4 (thunderbolt-net, ~9.4 Gb/s)", coder_q6, "layer", 2, TB_TCP_US,
             f"{TB_TCP_US:g} µs one-way (4 KB TB ping-pong, stand-in)", 26.3, VISORCRAFT,
             f"published RPC vs one node: -32 %; the model: -0.3 %: {rpc}"),
        Case("2 nodes, llama.cpp RPC -sm layer, USB4 bond, TCP", qwen27, "layer", 2, TB_TCP_US,
             f"{TB_TCP_US:g} µs one-way (stand-in)", 8.87, WKLJOHN,
             "dense 27B: bandwidth-bound, as modelled"),
        Case("2 nodes, llama.cpp -sm tensor (RCCL over TCP), USB4 bond", qwen27, "tp", 2, 286.0,
             "286 µs all-reduce (published, RCCL NET/Socket on the bond)", 4.02, WKLJOHN,
             "TP split of llama.cpp's meta backend: more syncs per layer than the 2 all-reduces "
             "of Megatron-style TP, plus one RPC graph compute per token"),
        Case("2 nodes, vLLM TP=2, USB4, TCP", llama8, "tp", 2, 286.0,
             "286 µs all-reduce (RCCL over TB TCP, from wkljohn: stand-in)", 18.0, ODINLINK,
             "model and dtype of the thread assumed (Llama-3.1-8B bf16); c=1"),
        Case("2 nodes, vLLM TP=2, USB4, OdinLink RDMA plugin", llama8, "tp", 2, 22.0,
             "22 µs all-reduce (2 x one-way from OdinLink's 22 µs RTT, OdinLink-Five#23)", 23.0, ODINLINK,
             "model and dtype assumed (Llama-3.1-8B bf16); RCCL plugin overhead not in the 22 µs"),
    ]


def main() -> int:
    print("| setup | model | link input | published tok/s | predicted tok/s | predicted / published "
          "| comm share | source | why it differs |")
    print("|---|---|---|---:|---:|---:|---:|---|---|")
    for case in cases():
        p = case.predict()
        ratio = p.tokens_per_s / case.published
        print(f"| {case.setup} | {case.shape.name} | {case.link_how} | {case.published:g} | "
              f"{p.tokens_per_s:.1f} | {ratio:.2f} | {p.comm_share:.0%} | {case.source} | {case.note} |")
    print(f"\nMemory bandwidth {MEASURED_GBPS:g} GB/s per node in every row. Not modelled: "
          f"4 nodes, vLLM TP=2 vs TP=4 over 25 GbE RoCE (39.82 vs 52.04 tok/s, RCCL 20 KiB "
          f"all-reduce ≈85 µs; {MAIKZZ}): MTP3 speculative decoding (≈54 % acceptance) and an "
          f"unpublished model config, both outside the model.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
