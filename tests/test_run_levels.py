"""Run levels as DCGM has them: `doctor --level quick|full`, `test --level quick|medium|long`."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any, ClassVar

import pytest

from strixwizard.facts.spec import SPEC, spec_without
from strixwizard.node.replay import ReplaySession
from strixwizard.probe.snapshot import SnapshotProbe
from strixwizard.services.levels import DOCTOR, MEASURE
from strixwizard.services.nodes import RunRequest, demo_site, resolve_run
from strixwizard.site import Site
from tests.support.cli import invoke

QUICK_LEFT_OUT = {"node.rdma_core_version", "node.linux_firmware", "node.rccl_gfx1151"}


def _ids(*argv: str, state: Path) -> set[str]:
    doc = json.loads(invoke("doctor", "--demo", "--json", *argv,
                             env={"XDG_STATE_HOME": str(state)}).stdout)
    return {c["id"] for c in doc["checks"]}


def test_doctor_quick_leaves_out_the_costly_reads_and_says_so(tmp_path: Path) -> None:
    full, quick = _ids(state=tmp_path), _ids("--level", "quick", state=tmp_path)
    assert full - quick == QUICK_LEFT_OUT == set(DOCTOR["quick"].leaves_out)
    assert _ids("--level", "full", state=tmp_path) == full
    text = invoke("doctor", "--demo", "--level", "quick", env={"XDG_STATE_HOME": str(tmp_path)}).stdout
    assert text.startswith("level quick: left out node.rdma_core_version, node.linux_firmware, "
                           "node.rccl_gfx1151 (`--level full` runs them)\n")


def test_the_quick_spec_asks_nodes_for_no_package_query_and_no_rccl_grep() -> None:
    quick = spec_without(DOCTOR["quick"].outputs)
    programs = {c["argv"][0] for c in quick["commands"]}
    assert not programs & {"rpm", "dpkg-query", "grep"}
    assert {"ip", "ethtool", "dcb", "ibv_devinfo"} <= programs
    assert quick["files"] == SPEC["files"]
    assert len(SPEC["commands"]) - len(quick["commands"]) == 14  # 6 rpm, 6 dpkg, 2 greps
    with pytest.raises(ValueError, match="no collected command output"):
        spec_without(("packages.nope",))


class _Recorded(ReplaySession):
    """A replay session that remembers the spec each collection asked for (stand-in for an SSH
    session: this checks what is sent, not what a node answers)."""

    asked: ClassVar[list[Any]] = []

    def collect(self, spec: Any = None) -> Any:
        _Recorded.asked.append(spec)
        return super().collect(spec)


def test_a_run_request_hands_its_spec_to_every_collection(tmp_path: Path) -> None:
    demo = demo_site()
    probe = SnapshotProbe.load(demo.resolve(str(demo.nodes[0].snapshot)))
    site_file = tmp_path / "site.yaml"
    site_file.write_text("site: t\nnodes:\n  - name: a\n    host: 10.99.0.9\n")
    quick = spec_without(DOCTOR["quick"].outputs)
    _Recorded.asked = []

    def connector(target: Any) -> _Recorded:
        return _Recorded(target.name, probe)

    site, nodes = resolve_run(RunRequest(site_file=site_file, spec=quick), connector=connector)
    assert isinstance(site, Site) and [n.report.name for n in nodes] == ["a"]
    assert _Recorded.asked == [quick]


def _test_args(*argv: str) -> argparse.Namespace:
    from strixwizard.cli.live import with_level
    from strixwizard.cli.main import _parser

    return with_level(_parser().parse_args(["test", "latency", "--demo", *argv]))


def test_test_levels_set_the_bounds_and_an_option_wins() -> None:
    quick, medium, long = (_test_args("--level", name) for name in ("quick", "medium", "long"))
    assert (quick.seconds, quick.bytes, quick.no_references) == (1.0, 64 << 20, True)
    assert (medium.seconds, medium.bytes, medium.no_references) == (5.0, 1 << 30, False)
    assert (long.seconds, long.bytes) == (60.0, 16 << 30)
    assert _test_args().seconds == 5.0  # medium is the default
    assert _test_args("--level", "long", "--seconds", "2").seconds == 2.0
    assert MEASURE["quick"].samples < MEASURE["medium"].samples < MEASURE["long"].samples


def test_test_latency_quick_takes_fewer_samples_and_no_references(tmp_path: Path) -> None:
    from strixwizard.cli.live_run import _settings
    from strixwizard.live.kinds import kind_of

    latency = kind_of("latency")
    quick = _settings(_test_args("--level", "quick"), latency)
    medium = _settings(_test_args(), latency)
    assert quick.tcp.round_trips == 2000 < medium.tcp.round_trips
    assert quick.perftest.iterations < medium.perftest.iterations
    assert not quick.tcp.references and medium.tcp.references
    # the demo replays its recordings whatever the level: nothing sampled on this machine
    result = invoke("test", "latency", "--demo", "--level", "quick", "--no-history",
                     env={"XDG_STATE_HOME": str(tmp_path)})
    assert result.rc == 0, result.stdout + result.stderr
    assert "sockperf" not in result.stdout and "qperf" not in result.stdout
