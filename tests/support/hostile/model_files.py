"""Hostile model files for `advise --model`: config.json documents and GGUF headers that once
broke the reader (a traceback, a loop that never ends, gigabytes of memory). Each is small on
disk; the GGUF ones that claim huge counts are sparse files."""

from __future__ import annotations

import json
import struct
from collections.abc import Callable
from pathlib import Path
from typing import Any

#: A small dense model's config.json: the base every hostile config changes one key of.
BASE_CONFIG: dict[str, Any] = {
    "num_hidden_layers": 4, "hidden_size": 256, "num_attention_heads": 4,
    "vocab_size": 1000, "intermediate_size": 1024, "torch_dtype": "bfloat16",
}
MOE = {"num_experts": 8, "num_experts_per_tok": 2, "moe_intermediate_size": 128}


def _config(**changes: Any) -> str:
    return json.dumps({**BASE_CONFIG, **changes})


#: name -> config.json text
CONFIGS: dict[str, str] = {
    "zero-weights": _config(head_dim=0, intermediate_size=0, vocab_size=0, tie_word_embeddings=True),
    "huge-hidden": _config(hidden_size=1e200),
    "mlp-only-layers-number": _config(mlp_only_layers=5, **MOE),
    "nested-deep": '{"a":' * 100_000 + "1" + "}" * 100_000,
    "first-k-dense-huge": _config(first_k_dense_replace=300_000_000, **MOE),
    "layers-trillion": _config(num_hidden_layers=10**12, **MOE),
    "nan-hidden": _config().replace('"hidden_size": 256', '"hidden_size": NaN'),
    "string-layers": _config(num_hidden_layers="many"),
}

# GGUF: magic | u32 version | u64 tensor_count | u64 kv_count | kvs | tensor infos
STRING, ARRAY, U32 = 8, 9, 4


def _string(text: str) -> bytes:
    raw = text.encode()
    return struct.pack("<Q", len(raw)) + raw


def _kv_u32(key: str, value: int) -> bytes:
    return _string(key) + struct.pack("<II", U32, value)


def _kv_str(key: str, value: str) -> bytes:
    return _string(key) + struct.pack("<I", STRING) + _string(value)


def _tensor(name: str, dims: tuple[int, ...], ggml_type: int) -> bytes:
    return (_string(name) + struct.pack("<I", len(dims)) + b"".join(struct.pack("<Q", d) for d in dims)
            + struct.pack("<IQ", ggml_type, 0))


def _header(kvs: list[bytes], tensors: list[bytes], n_tensors: int | None = None) -> bytes:
    return (b"GGUF" + struct.pack("<IQQ", 3, len(tensors) if n_tensors is None else n_tensors, len(kvs))
            + b"".join(kvs) + b"".join(tensors))


_METADATA = [_kv_str("general.architecture", "llama"), _kv_u32("llama.block_count", 2),
             _kv_u32("llama.embedding_length", 256)]


def _one_q2k_element(path: Path) -> None:
    path.write_bytes(_header(_METADATA, [_tensor("blk.0.attn_q.weight", (1,), 10)]))


def _nested_arrays(path: Path) -> None:
    depth = 5000
    value = struct.pack("<IQ", ARRAY, 1) * (depth - 1) + struct.pack("<IQ", U32, 0)
    kv = _string("tokenizer.nested") + struct.pack("<I", ARRAY) + value
    path.write_bytes(_header([*_METADATA, kv], []))


def _many_tensor_infos(path: Path) -> None:
    """2^24 tensor infos claimed; the file is sparse: a few kB on disk, 400 MB long."""
    head = _header(_METADATA, [], n_tensors=1 << 24)
    with path.open("wb") as handle:
        handle.write(head)
        handle.truncate(len(head) + (1 << 24) * 24)


def _array_of_empty_arrays(path: Path) -> None:
    """One array of 2^28 empty arrays, sparse: the bytes are there (zeros), the work is not."""
    kv = _string("tokenizer.empty") + struct.pack("<IIQ", ARRAY, ARRAY, 1 << 28)
    head = _header([*_METADATA, kv], [])
    with path.open("wb") as handle:
        handle.write(head)
        handle.truncate(len(head) + (1 << 28) * 12)


#: name -> writer of a .gguf file
GGUFS: dict[str, Callable[[Path], None]] = {
    "one-q2k-element": _one_q2k_element,
    "arrays-nested-5000": _nested_arrays,
    "tensor-infos-2e24": _many_tensor_infos,
    "empty-arrays-2e28": _array_of_empty_arrays,
}
