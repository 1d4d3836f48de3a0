"""The declaration type: placeholders, what the collector gets, and refusals."""

from __future__ import annotations

import pytest

from strixwizard.facts import output
from strixwizard.facts.outputs import Output, command_output, run_output
from strixwizard.facts.rocm import RCCL_GREP, RCCL_LIBRARIES
from strixwizard.probe import CmdResult, NotCaptured


def test_placeholders_are_filled_for_a_read_and_kept_for_the_collector() -> None:
    pfc = output("dcb.pfc")
    assert pfc.command(netdev="eth0") == ("dcb", "-j", "pfc", "show", "dev", "eth0")
    assert list(pfc.spec_commands()) == [
        {"argv": ["dcb", "-j", "pfc", "show", "dev", "{netdev}"], "each": "netdev"}]
    assert [c["argv"][-1] for c in RCCL_GREP.spec_commands()] == list(RCCL_LIBRARIES)
    assert output("kfd.properties").spec_pattern() == "/sys/class/kfd/kfd/topology/nodes/*/properties"
    with pytest.raises(KeyError):
        pfc.command()


def test_declarations_the_collector_cannot_fill_or_that_repeat_a_name_are_refused() -> None:
    with pytest.raises(ValueError, match="cannot fill"):
        Output("x.conn", str, argv=("nmcli", "{connection}"))
    with pytest.raises(ValueError, match="argv or path"):
        Output("x.none", str)
    with pytest.raises(ValueError, match="declared twice"):
        command_output("dcb.pfc", ("dcb",), str)


class OneAnswer:
    host = "n"

    def __init__(self, result: CmdResult | None) -> None:
        self.result = result

    def read(self, path: str) -> str | None:
        return None

    def listdir(self, path: str) -> list[str]:
        return []

    def readlink(self, path: str) -> str | None:
        return None

    def run(self, argv: object) -> CmdResult:
        if self.result is None:
            raise NotCaptured(str(argv))
        return self.result


def test_a_reading_says_why_it_has_no_value() -> None:
    argv = ("dcb", "-j", "pfc", "show", "dev", "eth0")
    pfc = output("dcb.pfc")
    assert run_output(OneAnswer(None), pfc, netdev="eth0").note == f"`{' '.join(argv)}` was not captured"
    failed = run_output(OneAnswer(CmdResult(argv, 1, "", "Error: Operation not supported.\n")), pfc,
                        netdev="eth0")
    assert failed.value is None and "Operation not supported" in failed.note
    odd = run_output(OneAnswer(CmdResult(argv, 0, "{}", "")), pfc, netdev="eth0")
    assert odd.value is None and "output not understood" in odd.note
    good = run_output(OneAnswer(CmdResult(argv, 0, '{"prio_pfc":[false,true]}', "")), pfc, netdev="eth0")
    assert good.value == (1,) and good.note == ""
