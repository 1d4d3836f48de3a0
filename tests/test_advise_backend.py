"""`advise --backend vulkan|rocm`: the backend is an input, the advice names the faster one
for the model (Vulkan for quantized files, ROCm for BF16 MoE, as kyuz0's same-file pairs
show), and CPU, which no published row covers, is refused."""

from __future__ import annotations

import json
from typing import Any

import pytest

from strixwizard.cli.main import main


def _advise(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, Any]:
    assert main(["advise", *argv, "--nodes", "1", "--json"]) == 0
    body: dict[str, Any] = json.loads(capsys.readouterr().out)
    return body


def _single(body: dict[str, Any]) -> float:
    return float(next(p["tok_s"] for p in body["predictions"] if p["split"] == "single"))


def test_a_quantized_file_is_faster_on_vulkan(capsys: pytest.CaptureFixture[str]) -> None:
    vulkan = _advise(capsys, "--model", "gpt-oss-120b", "--quant", "MXFP4")
    rocm = _advise(capsys, "--model", "gpt-oss-120b", "--quant", "MXFP4", "--backend", "rocm")
    assert vulkan["backend"] == "vulkan" and rocm["backend"] == "rocm"
    assert _single(vulkan) > _single(rocm)
    assert _single(vulkan) / _single(rocm) == pytest.approx(1.075, rel=0.01)
    assert rocm["recommendation"]["backend"] == "vulkan"
    assert "faster for a quantized model by 7%" in rocm["recommendation"]["backend_reason"]


def test_a_bf16_moe_is_faster_on_rocm(capsys: pytest.CaptureFixture[str]) -> None:
    body = _advise(capsys, "--model", "Qwen3-30B-A3B", "--quant", "BF16", "--backend", "rocm")
    assert body["recommendation"]["backend"] == "rocm"
    assert "BF16 MoE" in body["recommendation"]["backend_reason"]
    assert any("rocm" in a for p in body["predictions"] for a in p["assumptions"])


def test_the_text_names_the_faster_backend(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["advise", "--model", "Llama-3.1-70B", "--quant", "Q4_K_M", "--nodes", "1"]) == 0
    assert "Which backend? vulkan is faster" in capsys.readouterr().out


@pytest.mark.parametrize(("backend", "says"), [("cpu", "not modelled"), ("metal", "give vulkan or rocm")])
def test_an_unmodelled_backend_exits_2(backend: str, says: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["advise", "--model", "Llama-3.1-8B", "--backend", backend]) == 2
    assert says in capsys.readouterr().err


def test_vllm_mtp_acceptance_is_an_input(capsys: pytest.CaptureFixture[str]) -> None:
    def vllm(*argv: str) -> float:
        body = _advise(capsys, "--model", "gpt-oss-120b", *argv)
        return float(next(p["tok_s"] for p in body["predictions"] if p["split"] == "vllm-tp"))

    off = vllm()
    assert vllm("--mtp", "3", "--mtp-acceptance", "1") / off == pytest.approx(4 / 1.19, rel=0.01)
    assert vllm("--mtp", "3", "--mtp-acceptance", "0") < off  # drafts that are never accepted cost
    assert main(["advise", "--model", "gpt-oss-120b", "--mtp", "3"]) == 2
    assert "--mtp-acceptance" in capsys.readouterr().err


def test_an_f16_file_is_not_taken_for_bf16() -> None:
    """Vulkan on gfx1151 has F16 but no BF16 arithmetic: the F16 gpt-oss file (MXFP4 experts,
    F16 the rest) ran at the same speed on HIP and Vulkan (lhl's llm-bench), so it is no BF16 MoE."""
    from strixwizard.decode.backends import QUANTIZED, kind
    from strixwizard.decode.catalog import from_catalog

    shape = from_catalog("gpt-oss-120b", "MXFP4_F16")
    assert shape.precision.startswith("F16") and kind(shape) == QUANTIZED
    assert kind(from_catalog("Qwen3-30B-A3B", "BF16")) != QUANTIZED
