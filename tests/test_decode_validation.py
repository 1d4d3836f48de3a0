"""The validation data of the decode advisor (benchmarks/data/published_decode.json) cannot
drift: every row names its source, at least 20 rows name a model the advisor predicts, every
row that misses its aim says why, the published A/B pairs get the same answer from the model,
and the README's table is what `benchmarks/decode_validation.py` generates from the file."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

from strixwizard.decode.advise import named_links

ROOT = Path(__file__).resolve().parent.parent


def _validation() -> ModuleType:
    path = ROOT / "benchmarks" / "decode_validation.py"
    spec = importlib.util.spec_from_file_location("decode_validation", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["decode_validation"] = module
    spec.loader.exec_module(module)
    return module


def test_every_row_is_sourced_and_at_least_20_are_predicted() -> None:
    rows, _pairs = _validation().load()
    assert len({row.id for row in rows}) == len(rows)
    for row in rows:
        assert row.data["source"].startswith("https://"), row.id
        assert row.data["assumptions"], row.id
        assert row.data["split"] in ("single", "layer", "tensor", "vllm-tp"), row.id
    assert sum(1 for row in rows if row.verifiable) >= 20


def test_rows_that_miss_say_why_and_unverifiable_ones_are_not_fits() -> None:
    module = _validation()
    rows, _pairs = module.load()
    links = {link.name: link for link in named_links()}
    for row in rows:
        if not row.verifiable:
            assert "unverifiable" in row.data["assumptions"], row.id
            continue
        ratio = row.predict(links, {r.id: r for r in rows}).tok_s / float(row.data["tok_s"])
        if abs(ratio - 1) > row.aim:
            assert row.data.get("miss_reason"), f"{row.id} misses ({ratio:.2f}) without a reason"
        if row.data["role"] == "calibration":
            assert abs(ratio - 1) <= row.aim, row.id


def test_the_published_ab_pairs_get_the_same_answer() -> None:
    module = _validation()
    rows, pairs = module.load()
    by_id = {row.id: row for row in rows}
    links = {link.name: link for link in named_links()}
    assert len(pairs) >= 6
    for pair in pairs:
        a, b = by_id[pair["a"]], by_id[pair["b"]]
        published = float(a.data["tok_s"]) > float(b.data["tok_s"])
        predicted = a.predict(links, by_id).tok_s > b.predict(links, by_id).tok_s
        assert published == predicted, pair


def test_the_readme_table_is_generated_from_the_data_file() -> None:
    module = _validation()
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert module.readme_block(readme) == module.markdown(), \
        "README out of date: run python benchmarks/decode_validation.py --readme"
