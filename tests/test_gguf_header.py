"""The standard-library GGUF header reader against the `gguf` package itself: files written by
its own GGUFWriter (every scalar value type, string and nested arrays, quantized tensor
types) read the same by both readers; truncated and foreign files are refused; `advise` on a
GGUF no longer imports numpy."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from strixwizard.decode.gguf_header import QUANT_SIZES, GgufError, read_header
from strixwizard.decode.gguf_shape import shape_from_gguf
from strixwizard.errors import UsageError
from tests.support.llama_parts import write_tiny_model

ROOT = Path(__file__).resolve().parents[1]


def _every_kind(path: Path) -> Path:
    """A GGUF with one value of every type, arrays of strings and of arrays, and tensors of
    several ggml types (raw bytes of the right size: the writer does not quantize)."""
    import gguf
    import numpy as np

    writer = gguf.GGUFWriter(str(path), "qwen3moe")
    writer.add_uint8("t.u8", 200)
    writer.add_int8("t.i8", -3)
    writer.add_uint16("t.u16", 60000)
    writer.add_int16("t.i16", -30000)
    writer.add_uint32("qwen3moe.block_count", 48)
    writer.add_int32("t.i32", -7)
    writer.add_float32("t.f32", 1.5)
    writer.add_bool("t.bool", True)
    writer.add_string("general.name", "Every Kind ünïcode")
    writer.add_uint64("t.u64", 2**40)
    writer.add_int64("t.i64", -(2**40))
    writer.add_float64("t.f64", 2.25)
    writer.add_uint32("qwen3moe.embedding_length", 256)
    writer.add_uint32("qwen3moe.expert_count", 8)
    writer.add_uint32("qwen3moe.expert_used_count", 2)
    writer.add_array("t.strings", ["a", "bb", "ccc" * 40])
    writer.add_array("t.ints", [1, 2, 3])
    writer.add_array("t.nested", [[1, 2], [3]])
    writer.add_tensor("token_embd.weight", np.zeros((32, 256), dtype=np.float16))
    for kind, shape in ((gguf.GGMLQuantizationType.Q4_K, (256, 512)),
                        (gguf.GGMLQuantizationType.Q8_0, (128, 64)),
                        (gguf.GGMLQuantizationType.Q6_K, (8, 256, 256))):
        block, size = gguf.constants.GGML_QUANT_SIZES[kind]
        rows, cols = int(np.prod(shape[:-1])), shape[-1] // block * size
        raw = np.zeros((rows, cols), dtype=np.uint8)
        name = "blk.0.ffn_down_exps.weight" if len(shape) == 3 else f"blk.0.{kind.name.lower()}.weight"
        writer.add_tensor(name, raw.reshape(*shape[:-1], cols), raw_dtype=kind)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


@pytest.mark.parametrize("make", ["tiny", "every_kind"])
def test_reads_what_the_gguf_package_reads(make: str, tmp_path: Path) -> None:
    from gguf import GGUFReader

    path = (write_tiny_model(tmp_path / "m.gguf", layers=3) if make == "tiny"
            else _every_kind(tmp_path / "m.gguf"))
    mine = read_header(path)
    theirs = GGUFReader(str(path), "r")
    assert mine.version == 3
    for key, field in theirs.fields.items():
        if key.startswith("GGUF."):
            continue  # the reader's own pseudo-fields (version, counts)
        if len(field.types) > 1 and field.types[0].name == "ARRAY":
            assert mine.metadata[key] is None  # arrays are skipped
            continue
        value = field.contents()
        assert mine.metadata[key] == pytest.approx(value) if isinstance(value, float) else \
            mine.metadata[key] == value, key
    assert set(mine.metadata) == {k for k in theirs.fields if not k.startswith("GGUF.")}
    assert [(t.name, t.n_elements, t.n_bytes) for t in mine.tensors] == \
        [(t.name, int(t.n_elements), int(t.n_bytes)) for t in theirs.tensors]


def test_quant_sizes_match_the_gguf_package() -> None:
    import gguf

    assert {int(k): tuple(v) for k, v in gguf.constants.GGML_QUANT_SIZES.items()} == QUANT_SIZES


def test_the_moe_shape_from_the_header(tmp_path: Path) -> None:
    shape = shape_from_gguf(_every_kind(tmp_path / "moe.gguf"))
    assert (shape.name, shape.layers, shape.hidden, shape.experts, shape.experts_per_token) == \
        ("Every Kind ünïcode", 48, 256, 8, 2)
    experts = 8 * 256 * 256 // 256 * 210  # the Q6_K routed experts' bytes
    assert shape.expert_bytes_per_token == pytest.approx(experts * 2 / 8)


@pytest.mark.parametrize("cut", [0, 3, 8, 23, 60, -1])
def test_truncated_or_foreign_files_are_refused(cut: int, tmp_path: Path) -> None:
    whole = write_tiny_model(tmp_path / "whole.gguf").read_bytes()
    header_end = 1200  # well inside the metadata (the vocabulary array)
    path = tmp_path / "bad.gguf"
    path.write_bytes(whole[:cut] if cut >= 0 else b"PK\x03\x04" + whole[4:header_end])
    with pytest.raises(GgufError):
        read_header(path)
    with pytest.raises(UsageError, match="not a readable GGUF file"):
        shape_from_gguf(path)


def test_advise_on_a_gguf_does_not_import_numpy(tmp_path: Path) -> None:
    path = write_tiny_model(tmp_path / "tiny.gguf", layers=2)
    probe = ("import sys, runpy; sys.argv = ['strixwizard', 'advise', '--model', sys.argv[1], '--json'];"
             "\ntry:\n    runpy.run_module('strixwizard', run_name='__main__')\nexcept SystemExit as e:"
             "\n    assert e.code in (0, None), e.code\n"
             "print('numpy' in sys.modules, 'gguf' in sys.modules, file=sys.stderr)")
    done = subprocess.run([sys.executable, "-c", probe, str(path)], capture_output=True, text=True,
                          timeout=120, check=False, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert done.stderr.strip().splitlines()[-1] == "False False"
