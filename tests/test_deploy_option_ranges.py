"""Deploy values are range-checked where they enter, as the site file's are: a port outside
1-65535, a CPU count or size below its floor, a timeout that is not a finite number of seconds
each exit 2 naming the option, before anything is planned."""

from __future__ import annotations

from typing import Any

import pytest

from strixwizard.deploy.declare import PORT, TIMEOUT, OptionValueError, whole


@pytest.mark.parametrize("argv", [
    ["--stack", "llama-rpc", "--rpc-port", "70000"],
    ["--stack", "llama-rpc", "--server-port", "0"],
    ["--ray-num-cpus", "-1"],
    ["--ray-object-store-bytes", "-5"],
    ["--serve", "--serve-timeout", "nan"],
    ["--serve", "--serve-timeout", "inf"],
    ["--vllm-port", "65536"],
    ["--stack", "ds4", "--ds4-tp-port", "0"],
    ["--stack", "ds4", "--ds4-health-timeout", "-1"],
])
def test_a_value_out_of_range_exits_2_naming_the_option(argv: list[str], cli: Any) -> None:
    result = cli("deploy", "--demo", *argv)
    flag = next(word for word in argv if word.startswith("--") and word not in ("--stack", "--serve"))
    assert result.rc == 2, result.stdout[-300:]
    assert f"argument {flag}: give" in result.stderr and "Traceback" not in result.stderr
    assert "Deploy plan" not in result.stdout


def test_values_in_range_plan() -> None:
    assert PORT("50052") == 50052 and TIMEOUT("900") == 900.0 and whole(0, 63)("0") == 0


def test_the_wizard_reads_an_out_of_range_value_as_not_yet_a_value() -> None:
    """The Deploy step keeps its plan while a field holds a value its option refuses."""
    with pytest.raises(ValueError):
        PORT("70000")
    with pytest.raises(OptionValueError):
        TIMEOUT("nan")
