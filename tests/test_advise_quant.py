"""`advise --model NAME --quant Q`: a catalog model as a llama.cpp quantization. The tensor
types follow llama.cpp's rules closely enough that the computed file sizes are the ones
published llama-bench runs printed; the catalog path and a GGUF file of the same tensor
table (a real-sized header, the data section a sparse hole) give the same prediction; the
bytes a token reads count each part at its own type; a precision is never assumed silently."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from strixwizard.cli.main import main
from strixwizard.decode.catalog import catalog, from_catalog, quants_of
from strixwizard.decode.gguf_header import TensorInfo
from strixwizard.decode.gguf_shape import token_bytes
from strixwizard.decode.quants import BF16, F32, MXFP4, Q4_K, Q6_K, Q8_0, metadata, tensor_table
from strixwizard.decode.shapes import config_layout
from tests.support.gguf_file import write_gguf

GIB = 2**30


def _published() -> list[tuple[str, str, float]]:
    return [(str(entry["name"]), q.name, q.file_gib) for entry in catalog() for q in quants_of(entry)
            if q.file_gib is not None]


def _advise(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, Any]:
    assert main(["advise", *argv, "--link", "usb4-tcp", "--json"]) == 0
    body: dict[str, Any] = json.loads(capsys.readouterr().out)
    return body


def test_at_least_four_quants_carry_a_published_size() -> None:
    assert len(_published()) >= 4


@pytest.mark.parametrize(("model", "quant", "gib"), _published())
def test_the_computed_file_is_the_published_size(model: str, quant: str, gib: float) -> None:
    shape = from_catalog(model, quant)
    assert shape.weight_bytes_total / GIB == pytest.approx(gib, rel=0.005)


@pytest.mark.parametrize(("model", "quant"), [("Qwen3-235B-A22B", "Q3_K_M"), ("Llama-3.1-70B", "Q4_K_M"),
                                               ("gpt-oss-120b", "MXFP4"), ("GLM-4.5-Air", "Q4_K_M")])
def test_quant_and_gguf_file_give_the_same_prediction(model: str, quant: str, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    entry = next(e for e in catalog() if e["name"] == model)
    layout = config_layout(entry["config"])
    table = tensor_table(layout, quant)
    path = write_gguf(tmp_path / f"{model}-{quant}.gguf",
                      metadata(str(entry["gguf_arch"]), f"{model} {quant}", layout), table)
    assert path.stat().st_size > 10 * GIB  # real-sized
    assert path.stat().st_blocks * 512 < 64 * 2**20  # and sparse
    by_name = _advise(capsys, "--model", model, "--quant", quant)
    by_file = _advise(capsys, "--model", str(path))
    for key in ("layers", "hidden", "weight_bytes_total", "weight_bytes_per_token", "moe",
                "expert_bytes_per_token", "precision"):
        assert by_name["model"][key] == by_file["model"][key], key
    assert [p["tok_s"] for p in by_name["predictions"]] == \
        [p["tok_s"] for p in by_file["predictions"]]


def test_each_part_is_read_at_its_own_type() -> None:
    """Dense whole, shared experts whole, routed experts used/count, one embedding row, and
    nothing of a multi-token-prediction block."""
    h = 256
    tensors = [TensorInfo("token_embd.weight", Q8_0, (h, 1000)),
               TensorInfo("blk.0.attn_q.weight", BF16, (h, h)),
               TensorInfo("blk.0.ffn_gate_inp.weight", F32, (h, 8)),
               TensorInfo("blk.0.ffn_up_shexp.weight", Q6_K, (h, 512)),
               TensorInfo("blk.0.ffn_up_exps.weight", MXFP4, (h, 512, 8)),
               TensorInfo("blk.0.ffn_down_exps.weight", Q4_K, (512, h, 8)),
               TensorInfo("blk.1.attn_q.weight", BF16, (h, h)),
               TensorInfo("output.weight", Q6_K, (h, 1000))]
    read = token_bytes(tensors, h, experts=8, used=2, skipped_blocks=frozenset({1}))
    size = {t.name: t.n_bytes for t in tensors}
    assert read.shared == size["blk.0.ffn_up_shexp.weight"]
    assert read.routed == (size["blk.0.ffn_up_exps.weight"] + size["blk.0.ffn_down_exps.weight"]) / 4
    assert read.dense == (size["blk.0.attn_q.weight"] + size["blk.0.ffn_gate_inp.weight"]
                          + size["output.weight"] + size["token_embd.weight"] / 1000)
    assert read.total == sum(size.values())


def test_nextn_layers_are_not_read_nor_counted_as_layers(tmp_path: Path) -> None:
    from strixwizard.decode.gguf_shape import shape_from_gguf

    tensors = [TensorInfo(f"blk.{i}.attn_q.weight", BF16, (256, 256)) for i in range(3)]
    meta = {"general.architecture": "glm4moe", "glm4moe.block_count": 3,
            "glm4moe.embedding_length": 256, "glm4moe.nextn_predict_layers": 1}
    shape = shape_from_gguf(write_gguf(tmp_path / "m.gguf", meta, tensors))
    assert shape.layers == 2
    assert shape.weight_bytes_per_token == 2 * 256 * 256 * 2


def test_the_precision_is_said_and_never_assumed_silently(capsys: pytest.CaptureFixture[str]) -> None:
    plain = _advise(capsys, "--model", "Qwen3-235B-A22B")
    assert "BF16" in plain["model"]["precision"]
    assert any("precision assumed" in n and "--quant" in n for n in plain["notes"])
    quant = _advise(capsys, "--model", "Qwen3-235B-A22B", "--quant", "Q3_K_M")
    assert quant["model"]["precision"].startswith("Q3_K")
    assert not any("precision assumed" in n for n in quant["notes"])
    # the user's 105 GiB file fits where the checkpoint's 438 GiB does not
    assert quant["recommendation"]["nodes"] == 1
    assert plain["recommendation"]["split"] is None


@pytest.mark.parametrize(("argv", "says"), [
    (["--model", "Llama-3.1-70B", "--quant", "IQ9_Z"], "Q4_K_M"),
    (["--model", "model.gguf", "--quant", "Q4_K_M"], "only for a catalog model"),
    (["--layers", "32", "--hidden", "4096", "--weight-gib", "4", "--quant", "Q4_K_M"], "catalog"),
    (["--model", "No-Such-Model"], "--layers"),
])
def test_bad_quant_input_exits_2_and_says_why(argv: list[str], says: str,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["advise", *argv]) == 2
    assert says in capsys.readouterr().err
