"""`advise --nodes-spec`: unequal nodes. The advised `-ts` fits every node and says why (shares
by memory at equal bandwidth, the faster node filled first otherwise), its prediction is the
symmetric layer split's when the nodes are equal, a `-ts` that cannot fit is refused with the
node and the sizes, and a comma-separated `-ts` (a llama-bench trap) is refused."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from strixwizard.cli.main import main

ROOT = Path(__file__).resolve().parent.parent
SCHEMA = json.loads((ROOT / "strixwizard" / "schema" / "advise.schema.json").read_text(encoding="utf-8"))
MODEL = ["--model", "Qwen3-235B-A22B", "--quant", "Q4_K_M", "--link", "e810-roce"]  # 132 GiB


def _advise(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, Any]:
    assert main(["advise", *MODEL, *argv, "--json"]) == 0
    body: dict[str, Any] = json.loads(capsys.readouterr().out)
    jsonschema.validate(body, SCHEMA)
    return body


def test_unequal_free_memory_gets_a_split_that_fits_and_says_why(capsys: pytest.CaptureFixture[str]) -> None:
    hetero = _advise(capsys, "--nodes-spec", "100:212,60:212")["heterogeneous"]
    assert hetero["tensor_split"] == "62/38"
    for node in hetero["nodes"]:
        assert node["weights_gib"] <= node["memory_gib"]
    assert "shares by memory" in hetero["reason"] and hetero["used_nodes"] == 2
    assert hetero["interconnect"] == "e810-roce" and hetero["tok_s"] > 0


def test_equal_nodes_predict_what_the_symmetric_split_does(capsys: pytest.CaptureFixture[str]) -> None:
    body = _advise(capsys, "--nodes", "2", "--nodes-spec", "124:212,124:212")
    layer = next(p for p in body["predictions"] if p["split"] == "layer")
    assert body["heterogeneous"]["tensor_split"] == "50/50"
    assert body["heterogeneous"]["tok_s"] == pytest.approx(layer["tok_s"], rel=1e-3)


def test_the_faster_node_takes_as_much_as_fits(capsys: pytest.CaptureFixture[str]) -> None:
    hetero = _advise(capsys, "--nodes-spec", "110:212,100:540")["heterogeneous"]
    assert hetero["tensor_split"] == "24/76"  # 100 GiB on the 540 GB/s node, the rest on the other
    assert "fastest nodes (540 GB/s)" in hetero["reason"]
    alone = _advise(capsys, "--nodes-spec", "110:212,140:540")["heterogeneous"]
    assert alone["tensor_split"] == "0/100" and alone["used_nodes"] == 1 and alone["interconnect"] is None


def test_nothing_fits_is_said(capsys: pytest.CaptureFixture[str]) -> None:
    hetero = _advise(capsys, "--nodes-spec", "40,40")["heterogeneous"]
    assert hetero["tensor_split"] is None and "do not fit" in hetero["reason"]


def test_a_given_split_is_predicted_when_it_fits(capsys: pytest.CaptureFixture[str]) -> None:
    hetero = _advise(capsys, "--nodes-spec", "100,60", "--tensor-split", "3/2")["heterogeneous"]
    assert hetero["tensor_split"] == "60/40" and "given" in hetero["reason"]


@pytest.mark.parametrize(("argv", "says"), [
    (["--nodes-spec", "100,60", "--tensor-split", "1/1"],
     "node 2 would hold 66.2 GiB of weights and has 60.0 GiB"),
    (["--nodes-spec", "100,60", "--tensor-split", "15,85"], "with a comma llama-bench"),
    (["--nodes-spec", "100"], "give 2 to 64 nodes"),
    (["--nodes-spec", "100:fast,60"], "MEM_GIB[:GBPS]"),
    (["--tensor-split", "1/1"], "needs --nodes-spec"),
])
def test_a_split_that_cannot_be_is_refused_with_its_cause(argv: list[str], says: str,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["advise", *MODEL, *argv]) == 2
    assert says in capsys.readouterr().err


def test_the_text_names_the_split(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["advise", *MODEL, "--nodes-spec", "100,60"]) == 0
    assert "Unequal nodes: layer split on 2 nodes over e810-roce" in capsys.readouterr().out
