"""`deploy --stack llama-rpc` plans `--no-mmap` above 100 GiB of weights (llama.cpp#19745) and
says how long the load may take. The "large model" is a sparse file (no disk used): only its
size is read."""

from __future__ import annotations

import os
from pathlib import Path

from strixwizard.deploy.engine import make_plan
from strixwizard.deploy.plan import DeploySettings
from strixwizard.deploy.stacks.llama_rpc.llama import LlamaPlan, LlamaSettings
from strixwizard.deploy.stacks.llama_rpc.load import (
    NO_MMAP_BYTES,
    cache_notes,
    load_notes,
    model_bytes,
    needs_no_mmap,
)
from strixwizard.discovery import Discovery
from strixwizard.services.nodes import RunRequest, resolve_run

GIB = 2**30


def _plan(model: Path, **llama: object) -> LlamaPlan:
    site, nodes = resolve_run(RunRequest(demo=True))
    settings = DeploySettings(stack="llama-rpc",
                              options=(LlamaSettings(model=str(model), **llama),))  # type: ignore[arg-type]
    plan = make_plan(Discovery.of(site, nodes), settings)
    assert isinstance(plan, LlamaPlan)
    return plan


def _sparse(path: Path, size: int) -> Path:
    with path.open("wb") as file:
        os.ftruncate(file.fileno(), size)
    return path


def _head_notes(plan: LlamaPlan) -> str:
    return " ".join(note for p in plan.site_plan.plans for note in p.notes)


def test_a_model_over_100_gib_gets_no_mmap_planned_and_said_why(tmp_path: Path) -> None:
    # (the demo's node-b has its GTT pool at the default half of RAM: a 190 GiB GLM-4.6 does not
    # fit the pair, and the plan refuses it: tests/test_placement_pairs.py)
    model = _sparse(tmp_path / "DeepSeek-V4-Flash-UD-Q4_K_XL.gguf", int(144.4 * GIB))
    plan = _plan(model)
    assert "--no-mmap" in plan.server_argv
    notes = _head_notes(plan)
    assert "--no-mmap planned: the model is 144 GiB" in notes and "issues/19745" in notes
    assert "load: 144.4 GiB read on the head" in notes and "RPC cache (-c" in notes


def test_a_small_model_keeps_mmap_and_a_given_no_mmap_is_kept(tmp_path: Path) -> None:
    small = _sparse(tmp_path / "Qwen3.6-27B-Q6_K.gguf", int(20.88 * GIB))
    plan = _plan(small)
    assert "--no-mmap" not in plan.server_argv
    assert "--no-mmap planned" not in _head_notes(plan)
    assert "load: 20.9 GiB" in _head_notes(plan)
    assert "--no-mmap" in _plan(small, no_mmap=True).server_argv


def test_a_model_not_on_this_machine_is_not_guessed() -> None:
    plan = _plan(Path("/models/not-here.gguf"))
    assert "--no-mmap" not in plan.server_argv and "load:" not in _head_notes(plan)


def test_the_rule() -> None:
    assert not needs_no_mmap(None) and not needs_no_mmap(NO_MMAP_BYTES)
    assert needs_no_mmap(NO_MMAP_BYTES + 1)
    assert load_notes(None, 1, False) == [] and load_notes(2**20, 1, False) == []
    assert model_bytes(None) is None and model_bytes("") is None
    notes = load_notes(287 * GIB, 3, False)
    assert notes[0].startswith("--no-mmap planned") and "215.2 GiB sent to the workers" in notes[1]


def test_the_plan_says_each_workers_rpc_cache_where_it_passes_c(tmp_path: Path) -> None:
    notes = _head_notes(_plan(_sparse(tmp_path / "m.gguf", 10 * GIB)))
    assert ("RPC tensor cache (-c) on node-b: /root/.cache/llama.cpp/rpc holds 40.0 GiB, "
            "1444 GiB free on /") in notes
    off = _head_notes(_plan(_sparse(tmp_path / "n.gguf", 10 * GIB), cache=False))
    assert "RPC tensor cache off (--no-rpc-cache)" in off and "holds 40.0 GiB" not in off


def test_a_cache_not_there_yet_or_not_known_is_said_so() -> None:
    from strixwizard.facts.rpc_cache import RpcCache, RpcCacheReading

    absent = RpcCache("/root/.cache/llama.cpp/rpc", False, None, 2000 * GIB, 1500 * GIB, "/")
    assert cache_notes({"b": RpcCacheReading(absent)}, True) == [
        "RPC tensor cache (-c) on b: /root/.cache/llama.cpp/rpc is not there yet, 1500 GiB free "
        "on /; it grows by this node's share of every model loaded and nothing deletes it "
        "(`strixwizard doctor --stack llama-rpc` judges its size: llama.rpc_cache)"]
    unknown = cache_notes({"b": RpcCacheReading(None, "the RPC cache survey failed (exit 1)")}, True)
    assert unknown == ["RPC tensor cache (-c) on b: size not known (the RPC cache survey failed "
                       "(exit 1))"]
