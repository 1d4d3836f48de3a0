"""A GGUF file's header written the way llama.cpp writes it, for tests of the readers: the
metadata and tensor infos, then the data section as a hole of the real size."""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any

from strixwizard.decode.gguf_header import TensorInfo

ALIGN = 32


def _string(text: str) -> bytes:
    raw = text.encode()
    return struct.pack("<Q", len(raw)) + raw


def write_gguf(path: Path, meta: dict[str, Any], tensors: list[TensorInfo]) -> Path:
    """A GGUF v3 file: the metadata and tensor infos as llama.cpp writes them, then the data
    section as a hole of the real size (a sparse file: no disk is used for the weights)."""
    out = bytearray(b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(meta)))
    for key, value in meta.items():
        out += _string(key)
        out += struct.pack("<I", 8) + _string(value) if isinstance(value, str) else \
            struct.pack("<II", 4, int(str(value)))
    offset = 0
    for tensor in tensors:
        out += _string(tensor.name) + struct.pack("<I", len(tensor.shape))
        out += b"".join(struct.pack("<Q", dim) for dim in tensor.shape)
        out += struct.pack("<IQ", tensor.ggml_type, offset)
        offset += -(-tensor.n_bytes // ALIGN) * ALIGN
    out += b"\0" * (-len(out) % ALIGN)
    with path.open("wb") as handle:
        handle.write(out)
        handle.truncate(len(out) + offset)
    return path
