"""The placement rule (`strixwizard.decode.hetero`: `best_split`, `given_split`) over the
published heterogeneous pairs, and `deploy --stack llama-rpc`'s `-ts` from the nodes' free memory
by that rule.

Every row is a published pair, RPC device first (llama.cpp lists the RPC servers before the
local GPU; the source says "-ts lists the RPC device first"), from
https://github.com/ThinkOffApp/mac-amd-cuda-llm-cluster (README, read at commit 057b64b):
- Strix Halo (Bosgame M5, "about 110 GB usable on the Strix GPU (the 122 GB box hard-hangs above
  that)") + MacBook M5 Max ("about 90 GB of weights on the Mac's Metal before it answers
  'Insufficient Memory'"), GLM-5.3-Flash quants in decimal GB: best placements 15/85 (93 and
  102 GB), 45/55 (148 GB), 37/63 (157 GB); 200 GB "runs nowhere else";
- GB10 (ASUS Ascent GX10, "121.6 GiB") + the same Mac ("107.5 GiB"), GLM-5.3-Flash
  UD-Q4_K_XL 185.98 GiB: "-ts 50/50" ran, "-ts 40/60 fails outright with a Metal OOM".
Bandwidths: the README's effective weight-read rates, ≈440 GB/s on the M5 Max and ≈225 GB/s on
the GB10; the Strix Halo's measured 212 GB/s (strixwizard/decode/bandwidth.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from strixwizard.decode.hetero import GIB, NodeSpec, best_split, given_split, ts_text
from strixwizard.errors import UsageError

GB = 1e9
STRIX = NodeSpec(110 * GB, 212.0)
MAC_BESIDE_STRIX = NodeSpec(90 * GB, 440.0)
GB10 = NodeSpec(121.6 * GIB, 225.0)
MAC_BESIDE_GB10 = NodeSpec(107.5 * GIB, 440.0)


def first_share(held: list[float]) -> int:
    return int(ts_text(held).split("/")[0])


@pytest.mark.parametrize(("model", "published_first"), [
    (93 * GB, 15), (102 * GB, 15), (148 * GB, 45), (157 * GB, 37)])
def test_strix_beside_a_mac_the_rule_fits_and_gives_the_faster_mac_the_larger_share(
        model: float, published_first: int) -> None:
    held = best_split(model, [STRIX, MAC_BESIDE_STRIX])
    assert held is not None
    assert held[0] <= STRIX.memory_bytes and held[1] <= MAC_BESIDE_STRIX.memory_bytes
    assert held[1] > held[0]  # the Mac, faster, takes as much as fits: the published direction
    if model < 110 * GB:
        # the small files: the rule fills the Mac to its stated ceiling, more than the 85 %
        # published (the authors kept back an "M5-heavy slip" row: the ceiling is "about")
        assert first_share(held) <= published_first
    else:
        # the big files: within 6 points of the published best (157 GB at 37/63 put about
        # 99 GB on the Mac, above the "about 90 GB" the same README gives, which the rule keeps)
        assert abs(first_share(held) - published_first) <= 6


def test_the_200_gb_file_fits_only_split_and_the_comma_run_is_refused() -> None:
    model = 200 * GB
    held = best_split(model, [STRIX, MAC_BESIDE_STRIX])
    assert held is not None and abs(sum(held) - model) < 1  # at both ceilings, nowhere else
    # `-ts 15,85` is two llama-bench runs; the first, `-ts 15`, is one device only: all 200 GB on
    # the 122 GB box (the published two-hour hang). The rule refuses it with the numbers.
    # (one share: llama.cpp leaves the other devices at 0)
    with pytest.raises(UsageError, match=r"cannot fit: node 1 would hold 186\.3 GiB of weights "
                                         r"and has 102\.4 GiB"):
        given_split(model, [STRIX, MAC_BESIDE_STRIX], [15, 0])


def test_gb10_beside_a_mac_the_published_50_50_fits_and_the_40_60_oom_is_refused() -> None:
    model = 185.98 * GIB
    nodes = [GB10, MAC_BESIDE_GB10]
    held = given_split(model, nodes, [50, 50])
    assert all(h <= n.memory_bytes for h, n in zip(held, nodes, strict=True))
    with pytest.raises(UsageError, match=r"--tensor-split 40/60 cannot fit: node 2 would hold "
                                         r"111\.6 GiB of weights and has 107\.5 GiB"):
        given_split(model, nodes, [40, 60])
    rule = best_split(model, nodes)
    assert rule is not None and rule[1] <= MAC_BESIDE_GB10.memory_bytes
    assert ts_text(rule) == "42/58"


def test_nothing_that_cannot_fit_gets_a_split() -> None:
    assert best_split(250 * GB, [STRIX, MAC_BESIDE_STRIX]) is None


def test_deploy_writes_the_split_with_a_slash_and_refuses_what_cannot_fit(tmp_path: Path) -> None:
    from tests.support.cli import invoke

    fits, too_big = tmp_path / "fits.gguf", tmp_path / "too-big.gguf"
    with fits.open("wb") as out:
        out.truncate(150 * 2**30)  # sparse: no disk used
    with too_big.open("wb") as out:
        out.truncate(300 * 2**30)
    planned = invoke("deploy", "--demo", "--stack", "llama-rpc", "--gguf", str(fits), "--json")
    assert planned.rc in (0, 1), planned.stderr
    document = planned.json()["plan"]
    split = document["tensor_split"]
    argv = document["server_argv"]
    assert argv[argv.index("-ts") + 1] == split["ts"] == "35/65"
    assert [d["node"] for d in split["devices"]] == ["node-b", "node-a"]  # the RPC server first
    assert [d["kind"] for d in split["devices"]] == ["RPC server", "head GPU"]
    assert not any("," in arg for arg in argv[argv.index("-ts"):argv.index("-ts") + 2])
    refused = invoke("deploy", "--demo", "--stack", "llama-rpc", "--gguf", str(too_big))
    assert refused.rc == 2
    assert "the model (300.0 GiB) does not fit the devices' free memory together (181.0 GiB" \
        in refused.stderr
