"""`strixwizard advise`: the model on the published A/B pairs it must reproduce, every way to
name a model (catalog, config.json, GGUF, explicit shape), the JSON against its schema, and
bad input (exit 2). Offline: no nodes, no network."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import jsonschema
import pytest

from strixwizard.cli.main import main
from strixwizard.decode.advise import (
    LAYER,
    SINGLE,
    TENSOR,
    Inputs,
    advice_document,
    explicit_shape,
    named_links,
    predict_layer,
    predict_single,
    predict_tensor,
    resolve_links,
)

ROOT = Path(__file__).resolve().parent.parent
SCHEMA = json.loads((ROOT / "strixwizard" / "schema" / "advise.schema.json").read_text(encoding="utf-8"))
GIB = 2**30


def _qwen27() -> Inputs:
    """wkljohn's model: Qwen3.6-27B Q6_K, 64 layers, hidden 5120, a 20.88 GiB file."""
    return Inputs(explicit_shape("Qwen3.6-27B Q6_K", 64, 5120, 20.88 * GIB, 1.0), 212.0)


def _links() -> dict[str, object]:
    return {link.name: link for link in named_links()}


def _advise(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict[str, object]]:
    code = main(["advise", *argv, "--json"])
    out = capsys.readouterr().out
    return code, json.loads(out)


def test_one_node_is_fastest_when_the_model_fits() -> None:
    inputs = _qwen27()
    single = predict_single(inputs)
    assert single.tok_s == pytest.approx(9.50, rel=0.03)  # published 9.50 (wkljohn)
    document = advice_document(inputs, [1, 2], named_links())
    assert document["recommendation"]["split"] == SINGLE
    assert document["recommendation"]["rdma_helps"] is False


def test_layer_split_costs_about_8_ms_over_usb4_tcp_6_over_ethernet_and_4_over_rdma() -> None:
    """Per extra node: 7.84 ms over kernel TCP on USB4 (wkljohn's TCP row), 5.56 ms over an
    Ethernet NIC (lhl's 1-4 node curve), 3.85 ms over verbs (wkljohn's RDMA row)."""
    inputs, links = _qwen27(), resolve_links(["usb4-bond", "odinlink", "25gbe-tcp"])
    tcp, rdma, ethernet = (predict_layer(inputs, 2, link) for link in links)
    assert tcp.t_comm_ms == pytest.approx(8.0, abs=0.3)
    assert ethernet.t_comm_ms == pytest.approx(5.6, abs=0.2)
    assert rdma.t_comm_ms == pytest.approx(3.9, abs=0.5)
    assert tcp.tok_s == pytest.approx(8.83, rel=0.05)  # published
    assert rdma.tok_s == pytest.approx(9.16, rel=0.05)  # published
    assert rdma.tok_s > tcp.tok_s


def test_the_waits_per_token_come_from_the_llama_cpp_build() -> None:
    """The current build's count is the measured one (tests/test_rpc_roundtrips_real.py counts it
    with the real programs); older protocols wait more, as their source shows."""
    from strixwizard.decode.rpc_builds import CURRENT, RPC_BUILDS, rpc_build

    assert rpc_build(CURRENT).basis == "measured" and rpc_build(CURRENT).waits == 1
    assert [b.waits for b in RPC_BUILDS] == [6, 2, 1, 1]
    assert all(s.startswith(("https://", "benchmarks/")) for b in RPC_BUILDS for s in b.sources)
    link = resolve_links(["usb4-bond"])[0]
    by_build = {b.key: predict_layer(replace(_qwen27(), rpc_build=b.key), 2, link) for b in RPC_BUILDS}
    assert by_build["proto-1"].t_comm_ms - by_build[CURRENT].t_comm_ms == pytest.approx(5 * 0.130)
    assert "measured for llama.cpp RPC protocol 7.0.0" in " ".join(by_build[CURRENT].assumptions)
    forced = predict_layer(replace(_qwen27(), rpc_round_trips=38), 2, link)
    assert forced.t_comm_ms - by_build[CURRENT].t_comm_ms == pytest.approx(37 * 0.130)


