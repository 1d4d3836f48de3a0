"""A model's decode shape from a Hugging Face config.json: layers, hidden size, the bytes
each all-reduce element takes, and the weight bytes a decode step reads. Pure.

Parameters are counted from the config the way the checkpoints store them: attention
(q, k, v, o), the MLP (dense, or routed experts + shared experts + router), the norms
are negligible and left out, the input embedding and the output head. Real config keys
of the families shipped in the catalog are read: `num_experts` / `num_local_experts` /
`n_routed_experts`, `num_experts_per_tok` / `experts_per_token`, `moe_intermediate_size`,
`n_shared_experts` or `shared_expert_intermediate_size`, `first_k_dense_replace`,
`mlp_only_layers` and `decoder_sparse_step`; a multimodal config's `text_config`.

A decode step reads every active weight once; the input embedding only one row of it,
so it counts for the total but not for the bytes read per step (unless tied to the head).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from strixwizard.errors import UsageError
from strixwizard.readback import Range, ReadBackError, integer

#: One range per shape figure, for the flag and for the file alike (`advise --layers` and a
#: config.json's num_hidden_layers): wide enough for every published model, narrow enough that
#: the arithmetic and the per-layer sets stay small.
LAYERS = Range(1, 1000)
HIDDEN = Range(64, 131072)
HEADS = Range(1, 4096)
HEAD_DIM = Range(1, 65536)
VOCAB = Range(1, 1 << 24)
INTERMEDIATE = Range(1, 1 << 22)
EXPERTS = Range(0, 1 << 16)
SHARED_EXPERTS = Range(0, 1024)

DTYPE_BYTES = {"float32": 4, "float": 4, "fp32": 4, "bfloat16": 2, "float16": 2, "half": 2,
               "bf16": 2, "fp16": 2, "float8_e4m3fn": 1, "fp8": 1}
#: MXFP4 (gpt-oss experts): 4-bit values plus one 8-bit scale per block of 32.
MXFP4_BYTES = (4 + 8 / 32) / 8


@dataclass(frozen=True)
class ModelShape:
    """What the decode model needs to know about a model."""

    name: str
    layers: int
    hidden: int
    dtype_bytes: int  # bytes per activation element in an all-reduce (bf16: 2)
    total_params: float
    active_params: float  # per token, as model cards count them (embeddings included)
    weight_bytes_per_token: float  # read from memory per decode step at batch 1
    weight_bytes_total: float
    source: str
    experts: int = 0  # routed experts per MoE layer (0: dense)
    experts_per_token: int = 0
    expert_bytes_per_token: float = 0.0  # the routed-expert part of weight_bytes_per_token
    #: what the weights are stored as: "BF16 (the checkpoint's dtype)", "Q4_K 70%, Q6_K 28%, …"
    precision: str = ""
    shared_bytes_per_token: float = 0.0  # the shared-expert part (read by every token)
    #: Gated-DeltaNet (linear-attention) layers of a hybrid model (Qwen3-Next, Qwen3.5/3.6):
    #: each runs the recurrence a plain attention layer does not (advise.GDN_LAYER_MS)
    linear_layers: int = 0

    @property
    def moe(self) -> bool:
        return self.experts > 0

    def message_bytes(self, batch: int) -> int:
        """The payload of one decode all-reduce: batch x hidden x dtype bytes."""
        return batch * self.hidden * self.dtype_bytes

    def step_weight_bytes(self, batch: int) -> float:
        """Weights read in one decode step of `batch` sequences. Dense: the same as batch 1.
        MoE: the routed experts touched by any of the batch's tokens, assuming uniform
        routing (expected distinct experts E·(1 - (1 - k/E)^batch))."""
        if not self.moe or batch <= 1:
            return self.weight_bytes_per_token
        k, e = self.experts_per_token, self.experts
        touched = e * (1 - (1 - k / e) ** batch)
        return self.weight_bytes_per_token - self.expert_bytes_per_token \
            + self.expert_bytes_per_token * touched / k


def _int(config: Mapping[str, Any], *keys: str, bounds: Range, default: int | None = None) -> int:
    """The first of `keys` the config gives (null counts as absent), a whole number in `bounds`."""
    for key in keys:
        if config.get(key) is not None:
            return integer(config[key], f"the config's {key}", bounds)
    if default is not None:
        return default
    raise UsageError(f"the config has no {' / '.join(keys)} (a whole number, {bounds.text()})")


def _layer_numbers(config: Mapping[str, Any], layers: int) -> set[int]:
    """`mlp_only_layers`: a list of layer numbers (Qwen MoE), each below `layers`."""
    value = config.get("mlp_only_layers")
    if value is None:
        return set()
    if not isinstance(value, list) or len(value) > layers:
        raise ReadBackError(f"the config's mlp_only_layers: a list of at most {layers} layer numbers")
    return {integer(item, "the config's mlp_only_layers item", Range(0, layers - 1)) for item in value}


def dtype_bytes_of(config: Mapping[str, Any]) -> int:
    dtype = config.get("torch_dtype", config.get("dtype", "bfloat16"))
    if not isinstance(dtype, str) or dtype.lower().removeprefix("torch.") not in DTYPE_BYTES:
        raise UsageError(f"the config's torch_dtype {dtype!r} is not one of "
                         f"{', '.join(sorted(DTYPE_BYTES))}")
    return DTYPE_BYTES[dtype.lower().removeprefix("torch.")]


def _weight_bytes(config: Mapping[str, Any], dtype_bytes: int) -> tuple[float, float]:
    """Bytes per parameter of the experts and of everything else, from quantization_config."""
    quant = config.get("quantization_config")
    if not isinstance(quant, Mapping):
        return float(dtype_bytes), float(dtype_bytes)
    method = str(quant.get("quant_method", "")).lower()
    if method == "mxfp4":  # gpt-oss: the experts in MXFP4, the rest in the checkpoint's dtype
        return MXFP4_BYTES, float(dtype_bytes)
    bits = quant.get("bits", quant.get("w_bit"))
    if isinstance(bits, int) and 1 <= bits <= 16:
        return bits / 8, bits / 8
    if "fp8" in method:
        return 1.0, 1.0
    return float(dtype_bytes), float(dtype_bytes)


@dataclass(frozen=True)
class Layout:
    """The architecture a config.json describes: what the parameter count and the GGUF
    tensor table of a quantization (`decode.quants`) are built from."""

    layers: int
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    vocab: int
    dense_inter: int
    moe_inter: int
    experts: int
    per_token: int
    shared_inter: int
    dense_layers: frozenset[int]
    tied: bool
    dtype: int

    @property
    def moe_layers(self) -> int:
        return self.layers - len(self.dense_layers) if self.experts else 0

    def is_moe_layer(self, layer: int) -> bool:
        return bool(self.experts) and layer not in self.dense_layers


def _text_config(config: Mapping[str, Any]) -> Mapping[str, Any]:
    if "num_hidden_layers" not in config and isinstance(config.get("text_config"), Mapping):
        outer_dtype = config.get("torch_dtype", config.get("dtype"))
        config = {**config["text_config"]}
        if outer_dtype is not None:
            config.setdefault("torch_dtype", outer_dtype)
    return config


def config_layout(config: Mapping[str, Any]) -> Layout:
    """The architecture of a Hugging Face config.json (UsageError when keys are missing)."""
    config = _text_config(config)
    layers = _int(config, "num_hidden_layers", "n_layer", "num_layers", bounds=LAYERS)
    hidden = _int(config, "hidden_size", "n_embd", "d_model", bounds=HIDDEN)
    heads = _int(config, "num_attention_heads", "n_head", bounds=HEADS)
    kv_heads = _int(config, "num_key_value_heads", bounds=HEADS, default=heads)
    head_dim = _int(config, "head_dim", bounds=HEAD_DIM, default=max(hidden // heads, 1))
    vocab = _int(config, "vocab_size", bounds=VOCAB)
    dense_inter = _int(config, "intermediate_size", "ffn_dim", bounds=INTERMEDIATE, default=4 * hidden)
    experts = _int(config, "num_experts", "num_local_experts", "n_routed_experts", bounds=EXPERTS,
                   default=0)
    per_token = _int(config, "num_experts_per_tok", "experts_per_token", "num_experts_per_token",
                     "moe_topk", bounds=EXPERTS, default=0)
    if experts and not 0 < per_token <= experts:
        raise UsageError(f"an MoE config with {experts} experts needs num_experts_per_tok "
                         f"between 1 and {experts}")
    moe_inter = _int(config, "moe_intermediate_size", bounds=INTERMEDIATE, default=dense_inter)
    shared = _int(config, "n_shared_experts", "num_shared_experts", bounds=SHARED_EXPERTS,
                  default=0) * moe_inter
    shared = _int(config, "shared_expert_intermediate_size", bounds=Range(0, 1 << 26), default=shared)
    every_layer = Range(0, layers)
    first_dense = _int(config, "first_k_dense_replace", bounds=every_layer, default=0)
    dense_layers = set(range(first_dense)) if experts else set()
    sparse_step = _int(config, "decoder_sparse_step", bounds=every_layer, default=1) or 1
    mlp_only = _layer_numbers(config, layers)
    if experts:
        dense_layers |= {i for i in range(layers) if (i + 1) % sparse_step != 0}
        dense_layers |= mlp_only
    return Layout(layers, hidden, heads, kv_heads, head_dim, vocab, dense_inter, moe_inter, experts,
                  per_token if experts else 0, shared, frozenset(dense_layers),
                  bool(config.get("tie_word_embeddings", False)), dtype_bytes_of(config))


def _precision(config: Mapping[str, Any], dtype: int) -> str:
    name = {4: "F32", 2: "BF16/F16", 1: "FP8"}[dtype]
    quant = config.get("quantization_config")
    method = str(quant.get("quant_method", "")).lower() if isinstance(quant, Mapping) else ""
    if method == "mxfp4":
        return f"MXFP4 experts, {name} the rest (the checkpoint's own precision)"
    if method:
        return f"{method} (the checkpoint's quantization_config)"
    return f"{name} (the checkpoint's torch_dtype; not a GGUF quantization)"


def linear_layers_of(config: Mapping[str, Any], layers: int) -> int:
    """The Gated-DeltaNet layers of a hybrid config: `layer_types` names them
    ("linear_attention"), else every layer but each `full_attention_interval`-th is one
    (Qwen3-Next, Qwen3.5/3.6); 0 for a model without linear attention."""
    kinds = config.get("layer_types")
    if isinstance(kinds, list) and kinds:
        return sum(1 for kind in kinds[:layers] if kind == "linear_attention")
    interval = _int(config, "full_attention_interval", bounds=Range(0, layers), default=0)
    if interval and any(key in config for key in ("linear_num_value_heads", "linear_key_head_dim")):
        return layers - layers // interval
    return 0


def shape_from_config(config: Mapping[str, Any], name: str, source: str) -> ModelShape:
    """The decode shape of a Hugging Face config.json (UsageError when keys are missing)."""
    config = _text_config(config)
    lay = config_layout(config)
    layers, hidden, experts, per_token = lay.layers, lay.hidden, lay.experts, lay.per_token
    expert_bytes, other_bytes = _weight_bytes(config, lay.dtype)
    attention = hidden * lay.heads * lay.head_dim * 2 + hidden * lay.kv_heads * lay.head_dim * 2
    moe_layers = lay.moe_layers
    dense_mlp = 3 * hidden * lay.dense_inter
    expert_one = 3 * hidden * lay.moe_inter
    shared_mlp = 3 * hidden * lay.shared_inter
    router = hidden * experts
    embedding = lay.vocab * hidden
    head = 0 if lay.tied else lay.vocab * hidden

    other_total = layers * attention + (layers - moe_layers) * dense_mlp \
        + moe_layers * (shared_mlp + router) + embedding + head
    expert_total = moe_layers * experts * expert_one
    expert_active = moe_layers * per_token * expert_one
    read_other = other_total - (0 if lay.tied else embedding)  # one embedding row is read, not the table
    expert_read_bytes = expert_active * expert_bytes
    if read_other * other_bytes + expert_read_bytes <= 0:
        raise UsageError("the config's weights come to 0 bytes a token reads")
    return ModelShape(
        name=name, layers=layers, hidden=hidden, dtype_bytes=lay.dtype,
        total_params=float(other_total + expert_total),
        active_params=float(other_total + expert_active),
        weight_bytes_per_token=read_other * other_bytes + expert_read_bytes,
        weight_bytes_total=other_total * other_bytes + expert_total * expert_bytes,
        source=source, experts=experts, experts_per_token=per_token,
        expert_bytes_per_token=expert_read_bytes, precision=_precision(config, lay.dtype),
        shared_bytes_per_token=moe_layers * shared_mlp * other_bytes,
        linear_layers=linear_layers_of(config, layers),
    )
