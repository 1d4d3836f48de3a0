"""`strixwizard test decode` on the namespace lab: TCP measured for real between two lab nodes
over the fabric veth, RCCL absent (said so), the decode document schema-validated."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema

from tests.support.cli import run_cli
from tests.support.lab import Lab, lab_fixture

SCHEMA = json.loads((Path(__file__).parent.parent / "strixwizard" / "schema" / "decode.schema.json")
                    .read_text())
decodelab2 = lab_fixture(2, name="decodelab2")


def test_decode_over_tcp_between_two_lab_nodes(decodelab2: Lab, tmp_path: Path) -> None:
    site = decodelab2.write_site_yaml(tmp_path / "lab.yaml")
    result = run_cli("test", "decode", "--site", str(site), "--pair", "node0,node1", "--json",
                     "--model", "Llama-3.1-8B", "--batch", "4", timeout=120)
    document = result.json()
    jsonschema.validate(document, SCHEMA)
    # RDMA (here: RCCL) was asked for and never measured: no verdict, the TCP figures still given
    assert (result.rc, document["status"]) == (2, "error"), document
    by_tool = {r["tool"]: r for r in document["results"]}
    tcp = by_tool["strixwizard tcp ping-pong"]
    assert tcp["status"] == "pass" and tcp["source"] == "measured"
    assert decodelab2.hosts[1].fabric_addr in tcp["path"] and "fab0" in tcp["path"]
    rccl = by_tool["all_reduce_perf"]
    assert rccl["status"] == "skip" and "RCCL absent" in rccl["summary"]
    decode = document["decode"]
    points = [p for p in decode["collectives"] if p["transport"] == "tcp"]
    # batch 1..4 x hidden 4096 x 2 B: 8..32 KiB messages, timed from 4 KiB to 64 KiB
    assert [p["size_bytes"] for p in points] == [4096, 8192, 16384, 32768, 65536]
    assert all(p["source"] == "estimated" and p["allreduce_us"] > 0 for p in points)
    tps = {(p["tp"], p["batch"]) for p in decode["predictions"] if p["transport"] == "tcp"}
    assert tps == {(tp, b) for tp in (1, 2) for b in (1, 2, 4)}  # a 2-node site runs no TP=4
    assert "TP=4 left out: the site has 2 node(s), one rank per node" in decode["notes"]
    assert all(p["tokens_per_s"] > 0 for p in decode["predictions"])


def test_decode_over_tcp_alone_is_judged(decodelab2: Lab, tmp_path: Path) -> None:
    site = decodelab2.write_site_yaml(tmp_path / "lab.yaml")
    result = run_cli("test", "decode", "--site", str(site), "--pair", "node0,node1", "--json",
                     "--model", "Llama-3.1-8B", "--transport", "tcp", timeout=120)
    document = result.json()
    jsonschema.validate(document, SCHEMA)
    assert (result.rc, document["status"]) == (0, "pass"), document
    assert {r["transport"] for r in document["results"] if r["kind"] == "decode"} == {"tcp"}
    assert {p["transport"] for p in document["decode"]["predictions"]} == {"tcp"}
