"""`advise` on hostile model files and flags: each once gave a traceback, a loop that never
ended or gigabytes of memory; now each is a clear error with exit status 2, and a file's
value is held to the same range as the matching flag."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from strixwizard.decode.gguf_header import GgufError, TensorInfo
from strixwizard.readback import ReadBackError, loads, nesting_depth
from tests.support.cli import run_cli
from tests.support.hostile.model_files import BASE_CONFIG, CONFIGS, GGUFS


def _refused(result: Any) -> None:
    """Exit 2 with the reason: `--json` gives it as one strict JSON document on stdout."""
    assert result.rc == 2, (result.rc, result.stdout[-500:], result.stderr[-2000:])
    assert "Traceback" not in result.stderr
    document = json.loads(result.stdout, parse_constant=_no_constant)
    assert document["error"].strip(), "no reason given"


def _no_constant(name: str) -> Any:
    raise AssertionError(f"{name} in JSON output")


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_a_hostile_config_json_is_refused_with_the_reason(name: str, tmp_path: Path, cli: Any) -> None:
    path = tmp_path / name / "config.json"
    path.parent.mkdir()
    path.write_text(CONFIGS[name], encoding="utf-8")
    _refused(cli("advise", "--model", str(path), "--json"))


def test_a_config_value_outside_the_flags_range_names_the_key_and_the_range(tmp_path: Path,
                                                                             cli: Any) -> None:
    path = tmp_path / "config.json"
    path.write_text(CONFIGS["huge-hidden"], encoding="utf-8")
    result = cli("advise", "--model", str(path))
    assert "hidden_size" in result.stderr and "64 to 131072" in result.stderr


def test_the_base_config_is_advised(tmp_path: Path, cli: Any) -> None:
    """The hostile configs each change one key of a config that works."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps(BASE_CONFIG), encoding="utf-8")
    assert cli("advise", "--model", str(path), "--json").rc == 0


@pytest.mark.parametrize("name", sorted(GGUFS))
def test_a_hostile_gguf_header_is_refused_with_the_reason(name: str, tmp_path: Path) -> None:
    """In a process of its own: a regression would hang or eat memory; the timeout ends it."""
    path = tmp_path / f"{name}.gguf"
    GGUFS[name](path)
    _refused(run_cli("advise", "--model", str(path), "--json", timeout=120))


def test_a_tensor_of_part_of_a_block_is_refused() -> None:
    with pytest.raises(GgufError, match="whole number of blocks"):
        _ = TensorInfo("blk.0.attn_q.weight", 10, (1,)).n_bytes


@pytest.mark.parametrize("argv", [
    ["--active-fraction", "5e-324"], ["--active-fraction", "nan"], ["--layers", "1001"],
    ["--hidden", "inf"],
])
def test_shape_flags_out_of_range_exit_2(argv: list[str], cli: Any) -> None:
    base = {"--layers": "32", "--hidden": "4096", "--weight-gib": "20", "--active-fraction": "1"}
    for flag, value in zip(argv[::2], argv[1::2], strict=True):
        base[flag] = value
    result = cli("advise", *(part for pair in base.items() for part in pair))
    assert result.rc == 2 and "Traceback" not in result.stderr, result.stderr


def test_a_link_named_5000_times_is_one_link(cli: Any) -> None:
    result = cli("advise", "--model", "Llama-3.1-8B", "--json", *["--link", "usb4-tcp"] * 5000)
    assert result.rc == 0, result.stderr
    assert [link["name"] for link in result.json()["interconnects"]] == ["usb4-tcp"]


def test_json_read_back_bounds_depth_and_refuses_nan() -> None:
    assert nesting_depth('{"a": "[[[[", "b": [1, {"c": []}]}') == 4
    with pytest.raises(ReadBackError, match="nested"):
        loads("[" * 65 + "]" * 65, "x.json")
    with pytest.raises(ReadBackError, match="not valid JSON"):
        loads('{"a": NaN}', "x.json")
    with pytest.raises(ReadBackError, match="not valid JSON"):
        loads('{"a": -Infinity}', "x.json")
