"""The RPC tensor cache check (`llama.rpc_cache`) on fake nodes captured through the real
collector: the survey's text in the layout `du -s -k` and `df -P -k` print (real outputs of
both under tests/data/real/rpc_cache_survey_*), judged against the node's memory."""

from __future__ import annotations

from pathlib import Path

from strixwizard.demo.builder import FakeNode, rpc_cache_survey
from strixwizard.demo.scenarios import strix_halo_node
from strixwizard.facts.rpc_cache import RPC_CACHE
from strixwizard.model import Status
from tests.support.scenarios import run_site

FOLDER = "/root/.cache/llama.cpp/rpc"
GIB_KIB = 2**20


def _site(tmp: Path, survey: str) -> dict[str, object]:
    node: FakeNode = strix_halo_node("strix-a")
    node.command(list(RPC_CACHE.argv), survey)
    report = run_site(tmp, {"node-a": node})
    found = [r for r in report.checks if r.id == "llama.rpc_cache"]
    assert len(found) == 1, found
    return vars(found[0])


def _small_disk(cached_gib: int, free_gib: int) -> str:
    used = cached_gib * GIB_KIB
    size = used + free_gib * GIB_KIB
    return (f"cache {FOLDER}\n{cached_gib * GIB_KIB}\t{FOLDER}\n"
            "Filesystem     1024-blocks      Used Available Capacity Mounted on\n"
            f"/dev/nvme0n1p2  {size} {used} {free_gib * GIB_KIB}      {100 * used // size}% /\n")


def test_a_cache_of_one_model_with_room_left_passes(tmp_path: Path) -> None:
    found = _site(tmp_path, rpc_cache_survey(40 * GIB_KIB))
    assert found["status"] == Status.PASS
    assert found["observed"].startswith(f"{FOLDER}: 40.0 GiB cached, ")


def test_a_cache_above_twice_the_memory_warns_with_the_field_figure_and_the_cure(tmp_path: Path) -> None:
    found = _site(tmp_path, rpc_cache_survey(441 * GIB_KIB))
    assert found["status"] == Status.WARN
    assert "441 GB in one day of sweeps" in found["detail"]
    assert f"`rm -rf {FOLDER}`" in found["detail"] and "--no-rpc-cache" in found["detail"]
    assert "LLAMA_CACHE" in found["detail"]


def test_less_free_space_than_the_nodes_memory_warns_of_a_cut_cache_file(tmp_path: Path) -> None:
    found = _site(tmp_path, _small_disk(cached_gib=30, free_gib=20))
    assert found["status"] == Status.WARN
    assert "a file cut short by a full disk is loaded as weights" in found["detail"]
    assert "20 GiB free on /" in found["observed"]


def test_no_cache_folder_skips_and_a_refused_survey_says_why(tmp_path: Path) -> None:
    found = _site(tmp_path / "absent", rpc_cache_survey(None))
    assert found["status"] == Status.SKIP and "does not exist" in found["detail"]
    garbled = _site(tmp_path / "garbled", "cache /root/x\nabsent\nnot df\n")
    assert garbled["status"] == Status.SKIP and "not understood" in garbled["detail"]
