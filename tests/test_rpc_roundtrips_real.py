"""llama.cpp RPC's traffic per generated token, counted with the REAL programs: the
`ggml-rpc-server` and `llama-server` of scripts/build_llama.sh (built, or found cached, by
tests/support/llama_parts.py), tiny GGUFs of 2 and 8 layers, and benchmarks/rpc_roundtrips.py's
counting proxy between them on this machine's loopback (real TCP; no timing is asserted).

What it pins down for `strixwizard advise`: this llama.cpp waits for the server once per
token and remote node (GET_TENSOR of the output), whatever the layer count; every other
command of a token is one-way (SET_TENSOR of the inputs, GRAPH_RECOMPUTE of the cached graph).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

from strixwizard.decode.rpc_builds import CURRENT, rpc_build
from tests.support.llama_parts import build, write_tiny_model

ROOT = Path(__file__).resolve().parent.parent
#: what `advise` takes for the current build (rpc_builds.RPC_BUILDS, basis "measured")
RPC_ROUND_TRIPS_MEASURED = rpc_build(CURRENT).waits


def _bench() -> ModuleType:
    path = ROOT / "benchmarks" / "rpc_roundtrips.py"
    spec = importlib.util.spec_from_file_location("rpc_roundtrips", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["rpc_roundtrips"] = module
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("layers", [2, 8])
def test_one_wait_per_token_whatever_the_layer_count(layers: int, tmp_path: Path) -> None:
    bench = _bench()
    bin_dir = build()
    model = write_tiny_model(tmp_path / f"tiny-{layers}.gguf", layers=layers)
    for gpu_layers in (99, layers // 2):  # every layer remote; half of them remote
        row = bench.measure(bin_dir, model, layers, gpu_layers, 4, 12, tmp_path)
        assert row["round_trips_per_token"] == pytest.approx(RPC_ROUND_TRIPS_MEASURED)
        commands = row["commands_per_token"]
        assert commands.get("GET_TENSOR") == pytest.approx(1.0)
        assert commands.get("GRAPH_RECOMPUTE") == pytest.approx(1.0)  # the graph is reused
        assert "GRAPH_COMPUTE" not in commands and "GET_ALLOC_SIZE" not in commands
        assert 0 < row["bytes_to_server_per_token"] < 8192


@pytest.mark.parametrize("experts", [0, 8])
def test_flash_attention_and_moe_nodes_cost_no_wait_per_token(experts: int, tmp_path: Path) -> None:
    """RPC protocol 3.6.0-5.1.0 sent a GET_ALLOC_SIZE round trip for every FLASH_ATTN_EXT and
    MUL_MAT_ID node whenever it allocated a graph (ggml-rpc.cpp, llama.cpp#17116); this build
    caches the sizes: with flash attention on and routed experts, still one wait per token."""
    bench = _bench()
    bin_dir = build()
    model = write_tiny_model(tmp_path / "tiny.gguf", layers=4, experts=experts)
    row = bench.measure(bin_dir, model, 4, 2, 4, 12, tmp_path, flash_attn="on")
    assert row["round_trips_per_token"] == pytest.approx(RPC_ROUND_TRIPS_MEASURED)
    assert "GET_ALLOC_SIZE" not in row["commands_per_token"]
    assert row["commands_per_token"].get("GRAPH_RECOMPUTE") == pytest.approx(1.0)


@pytest.mark.parametrize("layers", [2, 4])
def test_sm_tensor_waits_twice_per_layer_on_every_server(layers: int, tmp_path: Path) -> None:
    """`-sm tensor` over two RPC servers: one GET_TENSOR wait per sync point and server, and
    2 sync points per layer (+1 for the output) — the count `advise` takes from
    ggml-backend-meta.cpp; each piece of the graph is sent anew (GRAPH_COMPUTE, no reuse)."""
    from strixwizard.decode.advise import TENSOR_SYNCS_PER_LAYER

    bench = _bench()
    bin_dir = build()
    model = write_tiny_model(tmp_path / f"tiny-{layers}.gguf", layers=layers)
    row = bench.measure(bin_dir, model, layers, 99, 4, 12, tmp_path, servers=2, split="tensor")
    per_server = row["round_trips_per_token"] / 2
    assert per_server == pytest.approx(TENSOR_SYNCS_PER_LAYER * layers + 1)
    commands = row["commands_per_token"]
    assert commands.get("GRAPH_COMPUTE", 0) > 2 * layers and "GRAPH_RECOMPUTE" not in commands
    layer = bench.measure(bin_dir, model, layers, 99, 4, 12, tmp_path, servers=2, split="layer")
    assert layer["round_trips_per_token"] / 2 == pytest.approx(RPC_ROUND_TRIPS_MEASURED)
