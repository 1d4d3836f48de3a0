"""`advise --llama-bench FILE`: published llama-bench outputs (tests/data/real/llama_bench/,
byte-exact, sources in its SOURCE.md) read right as the compute term: the markdown table with
`fa`/`mmap`/`n_ubatch` columns and `-o json`; depth-only runs, runs over RPC and runs of two
models refused with the reason; failed runs (an RPC server that crashed after the header, a
lost Vulkan device before it) refused with their cause; a row printed twice counted once."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from strixwizard.cli.main import main
from strixwizard.decode.llama_bench import parse, read
from strixwizard.errors import UsageError

REAL = Path(__file__).resolve().parent / "data" / "real" / "llama_bench"


def test_every_sample_is_named_in_the_source_note() -> None:
    note = (REAL / "SOURCE.md").read_text(encoding="utf-8")
    for path in REAL.iterdir():
        if path.name != "SOURCE.md":
            assert f"`{path.name}`" in note, path.name


def test_the_markdown_table_with_fa_and_mmap_columns() -> None:
    run, row = read(REAL / "kyuz0_vulkan_gpt_oss_120b_tg128.log")
    assert (run.layout, run.build, len(run.rows)) == ("markdown", "0253fb21f (9187)", 2)
    assert (row.model, row.backend, row.test, row.tok_s, row.stddev, row.size_gib) == \
        ("gpt-oss 120B MXFP4 MoE", "Vulkan", "tg128", 56.61, 0.08, 59.02)


def test_json_output() -> None:
    run, row = read(REAL / "llama_cpp_readme_json_qwen2_7b.json")
    assert (run.layout, run.build) == ("json", "8cf427ff (5163)")
    assert (row.test, row.tok_s, row.model) == ("tg128", 118.881588, "qwen2 7B Q4_K - Medium")
    assert [r.test for r in run.rows] == ["pp512", "tg128"]


def test_jsonl_output_reads_as_json(tmp_path: Path) -> None:
    """The README documents -o jsonl as the same objects one per line: built here from the
    published JSON sample, not a published file itself."""
    objects = json.loads((REAL / "llama_cpp_readme_json_qwen2_7b.json").read_text(encoding="utf-8"))
    path = tmp_path / "run.jsonl"
    path.write_text("".join(json.dumps(o) + "\n" for o in objects), encoding="utf-8")
    run, row = read(path)
    assert run.layout == "jsonl" and row.tok_s == 118.881588


def test_a_row_printed_twice_counts_once(tmp_path: Path) -> None:
    """Two copies of the published log in one file (as a log appended to twice)."""
    text = (REAL / "kyuz0_vulkan_gpt_oss_120b_tg128.log").read_text(encoding="utf-8")
    path = tmp_path / "twice.log"
    path.write_text(text + text, encoding="utf-8")
    run, row = read(path)
    assert len(run.rows) == 2 and row.tok_s == 56.61


@pytest.mark.parametrize(("name", "says"), [
    ("kyuz0_rpc_server_crashed_header_only.log",
     "the run produced no result: Remote RPC server crashed or returned malformed response"),
    ("kyuz0_vulkan_device_lost_no_table.log",
     "the run produced no result: vk::Queue::submit: ErrorDeviceLost"),
    ("kyuz0_rocm_depth_d32768_n_ubatch.log", "only depth tests (tg32 @ d32768)"),
    ("kyuz0_rocm_rpc_two_nodes.log", "the run went over RPC (backend ROCm,RPC)"),
    ("llama_cpp_readme_two_models_tg_space.md", "2 models in one run"),
])
def test_a_run_that_cannot_be_the_compute_term_is_refused_with_its_cause(name: str, says: str) -> None:
    with pytest.raises(UsageError, match=None) as caught:
        read(REAL / name)
    assert says in str(caught.value)


def test_depth_rows_are_read() -> None:
    run = parse((REAL / "kyuz0_rocm_depth_d32768_n_ubatch.log").read_text(encoding="utf-8"))
    assert [(r.test, r.depth, r.tok_s) for r in run.rows] == [("pp2048 @ d32768", 32768, 589.25),
                                                             ("tg32 @ d32768", 32768, 36.32)]


def test_the_older_tg_space_layout_is_read() -> None:
    run = parse((REAL / "llama_cpp_readme_two_models_tg_space.md").read_text(encoding="utf-8"))
    assert [r.tokens for r in run.rows][:3] == [128, 256, 512] and run.rows[0].tok_s == 132.19


def test_advise_takes_the_run_as_compute(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["advise", "--model", "gpt-oss-120b", "--quant", "MXFP4", "--nodes", "1", "--llama-bench",
                 str(REAL / "kyuz0_vulkan_gpt_oss_120b_tg128.log"), "--json"]) == 0
    body = json.loads(capsys.readouterr().out)
    assert body["measured_tok_s"] == 56.61
    assert next(p for p in body["predictions"] if p["split"] == "single")["tok_s"] == 56.61
    assert any("tg128 56.61 ± 0.08 t/s" in n and "build 0253fb21f (9187)" in n for n in body["notes"])


def test_advise_says_when_the_run_is_another_file(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["advise", "--model", "Llama-3.1-70B", "--quant", "Q4_K_M", "--nodes", "1", "--llama-bench",
                 str(REAL / "kyuz0_vulkan_gpt_oss_120b_tg128.log")]) == 0
    assert "another quantization?" in capsys.readouterr().out


@pytest.mark.parametrize(("extra", "says"), [
    (["--llama-bench", str(REAL / "kyuz0_rpc_server_crashed_header_only.log")], "Remote RPC server crashed"),
    (["--llama-bench", str(REAL / "kyuz0_vulkan_gpt_oss_120b_tg128.log"), "--measured-tok-s", "50"],
     "either --llama-bench or --measured-tok-s"),
    (["--llama-bench", "/no/such/run.log"], "cannot read it"),
])
def test_advise_refuses_with_the_cause(extra: list[str], says: str,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["advise", "--model", "gpt-oss-120b", *extra]) == 2
    assert says in capsys.readouterr().err


def test_a_control_character_in_the_cause_is_not_printed_raw(tmp_path: Path) -> None:
    path = tmp_path / "hostile.log"
    path.write_text("error: failed to load model \x1b[2J'x'\n", encoding="utf-8")
    with pytest.raises(UsageError) as caught:
        read(path)
    assert "\x1b" not in str(caught.value) and "failed to load model" in str(caught.value)


def _json_row(avg_ts: str) -> str:
    """One `-o json` row as llama-bench writes it, its speed as given (text, so NaN can be)."""
    return ('[{"build_commit": "abc", "build_number": 1, "model_type": "gpt-oss 120B MXFP4", '
            '"backends": "Vulkan", "n_prompt": 0, "n_gen": 128, "n_depth": 0, '
            f'"avg_ts": {avg_ts}, "stddev_ts": 0.1}}]')


@pytest.mark.parametrize(("text", "says"), [
    ("[" * 5000 + "]" * 5000, "nested 5000 levels deep"),
    ('{"a": ' * 3000 + "1" + "}" * 3000, "nested 3000 levels deep"),
    (_json_row("NaN"), "no result"),
    (_json_row("Infinity"), "no result"),
    (_json_row("1e400"), "no result"),
    (_json_row('"nan"'), "no result"),
    (_json_row("-5"), "no result"),
])
def test_a_hostile_run_file_is_refused_not_a_traceback(tmp_path: Path, text: str, says: str,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    """`--llama-bench FILE` is read by the read-back rule: nesting thousands deep was a
    RecursionError; NaN, infinity or a negative speed was a decode row."""
    path = tmp_path / "run.json"
    path.write_text(text, encoding="utf-8")
    assert main(["advise", "--model", "gpt-oss-120b", "--llama-bench", str(path), "--json"]) == 2
    out, err = capsys.readouterr()
    assert says in err and "Traceback" not in err
    assert json.loads(out, parse_constant=_no_constant)["status"] == "error"  # strict JSON


def _no_constant(name: str) -> None:
    raise ValueError(f"{name} in a --json document")
