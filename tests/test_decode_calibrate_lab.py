"""`strixwizard test decode --calibrate` on the namespace lab with the REAL llama-server (CPU
build of scripts/build_llama.sh) and a tiny GGUF: node0 times the model through its node
session, and the advice uses that measured speed as its compute term. No timing is asserted."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import jsonschema
import pytest

from tests.support.cli import run_cli
from tests.support.lab import Lab, lab_fixture
from tests.support.llama_parts import build, write_tiny_model

SCHEMA = json.loads((Path(__file__).parent.parent / "strixwizard" / "schema" / "decode.schema.json")
                    .read_text())
calibratelab2 = lab_fixture(2, name="calibratelab2")


def test_calibration_on_a_lab_node_feeds_the_advice(calibratelab2: Lab, tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"  # out of /root: a lab host's SSH sessions see their own /root
    bin_dir.mkdir()
    shutil.copy2(build() / "llama-server", bin_dir / "llama-server")
    model = write_tiny_model(tmp_path / "tiny.gguf", layers=4)
    site = calibratelab2.write_site_yaml(tmp_path / "lab.yaml")
    result = run_cli("test", "decode", "--site", str(site), "--pair", "node0,node1", "--transport", "tcp",
                     "--calibrate", "--model", str(model), "--llama-bin-dir", str(bin_dir), "--json",
                     timeout=300)
    document = result.json()
    jsonschema.validate(document, SCHEMA)
    assert (result.rc, document["status"]) == (0, "pass"), document
    calibration = next(r for r in document["results"] if r["kind"] == "calibration")
    assert calibration["status"] == "pass" and calibration["source"] == "measured", calibration
    assert calibration["figure"] > 0 and calibration["unit"] == "ms/token"
    assert calibration["detail"]["node"] == "node0"
    decode = document["decode"]
    assert decode["calibration"]["tok_s"] == calibration["detail"]["tok_s"]
    single = next(p for p in decode["advice"]["predictions"] if p["split"] == "single")
    assert single["tok_s"] == pytest.approx(calibration["detail"]["tok_s"], rel=1e-3)
    assert any("measured single-node" in a for a in single["assumptions"])


def test_a_node_without_llama_server_is_a_skip_that_says_so(calibratelab2: Lab, tmp_path: Path) -> None:
    model = write_tiny_model(tmp_path / "tiny.gguf", layers=2)
    site = calibratelab2.write_site_yaml(tmp_path / "lab.yaml")
    result = run_cli("test", "decode", "--site", str(site), "--pair", "node0,node1", "--transport", "tcp",
                     "--calibrate", "--model", str(model), "--llama-bin-dir", str(tmp_path / "none"),
                     "--json", timeout=300)
    document = result.json()
    calibration = next(r for r in document["results"] if r["kind"] == "calibration")
    assert calibration["status"] == "skip" and "is not installed" in calibration["summary"], calibration
    assert document["decode"]["calibration"] is None
