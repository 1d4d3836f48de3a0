"""site.yaml: what is accepted, and that every mistake names its file and line; site and node
names must be file names; a hostile site file (the corpus under tests/data/hostile/, and ones
too deep, too large, not UTF-8, a device or a FIFO) is refused in one line, in bounded memory,
reading nothing but the file itself and writing nothing at all."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from strixwizard.site import MAX_FILE_BYTES, Fabric, SiteError, Thresholds, load_site, parse_site
from tests.support.cli import invoke
from tests.support.refusals import SITES, doctor_capped, expected_message, refused_in_one_line

GOOD = """\
site: lab
nodes:
  - name: node0
    host: 10.99.1.10
    user: root
    key: ~/.ssh/lab
    fabric_address: 10.99.2.1
  - name: head
    host: local
fabric:
  mtu: 4200
  pfc_priority: 5
thresholds:
  rdma_latency_us: 6
"""


def test_a_good_site_file_is_read(tmp_path: Path) -> None:
    path = tmp_path / "site.yaml"
    path.write_text(GOOD)
    site = load_site(path)
    assert site.name == "lab"
    assert [n.name for n in site.nodes] == ["node0", "head"]
    assert site.nodes[0].host == "10.99.1.10" and site.nodes[0].port == 22
    assert site.nodes[1].is_local
    assert site.fabric == Fabric(mtu=4200, pfc_priority=5)
    assert site.thresholds == Thresholds(rdma_latency_us=6.0)
    assert site.resolve("snaps/a") == tmp_path / "snaps/a"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("site: x\nnodes:\n  - name: a\n    host: [1, 2\n", ":5: not valid YAML: expected ',' or ']'"),
        ("site: x\nnodes:\n  - name: a\n    hots: h\n", ":4: nodes[0]: unknown key 'hots'"),
        ("site: x\nnodes:\n  - name: a\n    host: h\n    port: twenty\n",
         ":5: nodes[0].port must be a whole number, not 'twenty'"),
        ("site: x\n", ":1: no `nodes:` list"),
        ("site: x\nnodes: []\n", ":2: `nodes:` must be a non-empty list"),
        ("site: x\nnodes:\n  - host: h\n", ":3: nodes[0] is missing 'name'"),
        ("site: x\nnodes:\n  - name: a\n", ":3: node 'a' needs `host:`"),
        ("site: x\nnodes:\n  - name: a\n    host: h\n  - name: a\n    host: g\n",
         ":5: node name 'a' is already used on line 3"),
        ("site: x\nnodes:\n  - name: a\n    host: h\nfabric:\n  mtu: big\n",
         ":6: fabric.mtu must be a whole number"),
        ("site: x\nnodes:\n  - name: a\n    host: h\nextra: 1\n", ":5: unknown key 'extra'"),
        ("- just\n- a list\n", ":1: the site file must be a mapping"),
        ("", "the file is empty"),
        ("site: x\nnodes:\n  - name: a\n    host: h\n    port: 99999999\n",
         ":5: nodes[0].port must be between 1 and 65535, not 99999999"),
        ("site: x\nnodes:\n  - name: a\n    host: h\nfabric:\n  mtu: 0\n",
         ":6: fabric.mtu must be between 68 and 9216, not 0"),
        ("site: x\nnodes:\n  - name: a\n    host: h\nfabric:\n  pfc_priority: 12\n",
         ":6: fabric.pfc_priority must be between 0 and 7, not 12"),
        ("site: x\nnodes:\n  - name: a\n    host: h\nthresholds:\n  rdma_latency_us: .nan\n",
         ":6: thresholds.rdma_latency_us must be a finite number above 0, not nan"),
        ("site: x\nnodes:\n  - name: a\n    host: h\nssh:\n  parallel: 257\n",
         ":6: ssh.parallel must be between 1 and 256, not 257"),
        ("site: !custom x\nnodes:\n  - name: a\n    host: h\n", ":1: YAML tag '!custom' is not allowed"),
    ],
    ids=["yaml", "typo", "type", "no-nodes", "empty-nodes", "no-name", "no-host", "dup",
         "fabric-type", "extra-key", "not-mapping", "empty", "port-range", "mtu-range",
         "pfc-range", "nan", "parallel-range", "tag"],
)
def test_mistakes_name_the_file_and_line(text: str, message: str) -> None:
    with pytest.raises(SiteError) as caught:
        parse_site(text, "site.yaml")
    assert str(caught.value).startswith("site.yaml")
    assert message in str(caught.value)


def test_a_missing_site_file_says_how_to_create_one(tmp_path: Path) -> None:
    with pytest.raises(SiteError, match=r"no such site file .*strixwizard init"):
        load_site(tmp_path / "absent.yaml")


def test_doctor_on_a_bad_site_file_exits_2_with_file_and_line(cli, tmp_path: Path) -> None:
    path = tmp_path / "site.yaml"
    path.write_text("site: x\nnodes:\n  - name: a\n    hots: h\n")
    result = cli("doctor", "--site", str(path))
    assert result.rc == 2
    assert f"{path}:4: nodes[0]: unknown key 'hots'" in result.stderr
    assert "Traceback" not in result.stderr
    as_json = cli("doctor", "--site", str(path), "--json")
    assert as_json.rc == 2
    assert as_json.json()["status"] == "error"
    assert "unknown key 'hots'" in as_json.json()["error"]


def test_ssh_parallel_is_a_field_the_collection_uses() -> None:
    from strixwizard.services.nodes import ssh_parallel

    site = parse_site("site: x\nnodes:\n  - name: a\n    host: h\nssh:\n  parallel: 4\n", "s.yaml")
    assert site.ssh.parallel == 4 and ssh_parallel(site) == 4
    default = parse_site("site: x\nnodes:\n  - name: a\n    host: h\n", "s.yaml")
    assert default.ssh.parallel is None and ssh_parallel(default) >= 1


def test_values_are_checked_however_a_record_is_built() -> None:
    from strixwizard.site import FieldError, NodeSpec, SshSettings

    for build in (lambda: NodeSpec("a", "h", port=70000), lambda: Fabric(mtu=9217),
                  lambda: Thresholds(gtt_min_fraction=float("inf")),
                  lambda: SshSettings(deadline=-1.0), lambda: Fabric(trust="dscp;x")):
        with pytest.raises(FieldError):
            build()


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


def test_cli_exits_2_with_file_and_line(tmp_path: Path) -> None:
    site = tmp_path / "lab.yaml"
    site.write_text("site: lab\nnodes:\n  - name: ../x\n    host: local\n")
    done = invoke("doctor", "--site", str(site))
    assert done.rc == 2 and f"{site}:3: node name '../x'" in done.stderr


@pytest.mark.parametrize("path", SITES, ids=lambda p: p.stem)
def test_hostile_site_file_is_refused_in_one_line(path: Path, tmp_path: Path) -> None:
    message = expected_message(path)
    with pytest.raises(SiteError, match=None) as caught:
        load_site(path)
    assert message in str(caught.value) and str(caught.value).startswith(f"{path}:")
    refused_in_one_line("--site", path, message, tmp_path)


def _deep_yaml(path: Path) -> Path:
    path.write_text("site: " + "[" * 20000 + "]" * 20000 + "\n")
    return path


def _deep_groups(path: Path) -> Path:
    lines = ["all:"]
    for depth in range(40):
        lines.append("  " * (2 * depth + 1) + "children:")
        lines.append("  " * (2 * depth + 2) + f"g{depth}:")
    path.write_text("\n".join(lines) + "\n")
    return path


def _too_large(path: Path) -> Path:
    with path.open("wb") as handle:
        handle.truncate(MAX_FILE_BYTES + 10)  # sparse: no disk used
    return path


def _not_utf8(path: Path) -> Path:
    path.write_bytes(b"site: \xff\xfe\x00\x00\n")
    return path


GENERATED = {
    "site-nested-20000-deep": ("--site", _deep_yaml, "nested too deeply"),
    "inventory-groups-40-deep": ("--inventory", _deep_groups, "groups nest deeper than 32 levels"),
    "site-larger-than-the-cap": ("--site", _too_large, "is larger than 4 MiB"),
    "inventory-larger-than-the-cap": ("--inventory", _too_large, "is larger than 4 MiB"),
    "site-not-utf8": ("--site", _not_utf8, "not UTF-8"),
}


@pytest.mark.parametrize("case", sorted(GENERATED))
def test_generated_hostile_input_is_refused_in_one_line(case: str, tmp_path: Path) -> None:
    option, make, message = GENERATED[case]
    inputs = tmp_path / "in"
    inputs.mkdir()
    path = make(inputs / f"{case}.yaml")
    work = tmp_path / "work"
    work.mkdir()
    refused_in_one_line(option, path, message, work)


@pytest.mark.parametrize("option", ["--site", "--inventory"])
def test_a_device_is_refused_without_reading_it(option: str, tmp_path: Path) -> None:
    text = doctor_capped(option, "/dev/zero", cwd=tmp_path)
    assert text.rc == 2 and "Traceback" not in text.stderr
    assert text.stderr.strip() == (
        f"strixwizard: error: /dev/zero: the {'site file' if option == '--site' else 'inventory'} "
        "is not a regular file"
    )


def test_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "in" / "site.yaml"
    fifo.parent.mkdir()
    os.mkfifo(fifo)
    work = tmp_path / "work"
    work.mkdir()
    text = doctor_capped("--site", str(fifo), cwd=work)
    assert text.rc == 2 and "is not a regular file" in text.stderr
