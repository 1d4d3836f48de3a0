"""The validation data of the decode advisor (tests/data/decode/published_decode.json) cannot
drift: every row names its source and its role, fitted and checked rows stay apart (each
constant of strixwizard/decode/advise.py equals its fit over its own "fitted" rows, and no
checked row is used by a fit), every row that misses its aim says why, the published A/B pairs
get the same answer from the model, and the README's table is what
`benchmarks/advise_validation.py` generates from the file."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

from strixwizard.decode.advise import COSTS, named_links

ROOT = Path(__file__).resolve().parent.parent


def _validation() -> ModuleType:
    path = ROOT / "benchmarks" / "advise_validation.py"
    spec = importlib.util.spec_from_file_location("advise_validation", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["advise_validation"] = module
    spec.loader.exec_module(module)
    return module


def test_every_row_is_sourced_and_at_least_30_are_predicted() -> None:
    rows, _pairs = _validation().load()
    assert len({row.id for row in rows}) == len(rows)
    for row in rows:
        assert row.data["source"].startswith("https://"), row.id
        assert row.data["assumptions"], row.id
        assert row.data["split"] in ("single", "layer", "tensor", "vllm-tp"), row.id
        assert row.data["role"] in ("fitted", "checked"), row.id
        assert (row.data["role"] == "fitted") == bool(row.data.get("fits")), row.id
    assert sum(1 for row in rows if row.verifiable) >= 30
    assert sum(1 for row in rows if row.verifiable and not row.fitted) >= 25


def test_each_constant_is_its_fit_over_its_own_rows() -> None:
    module = _validation()
    rows, _pairs = module.load()
    fitted = module.fits(rows)
    assert set(fitted) == {"dense_token_ms", "moe_layer_ms", "vllm_efficiency", "hop_tcp_ms", "hop_rdma_ms",
                           "hop_usb4_tcp_ms", "tensor_dispatch_ms", "busy_poll_steal", "gdn_layer_ms",
                           "gdn_graph_layer_ms"}
    for name, (value, ids) in fitted.items():
        assert ids, name
        assert getattr(COSTS, name) == pytest.approx(value, rel=0.01, abs=0.006), name


def test_rows_that_miss_say_why_and_fitted_rows_hold() -> None:
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
        if row.fitted:
            assert abs(ratio - 1) <= row.aim, row.id


def test_the_published_ab_pairs_get_the_same_answer() -> None:
    module = _validation()
    rows, pairs = module.load()
    by_id = {row.id: row for row in rows}
    links = {link.name: link for link in named_links()}
    assert len(pairs) >= 8
    for pair in pairs:
        a, b = by_id[pair["a"]], by_id[pair["b"]]
        published = float(a.data["tok_s"]) > float(b.data["tok_s"])
        predicted = module.pair_ratio(a, b, links, by_id) > 1
        assert published == predicted, pair


def test_the_readme_table_is_generated_from_the_data_file() -> None:
    module = _validation()
    assert module.readme_block(module.document_text()) == module.markdown(), \
        "README out of date: run python benchmarks/advise_validation.py --readme"


def test_the_backend_factors_are_their_fits_and_every_clear_pair_has_the_right_sign() -> None:
    from strixwizard.decode.backends import ROCM_TIME_FACTOR

    module = _validation()
    pairs = module.backend_pairs()
    assert len(pairs) >= 9
    assert sum(1 for p in pairs if p["role"] == "checked") >= 5
    for kind, (value, ids) in module.backend_fits(pairs).items():
        assert ids, kind
        assert ROCM_TIME_FACTOR[kind] == pytest.approx(value, abs=0.0006), kind
    for pair in pairs:
        published = float(pair["rocm_tok_s"]) / float(pair["vulkan_tok_s"])
        if abs(published - 1) < module.TIE:
            continue
        assert (published > 1) == (ROCM_TIME_FACTOR[pair["kind"]] < 1), pair["id"]


def test_the_mtp_draft_cost_is_its_fit_and_the_checked_rows_hold() -> None:
    module = _validation()
    rows = module.mtp_rows()
    value, ids = module.mtp_fit(rows)
    assert len(ids) == 2 and COSTS.mtp_draft_cost == pytest.approx(value, abs=0.006)
    checks = module.mtp_checks(rows)
    assert len(checks) >= 3
    for row, predicted in checks:
        assert abs(predicted / float(row["tok_s"]) - 1) <= 0.25, row["id"]


def test_the_vllm_link_pairs_hold_at_every_layer_count_they_allow() -> None:
    """Two vLLM TP runs of one model over two links: the ms per token between them is the links'
    all-reduces per layer, within ±25 % and with the right sign at every layer count allowed."""
    module = _validation()
    rows, _pairs = module.load()
    pairs = module.vllm_link_pairs()
    assert pairs
    for pair in pairs:
        published, gaps = module.vllm_link_check(pair, rows)
        assert len(gaps) == pair["layers"][1] - pair["layers"][0] + 1
        for layers, gap in gaps:
            assert (gap > 0) == (published > 0), (pair["id"], layers)
            assert abs(gap / published - 1) <= 0.25, (pair["id"], layers, gap, published)
