"""A GGUF file's header: its metadata and its tensors' names, types and shapes, read with the
standard library only (the `gguf` package imports numpy, which alone takes longer than
`advise`'s 1 s budget on a busy machine). Nothing past the tensor infos is read.

The layout, as documented in https://github.com/ggml-org/ggml/blob/master/docs/gguf.md
(versions 2 and 3; little-endian):

    magic "GGUF" | u32 version | u64 tensor_count | u64 kv_count
    kv_count x   (string key | u32 value type | value)
    tensor_count x (string name | u32 n_dims | n_dims x u64 dim | u32 ggml type | u64 offset)

where a string is u64 length + UTF-8 bytes, and an array value is u32 element type + u64
count + the elements. Only what `gguf_shape` needs is kept: scalar and string values; arrays
are skipped (they are vocabularies, tens of thousands of strings).
"""

from __future__ import annotations

import mmap
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

MAGIC = b"GGUF"
#: value type -> struct format of a scalar (8: string, 9: array are read apart)
SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?",
           10: "<Q", 11: "<q", 12: "<d"}
STRING, ARRAY = 8, 9
U64 = struct.Struct("<Q")
#: ggml type -> (elements per block, bytes per block), as ggml.c's type traits and the gguf
#: package's GGML_QUANT_SIZES (a test compares the two).
QUANT_SIZES = {
    0: (1, 4), 1: (1, 2), 2: (32, 18), 3: (32, 20), 6: (32, 22), 7: (32, 24), 8: (32, 34),
    9: (32, 40), 10: (256, 84), 11: (256, 110), 12: (256, 144), 13: (256, 176), 14: (256, 210),
    15: (256, 292), 16: (256, 66), 17: (256, 74), 18: (256, 98), 19: (256, 50), 20: (32, 18),
    21: (256, 110), 22: (256, 82), 23: (256, 136), 24: (1, 1), 25: (1, 2), 26: (1, 4),
    27: (1, 8), 28: (1, 8), 29: (256, 56), 30: (1, 2), 34: (256, 54), 35: (256, 66),
    39: (32, 17), 40: (64, 36), 41: (128, 18),
}
#: Bounds against a corrupt or hostile header (no real model comes near them): a 671B
#: DeepSeek GGUF lists about 1,100 tensors and 50 keys; the largest vocabularies hold 256k
#: strings and as many merges.
MAX_COUNT = 1 << 24
MAX_TENSORS = 1 << 17
MAX_STRING = 1 << 24
MAX_DIMS = 8
#: Arrays inside arrays: real files nest none.
MAX_ARRAY_DEPTH = 4
#: Array elements walked one by one in the whole header, nested ones included (a bound per
#: array let 2^28 empty arrays inside one array run for minutes).
MAX_WALKED = 1 << 23


class GgufError(ValueError):
    """Not a GGUF file this reader understands, or a truncated/corrupt header."""


@dataclass(frozen=True)
class TensorInfo:
    name: str
    ggml_type: int
    shape: tuple[int, ...]

    @property
    def n_elements(self) -> int:
        count = 1
        for dim in self.shape:
            count *= dim
        return count

    @property
    def n_bytes(self) -> int:
        if self.ggml_type not in QUANT_SIZES:
            raise GgufError(f"tensor {self.name}: unknown ggml type {self.ggml_type}")
        block, size = QUANT_SIZES[self.ggml_type]
        if self.n_elements % block:  # ggml stores whole blocks: a 1-element Q2_K is no tensor
            raise GgufError(f"tensor {self.name}: {self.n_elements} elements is not a whole "
                            f"number of blocks of {block}")
        return self.n_elements * size // block


@dataclass(frozen=True)
class GgufHeader:
    version: int
    metadata: dict[str, Any]
    tensors: tuple[TensorInfo, ...]


