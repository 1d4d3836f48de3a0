"""The decode model: shapes from configs, GGUF files and the catalog, the all-reduce curves,
the prediction formula, and `strixwizard test decode` on the demo (schema-validated)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import gguf
import jsonschema
import numpy as np
import pytest

from strixwizard.decode.bandwidth import MEASURED_GBPS, mem_bandwidth
from strixwizard.decode.catalog import catalog, from_catalog, resolve
from strixwizard.decode.collectives import AllReduceCurve, CollectivePoint, from_pingpong, sweep
from strixwizard.decode.gguf_shape import shape_from_gguf
from strixwizard.decode.measure import DecodeSettings, rccl_decode
from strixwizard.decode.predict import predict_layer_split, predict_tp
from strixwizard.decode.shapes import ModelShape, shape_from_config
from strixwizard.discovery import Discovery
from strixwizard.errors import UsageError
from strixwizard.model import Status
from strixwizard.node.local import LocalSession
from tests.support.cli import invoke

SCHEMA = json.loads((Path(__file__).parent.parent / "strixwizard" / "schema" / "decode.schema.json")
                    .read_text())

#: Published parameter counts (total, active) in billions, from each model card.
PUBLISHED = {
    "Llama-3.1-8B": (8.03, 8.03), "Llama-3.1-70B": (70.6, 70.6), "Qwen3-30B-A3B": (30.5, 3.3),
    "Qwen3-235B-A22B": (235.0, 22.0), "gpt-oss-120b": (116.8, 5.1), "GLM-4.5-Air": (106.0, 12.0),
}


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_catalog_models_count_their_published_parameters(name: str) -> None:
    shape = from_catalog(name)
    total, active = PUBLISHED[name]
    assert shape.total_params / 1e9 == pytest.approx(total, rel=0.03)
    # model cards count the active parameters with or without the embeddings: within 15 %
    assert shape.active_params / 1e9 == pytest.approx(active, rel=0.15)
    assert shape.source.startswith("config.json of https://huggingface.co/")


def test_every_catalog_entry_names_its_public_source() -> None:
    for entry in catalog():
        source = entry["source"]
        assert source.startswith("https://huggingface.co/") and source.endswith("config.json")


def test_moe_keys_of_real_configs() -> None:
    qwen = from_catalog("Qwen3-235B-A22B")
    assert (qwen.layers, qwen.hidden, qwen.dtype_bytes, qwen.experts, qwen.experts_per_token) == \
        (94, 4096, 2, 128, 8)
    assert qwen.message_bytes(1) == 8192  # the 8 KB of the published decode cost example
    glm = from_catalog("GLM-4.5-Air")  # n_routed_experts, n_shared_experts, first_k_dense_replace
    assert glm.experts == 128 and glm.expert_bytes_per_token > 0
    oss = from_catalog("gpt-oss-120b")  # num_local_experts; MXFP4 experts read at 4.25 bits
    assert oss.weight_bytes_total / oss.total_params < 0.6
    # batch > 1 touches more experts (uniform routing), never more than all of them
    assert oss.weight_bytes_per_token < oss.step_weight_bytes(8) < oss.weight_bytes_total


def test_text_config_and_dense_defaults() -> None:
    shape = shape_from_config({"text_config": {"num_hidden_layers": 2, "hidden_size": 64,
                                               "num_attention_heads": 4, "vocab_size": 100,
                                               "intermediate_size": 128}, "torch_dtype": "float16"},
                              "vl", "test")
    assert (shape.layers, shape.hidden, shape.dtype_bytes, shape.moe) == (2, 64, 2, False)
    assert shape.step_weight_bytes(16) == shape.weight_bytes_per_token


@pytest.mark.parametrize(("config", "words"), [
    ({"hidden_size": 64}, "num_hidden_layers"),
    ({"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4, "vocab_size": 10,
      "torch_dtype": "int3"}, "torch_dtype"),
    ({"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4, "vocab_size": 10,
      "num_experts": 8}, "num_experts_per_tok"),
])
def test_configs_without_the_keys_are_usage_errors(config: dict[str, Any], words: str) -> None:
    with pytest.raises(UsageError, match=words):
        shape_from_config(config, "x", "test")


def _write_gguf(path: Path, moe: bool, keys: bool = True) -> None:
    writer = gguf.GGUFWriter(str(path), "qwen3moe" if moe else "llama")
    writer.add_name("tiny")
    if keys:
        writer.add_block_count(2)
        writer.add_embedding_length(64)
        if moe:
            writer.add_expert_count(8)
            writer.add_expert_used_count(2)
    ones = np.ones((64,), dtype=np.float32)
    writer.add_tensor("token_embd.weight", np.ones((100, 64), dtype=np.float32))
    for i in range(2):
        writer.add_tensor(f"blk.{i}.attn_norm.weight", ones)
        writer.add_tensor(f"blk.{i}.attn_q.weight", np.ones((64, 64), dtype=np.float16))
        if moe:
            writer.add_tensor(f"blk.{i}.ffn_up_exps.weight", np.ones((8, 32, 64), dtype=np.float16))
        else:
            writer.add_tensor(f"blk.{i}.ffn_up.weight", np.ones((32, 64), dtype=np.float16))
    writer.add_tensor("output.weight", np.ones((100, 64), dtype=np.float16))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def test_gguf_shape_follows_metadata_and_tensor_sizes(tmp_path: Path) -> None:
    dense, moe = tmp_path / "dense.gguf", tmp_path / "moe.gguf"
    _write_gguf(dense, moe=False)
    _write_gguf(moe, moe=True)
    d = shape_from_gguf(dense)
    assert (d.name, d.layers, d.hidden, d.dtype_bytes, d.moe) == ("tiny", 2, 64, 2, False)
    # read per token: attention + mlp + norms + head in their file sizes, one embedding row (f32)
    assert d.weight_bytes_per_token == 2 * (64 * 64 * 2 + 32 * 64 * 2 + 64 * 4) + 100 * 64 * 2 + 64 * 4
    m = shape_from_gguf(moe)
    assert (m.experts, m.experts_per_token) == (8, 2)
    assert m.expert_bytes_per_token == pytest.approx(2 * 8 * 32 * 64 * 2 * 2 / 8)
    assert resolve(str(moe)).experts == 8


def test_gguf_without_the_keys_is_a_usage_error(tmp_path: Path) -> None:
    path = tmp_path / "nokeys.gguf"
    _write_gguf(path, moe=False, keys=False)
    with pytest.raises(UsageError, match="block_count"):
        shape_from_gguf(path)
    junk = tmp_path / "junk.gguf"
    junk.write_bytes(b"not a gguf file at all")
    with pytest.raises(UsageError, match="GGUF"):
        shape_from_gguf(junk)


def test_ring_all_reduce_from_the_ping_pong_and_from_two_ranks() -> None:
    points = from_pingpong("tcp", {4096: 30.0, 8192: 40.0}, "pp")
    assert [(p.size_bytes, p.allreduce_us, p.source) for p in points] == \
        [(8192, 60.0, "estimated"), (16384, 80.0, "estimated")]
    curve = AllReduceCurve.of("tcp", points)
    assert curve.two_ranks(12288) == pytest.approx(70.0)  # interpolated
    assert curve.two_ranks(1024) == 60.0  # below the sizes: the latency floor
    assert curve.ranks(16384, 4) == pytest.approx(3 * 60.0)  # (n-1) x t2(2m/n)
    assert curve.ranks(16384, 1) == 0.0
    assert sweep([16384]) == [8192, 16384, 32768]
    assert sweep([16384, 65536]) == [8192, 16384, 32768, 65536, 131072]


def _shape(**overrides: Any) -> ModelShape:
    base: dict[str, Any] = dict(name="m", layers=80, hidden=8192, dtype_bytes=2, total_params=70e9,
                                active_params=70e9, weight_bytes_per_token=40e9, weight_bytes_total=40e9,
                                source="test")
    return ModelShape(**{**base, **overrides})


def test_prediction_is_the_issue_formula() -> None:
    shape = _shape()
    curve = AllReduceCurve.of("rdma", [CollectivePoint("rdma", 16384, 85.0, "measured", "t")])
    one = predict_tp(shape, curve, 1, 1, 200.0)
    two = predict_tp(shape, curve, 2, 1, 200.0)
    assert one.t_comm_ms == 0 and one.t_comp_ms == pytest.approx(200.0)  # 40 GB / 200 GB/s
    assert two.t_comm_ms == pytest.approx(2 * 80 * 85.0 / 1e3)  # 2 . L . t_allreduce
    assert two.t_comp_ms == pytest.approx(100.0)
    assert two.tokens_per_s == pytest.approx(1e3 / (13.6 + 100.0))
    assert two.comm_share == pytest.approx(13.6 / 113.6)
    assert two.source == "measured" and predict_tp(shape, curve, 4, 1, 200.0).source == "estimated"
    split = predict_layer_split(shape, 2, 50.0, 200.0, "tcp", "recorded")
    assert split.t_comp_ms == pytest.approx(200.0) and split.t_comm_ms == pytest.approx(0.1)


def test_bandwidth_default_and_override() -> None:
    assert mem_bandwidth(None)[0] == MEASURED_GBPS and "llm-tracker.info" in mem_bandwidth(None)[1]
    assert mem_bandwidth(180.0) == (180.0, "--mem-bandwidth 180 GB/s (given by the user)")
    with pytest.raises(UsageError):
        mem_bandwidth(0.0)


def test_rccl_absent_is_a_skip_that_says_so() -> None:
    host = LocalSession("this machine")
    settings = DecodeSettings(sizes=(8192, 16384), primary=8192, launcher="strixwizard-no-such-mpirun")
    m = rccl_decode(host, ["127.0.0.1", "127.0.0.1"], ("a", "b"), [], settings)
    assert m.status is Status.SKIP and "RCCL absent" in m.summary and "estimated" in m.summary


def test_demo_json_validates_and_labels_every_figure() -> None:
    result = invoke("test", "decode", "--demo", "--json", "--model", "Qwen3-30B-A3B", "--batch", "2",
                     "--tp", "1,2,4", "--seconds", "0.3")
    assert result.rc == 0, result.stderr
    document = result.json()
    jsonschema.validate(document, SCHEMA)
    decode = document["decode"]
    assert decode["model"]["name"] == "Qwen3-30B-A3B" and decode["batches"] == [1, 2]
    sources = {(p["transport"], p["source"]) for p in decode["collectives"]}
    assert ("rdma", "recorded") in sources and ("tcp", "estimated") in sources
    sizes = {p["size_bytes"] for p in decode["collectives"] if p["transport"] == "tcp"}
    assert sizes == {2048, 4096, 8192, 16384}  # batch 1..2 x hidden 2048 x 2 B, halved and doubled
    tps = {(p["transport"], p["tp"], p["batch"]) for p in decode["predictions"]}
    assert ("rdma", 2, 1) in tps and ("tcp", 2, 2) in tps
    # TP=4 asked for on the demo's 2 nodes: left out, and said so
    assert not any(tp == 4 for _, tp, _ in tps)
    assert "TP=4 left out: the site has 2 node(s), one rank per node" in decode["notes"]
    recorded = next(p for p in decode["predictions"] if p["transport"] == "rdma" and p["tp"] == 2)
    assert recorded["source"] == "recorded" and 0 < recorded["comm_share"] < 1


@pytest.mark.parametrize(("model", "message"), [
    ("/nonexistent/config.json", "no such file"),
    ("No-Such-Model-7B", "not a model of the catalog"),
    ("/nonexistent/model.gguf", "no such file"),
])
def test_bad_model_exits_2_with_a_clear_error(model: str, message: str) -> None:
    result = invoke("test", "decode", "--demo", "--model", model)
    assert result.rc == 2 and message in result.stderr


def test_bad_json_and_text_mode(tmp_path: Path) -> None:
    bad = tmp_path / "config.json"
    bad.write_text("{not json")
    result = invoke("test", "decode", "--demo", "--json", "--model", str(bad))
    assert result.rc == 2 and "not valid JSON" in result.json()["error"]
    text = invoke("test", "decode", "--demo", "--model", "Llama-3.1-8B", "--seconds", "0.3",
                   "--mem-bandwidth", "200")
    assert text.rc == 0, text.stderr
    for words in ("predicted decode", "[recorded, all_reduce_perf]", "[estimated, RCCL NET/Socket estimate]",
                  "--mem-bandwidth 200 GB/s", "huggingface.co/meta-llama/Llama-3.1-8B"):
        assert words in text.stdout


def test_usb4_networking_beside_the_rdma_nic_is_timed_too(tmp_path: Path) -> None:
    from strixwizard.decode.links import usb4_paths
    from strixwizard.demo.hardware import RoceSetup, e810, usb4_routers
    from strixwizard.demo.scenarios import strix_halo_node
    from strixwizard.live.plan import plan_pair
    from strixwizard.site import NodeSpec, Site
    from tests.support.scenarios import facts_of

    a, b = strix_halo_node("strix-a"), strix_halo_node("strix-b")
    e810(a, "192.168.100.1/30", "b4:96:91:9c:3a:10", setup=RoceSetup(roce_mode="RoCE v2"))
    e810(b, "192.168.100.2/30", "b4:96:91:9c:41:d8", setup=RoceSetup(roce_mode="RoCE v2"))
    usb4_routers(a, "strix-b", ipv4="10.0.0.1/30", mac="02:5d:3a:71:8c:01")
    usb4_routers(b, "strix-a", ipv4="10.0.0.2/30", mac="02:5d:3a:71:8c:02")
    facts = facts_of(tmp_path, {"node-a": a, "node-b": b})
    site = Site(name="t", nodes=(NodeSpec(name="node-a", snapshot="node-a"),
                                 NodeSpec(name="node-b", snapshot="node-b")))
    plan = plan_pair(Discovery.of_facts(site, facts.values()), "node-a", "node-b")
    assert plan.rdma is not None and plan.tcp_address == "192.168.100.2"  # the NIC first
    (usb4,) = usb4_paths(Discovery.of_facts(site, facts.values()), plan)
    assert usb4.transport == "usb4-tcp" and usb4.address == "10.0.0.2" and "thunderbolt0" in usb4.path


def test_a_pair_streams_one_measurement_per_transport_and_the_document_predicts_each() -> None:
    from strixwizard.decode.document import DecodeRun
    from strixwizard.decode.links import TcpPath
    from strixwizard.decode.measure import decode_pair
    from strixwizard.live.plan import PairPlan

    host = LocalSession("this machine")
    plan = PairPlan("a", "b", "127.0.0.1", "127.0.0.1", "127.0.0.1", "a:lo -> b:lo 127.0.0.1", True, None,
                    "no RDMA here", "ethernet")
    shape = from_catalog("Llama-3.1-8B")
    run = DecodeRun(shape, [1], [1, 2], 212.0, "test")
    settings = DecodeSettings(sizes=tuple(sweep(run.messages)), primary=run.messages[0],
                              seconds_per_size=0.2, round_trips=300, launcher="strixwizard-no-such-mpirun")
    results = list(decode_pair({"a": host, "b": host}, plan, {}, settings,
                               [TcpPath("usb4-tcp", "127.0.0.1", "a:thunderbolt0 -> b:thunderbolt0")]))
    assert [(m.transport, m.status) for m in results] == \
        [("tcp", Status.PASS), ("tcp", Status.PASS), ("rdma", Status.SKIP)]
    document = run.document(results)
    assert {p["transport"] for p in document["predictions"]} == {"tcp", "usb4-tcp"}
    usb4 = [p for p in document["collectives"] if p["transport"] == "usb4-tcp"]
    assert [p["size_bytes"] for p in usb4] == [4096, 8192, 16384]


IB_WRITE_LAT_STAND_IN = Path(__file__).parent / "data" / "decode" / "ib_write_lat_stand_in.sh"


def test_rccl_absent_on_an_rdma_link_without_verbs_estimates_from_ib_write_lat(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    from strixwizard.decode.measure import decode_pair
    from strixwizard.live.plan import PairPlan, RdmaEnd

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "ib_write_lat").write_text(IB_WRITE_LAT_STAND_IN.read_text())
    (bin_dir / "ib_write_lat").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    ends = tuple(RdmaEnd(n, "rocep194s0", 1, 1, 4096, "127.0.0.1", "enp194s0np0", 100.0, "Ethernet")
                 for n in ("a", "b"))
    plan = PairPlan("a", "b", "127.0.0.1", "127.0.0.1", "127.0.0.1", "lo", True, (ends[0], ends[1]), "",
                    "roce-v2")
    host = LocalSession("this machine")
    settings = DecodeSettings(sizes=(8192, 16384), primary=8192, seconds_per_size=0.2, round_trips=200,
                              launcher="strixwizard-no-such-mpirun")
    results = list(decode_pair({"a": host, "b": host}, plan, {}, settings))
    rccl, verbs, estimate = results[1:]
    assert rccl.status is Status.SKIP and "RCCL absent" in rccl.summary
    # this kernel has no RDMA (or no pyverbs): the verbs all-reduce says why, then the estimate
    assert verbs.status is Status.SKIP and verbs.tool == "strixwizard verbs all-reduce"
    assert "no RDMA devices" in verbs.summary or "pyverbs is not installed" in verbs.summary, verbs.summary
    assert estimate.status is Status.PASS and estimate.tool == "ib_write_lat"
    points = estimate.detail["collectives"]
    assert [(p["size_bytes"], p["allreduce_us"], p["source"]) for p in points] == \
        [(8192, 12.0, "estimated"), (16384, 14.0, "estimated")]  # 2 x (5 + half/4096)


def test_large_batches_are_bound_by_the_matrix_work_not_only_by_memory() -> None:
    from strixwizard.decode.bandwidth import COMPUTE_TFLOPS
    from strixwizard.decode.predict import compute_ms

    shape = _shape(active_params=8e9, weight_bytes_per_token=16e9)
    assert compute_ms(shape, 1, 1, 200.0) == pytest.approx(80.0)  # memory: 16 GB / 200 GB/s
    flops = 2 * 8e9 * 1024 / (COMPUTE_TFLOPS * 1e12) * 1e3
    assert compute_ms(shape, 1, 1024, 200.0) == pytest.approx(flops) and flops > 80.0
    assert compute_ms(shape, 2, 1024, 200.0) == pytest.approx(flops / 2)


def test_the_wizard_panel_takes_the_best_evidence_the_test_step_has() -> None:
    from strixwizard.decode.fabric import fabric_points
    from strixwizard.live.results import LatencyStats, Measurement

    shape = from_catalog("Llama-3.1-70B")  # 16 KiB per all-reduce
    stats = LatencyStats(None, 5.0, None, None, None, None)
    tcp_stats = LatencyStats(None, 30.0, None, None, None, None)
    results = [
        Measurement("latency", "rdma", "ib_write_lat", ("a", "b"), Status.PASS, "", latency=stats,
                    detail={"size_bytes": 64}),
        Measurement("latency", "tcp", "strixwizard tcp ping-pong", ("a", "b"), Status.PASS, "",
                    latency=tcp_stats),
        Measurement("bandwidth", "rdma", "ib_write_bw", ("a", "b"), Status.PASS, "", bandwidth_gbps=50.0),
    ]
    rdma, tcp = fabric_points(results, shape)
    # 2 x (one-way + 8 KiB at 50 Gb/s); TCP without a bandwidth term
    assert rdma.allreduce_us == pytest.approx(2 * (5.0 + 8192 * 8 / 50e3))
    assert tcp.allreduce_us == 60.0 and {rdma.source, tcp.source} == {"estimated"}
    decode = Measurement("decode", "tcp", "t", ("a", "b"), Status.PASS, "", detail={"collectives": [
        CollectivePoint("tcp", 16384, 40.0, "estimated", "t").to_json()]})
    assert [p.allreduce_us for p in fabric_points([*results, decode], shape)] == [40.0]


def test_rccl_keeps_its_fixed_cost_once_when_extrapolated_to_more_ranks() -> None:
    points = [CollectivePoint("rdma", s, t, "measured", "all_reduce_perf")
              for s, t in ((1024, 54.0), (16384, 67.0), (32768, 78.0))]
    curve = AllReduceCurve.of("rdma", points)
    assert curve.fixed_floor and curve.ranks(16384, 2) == 67.0
    assert curve.ranks(16384, 4) == pytest.approx(54.0 + 13.0 * 1.5)  # floor + rest x 2(n-1)/n
    # in line with the ≈85 µs published for a 20 KiB all-reduce on 4 nodes over 25 GbE RoCE
    assert 75 < curve.ranks(20480, 4) < 90


def test_a_test_step_run_gives_the_decode_contract_too() -> None:
    from strixwizard.decode.fabric import fabric_document
    from strixwizard.live.demo import demo_rccl

    document = {"schema_version": 1, "tool": {}, "generated_at": "", "command": "test decode", "site": "demo",
                "demo": True, "status": "pass", "exit_code": 0, "results": [],
                "decode": fabric_document([demo_rccl()], from_catalog("Qwen3-235B-A22B"), nodes=4)}
    jsonschema.validate(document, SCHEMA)
    predictions = document["decode"]["predictions"]
    assert {(p["transport"], p["tp"]) for p in predictions} == {("rdma", 1), ("rdma", 2), ("rdma", 4)}
    assert {p["source"] for p in document["decode"]["collectives"]} == {"recorded"}
