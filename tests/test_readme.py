"""README.md and the manual in docs/ in the order a newcomer reads them: the real cluster path on
the README's first screen, one checks table with every area, and the demo's decode table saying
what does not fit."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
DOCS = ROOT / "docs"


def _page(name: str) -> str:
    return (DOCS / name).read_text(encoding="utf-8")


def test_the_checks_page_has_one_table_with_every_area() -> None:
    lines = _page("checks.md").splitlines()
    first = lines.index("| area | checks |")
    table = []
    for line in lines[first:]:
        if not line.startswith("|"):
            break
        table.append(line)
    areas = [row.split("|")[1].strip() for row in table[2:]]
    assert areas[-1] == "site" and "links" in areas and "USB4" in areas
    assert not any(line.startswith("| site ") for line in lines[first + len(table):])


def test_readme_first_screen_shows_the_real_cluster_path() -> None:
    first = README[:README.index("## Install on the head node")]
    commands = [line.split()[1] for line in first.splitlines() if line.startswith("strixwizard ")]
    path = ["init", "doctor", "fix", "deploy", "test"]
    # the cluster path, then llama.cpp over RDMA on two boxes (the build is a deploy --build)
    assert commands == [*path, "init", "deploy", *path[1:]]
    assert "init → doctor → fix → deploy → test" in first


def test_the_llama_cpp_quick_start_is_on_the_first_screen_and_links_the_guide() -> None:
    first = README[:README.index("## Install on the head node")]
    quick = first[first.index("### llama.cpp over RDMA on two boxes"):]
    lines = [line for line in quick.splitlines() if line.startswith(("ssh-copy-id", "strixwizard"))]
    assert lines[0].startswith("ssh-copy-id root@")
    assert "-DGGML_RPC=ON -DGGML_RPC_RDMA=ON" in quick and "stack: llama-rpc" in quick
    assert "deploy --site site.yaml --stack llama-rpc" in quick
    assert "deploy --site site.yaml --stack llama-rpc --build llama.cpp --apply" in quick
    assert "(docs/llama-cpp.md)" in quick


def test_the_demo_decode_table_says_what_does_not_fit() -> None:
    test_page = _page("test.md")
    start = test_page.index("**Demo** (RCCL over E810 RoCE recorded")
    table = test_page[start:test_page.index("**Namespace lab**", start)]
    qwen = next(line for line in table.splitlines() if line.startswith("| Qwen3-235B-A22B"))
    assert "4.76, no" in qwen and "nothing fits two nodes" in qwen  # 438 GiB on the demo's 2 nodes


def test_the_readme_is_a_front_door_of_at_most_200_lines() -> None:
    assert len(README.splitlines()) <= 200, "the manual is docs/: move the detail there"


def test_ci_runs_the_readmes_test_command() -> None:
    command = "bash scripts/test.sh"
    assert any(line.split("#")[0].strip() == command for line in README.splitlines())
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert any(line.strip() == command for line in ci.splitlines())


def test_every_link_of_the_readme_and_contributing_finds_its_file() -> None:
    for name in ("README.md", "CONTRIBUTING.md"):
        text = (ROOT / name).read_text(encoding="utf-8")
        targets = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text)
        local = [target for target in targets if "://" not in target]
        assert local, name
        missing = [target for target in local if not (ROOT / target).exists()]
        assert not missing, f"{name} links to what is not there: {missing}"


def test_the_readmes_install_blocks_are_marked_for_the_install_test() -> None:
    """tests/test_install.py (the `pythons` tier) runs these lines as they are; `pipx run build`
    fails under pipx's uv backend ("An executable named `build` is not provided by package
    `build`"), so the build is named by its own command."""
    from tests.support.readme import install_commands

    pipx = install_commands("pipx")
    assert pipx[0] == "pipx run --spec build pyproject-build"
    assert pipx[1].startswith("pipx install --python /usr/bin/python3 --system-site-packages ")
    uv = install_commands("uv")
    assert uv[0] == "uv build" and uv[1].startswith("uv tool install ")
    assert pipx[-1] == uv[-1] == "strixwizard --version"
    assert "pipx run build" not in README