class _Cursor:
    def __init__(self, data: Any) -> None:
        self.data = data
        self.pos = 0
        self.walked = 0  # array elements walked one by one so far (MAX_WALKED)

    def _walk(self, count: int) -> None:
        self.walked += count
        if self.walked > MAX_WALKED:
            raise GgufError(f"the header's arrays hold more than {MAX_WALKED} elements")

    def take(self, fmt: str) -> Any:
        size = struct.calcsize(fmt)
        if self.pos + size > len(self.data):
            raise GgufError("the header ends early (truncated file)")
        (value,) = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += size
        return value

    def string(self) -> str:
        length = self.take("<Q")
        if length > MAX_STRING or self.pos + length > len(self.data):
            raise GgufError("a string runs past the end of the file")
        raw = bytes(self.data[self.pos:self.pos + length])
        self.pos += length
        return raw.decode("utf-8", errors="replace")

    def skip_array(self, depth: int = 1) -> None:
        kind, count = self.take("<I"), self.take("<Q")
        if count > MAX_COUNT * 16:
            raise GgufError(f"an array of {count} elements")
        if depth > MAX_ARRAY_DEPTH:
            raise GgufError(f"arrays nested more than {MAX_ARRAY_DEPTH} deep")
        smallest = {STRING: 8, ARRAY: 12}.get(kind, 0)  # bytes an element takes at least
        if smallest and count * smallest > len(self.data) - self.pos:
            raise GgufError(f"an array of {count} elements runs past the end of the file")
        if kind == STRING:  # the vocabulary: the one hot loop of the reader
            self._walk(count)
            data, pos, unpack = self.data, self.pos, U64.unpack_from
            try:
                for _ in range(count):
                    pos += 8 + unpack(data, pos)[0]
            except struct.error as error:
                raise GgufError("a string array runs past the end of the file") from error
            self.pos = pos
        elif kind == ARRAY:
            self._walk(count)
            for _ in range(count):
                self.skip_array(depth + 1)
        elif kind in SCALARS:
            self.pos += struct.calcsize(SCALARS[kind]) * count
        else:
            raise GgufError(f"an array of unknown value type {kind}")
        if self.pos > len(self.data):
            raise GgufError("an array runs past the end of the file")

    def value(self, kind: int) -> Any:
        if kind in SCALARS:
            return self.take(SCALARS[kind])
        if kind == STRING:
            return self.string()
        if kind == ARRAY:
            self.skip_array()
            return None
        raise GgufError(f"unknown value type {kind}")


def read_header(path: Path) -> GgufHeader:
    """The metadata (arrays left out: None) and tensor infos of a GGUF file."""
    with path.open("rb") as handle:
        try:
            data: Any = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
        except ValueError as error:  # an empty file cannot be mapped
            raise GgufError("empty file") from error
        try:
            return _parse(_Cursor(data))
        finally:
            data.close()


def _parse(cur: _Cursor) -> GgufHeader:
    if len(cur.data) < 4 or bytes(cur.data[:4]) != MAGIC:
        raise GgufError("no GGUF magic")
    cur.pos = 4
    version = cur.take("<I")
    if version not in (2, 3):
        raise GgufError(f"GGUF version {version} (this reader knows 2 and 3, little-endian)")
    n_tensors, n_kv = cur.take("<Q"), cur.take("<Q")
    if n_tensors > MAX_TENSORS or n_kv > MAX_COUNT:
        raise GgufError(f"implausible counts ({n_tensors} tensors, {n_kv} keys)")
    metadata: dict[str, Any] = {}
    for _ in range(n_kv):
        key = cur.string()
        metadata[key] = cur.value(cur.take("<I"))
    tensors = []
    for _ in range(n_tensors):
        name = cur.string()
        n_dims = cur.take("<I")
        if n_dims > MAX_DIMS:
            raise GgufError(f"tensor {name}: {n_dims} dimensions")
        shape = tuple(cur.take("<Q") for _ in range(n_dims))
        ggml_type = cur.take("<I")
        cur.take("<Q")  # offset into the data section: not needed
        tensors.append(TensorInfo(name, ggml_type, shape))
    return GgufHeader(version, metadata, tuple(tensors))
