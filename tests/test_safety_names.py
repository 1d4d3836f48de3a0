"""Site and node names become file names: they are checked where they enter (site file,
inventory) with file and line, and the head's journal paths stay inside their directory
whatever a name holds."""

from __future__ import annotations

from pathlib import Path

import pytest

from strixwizard.fixing.journal import JournalStore
from strixwizard.inventory import parse_inventory
from strixwizard.services.capture import capture_site
from strixwizard.site import NodeSpec, Site, SiteError, parse_site
from tests.support.cli import run_cli

BAD_NAMES = ["../../x", "a/b", "..", ".", "a b", "x" * 65, "node\nid", "$(id)", "ü"]


@pytest.mark.parametrize("name", BAD_NAMES)
def test_site_file_refuses_a_node_name_that_is_not_a_file_name(name: str) -> None:
    text = f"site: lab\nnodes:\n  - name: ok\n    host: local\n  - name: {name!r}\n    host: h\n"
    text = text.replace(repr(name), '"' + name.replace("\n", "\\n") + '"')
    with pytest.raises(SiteError, match=r"^lab\.yaml:5: node name .* (holds|cannot be|is \d+)"):
        parse_site(text, "lab.yaml")


@pytest.mark.parametrize("name", ["lab\nid>PWNED", "a/b", "..", "x" * 65])
def test_site_file_refuses_a_site_name_that_is_not_a_file_name(name: str) -> None:
    escaped = name.replace("\n", "\\n")
    with pytest.raises(SiteError, match=r"^s\.yaml:1: site name "):
        parse_site(f'site: "{escaped}"\nnodes:\n  - name: a\n    host: local\n', "s.yaml")


def test_site_name_from_the_file_name_is_checked_too() -> None:
    with pytest.raises(SiteError, match=r"taken from the file name: set `site: NAME`"):
        parse_site("nodes:\n  - name: a\n    host: local\n", "my site.yaml")


def test_inventory_refuses_a_host_name_that_is_not_a_file_name() -> None:
    text = "all:\n  hosts:\n    good-1:\n    ../../etc:\n      ansible_host: 10.0.0.2\n"
    with pytest.raises(SiteError, match=r"^inv\.yml:4: host name '\.\./\.\./etc' holds '/'"):
        parse_inventory(text, "inv.yml")


def test_cli_exits_2_with_file_and_line(tmp_path: Path) -> None:
    site = tmp_path / "lab.yaml"
    site.write_text("site: lab\nnodes:\n  - name: ../x\n    host: local\n")
    done = run_cli("doctor", "--site", str(site))
    assert done.rc == 2 and f"{site}:3: node name '../x'" in done.stderr


@pytest.mark.parametrize("node", ["../../outside", "/abs", "..", "a/../../b"])
def test_head_journal_paths_stay_in_their_run_directory(tmp_path: Path, node: str) -> None:
    store = JournalStore(tmp_path / "journal")
    path = store.path("20260101T000000Z-abcd", node)
    assert path.parent == tmp_path / "journal" / "20260101T000000Z-abcd"
    with pytest.raises(ValueError, match="not a run id"):
        store.path("../x", "n")


def test_capture_never_writes_outside_its_directory(tmp_path: Path) -> None:
    out = tmp_path / "out" / "captures"
    site = Site("lab", nodes=(NodeSpec(name="../../x", host="local"),))
    result = capture_site(site, out, trust_new_hosts=False)
    assert result.written == {} and "would not land in" in result.failed["../../x"]
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["captures", "out"]
