"""Hybrid models (Qwen3-Next, Qwen3.5/3.6): their Gated-DeltaNet layers are counted from a
config.json, from a GGUF's tensor table and from --linear-layers alike, each costs the fitted
per-layer time, and a build before the fused GATED_DELTA_NET op (--delta-net graph) costs more."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from strixwizard.cli.main import main
from strixwizard.decode.advise import COSTS
from strixwizard.decode.gguf_header import TensorInfo
from strixwizard.decode.gguf_shape import shape_from_gguf
from strixwizard.decode.quants import F32, Q4_K
from strixwizard.decode.shapes import shape_from_config
from tests.support.gguf_file import write_gguf

#: Qwen3-Coder-Next's config.json, the keys the shape reads
#: (https://huggingface.co/Qwen/Qwen3-Coder-Next/blob/main/config.json).
CODER_NEXT = {"num_hidden_layers": 48, "hidden_size": 2048, "num_attention_heads": 16,
              "num_key_value_heads": 2, "head_dim": 256, "vocab_size": 151936,
              "intermediate_size": 5120, "moe_intermediate_size": 512,
              "shared_expert_intermediate_size": 512, "num_experts": 512, "num_experts_per_tok": 10,
              "full_attention_interval": 4, "linear_num_value_heads": 32, "linear_num_key_heads": 16,
              "linear_key_head_dim": 128, "linear_value_head_dim": 128, "torch_dtype": "bfloat16"}


def _advise(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, Any]:
    assert main(["advise", *argv, "--nodes", "1", "--json"]) == 0
    body: dict[str, Any] = json.loads(capsys.readouterr().out)
    return body


def test_a_hybrid_config_counts_its_gated_deltanet_layers() -> None:
    assert shape_from_config(CODER_NEXT, "coder-next", "test").linear_layers == 36
    kinds = {**CODER_NEXT, "layer_types": ["linear_attention"] * 30 + ["full_attention"] * 18}
    assert shape_from_config(kinds, "by kinds", "test").linear_layers == 30
    plain = {k: v for k, v in CODER_NEXT.items() if not k.startswith(("linear_", "full_"))}
    assert shape_from_config(plain, "plain", "test").linear_layers == 0


def _blocks(layers: int, every: int) -> list[TensorInfo]:
    out = [TensorInfo("token_embd.weight", Q4_K, (256, 1024))]
    for i in range(layers):
        out.append(TensorInfo(f"blk.{i}.attn_norm.weight", F32, (256,)))
        part = "attn_q" if (i + 1) % every == 0 else "ssm_out"
        out.append(TensorInfo(f"blk.{i}.{part}.weight", Q4_K, (256, 256)))
    return out


@pytest.mark.parametrize(("arch", "linear"), [("qwen3next", 36), ("qwen35moe", 36), ("llama", 0)])
def test_a_hybrid_gguf_counts_the_blocks_that_carry_the_recurrence(arch: str, linear: int,
                                                                   tmp_path: Path) -> None:
    meta = {"general.architecture": arch, f"{arch}.block_count": 48, f"{arch}.embedding_length": 256}
    shape = shape_from_gguf(write_gguf(tmp_path / "m.gguf", meta, _blocks(48, 4)))
    assert shape.linear_layers == linear


def test_each_gated_deltanet_layer_costs_its_fitted_time_and_the_graph_build_more(
        capsys: pytest.CaptureFixture[str]) -> None:
    shape = ["--layers", "48", "--hidden", "2048", "--weight-gib", "45.17", "--active-fraction", "0.0447"]
    plain = _advise(capsys, *shape)["predictions"][0]["t_comp_ms"]
    fused = _advise(capsys, *shape, "--linear-layers", "36")
    graph = _advise(capsys, *shape, "--linear-layers", "36", "--delta-net", "graph")
    assert fused["model"]["linear_layers"] == 36
    assert fused["predictions"][0]["t_comp_ms"] - plain == pytest.approx(36 * COSTS.gdn_layer_ms, abs=0.002)
    assert graph["predictions"][0]["t_comp_ms"] - plain == pytest.approx(36 * COSTS.gdn_graph_layer_ms,
                                                                         abs=0.002)
    assert "Gated-DeltaNet" in " ".join(graph["predictions"][0]["assumptions"])
    assert graph["constants"]["delta_net"] == "graph"


@pytest.mark.parametrize("argv", [
    ["--layers", "48", "--hidden", "2048", "--weight-gib", "45", "--linear-layers", "49"],
    ["--layers", "48", "--hidden", "2048", "--weight-gib", "45", "--linear-layers", "-1"],
    ["--model", "Llama-3.1-8B", "--linear-layers", "4"],
    ["--model", "Llama-3.1-8B", "--delta-net", "unrolled"],
])
def test_bad_hybrid_input_exits_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    try:
        code = main(["advise", *argv])
    except SystemExit as stop:  # argparse refuses a choice it does not know
        code = int(str(stop.code))
    assert code == 2
    assert "error" in capsys.readouterr().err
