"""`advise` on a known site (--demo, --snapshot, --site): each node's llama.cpp backend and
memory for weights come from its facts; the advice predicts for the backend the nodes run,
names the faster one, and recommends a -ts that fits nodes of unequal free memory, saying why.
The nodes are the demo's recordings or snapshots the demo builder writes here."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from strixwizard.cli.main import main
from strixwizard.decode.backends import ROCM_TIME_FACTOR
from strixwizard.demo.builder import FakeNode
from strixwizard.demo.hardware import llama_cpp
from strixwizard.demo.scenarios import strix_halo_node

GIB = 2**30
SCHEMA = json.loads((Path(__file__).resolve().parent.parent / "strixwizard" / "schema" / "advise.schema.json")
                    .read_text(encoding="utf-8"))
MODEL = ["--model", "Qwen3-235B-A22B", "--quant", "Q3_K_M", "--link", "usb4-tcp"]


def _advise(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, Any]:
    assert main(["advise", *argv, "--json"]) == 0
    body: dict[str, Any] = json.loads(capsys.readouterr().out)
    jsonschema.validate(body, SCHEMA)
    return body


def _node(tmp_path: Path, name: str, backend: str, available_gib: float | None = None) -> Path:
    node: FakeNode = strix_halo_node(name)
    llama_cpp(node, backend=backend)
    if available_gib is not None:  # the builder reports MemAvailable as MemTotal - 7.5 GB
        node.memory(total_kb=int(available_gib * 1024**2) + 7_500_000)
    out = tmp_path / name
    out.mkdir()
    return node.capture(out)


def test_the_demo_site_gives_backend_and_memory_and_a_ts_that_fits(
        capsys: pytest.CaptureFixture[str]) -> None:
    body = _advise(capsys, "--demo", *MODEL)
    nodes = body["site_nodes"]
    assert [n["backend"] for n in nodes] == ["vulkan", "vulkan"]
    assert body["backend"] == "vulkan"
    assert any("read from the site's nodes" in note for note in body["notes"])
    memory = [n["memory_gib"] for n in nodes]
    assert memory[0] > memory[1]  # the demo's node-b has half the GTT pool
    hetero = body["heterogeneous"]
    assert hetero["tensor_split"] is not None
    for entry in hetero["nodes"]:
        assert entry["weights_gib"] <= entry["memory_gib"], entry
    assert [e["name"] for e in hetero["nodes"]] == [n["name"] for n in nodes]
    assert "each holds its share" in hetero["reason"] and "read from the site's nodes" in hetero["reason"]


def test_unequal_free_memory_gives_a_ts_that_fits_and_says_why(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    a = _node(tmp_path, "box-a", "vulkan")
    b = _node(tmp_path, "box-b", "vulkan", available_gib=40)
    body = _advise(capsys, "--snapshot", str(a), "--snapshot", str(b), *MODEL, "--nodes", "2")
    small = body["site_nodes"][1]
    assert small["memory_gib"] == pytest.approx(40, abs=0.01)
    assert "MemAvailable" in small["memory_source"]
    hetero = body["heterogeneous"]
    held = [e["weights_gib"] for e in hetero["nodes"]]
    assert held[1] <= 40 and held[0] > held[1]
    assert sum(held) == pytest.approx(body["model"]["weight_bytes_total"] / GIB, rel=0.01)
    share = round(100 * held[0] / sum(held))
    assert hetero["tensor_split"] == f"{share}/{100 - share}"
    assert "box-b" in hetero["reason"] and "of 40.0 GiB" in hetero["reason"]
    assert main(["advise", "--snapshot", str(a), "--snapshot", str(b), *MODEL, "--tensor-split", "1/1"]) == 2
    assert "cannot fit" in capsys.readouterr().err


def test_rocm_nodes_are_predicted_as_rocm_and_the_faster_backend_is_named(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a, b = (_node(tmp_path, name, "hip") for name in ("rocm-a", "rocm-b"))
    site = _advise(capsys, "--snapshot", str(a), "--snapshot", str(b), *MODEL, "--nodes", "1")
    given = _advise(capsys, *MODEL, "--nodes", "1", "--backend", "vulkan")
    assert site["backend"] == "rocm"
    assert site["predictions"][0]["t_comp_ms"] == pytest.approx(
        given["predictions"][0]["t_comp_ms"] * ROCM_TIME_FACTOR["quantized"], rel=1e-3)
    assert site["recommendation"]["backend"] == "vulkan"
    assert main(["advise", "--snapshot", str(a), "--snapshot", str(b), *MODEL, "--nodes", "1"]) == 0
    text = capsys.readouterr().out
    assert "Which backend? vulkan is faster" in text and "the site's nodes run rocm" in text


def test_nodes_that_differ_say_so_and_assume_vulkan(tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    a = _node(tmp_path, "mix-a", "vulkan")
    b = _node(tmp_path, "mix-b", "hip")
    body = _advise(capsys, "--snapshot", str(a), "--snapshot", str(b), *MODEL, "--nodes", "1")
    assert body["backend"] == "vulkan"
    assert any("different backends" in note and "vulkan assumed" in note for note in body["notes"])
    given = _advise(capsys, "--snapshot", str(a), "--snapshot", str(b), *MODEL, "--nodes", "1",
                    "--backend", "rocm")
    assert given["backend"] == "rocm"
    assert any("as given (--backend)" in note for note in given["notes"])


def test_what_fits_is_decided_by_the_nodes_memory_and_says_where_it_came_from(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Qwen3-235B-A22B Q3_K_M (104.7 GiB) fits the 124 GiB default pool on one node, but not a
    node with 60 GiB free; two such nodes hold half each."""
    a = _node(tmp_path, "small-a", "vulkan", available_gib=60)
    b = _node(tmp_path, "small-b", "vulkan", available_gib=60)
    offline = _advise(capsys, *MODEL, "--nodes", "1,2")
    assert offline["predictions"][0]["fits"] is True
    assert offline["memory_for_weights"]["site_nodes"] == []
    body = _advise(capsys, "--snapshot", str(a), "--snapshot", str(b), *MODEL, "--nodes", "1,2")
    single = next(p for p in body["predictions"] if p["split"] == "single")
    layer = next(p for p in body["predictions"] if p["split"] == "layer")
    assert single["fits"] is False and layer["fits"] is True
    assert any("small-a 60.0 GiB (MemAvailable" in a for a in single["assumptions"]), single["assumptions"]
    assert [n["gib"] for n in body["memory_for_weights"]["site_nodes"]] == pytest.approx([60, 60], abs=0.01)
    assert any(note.startswith("does it fit: each node's memory for weights as read from the site")
               for note in body["notes"])
    assert body["recommendation"]["nodes"] == 2
    lonely = _advise(capsys, "--snapshot", str(a), *MODEL, "--nodes", "1")
    assert lonely["recommendation"]["split"] is None
    assert "small-a 60.0 GiB" in lonely["recommendation"]["reason"]