def test_rpc_build_flag_and_json(capsys: pytest.CaptureFixture[str]) -> None:
    code, doc = _advise(capsys, "--layers", "64", "--hidden", "5120", "--weight-gib", "20.88",
                        "--link", "usb4-bond", "--rpc-build", "proto-2")
    assert code == 0
    jsonschema.validate(doc, SCHEMA)
    constants = doc["constants"]
    assert isinstance(constants, dict)
    assert constants["rpc_round_trips"] == 2 and constants["rpc_build"]["protocol"] == "2.0.0 to 3.0.0"
    assert main(["advise", "--layers", "64", "--hidden", "5120", "--weight-gib", "20.88",
                 "--rpc-build", "b1234"]) == 2
    assert "not a known build" in capsys.readouterr().err


def test_tensor_split_is_about_3x_slower_and_rdma_does_not_rescue_it() -> None:
    inputs, links = _qwen27(), resolve_links(["usb4-bond", "odinlink"])
    tcp, rdma = (predict_tensor(inputs, 2, link) for link in links)
    layer = predict_layer(inputs, 2, links[1])
    assert tcp.tok_s == pytest.approx(3.50, rel=0.1)  # published
    assert rdma.tok_s == pytest.approx(3.30, rel=0.1)  # published
    assert rdma.tok_s <= tcp.tok_s
    assert 2.3 < layer.tok_s / tcp.tok_s < 3.5


def test_a_model_too_big_for_one_node_is_split_by_layers(capsys: pytest.CaptureFixture[str]) -> None:
    code, doc = _advise(capsys, "--layers", "92", "--hidden", "5120", "--weight-gib", "189.69",
                        "--active-fraction", "0.09", "--name", "GLM-4.6 UD-Q4_K_XL")
    assert code == 0
    jsonschema.validate(doc, SCHEMA)
    rec = doc["recommendation"]
    assert rec["split"] == LAYER and rec["nodes"] == 2
    assert not next(p for p in doc["predictions"] if p["split"] == SINGLE)["fits"]
    assert any("--no-mmap" in note for note in doc["notes"])  # 190 GiB: llama.cpp#19745


def test_catalog_model_json_matches_the_schema(capsys: pytest.CaptureFixture[str]) -> None:
    code, doc = _advise(capsys, "--model", "Llama-3.1-70B", "--weight-gib", "39.59", "--nodes", "1,2,4")
    assert code == 0
    jsonschema.validate(doc, SCHEMA)
    splits = {(p["split"], p["nodes"]) for p in doc["predictions"]}
    assert {("single", 1), ("vllm-tp", 1), ("layer", 4), ("tensor", 2), ("vllm-tp", 4)} <= splits
    assert all(p["assumptions"] for p in doc["predictions"])
    assert doc["recommendation"]["split"] == SINGLE
    assert len(doc["interconnects"]) == len(named_links())


def test_config_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = {"num_hidden_layers": 32, "hidden_size": 4096, "num_attention_heads": 32,
              "num_key_value_heads": 8, "intermediate_size": 14336, "vocab_size": 128256,
              "torch_dtype": "bfloat16"}  # Llama-3.1-8B's own keys
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config), encoding="utf-8")
    code, doc = _advise(capsys, "--model", str(path), "--link", "e810-roce")
    assert code == 0
    jsonschema.validate(doc, SCHEMA)
    assert doc["model"]["layers"] == 32 and doc["model"]["hidden"] == 4096
    assert [p["interconnect"] for p in doc["predictions"] if p["nodes"] == 2] == ["e810-roce"] * 3
    assert doc["model"]["name"] == str(path)  # a hand-written config names no model: not its folder's name


