"""`advise --model NAME --quant Q4_K_M`: the GGUF tensor table a llama.cpp quantization of a
catalog model holds, built from the model's config.json the way `llama-quantize` picks each
tensor's type, so the catalog path reads the same bytes per token as `--model file.gguf`.

The type rules are llama.cpp's `llama_tensor_get_type()` (src/llama-quant.cpp) for the mixes
people download most, reduced to the tensors a decoder of the catalog's families has:

- the output head (or the embedding when it is tied to it): Q6_K, except in Q8_0 and BF16 files;
- `attn_v`: Q4_K_M/Q5_K_M -> Q6_K on the layers `use_more_bits()` picks (the first and last
  eighth, and every third between); Q3_K_M -> Q5_K on the first 2 layers, else Q4_K;
  Q2_K -> Q4_K with 4+ query heads per KV head, else Q3_K;
- `ffn_down` (dense, shared and routed): Q4_K_M/Q5_K_M -> Q6_K on `use_more_bits()` layers;
  Q3_K_M -> Q5_K on the first sixteenth of the layers, else Q4_K; Q2_K -> Q3_K;
- `attn_output`: Q3_K_M -> Q4_K, Q2_K -> Q3_K;
- norms (1-D) and the MoE router (`ffn_gate_inp`) stay F32; everything else the mix's base type;
- a row length that is not a multiple of 256 cannot hold a k-quant: Q2_K/Q3_K -> IQ4_NL,
  Q4_K -> Q5_0, Q5_K -> Q5_1, Q6_K -> Q8_0 (llama.cpp's fallback).

MXFP4 is the gpt-oss release: routed experts in MXFP4, the rest Q8_0; MXFP4_F16 the F16 file
people also run (unsloth's gpt-oss-*-F16.gguf): routed experts in MXFP4, the rest F16. Small tensors the
families differ in (biases, q/k norms, attention sinks) are left out: under 0.1 % of a file.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from strixwizard.decode.gguf_header import TensorInfo
from strixwizard.decode.shapes import Layout

F32, F16, Q5_0, Q5_1, Q8_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL, BF16, MXFP4 = (
    0, 1, 6, 7, 8, 10, 11, 12, 13, 14, 20, 30, 39)
QK_K = 256
_FALLBACK = {Q2_K: IQ4_NL, Q3_K: IQ4_NL, Q4_K: Q5_0, Q5_K: Q5_1, Q6_K: Q8_0}
#: quantization name -> its base type
RECIPES = {"Q2_K": Q2_K, "Q3_K_M": Q3_K, "Q4_K_M": Q4_K, "Q5_K_M": Q5_K, "Q6_K": Q6_K,
           "Q8_0": Q8_0, "BF16": BF16, "MXFP4": MXFP4, "MXFP4_F16": F16}
SOURCE = "llama.cpp src/llama-quant.cpp, llama_tensor_get_type()"


def use_more_bits(layer: int, layers: int) -> bool:
    """llama.cpp's pick of the layers that get more bits in the _M mixes."""
    return layer < layers // 8 or layer >= 7 * layers // 8 or (layer - layers // 8) % 3 == 2


def _type(quant: str, part: str, layer: int, lay: Layout, ne0: int) -> int:
    base = RECIPES[quant]
    if quant in ("MXFP4", "MXFP4_F16"):
        chosen = MXFP4 if part.endswith("_exps") else (Q8_0 if quant == "MXFP4" else F16)
    elif quant in ("BF16", "Q8_0"):
        chosen = base
    elif part == "output":
        chosen = Q6_K
    elif part == "attn_v":
        chosen = {"Q4_K_M": Q6_K if use_more_bits(layer, lay.layers) else base,
                  "Q5_K_M": Q6_K if use_more_bits(layer, lay.layers) else base,
                  "Q3_K_M": Q5_K if layer < 2 else Q4_K,
                  "Q2_K": Q4_K if lay.heads >= 4 * lay.kv_heads else Q3_K}.get(quant, base)
    elif part.startswith("ffn_down"):
        chosen = {"Q4_K_M": Q6_K if use_more_bits(layer, lay.layers) else base,
                  "Q5_K_M": Q6_K if use_more_bits(layer, lay.layers) else base,
                  "Q3_K_M": Q5_K if layer < lay.layers // 16 else Q4_K,
                  "Q2_K": Q3_K}.get(quant, base)
    elif part == "attn_output":
        chosen = {"Q3_K_M": Q4_K, "Q2_K": Q3_K}.get(quant, base)
    else:
        chosen = base
    if ne0 % QK_K and chosen in _FALLBACK:
        chosen = _FALLBACK[chosen]
    return chosen