def test_the_roomiest_node_decides_one_node_and_the_smaller_the_even_shares(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    big = _node(tmp_path, "roomy", "vulkan", available_gib=110)
    small = _node(tmp_path, "tight", "vulkan", available_gib=45)
    body = _advise(capsys, "--snapshot", str(small), "--snapshot", str(big), *MODEL, "--nodes", "1,2")
    single = next(p for p in body["predictions"] if p["split"] == "single")
    tensor = next(p for p in body["predictions"] if p["split"] == "tensor")
    assert single["fits"] is True and any("the roomiest, roomy 110.0 GiB" in a for a in single["assumptions"])
    assert tensor["fits"] is False  # half of 104.7 GiB does not fit the 45 GiB node
    assert any("tight 45.0 GiB" in a for a in tensor["assumptions"])


def test_trust_new_hosts_is_taken_for_a_site_and_refused_without_one(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["advise", *MODEL, "--trust-new-hosts"]) == 2
    assert "--trust-new-hosts is for a --site" in capsys.readouterr().err
    body = _advise(capsys, "--demo", *MODEL)  # the demo's nodes are recordings: no SSH, no key asked
    names = [n["name"] for n in body["site_nodes"]]
    assert [n["name"] for n in body["memory_for_weights"]["site_nodes"]] == names