def test_gguf_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from tests.support.llama_parts import write_tiny_model

    path = write_tiny_model(tmp_path / "tiny.gguf", layers=3)
    code, doc = _advise(capsys, "--model", str(path))
    assert code == 0
    jsonschema.validate(doc, SCHEMA)
    assert doc["model"]["layers"] == 3 and doc["model"]["hidden"] == 64
    assert doc["model"]["source"].startswith("GGUF metadata")


def test_explicit_link_and_measured_speed(capsys: pytest.CaptureFixture[str]) -> None:
    code, doc = _advise(capsys, "--layers", "64", "--hidden", "5120", "--weight-gib", "20.88",
                        "--rtt-us", "50", "--gbps", "25", "--transport", "rdma", "--measured-tok-s", "9.5")
    assert code == 0
    jsonschema.validate(doc, SCHEMA)
    single = next(p for p in doc["predictions"] if p["split"] == SINGLE)
    assert single["tok_s"] == pytest.approx(9.5)
    assert {p["interconnect"] for p in doc["predictions"] if p["nodes"] == 2} == {"custom"}
    assert "measured single-node" in " ".join(single["assumptions"])


def test_text_output_names_the_fastest_and_the_rdma_answer(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["advise", "--layers", "64", "--hidden", "5120", "--weight-gib", "20.88",
                 "--link", "usb4-bond", "--link", "odinlink"]) == 0
    out = capsys.readouterr().out
    assert "Fastest: single on 1 node(s)" in out
    assert "Does RDMA help?" in out and "layer split" in out
    assert "Layer or tensor? layer split" in out


def test_list_links(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["advise", "--list-links"]) == 0
    out = capsys.readouterr().out
    for name in ("usb4-tcp", "usb4-bond", "odinlink", "25gbe-tcp", "50gbe-tcp", "100gbe-tcp",
                 "e810-roce", "connectx-roce"):
        assert name in out


def test_every_named_link_cites_a_source() -> None:
    for link in named_links():
        assert link.sources and link.transport in ("tcp", "rdma")
        assert link.rtt_us > 0 and link.gbps > 0 and link.allreduce_us > 0


@pytest.mark.parametrize("argv", [
    ["--model", "No-Such-Model"],
    ["--layers", "64", "--hidden", "5120"],
    ["--layers", "64", "--hidden", "5120", "--weight-gib", "20", "--active-fraction", "1.5"],
    ["--model", "Llama-3.1-8B", "--nodes", "0,2"],
    ["--model", "Llama-3.1-8B", "--link", "carrier-pigeon"],
    ["--model", "Llama-3.1-8B", "--rtt-us", "10"],
    ["--model", "Llama-3.1-8B", "--layers", "3"],
    ["--model", "Llama-3.1-8B", "--measured-tok-s", "-1"],
])
def test_bad_input_exits_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["advise", *argv]) == 2
    assert "strixwizard: error:" in capsys.readouterr().err


