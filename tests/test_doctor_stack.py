"""`doctor --stack` and the site file's `stack:`: the checks a stack depends on, declared by
each check, and the ones left out said by name."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from checks import ALL
from strixwizard.deploy.plan import STACKS as DEPLOY_STACKS
from strixwizard.site import LLAMA_RPC, RAY, STACKS, SiteError, parse_site
from tests.support.cli import invoke, validate_report
from tests.support.demo_site import demo_site_with

LLAMA_CHECKS = {"llama.rpc_rdma", "llama.rpc_cache", "llama.gpu_backend", "llama.same_build"}


def judged(document: dict[str, Any]) -> set[str]:
    return {check["id"] for check in document["checks"]}


def test_the_deploy_stacks_are_the_stacks_a_site_names() -> None:
    assert list(DEPLOY_STACKS) == list(STACKS)


def test_llama_rpc_leaves_out_the_rccl_check_and_says_so(report_schema: dict[str, Any]) -> None:
    result = invoke("doctor", "--demo", "--stack", "llama-rpc", "--json")
    document = result.json()
    validate_report(document, report_schema)
    assert document["stack"] == {"name": "llama-rpc", "label": "llama.cpp RPC",
                                 "left_out": ["node.rccl_gfx1151"]}
    assert "node.rccl_gfx1151" not in judged(document)
    assert judged(document) >= LLAMA_CHECKS
    text = invoke("doctor", "--demo", "--stack", "llama-rpc").stdout
    assert text.splitlines()[0] == ("stack llama-rpc: left out node.rccl_gfx1151 (not used by "
                                    "llama.cpp RPC; without a stack every check runs)")


def test_ray_leaves_out_the_llama_checks() -> None:
    document = invoke("doctor", "--demo", "--stack", "ray", "--json").json()
    assert set(document["stack"]["left_out"]) == LLAMA_CHECKS
    assert "node.rccl_gfx1151" in judged(document)
    assert not LLAMA_CHECKS & judged(document)


def test_without_a_stack_every_check_runs_and_the_report_has_no_stack() -> None:
    document = invoke("doctor", "--demo", "--json").json()
    assert "stack" not in document
    assert {"node.rccl_gfx1151", *LLAMA_CHECKS} <= judged(document)


def test_the_site_files_stack_is_doctors_and_the_option_overrides_it(tmp_path: Path) -> None:
    site = demo_site_with(tmp_path, "stack: llama-rpc\n")
    document = invoke("doctor", "--site", str(site), "--json").json()
    assert document["stack"]["name"] == "llama-rpc"
    assert "node.rccl_gfx1151" not in judged(document)
    document = invoke("doctor", "--site", str(site), "--stack", "ray", "--json").json()
    assert document["stack"]["name"] == "ray"
    assert not LLAMA_CHECKS & judged(document)


def test_an_unknown_stack_is_refused_with_the_names_known(tmp_path: Path) -> None:
    site = demo_site_with(tmp_path, "stack: vllm\n")
    result = invoke("doctor", "--site", str(site))
    assert result.rc == 2
    assert "stack 'vllm' is not one of ray, llama-rpc, ds4" in result.stderr
    with pytest.raises(SiteError, match=r"x.yaml:2: stack '1' is not one of"):
        parse_site("site: x\nstack: 1\nnodes: [{name: a, host: local}]\n", "x.yaml")
    assert invoke("doctor", "--demo", "--stack", "vllm").rc == 2


def test_a_site_file_without_stack_reads_as_before() -> None:
    site = parse_site("site: x\nnodes: [{name: a, host: local}]\n", "x.yaml")
    assert site.stack == ""
    assert parse_site("site: x\nstack: llama-rpc\nnodes: [{name: a, host: local}]\n",
                      "x.yaml").stack == LLAMA_RPC


def test_each_check_declares_the_stacks_it_concerns() -> None:
    declared = {check.id: check.stacks for check in ALL if check.stacks}
    assert declared == {"node.rccl_gfx1151": {RAY}, **{name: {LLAMA_RPC} for name in LLAMA_CHECKS}}


@pytest.mark.parametrize("check", [c for c in ALL if c.concerns(LLAMA_RPC)], ids=lambda c: c.id)
def test_what_a_llama_rpc_user_reads_of_rccl_says_whether_llama_cpp_cares(check: Any) -> None:
    """The title and the one-line why doctor shows: RCCL named means llama.cpp named too."""
    for text in (check.title, check.why):
        if "RCCL" in text:
            assert "llama.cpp" in text, f"{check.id}: {text}"
