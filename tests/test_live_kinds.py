"""Measurement kinds as declarations (strixwizard/live/kinds/): the registry finds every kind
module, each kind has its own help with its own options first, and `strixwizard test` parses
as before: the options before or after the kind, another kind's options taken, and the ones
that mean nothing for a kind refused in the same words."""

from __future__ import annotations

import argparse
import re

import pytest

from strixwizard.cli.live import kinds, register
from strixwizard.live.kinds import MeasurementKind, every_pair, kind_of, one_pair, registry
from strixwizard.services.measure import choose, unreachable, wizard_kinds
from tests.support.cli import invoke


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="strixwizard")
    register(parser.add_subparsers(dest="command"))
    return parser


BUILT_IN = ("latency", "bandwidth", "rccl", "matrix", "decode", "soak")


def test_the_registry_finds_every_kind_module_in_the_order_the_help_lists_them() -> None:
    assert [kind for kind in kinds() if kind in BUILT_IN] == list(BUILT_IN)
    assert all(isinstance(kind, MeasurementKind) for kind in registry().values())
    assert wizard_kinds() == ["matrix", "rccl"]  # the Test step's run (r)


@pytest.mark.parametrize(("kind", "own", "not_own"), [
    ("soak", ["--bytes N", "--all-pairs"], ["--model", "--launcher"]),
    ("decode", ["--model", "--batch N", "--transport", "--launcher"], ["--bytes", "--all-pairs"]),
    ("rccl", ["--launcher"], ["--model", "--bytes", "--transport"]),
    ("bandwidth", [], ["--model", "--bytes", "--transport", "--no-references"]),
    ("latency", ["--no-references", "--transport"], ["--model", "--bytes", "--launcher"]),
])
def test_each_kind_has_its_own_help_with_its_own_options_first(
        kind: str, own: list[str], not_own: list[str]) -> None:
    result = invoke("test", kind, "--help")
    assert result.rc == 0
    text = result.stdout
    assert text.startswith(f"usage: strixwizard test {kind}")
    listed = re.findall(r"^  (--[a-z-]+)", text, re.MULTILINE)  # the options, in help order
    for option in own:
        assert option.split()[0] in listed
        assert listed.index(option.split()[0]) < listed.index("--json")  # before the shared ones
    for option in not_own:
        assert option not in listed
    assert "--pair A,B" in text and "--seconds" in text  # what every kind takes


def test_the_command_help_lists_the_kinds_and_where_their_options_are() -> None:
    text = " ".join(invoke("test", "--help").stdout.split())
    for kind in kinds():
        assert f"{kind}: {kind_of(kind).help}" in text
    assert "`strixwizard test KIND --help` lists the options of KIND" in text
    assert "--model" not in text and "--bytes N" not in text


def test_options_before_the_kind_are_kept_and_after_it_too() -> None:
    parser = _parser()
    before = parser.parse_args(["test", "--demo", "--seconds", "2", "soak", "--bytes", "300000"])
    after = parser.parse_args(["test", "soak", "--demo", "--seconds", "2", "--bytes", "300000"])
    assert vars(before) == vars(after)
    assert before.kind == "soak" and before.demo and before.seconds == 2 and before.bytes == 300000
    plain = parser.parse_args(["test", "latency"])
    assert plain.demo is False and plain.transport == "all" and plain.model is None
    # another kind's option is taken (and ignored by this kind), as before
    assert parser.parse_args(["test", "latency", "--model", "Llama-3.1-8B"]).model == "Llama-3.1-8B"


def test_an_option_a_kind_refuses_is_refused_in_the_same_words() -> None:
    result = invoke("test", "bandwidth", "--demo", "--transport", "tcp", "--json")
    assert result.rc == 2
    assert "--transport tcp applies to latency, matrix and decode; bandwidth measures RDMA" in result.stderr
    result = invoke("test", "latency", "--demo", "--all-pairs")
    assert result.rc == 2
    assert ("--all-pairs applies to soak; latency has its own pairs (matrix measures every pair)"
            in result.stderr)


def test_each_kind_pairs_the_nodes_its_own_way() -> None:
    names = ["a", "b", "c", "d"]
    assert choose("latency", names) == (["a", "b"], [("a", "b")])
    assert choose("rccl", names) == (names, [("a", "b"), ("b", "c"), ("c", "d")])
    assert choose("matrix", names) == every_pair(names, None)
    assert choose("soak", names, None, True) == every_pair(names, None)
    assert choose("soak", names, ("c", "d")) == one_pair(names, ("c", "d"))
    assert unreachable("matrix", ("a", "b"), "down").kind == "latency"  # its results' kind
    assert unreachable("decode", ("a", "b"), "down").kind == "decode"