def test_control_characters_in_a_model_name_are_not_printed(tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["advise", "--layers", "4", "--hidden", "256", "--weight-gib", "1",
                 "--name", "evil\x1b[2Jname"]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "evil?[2Jname" in out


def test_test_decode_shows_the_same_advice_from_measured_figures(capsys: pytest.CaptureFixture[str]) -> None:
    """`test decode --demo`: RCCL over RDMA replayed from a recording, TCP estimated from the
    same recording's round trip; the advice comes from those figures, on the site's 2 nodes."""
    decode_schema = json.loads((ROOT / "strixwizard" / "schema" / "decode.schema.json")
                               .read_text(encoding="utf-8"))
    assert main(["test", "decode", "--demo", "--model", "Llama-3.1-70B", "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    jsonschema.validate(document, decode_schema)
    advice = document["decode"]["advice"]
    assert {link["name"] for link in advice["links"]} == {"rdma", "tcp"}
    rdma = next(link for link in advice["links"] if link["name"] == "rdma")
    assert rdma["transport"] == "rdma" and rdma["allreduce_us"] > rdma["rtt_us"] > 0
    rec = advice["recommendation"]
    assert rec["split"] == TENSOR and rec["nodes"] == 2 and rec["rdma_helps"] is True  # 131 GiB: 2 nodes
    assert main(["test", "decode", "--demo", "--model", "Qwen3-235B-A22B"]) == 0
    out = capsys.readouterr().out  # 438 GiB of bf16 weights do not fit the demo's 2 nodes: said so
    assert "advice: nothing fits: 438 GiB of weights do not fit on 2 node(s)" in out


def test_links_from_the_sites_own_test_history(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`--history`: the latest figures `strixwizard test` stored (through the real history
    API), turned into all-reduce estimates as the wizard's Test step does."""
    from strixwizard.live.history import record_run
    from strixwizard.live.results import LatencyStats, Measurement
    from strixwizard.model import Status

    def latency(transport: str, tool: str, median: float) -> Measurement:
        stats = LatencyStats(median * 0.9, median, median * 1.05, median * 1.3, median * 2, median * 4)
        return Measurement("latency", transport, tool, ("node-a", "node-b"), Status.PASS, "",
                           figure=median, unit="µs", latency=stats)

    path = tmp_path / "history.sqlite"
    record_run("lab", "test latency", "2026-03-01T10:00:00+00:00",
               [latency("rdma", "ib_write_lat", 5.0), latency("tcp", "strixwizard tcp ping-pong", 30.0),
                Measurement("bandwidth", "rdma", "ib_write_bw", ("node-a", "node-b"), Status.PASS, "",
                            figure=50.0, unit="Gb/s", bandwidth_gbps=50.0)], path)
    code, doc = _advise(capsys, "--history", str(path), "--layers", "92", "--hidden", "5120",
                        "--weight-gib", "189.69", "--active-fraction", "0.09")
    assert code == 0
    jsonschema.validate(doc, SCHEMA)
    links = {link["name"]: link for link in doc["interconnects"]}
    assert set(links) == {"rdma", "tcp"}
    assert links["rdma"]["transport"] == "rdma" and 10.0 < links["rdma"]["rtt_us"] < 12.0
    assert links["tcp"]["rtt_us"] == pytest.approx(60.0)  # 2 x the 30 µs one-way median
    assert any("test history" in note for note in doc["notes"])
    rec = doc["recommendation"]
    assert rec["split"] == LAYER and rec["interconnect"] == "rdma" and rec["rdma_helps"] is True
    assert main(["advise", "--history", str(tmp_path / "none.sqlite"), "--model", "Llama-3.1-8B"]) == 2
    assert "no test history there" in capsys.readouterr().err


def test_a_stored_calibration_of_the_same_model_is_the_compute_term(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from strixwizard.live.history import record_run
    from strixwizard.live.results import LatencyStats, Measurement
    from strixwizard.model import Status
    from tests.support.llama_parts import write_tiny_model

    model = write_tiny_model(tmp_path / "tiny.gguf", layers=2)
    pair = ("node-a", "node-b")
    stats = LatencyStats(9.0, 10.0, 10.5, 13.0, 20.0, 40.0)
    record_run("lab", "test decode", "2026-03-01T10:00:00+00:00", [
        Measurement("latency", "tcp", "strixwizard tcp ping-pong", pair, Status.PASS, "", figure=10.0,
                    unit="µs", latency=stats),
        Measurement("calibration", "none", "llama-server", pair, Status.PASS, "", figure=20.0,
                    unit="ms/token", detail={"tok_s": 50.0, "model": str(model), "node": "node-a"})],
        tmp_path / "history.sqlite")
    code, doc = _advise(capsys, "--history", str(tmp_path / "history.sqlite"), "--model", str(model))
    assert code == 0
    single = next(p for p in doc["predictions"] if p["split"] == "single")
    assert single["tok_s"] == pytest.approx(50.0)
    assert any("stored `test decode --calibrate`" in note for note in doc["notes"])
