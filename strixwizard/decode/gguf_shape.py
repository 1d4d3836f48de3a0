"""A model's decode shape from a GGUF file: the metadata (`<arch>.block_count`,
`<arch>.embedding_length`, `<arch>.expert_count`, `<arch>.expert_used_count`,
`<arch>.nextn_predict_layers`) and the tensor table (names, ggml types, shapes), so the bytes
a token reads follow the file's quantization tensor by tensor.

Reads only the file's header (`gguf_header`, standard library: no numpy, so `advise` on a
GGUF stays well under a second). What one token reads (`TokenBytes`):

- every dense tensor whole, at its own type (attention, norms, the router, dense FFNs, the
  output head), and the shared experts (`*_shexp`) whole;
- routed-expert tensors (`blk.N.ffn_{gate,up,down}_exps`, or a fused `ffn_gate_up_exps`,
  and their biases) for `expert_used_count / expert_count` of their size, each at its own type;
- `token_embd` for one row, or whole when it is also the head (no `output.weight`);
- nothing of the multi-token-prediction layers llama.cpp loads but does not run for a plain
  decode (the last `nextn_predict_layers` blocks).

GGUF stores no activation dtype: the all-reduce elements are taken as 2 bytes (bf16/fp16),
what the tensor-parallel runtimes exchange.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from strixwizard.decode.gguf_header import GgufError, GgufHeader, TensorInfo, read_header
from strixwizard.decode.shapes import EXPERTS, HIDDEN, LAYERS, ModelShape
from strixwizard.errors import UsageError
from strixwizard.readback import Range, integer

ACTIVATION_BYTES = 2
#: ggml type -> the name llama.cpp prints (for the precision the advice says it assumed).
TYPE_NAMES = {0: "F32", 1: "F16", 2: "Q4_0", 3: "Q4_1", 6: "Q5_0", 7: "Q5_1", 8: "Q8_0", 9: "Q8_1",
              10: "Q2_K", 11: "Q3_K", 12: "Q4_K", 13: "Q5_K", 14: "Q6_K", 15: "Q8_K",
              16: "IQ2_XXS", 17: "IQ2_XS", 18: "IQ3_XXS", 19: "IQ1_S", 20: "IQ4_NL", 21: "IQ3_S",
              22: "IQ2_S", 23: "IQ4_XS", 24: "I8", 25: "I16", 26: "I32", 27: "I64", 28: "F64",
              29: "IQ1_M", 30: "BF16", 34: "TQ1_0", 35: "TQ2_0", 39: "MXFP4"}
_BLOCK = re.compile(r"^blk\.(\d+)\.")


@dataclass(frozen=True)
class TokenBytes:
    """What one decode token reads, by part, and what the file holds."""

    dense: float  # every non-expert tensor (attention, norms, router, dense FFN, head)
    shared: float  # shared experts (`*_shexp`), read by every token
    routed: float  # expert_used_count / expert_count of the routed experts
    total: float  # the whole tensor table
    params_total: float
    params_active: float
    types: tuple[tuple[str, float], ...]  # ggml type name -> share of the bytes a token reads

    @property
    def per_token(self) -> float:
        return self.dense + self.shared + self.routed

    def precision(self) -> str:
        """`Q4_K 71%, Q6_K 27%, F32 2%` of the bytes a token reads."""
        return ", ".join(f"{name} {share:.0%}" for name, share in self.types if share >= 0.005)


def token_bytes(tensors: Iterable[TensorInfo], hidden: int, experts: int, used: int,
                skipped_blocks: frozenset[int] = frozenset()) -> TokenBytes:
    """The bytes one token reads from a tensor table (GgufError: a tensor of unknown type or
    of a partial block)."""
    dense = shared = routed = total = params = active = 0.0
    by_type: dict[str, float] = {}
    embedding: TensorInfo | None = None
    head_seen = False

    def add(tensor: TensorInfo, size: float) -> None:
        name = TYPE_NAMES.get(tensor.ggml_type, str(tensor.ggml_type))
        by_type[name] = by_type.get(name, 0.0) + size

    for tensor in tensors:
        elements, size = float(tensor.n_elements), float(tensor.n_bytes)
        params += elements
        total += size
        block = _BLOCK.match(tensor.name)
        if block is not None and int(block.group(1)) in skipped_blocks:
            continue
        if "_exps." in tensor.name and experts:
            share = used / experts
            active += elements * share
            routed += size * share
            add(tensor, size * share)
            continue
        active += elements
        if tensor.name.startswith("token_embd."):
            embedding = tensor
            continue
        head_seen = head_seen or tensor.name.startswith("output.")
        if "_shexp." in tensor.name:
            shared += size
        else:
            dense += size
        add(tensor, size)
    if embedding is not None:  # one row per token; the whole table when it is also the head
        size = float(embedding.n_bytes)
        rows = max(embedding.n_elements / hidden, 1.0)
        read = size if not head_seen else size / rows
        dense += read
        add(embedding, read)
    read_all = dense + shared + routed
    types = tuple(sorted(((name, size / read_all if read_all else 0.0) for name, size in by_type.items()),
                         key=lambda item: -item[1]))
    return TokenBytes(dense, shared, routed, total, params, active, types)


def _reader(path: Path) -> GgufHeader:
    if not path.is_file():
        raise UsageError(f"--model {path}: no such file")
    try:
        return read_header(path)
    except (GgufError, OSError) as error:
        raise UsageError(f"--model {path}: not a readable GGUF file ({error})") from error


def _count(metadata: dict[str, Any], path: Path, key: str, bounds: Range, required: bool = True) -> int:
    """A count the metadata gives, in the same range as the matching `advise` flag."""
    value = metadata.get(key)
    if value is None and not required:
        return 0
    if value is None:
        raise UsageError(f"--model {path}: the GGUF metadata has no {key} ({bounds.text()})")
    return integer(value, f"--model {path}: the GGUF metadata's {key}", bounds)


def shape_from_tensors(metadata: dict[str, Any], tensors: Iterable[TensorInfo], path: Path,
                       name: str, source: str) -> ModelShape:
    """The shape of a GGUF-style tensor table with its metadata (a file's, or one the catalog
    builds for a quantization)."""
    arch = metadata.get("general.architecture")
    if not isinstance(arch, str) or not arch:
        raise UsageError(f"--model {path}: the GGUF metadata has no general.architecture")
    blocks = _count(metadata, path, f"{arch}.block_count", LAYERS)
    hidden = _count(metadata, path, f"{arch}.embedding_length", HIDDEN)
    experts = _count(metadata, path, f"{arch}.expert_count", EXPERTS, required=False)
    used = _count(metadata, path, f"{arch}.expert_used_count", EXPERTS, required=False) if experts else 0
    if experts and not 0 < used <= experts:
        raise UsageError(f"--model {path}: {arch}.expert_used_count must be between 1 and {experts}")
    nextn = _count(metadata, path, f"{arch}.nextn_predict_layers", Range(0, blocks - 1), required=False)
    layers = blocks - nextn
    tensors = list(tensors)
    try:
        read = token_bytes(tensors, hidden, experts, used, frozenset(range(layers, blocks)))
    except GgufError as error:
        raise UsageError(f"--model {path}: {error}") from error
    if read.params_total == 0 or read.total == 0:
        raise UsageError(f"--model {path}: the GGUF file lists no tensors with weights")
    return ModelShape(
        name=name, layers=layers, hidden=hidden, dtype_bytes=ACTIVATION_BYTES,
        total_params=read.params_total, active_params=read.params_active,
        weight_bytes_per_token=read.per_token, weight_bytes_total=read.total,
        source=source, experts=experts, experts_per_token=used, expert_bytes_per_token=read.routed,
        precision=read.precision(), shared_bytes_per_token=read.shared,
        linear_layers=linear_layers(arch, tensors, layers),
    )


#: The llama.cpp architectures whose linear-attention layers are Gated DeltaNet.
GDN_ARCHS = frozenset({"qwen3next", "qwen35", "qwen35moe"})


def linear_layers(arch: str, tensors: Iterable[TensorInfo], layers: int) -> int:
    """The Gated-DeltaNet layers of a hybrid GGUF: the blocks that carry the recurrence's
    output projection (`blk.N.ssm_out.weight`, llama.cpp's LLM_TENSOR_SSM_OUT)."""
    if arch not in GDN_ARCHS:
        return 0
    found = set()
    for tensor in tensors:
        parts = tensor.name.split(".")
        if len(parts) == 4 and parts[0] == "blk" and parts[2] == "ssm_out" and parts[1].isdigit():
            found.add(int(parts[1]))
    return sum(1 for block in found if block < layers)


def shape_from_gguf(path: Path) -> ModelShape:
    reader = _reader(path)
    name = reader.metadata.get("general.name")
    return shape_from_tensors(reader.metadata, reader.tensors, path,
                              name if isinstance(name, str) and name else path.stem,
                              f"GGUF metadata and tensor table of {path}")
