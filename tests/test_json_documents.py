"""Every command's `--json` output over the hostile corpus is JSON a strict parser takes (no
`NaN`, `Infinity` or a number beyond a float), one document, never a traceback: hostile test
histories (history, advise --history), model files (advise --model), site files and
inventories (doctor, fix, deploy, test, history), and snapshot bundles whose nodes say
hostile things (doctor, fix, deploy, test on a site of snapshots)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from strixwizard.errors import UsageError
from tests.support.cli import CliResult, invoke
from tests.support.hostile.bundles import hostile_bundle
from tests.support.hostile.histories import CALIBRATED_MODEL, HISTORIES
from tests.support.hostile.model_files import CONFIGS
from tests.support.hostile.strings import FIRMWARE, KERNEL
from tests.support.strict_json import strict_loads

HOSTILE = Path(__file__).parent / "data" / "hostile"
SITES = sorted((HOSTILE / "sites").glob("*.yaml"))
INVENTORIES = sorted((HOSTILE / "inventories").glob("*.yaml"))


def _strict(result: CliResult, what: str) -> None:
    assert "Traceback" not in result.stderr, (what, result.stderr[-2000:])
    assert result.rc in (0, 1, 2), (what, result.rc)
    assert result.stdout.strip(), (what, "no JSON document on stdout", result.stderr[-500:])
    strict_loads(result.stdout)


def _run(tmp_path: Path, *argv: str) -> None:
    env = {"XDG_STATE_HOME": str(tmp_path / "state")}
    _strict(invoke(*argv, env=env), " ".join(argv))


@pytest.mark.parametrize("family", sorted(HISTORIES))
def test_history_and_advise_over_every_hostile_history(family: str, tmp_path: Path) -> None:
    path = tmp_path / "history.sqlite"
    HISTORIES[family](path)
    _run(tmp_path, "history", "--history", str(path), "--json")
    _run(tmp_path, "advise", "--model", CALIBRATED_MODEL, "--history", str(path), "--json")


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_advise_over_every_hostile_config(name: str, tmp_path: Path) -> None:
    path = tmp_path / name / "config.json"
    path.parent.mkdir()
    path.write_text(CONFIGS[name], encoding="utf-8")
    _run(tmp_path, "advise", "--model", str(path), "--json")


def _refused_at_load(site: Path) -> bool:
    from strixwizard.site import load_site

    try:
        load_site(site)
    except UsageError:
        return True
    return False


#: commands that take a site file and write one JSON document (none reaches a node: each
#: site of the corpus is refused when it is read, which the first assertion checks)
SITE_COMMANDS: list[Callable[[str], list[str]]] = [
    lambda site: ["doctor", "--site", site, "--json"],
    lambda site: ["fix", "--site", site, "--json"],
    lambda site: ["deploy", "--site", site, "--plan", "--json"],
    lambda site: ["test", "latency", "--site", site, "--json", "--no-history"],
    lambda site: ["history", "--site", site, "--json"],
]


@pytest.mark.parametrize("site", SITES, ids=lambda p: p.stem)
def test_every_site_command_over_every_hostile_site(site: Path, tmp_path: Path) -> None:
    assert _refused_at_load(site), f"{site.name} loads: it would reach nodes"
    for command in SITE_COMMANDS:
        _run(tmp_path, *command(str(site)))


@pytest.mark.parametrize("inventory", INVENTORIES, ids=lambda p: p.stem)
def test_every_inventory_command_over_every_hostile_inventory(inventory: Path, tmp_path: Path) -> None:
    for command in ("doctor", "fix"):
        _run(tmp_path, command, "--inventory", str(inventory), "--json")
    _run(tmp_path, "deploy", "--inventory", str(inventory), "--plan", "--json")


def test_every_snapshot_command_over_a_hostile_bundle(tmp_path: Path) -> None:
    paths = hostile_bundle(tmp_path / "bundle", KERNEL, FIRMWARE)
    _run(tmp_path, "doctor", "--snapshot", *map(str, paths), "--json")
    site = tmp_path / "site.yaml"
    site.write_text("site: hostile\nnodes:\n" + "".join(
        f"  - name: {p.name}\n    snapshot: {p}\n    fabric_address: 192.168.100.{i + 1}\n"
        for i, p in enumerate(paths)))
    for argv in (["doctor", "--site", str(site)], ["fix", "--site", str(site)],
                 ["deploy", "--site", str(site), "--plan"]):
        _run(tmp_path, *argv, "--json")
