"""A model's decode shape from a GGUF file: the metadata (`<arch>.block_count`,
`<arch>.embedding_length`, `<arch>.expert_count`, `<arch>.expert_used_count`) and the
tensors' real sizes, so the weight bytes follow the file's quantization exactly.

Reads only the file's header (`gguf_header`, standard library: no numpy, so `advise` on a
GGUF stays well under a second). Routed-expert tensors (`blk.N.ffn_{gate,up,down}_exps.weight`,
or a fused `ffn_gate_up_exps`) count for `expert_used_count / expert_count` of their size per
token; `token_embd` for one row. GGUF stores no activation dtype: the all-reduce elements are
taken as 2 bytes (bf16/fp16), what the tensor-parallel runtimes exchange.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from strixwizard.decode.gguf_header import GgufError, GgufHeader, read_header
from strixwizard.decode.shapes import EXPERTS, HIDDEN, LAYERS, ModelShape
from strixwizard.errors import UsageError
from strixwizard.readback import Range, integer

ACTIVATION_BYTES = 2


def _reader(path: Path) -> GgufHeader:
    if not path.is_file():
        raise UsageError(f"--model {path}: no such file")
    try:
        return read_header(path)
    except (GgufError, OSError) as error:
        raise UsageError(f"--model {path}: not a readable GGUF file ({error})") from error


def _value(reader: GgufHeader, key: str) -> Any:
    return reader.metadata.get(key)


def _count(reader: GgufHeader, path: Path, key: str, bounds: Range, required: bool = True) -> int:
    """A count the metadata gives, in the same range as the matching `advise` flag."""
    value = _value(reader, key)
    if value is None and not required:
        return 0
    if value is None:
        raise UsageError(f"--model {path}: the GGUF metadata has no {key} ({bounds.text()})")
    return integer(value, f"--model {path}: the GGUF metadata's {key}", bounds)


def shape_from_gguf(path: Path) -> ModelShape:
    reader = _reader(path)
    arch = _value(reader, "general.architecture")
    if not isinstance(arch, str) or not arch:
        raise UsageError(f"--model {path}: the GGUF metadata has no general.architecture")
    layers = _count(reader, path, f"{arch}.block_count", LAYERS)
    hidden = _count(reader, path, f"{arch}.embedding_length", HIDDEN)
    experts = _count(reader, path, f"{arch}.expert_count", EXPERTS, required=False)
    used = _count(reader, path, f"{arch}.expert_used_count", EXPERTS, required=False) if experts else 0
    if experts and not 0 < used <= experts:
        raise UsageError(f"--model {path}: {arch}.expert_used_count must be between 1 and {experts}")
    name = _value(reader, "general.name")
    total_params = active_params = 0.0
    total_bytes = read_bytes = expert_read = 0.0
    embedding: tuple[int, int] | None = None
    head_seen = False
    for tensor in reader.tensors:
        try:
            elements, size = float(tensor.n_elements), float(tensor.n_bytes)
        except GgufError as error:
            raise UsageError(f"--model {path}: {error}") from error
        total_params += elements
        total_bytes += size
        if "_exps." in tensor.name and experts:
            active_params += elements * used / experts
            read_bytes += size * used / experts
            expert_read += size * used / experts
            continue
        active_params += elements
        if tensor.name.startswith("token_embd."):
            embedding = (int(elements), int(size))
            continue
        head_seen = head_seen or tensor.name.startswith("output.")
        read_bytes += size
    if total_params == 0 or total_bytes == 0:
        raise UsageError(f"--model {path}: the GGUF file lists no tensors with weights")
    if embedding is not None:  # one row per token; the whole table when it is also the head
        rows = embedding[0] / hidden
        read_bytes += embedding[1] if not head_seen else embedding[1] / max(rows, 1.0)
    return ModelShape(
        name=name if isinstance(name, str) and name else path.stem, layers=layers, hidden=hidden,
        dtype_bytes=ACTIVATION_BYTES, total_params=total_params, active_params=active_params,
        weight_bytes_per_token=read_bytes, weight_bytes_total=total_bytes,
        source=f"GGUF metadata and tensor sizes of {path}", experts=experts,
        experts_per_token=used, expert_bytes_per_token=expert_read,
    )