def tensor_table(lay: Layout, quant: str) -> list[TensorInfo]:
    """The tensors a `quant` GGUF of this architecture holds, with llama.cpp's names, ggml
    shapes (row length first) and the type `llama-quantize` gives each."""
    out: list[TensorInfo] = []

    def add(name: str, part: str, layer: int, *shape: int) -> None:
        kind = F32 if len(shape) == 1 or part == "ffn_gate_inp" else _type(quant, part, layer, lay, shape[0])
        out.append(TensorInfo(name, kind, tuple(shape)))

    h, q_width, kv_width = lay.hidden, lay.heads * lay.head_dim, lay.kv_heads * lay.head_dim
    add("token_embd.weight", "output" if lay.tied else "token_embd", 0, h, lay.vocab)
    for i in range(lay.layers):
        blk = f"blk.{i}."
        add(blk + "attn_norm.weight", "norm", i, h)
        add(blk + "attn_q.weight", "attn_q", i, h, q_width)
        add(blk + "attn_k.weight", "attn_k", i, h, kv_width)
        add(blk + "attn_v.weight", "attn_v", i, h, kv_width)
        add(blk + "attn_output.weight", "attn_output", i, q_width, h)
        add(blk + "ffn_norm.weight", "norm", i, h)
        if not lay.is_moe_layer(i):
            add(blk + "ffn_gate.weight", "ffn_gate", i, h, lay.dense_inter)
            add(blk + "ffn_up.weight", "ffn_up", i, h, lay.dense_inter)
            add(blk + "ffn_down.weight", "ffn_down", i, lay.dense_inter, h)
            continue
        add(blk + "ffn_gate_inp.weight", "ffn_gate_inp", i, h, lay.experts)
        add(blk + "ffn_gate_exps.weight", "ffn_gate_exps", i, h, lay.moe_inter, lay.experts)
        add(blk + "ffn_up_exps.weight", "ffn_up_exps", i, h, lay.moe_inter, lay.experts)
        add(blk + "ffn_down_exps.weight", "ffn_down_exps", i, lay.moe_inter, h, lay.experts)
        if lay.shared_inter:
            add(blk + "ffn_gate_shexp.weight", "ffn_gate_shexp", i, h, lay.shared_inter)
            add(blk + "ffn_up_shexp.weight", "ffn_up_shexp", i, h, lay.shared_inter)
            add(blk + "ffn_down_shexp.weight", "ffn_down_shexp", i, lay.shared_inter, h)
    add("output_norm.weight", "norm", 0, h)
    if not lay.tied:
        add("output.weight", "output", 0, h, lay.vocab)
    return out


@dataclass(frozen=True)
class Quant:
    """A quantization of a catalog model: the recipe, and the published file size if cited."""

    name: str
    file_gib: float | None
    source: str | None

    @staticmethod
    def from_json(data: dict[str, Any]) -> Quant:
        gib = data.get("file_gib")
        return Quant(str(data["name"]), float(gib) if gib is not None else None,
                     str(data["source"]) if data.get("source") else None)


def metadata(arch: str, name: str, lay: Layout) -> dict[str, Any]:
    """The GGUF metadata `gguf_shape` reads, for this architecture."""
    meta: dict[str, Any] = {"general.architecture": arch, "general.name": name,
                            f"{arch}.block_count": lay.layers, f"{arch}.embedding_length": lay.hidden}
    if lay.experts:
        meta[f"{arch}.expert_count"] = lay.experts
        meta[f"{arch}.expert_used_count"] = lay.per_token
    return meta
